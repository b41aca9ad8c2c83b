"""The command line of a lab instrument whose config is a ``kit.bench`` config dataclass: its
flags from the config's fields (``kit.bench.options``), ``--json`` and, where it has progress
bars, ``--no-progress``; the result printed, appended to the results ledger and written as JSON
(``kit.bench.save``), as ``python -m kit bench`` does."""

from __future__ import annotations

import argparse
import sys

__all__ = ["main"]


def main(name: str, config_type, run, show, argv=None, *, description: str, progress: bool = False) -> int:
    """Parses ``argv`` into a ``config_type``, runs ``run(config)``, shows and saves its result.
    Returns the exit status: 2 with one ``lab: error:`` line for a bad value or too little disk."""
    from kit.bench import save
    from kit.bench.options import add_arguments, from_args
    from kit.store import StoreError

    p = argparse.ArgumentParser(prog=f"python -m lab.{name}", description=description)
    add_arguments(p, config_type)
    if progress:
        p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--json", default=None, help="write the result as JSON to this file (- for stdout)")
    args = p.parse_args(argv)
    try:
        config = from_args(config_type, args)
        res = run(config, **({"progress": not args.no_progress} if progress else {}))
    except (ValueError, StoreError) as e:  # a bad value, too little disk: one line
        print(f"lab: error: {e}", file=sys.stderr)
        return 2
    show(res)
    save(res, args.json)
    return 0
