"""Copies of the user's model for the doctor to train: ``clone`` (compiled with the user's own loss and
metrics, ``compile_like``), and where a model cannot be copied, the model itself lent for a diagnosis and put
back as it was (``borrow`` inside ``lending``)."""

from __future__ import annotations

import contextlib

import keras
import numpy as np

from kit.doctor.sources import ModelError, as_xy, describe_error


class Uncopyable(ModelError):
    """The model is compiled but cannot be copied (``clone``): the doctor trains it in place (``borrow``);
    ``short`` says why in a clause."""

    def __init__(self, message: str, short: str = ""):
        super().__init__(message)
        self.short = short or message


def clone(model, batch=None):
    """A compiled copy of ``model`` with its weights, and its compile config; ``ModelError`` where the
    model is not compiled, ``Uncopyable`` where it cannot be copied. Functional and Sequential models go through
    ``keras.models.clone_model`` (sharing weightless layers that do not rebuild from their config); a
    subclassed model is rebuilt from its config, built on ``batch`` where needed. The copy is compiled
    with the user's own loss and metrics (``compile_like``): plain functions, as training scripts
    write them, do not survive Keras' compile config."""
    config = model.get_compile_config() if getattr(model, "compiled", False) else None
    if not config:
        raise ModelError(f"Keras model {getattr(model, 'name', model)!r} is not compiled; compile it "
                         f"(the doctor trains a copy of it)")
    kind = type(model).__name__
    graph = isinstance(model, keras.Sequential) or any(c.__name__ == "Functional" for c in type(model).__mro__)

    def layer_copy(layer):
        try:
            return layer.__class__.from_config(layer.get_config())
        except (ValueError, TypeError, NotImplementedError):
            if layer.weights:
                raise
            return layer  # no state: the copy can share it

    copy, failed = None, None
    model.compiled = False  # clone_model would compile the copy from the config: compile_like does
    try:
        for clone_function in (None, layer_copy) if graph else (None,):
            try:
                copy = keras.models.clone_model(model, clone_function=clone_function)
                break
            except (ValueError, TypeError, NotImplementedError, KeyError) as e:
                failed = failed or e
    finally:
        model.compiled = True
    if copy is None:
        if graph:
            raise Uncopyable(f"Keras model {model.name!r} cannot be copied (keras.models.clone_model: "
                             f"{describe_error(failed)})", f"keras.models.clone_model raised {type(failed).__name__}") from failed
        raise Uncopyable(f"Keras model {model.name!r} is a subclassed model ({kind}) that the doctor cannot "
                         f"copy: {kind}.from_config(model.get_config()) failed ({describe_error(failed)}); "
                         f"give {kind} a get_config() returning its __init__ arguments, or pass a "
                         f"Functional or Sequential model", f"{kind} is a subclassed model that does not rebuild "
                         f"from its get_config()") from failed
    weights = model.get_weights()
    if len(copy.weights) != len(weights) and batch is not None:
        try:
            copy(as_xy(batch)[0], training=False)  # builds a subclassed copy's layers
        except Exception as e:  # noqa: BLE001  (Keras raises many types; all mean the same here)
            raise Uncopyable(f"Keras model {model.name!r} ({kind}) rebuilt from its config does not run "
                             f"on the batches ({describe_error(e)})", f"{kind} rebuilt from its get_config() does "
                             f"not run on the batches") from e
    try:
        copy.set_weights(weights)
    except ValueError as e:
        raise Uncopyable(f"Keras model {model.name!r} ({kind}) rebuilt from its config does not take its "
                         f"weights ({describe_error(e)}); its get_config() leaves something out, or pass "
                         f"a Functional or Sequential model", f"{kind} rebuilt from its get_config() does not take "
                         f"its weights") from e
    compile_like(copy, model)
    return copy, config


def fresh(obj):
    """A new object like ``obj`` (an optimizer, a loss or metric object), from its config; ``obj`` itself
    where it has none (a plain function, a string) or does not rebuild from it."""
    if callable(getattr(obj, "get_config", None)) and not isinstance(obj, type):
        try:
            return type(obj).from_config(obj.get_config())
        except Exception:  # noqa: BLE001  (a custom object that does not round-trip: shared as it is)
            return obj
    return obj


def compile_like(copy, model, **override) -> None:
    """Compiles ``copy`` as ``model`` was compiled, from the arguments the user gave ``compile``: a fresh
    optimizer, the same loss and metric functions (fresh metric objects, so the user's keep their state).
    Where Keras keeps no such arguments, from its compile config."""
    given = getattr(getattr(model, "_compile_config", None), "config", None)
    if not isinstance(given, dict):
        config = model.get_compile_config()
        copy.compile_from_config({**config, **override})
        return
    args = {**given, **override}
    args["optimizer"] = fresh(args.get("optimizer") or model.optimizer)
    for key in ("metrics", "weighted_metrics"):
        value = args.get(key)
        if isinstance(value, (list, tuple)):
            args[key] = [fresh(v) for v in value]
        elif isinstance(value, dict):
            args[key] = {k: [fresh(x) for x in v] if isinstance(v, (list, tuple)) else fresh(v) for k, v in value.items()}
    copy.compile(**args)


#: The models trained in place (``borrow``), each with what puts it back, newest last: ``lending`` runs them.
_LENT: list = []
#: How many ``lending`` blocks are open: outside one, nothing would put a model back, so none is lent.
_OPEN = [0]


def borrow(model, batch, why: str):
    """``model`` itself, to train where it cannot be copied (``why``: ``clone``'s reason), as the issue's
    "train the original and restore its weights and optimizer state afterwards": built on ``batch`` where
    it is not yet, its optimizer built, and every variable of both (weights, seed states, the optimizer's
    slots, step and learning rate) saved; ``lending()`` assigns them back when the diagnosis ends."""
    if not getattr(model, "built", False) or not model.weights:
        try:
            model(as_xy(batch)[0], training=False)  # builds it, as its first fit would
        except Exception as e:  # noqa: BLE001  (Keras raises many types; all mean the same here)
            raise ModelError(f"Keras model {model.name!r} cannot be copied ({why}), and it does not run on "
                             f"the batches ({describe_error(e)})") from e
    optimizer = getattr(model, "optimizer", None)
    if optimizer is not None and not getattr(optimizer, "built", True):
        optimizer.build(model.trainable_variables)  # its slots exist now, zero as the user's first step finds them
    saved = [(v, np.array(v.numpy())) for v in [*model.variables, *getattr(optimizer, "variables", [])]]

    def restore() -> None:
        for v, value in saved:
            v.assign(value)
        model.stop_training = False

    _LENT.append((model, why, restore))
    return model


def lent(model) -> str | None:
    """Why ``model`` is trained in place (``borrow``), or None where the doctor trains a copy."""
    return next((why for m, why, _ in reversed(_LENT) if m is model), None)


@contextlib.contextmanager
def lending():
    """Puts back, on leaving, every model ``borrow`` lent inside: its variables and its optimizer's as saved."""
    start = len(_LENT)
    _OPEN[0] += 1
    try:
        yield
    finally:
        _OPEN[0] -= 1
        while len(_LENT) > start:
            _LENT.pop()[2]()


def copy_or_borrow(model, batch):
    """A copy of ``model`` (``clone``); inside ``lending``, the model itself (``borrow``) where it cannot be
    copied. Raises ``Uncopyable`` outside one, where nothing would put the model back."""
    try:
        return clone(model, batch)[0]
    except Uncopyable as e:
        if not _OPEN[0]:
            raise
        return borrow(model, batch, e.short)
