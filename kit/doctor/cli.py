"""The ``python -m kit doctor`` command: loading the user's ``MODULE:FUNCTION`` or a kit loader, and printing.

Whatever the user's code raises ends as one line, ``kit: error: source 'mymod:make' raised
InvalidArgumentError: Input is empty.``, and exit status 2; ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import threading
import time
from pathlib import Path

from kit.cases import registry
from kit.doctor.sources import CEILING, PROGRESS, ModelError, describe_error, is_dataset, is_model, is_pydataset
from kit.util import positive_float, positive_int

#: What every error line about the user's code ends with.
DEBUG = "; --debug shows the traceback"


def margin(max_seconds: float) -> float:
    """How long past its budget a diagnosis may run before the command gives up on it: a quarter of
    the budget, within 15 to 60 s."""
    return min(60.0, max(15.0, 0.25 * max_seconds))


class Stuck(ValueError):
    """A diagnosis whose batch never arrived: the message says how long it waited for which batch."""


class OverBudget(Stuck):
    """A diagnosis still measuring when its budget and margin ended, its batches still arriving: a slow
    source, not a stuck one. ``partial`` is what was measured by then and what was left out."""

    def __init__(self, message: str, partial: str):
        super().__init__(message)
        self.partial = partial


#: The model's copy may take this many first waits (the budget and its margin) to compile its first step.
SETUP_WAITS = 3


def compiling() -> bool:
    """Whether the running diagnosis is still copying the model: its first training step, on a batch in memory,
    has not ended (``measure.compiled_copy``), and the budget has not begun (``progress.ready``)."""
    from kit.doctor import progress  # noqa: PLC0415

    return "ready_at" not in progress.SO_FAR and PROGRESS.what == CEILING and not PROGRESS.batches


def bounded(run, max_seconds: float, name: str):
    """``run()`` in a thread, waited on for ``max_seconds`` plus ``margin``, counted from when the diagnosis
    had its first batch and its copy of the model (``progress.ready``) where that came within the first
    wait, or while the copy still compiled its first step (``compiling``) within ``SETUP_WAITS`` first waits:
    at most ``SETUP_WAITS + 1`` first waits in all. When it has not ended by then: ``OverBudget`` where a
    batch arrived within the margin (slow, not stuck: the thread is told to wind down), else ``Stuck``."""
    from kit.doctor import progress  # noqa: PLC0415

    out: dict = {}
    progress.start()

    def target():
        try:
            out["value"] = run()
        except BaseException as e:  # noqa: BLE001  (handed to the caller as it is)
            out["error"] = e

    t = threading.Thread(target=target, name="kit-doctor", daemon=True)
    t.start()
    wait = max_seconds + margin(max_seconds)
    start = time.monotonic()
    deadline = start + wait
    t.join(wait)
    extended = t.is_alive() and compiling()
    if extended:
        # The model's copy still on its first step, a batch in memory (tracing and compiling a large model:
        # a minute for InceptionV3 on two cores): set-up, as the script's own first step is, up to
        # SETUP_WAITS first waits in all.
        print(f"kit doctor: {name}: the model's copy is still tracing and compiling its first step after "
              f"{wait:,.0f} s; that is set-up, as the script's own first step is, and the budget begins after it "
              f"(waiting up to {(SETUP_WAITS - 1) * wait:,.0f} s more)", flush=True)
        deadline += (SETUP_WAITS - 1) * wait
        while t.is_alive() and "ready_at" not in progress.SO_FAR and time.monotonic() < deadline:
            t.join(min(1.0, deadline - time.monotonic()))
    ready = progress.SO_FAR.get("ready_at")
    if t.is_alive() and ready is not None:
        t.join(max(0.0, ready + wait - time.monotonic()))
    if t.is_alive():
        progress.cancel()
        if PROGRESS.what == CEILING and not PROGRESS.batches:  # one batch replayed from memory: no input to wait on
            raise OverBudget(f"{name}: the doctor stopped waiting after {time.monotonic() - start:,.0f} s "
                             f"(--max-seconds {max_seconds:g} plus {margin(max_seconds):.0f} s"
                             f"{f', {SETUP_WAITS} times over for the set-up' if extended else ''}) "
                             f"while the model's first training step, on a batch replayed from memory for the "
                             f"compute ceiling, had run for {PROGRESS.waited():,.0f} s: tracing and compiling the "
                             f"model, not waiting on the input. Each fit the doctor times traces its own copy of "
                             f"the model: a budget several times that first step measures it", progress.partial())
        if PROGRESS.waited() < margin(max_seconds):
            raise OverBudget(f"{name}: the budget ended (--max-seconds {max_seconds:g} plus "
                             f"{margin(max_seconds):.0f} s) while the doctor measured {PROGRESS.what}; its last batch "
                             f"arrived {PROGRESS.waited():,.1f} s before: a slow source, not a stuck one",
                             progress.partial())
        raise Stuck(f"{name}: no batch arrived in time: {PROGRESS.waiting()}; the doctor gave up after "
                    f"--max-seconds {max_seconds:g} plus {margin(max_seconds):.0f} s. A map or generator waiting "
                    f"on I/O or a lock that never returns?")
    if "error" in out:
        raise out["error"]
    return out["value"]


def load_attr(spec: str, what: str):
    """``module:attr`` -> the attribute, called when it is a function (uvicorn's convention), the
    working directory importable. Every failure is a ``ValueError`` naming ``spec``."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"{what} {spec!r}: expected MODULE:FUNCTION, e.g. mypipeline:make_dataset")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # noqa: BLE001  (whatever the user's module raises, name it)
        raise ValueError(f"{what} {spec!r}: module {module_name!r} does not import: {describe_error(e)}{DEBUG}") from e
    obj = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(f"{what} {spec!r}: module {module_name!r} has no attribute {attr!r}") from None
    if callable(obj) and not is_dataset(obj) and not is_pydataset(obj) and not is_model(obj):
        try:
            obj = obj()
        except Exception as e:  # noqa: BLE001
            raise ValueError(f"{what} {spec!r} raised {describe_error(e)}{DEBUG}") from e
    return obj


def register(sub) -> None:
    """Adds ``doctor`` to the ``python -m kit`` commands (``sub["root"]``, see ``kit.cli.PLUGINS``)."""
    p = sub["root"].add_parser(
        "doctor", help="measure your pipeline (and model) and rank what to fix",
        description="python -m kit doctor run [--max-seconds S] [--json FILE] [--continue] SCRIPT [ARGS...]: "
                    "your training script as it is (python -m kit doctor run --help); or "
                    "python -m kit doctor MODULE:FUNCTION [--model MODULE:FUNCTION] | --index CSV --variant NAME")
    p.add_argument("target", nargs="?", default=None,
                   help="MODULE:FUNCTION returning your tf.data.Dataset, PyDataset or generator function")
    p.add_argument("--model", default=None, help="MODULE:FUNCTION returning your compiled Keras model")
    p.add_argument("--index", type=Path, default=None, help="an index CSV of a registered case (spectrogram, segmentation, ...)")
    p.add_argument("--variant", default=None, help="the kit loader variant to diagnose (with --index)")
    p.add_argument("--batch-size", type=positive_int, default=None,
                   help="with --index: examples per batch (default: the case's user batch, 256 spectrogram, 3 segmentation)")
    p.add_argument("--max-seconds", type=positive_float, default=120.0,
                   help="the measuring budget in seconds (default 120): the doctor keeps within it and "
                        "says what it skipped to do so")
    p.add_argument("--trace-dir", type=Path, default=None, help="record a profiler trace there")
    p.add_argument("--json", default=None, help="write the diagnosis as JSON to FILE (- for stdout)")
    p.add_argument("--apply", action="store_true",
                   help="with --out: write the fixed pipeline (every measured fix applied) as a module")
    p.add_argument("--out", type=Path, default=None,
                   help="with --apply: the .py file to write; its make_dataset() returns the fixed pipeline "
                        "and its comments list the changes to make in your code")
    p.add_argument("--details", action="store_true",
                   help="print each finding's evidence and basis under its line")
    p.add_argument("--debug", action="store_true",
                   help="on an error, show the full traceback (yours and the kit's) instead of one line")
    p.set_defaults(func=_command)


def _command(args) -> int:
    from kit.doctor.diagnosis import diagnose  # keeps kit.doctor light: TensorFlow, Keras

    if (args.target is None) == (args.index is None):
        raise ValueError("give either MODULE:FUNCTION or --index CSV (one of them)")
    if args.variant is not None and args.index is None:
        raise ValueError("--variant goes with --index")
    if args.apply != (args.out is not None):
        raise ValueError("--apply and --out FILE go together")
    if args.apply and args.target is None:
        raise ValueError("--apply needs MODULE:FUNCTION (a kit loader is fixed by choosing another variant)")
    if args.index is not None:
        # The registered case whose index it is; its user's own pattern unless --variant says otherwise.
        source = registry.for_index(args.index).loader(args.index, args.variant, batch_size=args.batch_size)
        name = f"loader of {args.index}"
    else:
        name = f"source {args.target!r}"
        source = load_attr(args.target, "source")
    model = None
    if args.model is not None:
        model = load_attr(args.model, "model")
        if not is_model(model):
            raise ValueError(f"model {args.model!r} returned a {type(model).__name__}, not a Keras model")
    try:
        d = bounded(lambda: diagnose(source, model, max_seconds=args.max_seconds, trace_dir=args.trace_dir,
                                     name=name), args.max_seconds, name)
    except Stuck:
        raise
    except ModelError as e:  # not compiled, not copyable, not taking the batches
        raise ValueError((f"model {args.model!r}: {e}" if args.model else str(e)) + DEBUG) from e
    except Exception as e:  # noqa: BLE001  (whatever the pipeline raises while it is read, name it)
        # The doctor's own message where it names the source, else "source 'm:f' raised InvalidArgumentError: ...".
        own = isinstance(e, ValueError) and name in str(e)
        raise ValueError((" ".join(str(e).split()) if own else f"{name} raised {describe_error(e)}") + DEBUG) from e
    print(d.details() if args.details else d)
    if args.apply:
        print(write_fixed(d, args.target, args.out))
    if args.json is not None:
        text = json.dumps(d.as_dict(), indent=1, default=float)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n")
    return 0


def write_fixed(d, target: str, out: Path) -> str:
    """Writes ``out``: a module whose ``make_dataset()`` returns ``target``'s pipeline with the measured
    fixes applied, the changes to make in the user's code in its docstring. Returns what it did."""
    if not d.changes:
        return f"nothing to apply: no fix gained on {target} (nothing written to {out})"
    module, _, attr = target.partition(":")
    lines = [f'"""Written by `python -m kit doctor {target} --apply --out {out}`: your pipeline with the',
             'fixes the doctor measured. Train on make_dataset(), or better, make these changes in your code:', ""]
    lines += [f"* {r.change}: ``{r.snippet}``" for r in d.changes]
    lines += ['"""', "", "from kit.doctor import rewrite", f"from {module} import {attr.split('.')[0]} as _original",
              "", f"CHANGES = {[r.spec for r in d.changes]!r}", "", "",
              "def make_dataset():", f'    """{target} with CHANGES applied (the same rewrites the doctor measured)."""',
              f"    source = _original{''.join('.' + p for p in attr.split('.')[1:])}",
              "    return rewrite.apply_specs(source() if callable(source) else source, CHANGES)", ""]
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text("\n".join(lines))
    tmp.replace(out)
    return f"wrote {out}: make_dataset() returns the fixed pipeline ({len(d.changes)} change(s))"
