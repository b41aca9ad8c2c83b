"""The ``python -m kit doctor`` command: loading the user's ``MODULE:FUNCTION`` or a kit loader, and printing."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from pathlib import Path

from kit.cases import registry
from kit.doctor.sources import is_dataset, is_model, is_pydataset, one_line


def load_attr(spec: str, what: str):
    """``module:attr`` -> the attribute, called when it is a function (uvicorn's convention).

    The working directory is importable. Every failure is a ``ValueError`` naming ``spec``.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"{what} {spec!r}: expected MODULE:FUNCTION, e.g. mypipeline:make_dataset")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # noqa: BLE001  (whatever the user's module raises, name it)
        raise ValueError(f"{what} {spec!r}: module {module_name!r} does not import: {one_line(e)}") from None
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
            raise ValueError(f"{what} {spec!r} raised {one_line(e)}") from None
    return obj


def _positive(kind):
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {text}")
        return value

    return parse


def register(sub) -> None:
    """Adds ``doctor`` to the ``python -m kit`` commands (``sub["root"]``, see ``kit.cli.PLUGINS``)."""
    p = sub["root"].add_parser(
        "doctor", help="measure your pipeline (and model) and rank what to fix",
        description="python -m kit doctor MODULE:FUNCTION [--model MODULE:FUNCTION] | "
                    "--index CSV --variant NAME")
    p.add_argument("target", nargs="?", default=None,
                   help="MODULE:FUNCTION returning your tf.data.Dataset, PyDataset or generator function")
    p.add_argument("--model", default=None, help="MODULE:FUNCTION returning your compiled Keras model")
    p.add_argument("--index", type=Path, default=None, help="an index CSV of a registered case (spectrogram, segmentation, ...)")
    p.add_argument("--variant", default=None, help="the kit loader variant to diagnose (with --index)")
    p.add_argument("--batch-size", type=_positive(int), default=None,
                   help="with --index: examples per batch (default: the case's user batch, 256 spectrogram, 3 segmentation)")
    p.add_argument("--max-seconds", type=_positive(float), default=20.0, help="measuring budget (20)")
    p.add_argument("--trace-dir", type=Path, default=None, help="record a profiler trace there")
    p.add_argument("--json", default=None, help="write the diagnosis as JSON to FILE (- for stdout)")
    p.set_defaults(func=_command)


def _kit_loader(csv: Path, variant: str | None, batch_size: int | None):
    """A kit loader over ``csv``, of the registered case whose index it is (``kit.cases.registry``);
    the user's own pattern and batch unless ``variant`` / ``batch_size`` say otherwise."""
    return registry.for_index(csv).loader(csv, variant, batch_size=batch_size)


def _command(args) -> int:
    from kit.doctor import diagnose  # the package's face, which imports this module

    if (args.target is None) == (args.index is None):
        raise ValueError("give either MODULE:FUNCTION or --index CSV (one of them)")
    if args.variant is not None and args.index is None:
        raise ValueError("--variant goes with --index")
    if args.index is not None:
        source, name = _kit_loader(args.index, args.variant, args.batch_size), f"loader of {args.index}"
    else:
        name = f"source {args.target!r}"
        source = load_attr(args.target, "source")
    model = None
    if args.model is not None:
        model = load_attr(args.model, "model")
        if not is_model(model):
            raise ValueError(f"model {args.model!r} returned a {type(model).__name__}, not a Keras model")
    d = diagnose(source, model, max_seconds=args.max_seconds, trace_dir=args.trace_dir, name=name)
    print(d)
    if args.json is not None:
        text = json.dumps(d.as_dict(), indent=1, default=float)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n")
    return 0
