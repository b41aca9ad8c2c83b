"""What the benches' configs share: their checks, their JSON form and their command line.

Every bench has a frozen dataclass config (``SpectrogramConfig``, ...; all in
``kit.bench.configs``, which imports no TensorFlow) that checks itself in ``__post_init__``
and raises ``ValueError`` naming the bad value; its ``run(config)`` returns a
``kit.bench.BenchResult``. A field made with ``option`` also carries its command-line flag
(name, help, type or choices, an optional short form): ``add_arguments`` turns a config
dataclass into its subcommand's arguments and ``from_args`` the parsed arguments back into
the config, so a bench's command, its defaults and its config are declared once.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kit.util import check_int


@dataclass(frozen=True)
class Flag:
    """A config field's command-line flag (``option`` makes one; ``add_arguments`` reads it).

    Attributes:
        help: its help line; ``{name}`` fields in it are filled from ``add_arguments``' context.
        flag: the long form (default ``--`` and the field's name with dashes).
        short: a short form (``-n``), or None.
        type: argparse's ``type`` (None: the string as given).
        choices: argparse's ``choices``.
        metavar: as argparse shows the value (default: the flag's name in capitals).
        action: ``"store_true"`` (a switch that sets the field) or ``"store_false"`` (one that
            clears it: ``--no-peers``); None for a flag that takes a value.
        parse: applied by ``from_args`` to the string given (``counts``: ``"1,2"`` -> ``(1, 2)``),
            where the value needs more than argparse's ``type`` (its error is ``kit: error:``).
    """

    help: str
    flag: str | None = None
    short: str | None = None
    type: Callable[[str], Any] | None = None
    choices: tuple | None = None
    metavar: str | None = None
    action: str | None = None
    parse: Callable[[str], Any] | None = None


def option(default, help: str, *, kw_only: bool | None = None, **flag) -> Any:
    """A config field with a default and a command-line flag: ``dataclasses.field`` with a
    ``Flag`` (its keywords: ``flag``, ``short``, ``type``, ``choices``, ``metavar``, ``action``,
    ``parse``) in its metadata. ``kw_only=True`` puts a field that comes before a positional one
    on the command line (``--frames`` before ``--data``) among the keyword-only ones."""
    kw: dict[str, Any] = {} if kw_only is None else {"kw_only": kw_only}
    return dataclasses.field(default=default, metadata={"flag": Flag(help, **flag)}, **kw)


def _flags(config_type):
    return [(f, f.metadata["flag"]) for f in dataclasses.fields(config_type) if "flag" in f.metadata]


def add_arguments(parser: argparse.ArgumentParser, config_type, **context) -> None:
    """One argument of ``parser`` for each field of ``config_type`` made with ``option``, in the
    fields' order, its value stored under the field's name and defaulting to the field's.

    Args:
        context: values for the ``{name}`` fields of the help lines (a case's default batch).
    """
    for f, flag in _flags(config_type):
        long = flag.flag or "--" + f.name.replace("_", "-")
        names = [flag.short, long] if flag.short else [long]
        help = flag.help.format(**context) if context else flag.help
        if flag.action:
            parser.add_argument(*names, dest=f.name, action=flag.action, help=help)
            continue
        metavar = flag.metavar or long.lstrip("-").replace("-", "_").upper()
        parser.add_argument(*names, dest=f.name, type=flag.type, choices=flag.choices, default=f.default,
                            metavar=None if flag.choices else metavar, help=help)


def from_args(config_type, args: argparse.Namespace, **fixed):
    """The ``config_type`` that ``args`` (parsed by ``add_arguments``' arguments) and ``fixed``
    (fields that have no flag: a case's name) describe; each ``Flag.parse`` applied to a
    value given as a string."""
    fields = {}
    for f, flag in _flags(config_type):
        value = getattr(args, f.name)
        fields[f.name] = flag.parse(value) if flag.parse and isinstance(value, str) else value
    return config_type(**fields, **fixed)


def counts(text: str) -> tuple[int, ...]:
    """``Flag.parse`` of ``--replicas``: ``"1,2,4"`` -> ``(1, 2, 4)``, or a ``ValueError`` naming the flag."""
    try:
        values = tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise ValueError(f"--replicas expects comma-separated integers like 1,2,4, got {text!r}") from None
    if not values or min(values) <= 0:
        raise ValueError(f"--replicas expects positive integers, got {text!r}")
    return values


def as_dict(config) -> dict:
    """``dataclasses.asdict(config)``, JSON-ready: paths as strings, tuples as lists."""
    return _plain(dataclasses.asdict(config))


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


def check_positive(name: str, value) -> float:
    """``value`` as a float if it is a positive, finite number (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not value > 0 or not math.isfinite(value):
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return float(value)


def check_one_of(name: str, value, choices) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(repr(c) for c in choices)}, got {value!r}")


def optional_int(name: str, value, minimum: int = 1):
    """None, or ``check_int(name, value, minimum)``."""
    return None if value is None else check_int(name, value, minimum)


def optional_path(config, *fields: str) -> None:
    """Sets each of ``fields`` of a frozen ``config`` to a ``Path`` (None stays None)."""
    for name in fields:
        value = getattr(config, name)
        if value is not None:
            if not isinstance(value, (str, os.PathLike)):
                raise ValueError(f"{name} must be a path, got {value!r}")
            object.__setattr__(config, name, Path(value))


def check_names(config, field: str, known) -> None:
    """Sets ``field`` of a frozen ``config`` (None, a comma-separated string or a sequence of
    names) to a tuple of names from ``known``, or None (every variant) when it names none;
    an unknown name is refused."""
    value = getattr(config, field)
    if value is None:
        return
    items = tuple(v.strip() for v in value.split(",") if v.strip()) if isinstance(value, str) else tuple(value)
    if not items:  # none named: every variant, as before configs
        object.__setattr__(config, field, None)
        return
    unknown = [v for v in items if v not in known]
    if unknown:
        raise ValueError(f"unknown variant(s) {', '.join(map(str, unknown))}; choose from {', '.join(known)}")
    object.__setattr__(config, field, items)
