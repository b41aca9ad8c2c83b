"""``python -m kit``: samples, convert, verify, bench, demo (and what later modules add).

Errors in the input (bad counts, bad data) print one line ``kit: error: ...`` and
exit with status 2 (a command with ``--debug``, such as ``doctor``, shows the traceback
instead); a failed ``verify`` exits with status 1.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path

from kit import store
from kit.cases import registry
from kit.errors import DataError
from kit.store import StoreError
from kit.util import OneLineParser, non_negative_int

#: Modules that add subcommands: each has ``register(sub)`` where ``sub`` maps
#: "root", "convert" and "bench" to argparse sub-parser collections.
PLUGINS = [
    "kit.bench",
    "kit.demo",
    "kit.spectrogram.commands",
    "kit.segmentation.commands",
    "kit.distribute.commands",
    "kit.doctor.cli",
    "kit.cache.command",
]


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m kit", description="Find and remove the data-input bottleneck in TensorFlow/Keras training: sample data, "
                     "conversions, benchmarks, the pipeline doctor and the demo. Each command has its own --help.")
    root = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)

    samples = root.add_parser("samples", help="write synthetic sample data")
    ssub = samples.add_subparsers(dest="case", required=True, parser_class=OneLineParser)
    for case in registry.cases():  # every registered case, its maker's own options
        p = ssub.add_parser(case.name, help=case.description)
        p.add_argument("--out", required=True, type=Path, help="folder to write (created; the kit's own folder only)")
        for o in case.sample_options:
            p.add_argument("--" + o.name.replace("_", "-"), dest=o.name, type=o.type, required=o.required,
                           default=o.default, choices=o.choices, help=o.help)
        p.add_argument("--seed", type=non_negative_int, default=0, help="the same seed gives the same data (default 0)")
        p.add_argument("--force", action="store_true",
                       help="replace a kit sample folder made with other options (never any other path)")
        p.set_defaults(func=_samples, sample_case=case)

    convert = root.add_parser("convert", help="convert data into a fast format (atomic, resumable)")
    csub = convert.add_subparsers(dest="case", required=True, parser_class=OneLineParser)

    verify = root.add_parser("verify", help="re-read a converted store and check it against its manifest")
    verify.add_argument("folder", type=Path, help="a store folder written by python -m kit convert (or by a loader)")
    verify.set_defaults(func=_verify)

    bench = root.add_parser("bench", help="measure variants side by side")
    bsub = bench.add_subparsers(dest="case", required=True, parser_class=OneLineParser)

    sub = {"root": root, "convert": csub, "bench": bsub}
    for name in PLUGINS:
        importlib.import_module(name).register(sub)
    return parser


def _samples(args) -> int:
    case = args.sample_case
    options = {o.name: getattr(args, o.name) for o in case.sample_options}
    print(case.make_samples(args.out, seed=args.seed, force=args.force, **options))
    return 0


def _verify(args) -> int:
    m = store.Manifest.load(args.folder)  # missing or malformed: one line, exit 2
    problems = store.verify(args.folder)
    if problems:
        for p in problems:
            print(f"FAIL {p}")
        return 1
    print(f"OK {args.folder}: {m.kind}, {m.count:,} examples in {len(m.shards)} files, checksums match")
    return 0


def main(argv=None) -> int:
    # Before TensorFlow loads (the commands import it): its C++ INFO and WARNING lines off,
    # unless the caller set the level. At WARNING, a memmap loader or the head logs
    # "FAILED_PRECONDITION: PyFunc (ResourceGather) is stateful" at every batch of an
    # iterator under symbolic checkpointing: thousands of lines in a long run, burying what
    # the command prints. (Notebooks and `make demo` set the same level.)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:2] == ["doctor", "run"]:  # the script's own arguments follow: argparse must not read them
        from kit.doctor.script import main as run_script  # noqa: PLC0415

        return run_script(argv[2:])
    args = build_parser().parse_args(argv)
    debug = getattr(args, "debug", False)  # a command's --debug: the full traceback, not one line
    try:
        return args.func(args)
    except (DataError, StoreError, ValueError, FileNotFoundError) as e:
        if debug:
            raise
        print(f"kit: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a path that is a folder, not a folder, unwritable, ...
        if debug:
            raise
        where = f"{e.filename}: " if e.filename else ""
        print(f"kit: error: {where}{e.strerror or e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kit: interrupted; run the same command again to resume", file=sys.stderr)
        return 130
