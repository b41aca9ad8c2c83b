"""What the benches' configs share: their checks, their JSON form and the two forms of ``run``.

Every bench module has a frozen dataclass config (``SpectrogramConfig``, ...) that checks
itself in ``__post_init__`` and raises ``ValueError`` naming the bad value. Its fields
are the bench's ``run`` keywords, so one ``run`` takes either form:

* ``run(config)`` returns a ``kit.bench.BenchResult`` (the CLI and the demo call this);
* ``run(...)`` with the config's fields as arguments (the form notebooks use) builds the
  config and returns what ``run`` returned before configs: the rows (a DataFrame), or
  ``(rows, info)`` for the benches that also return an ``info`` dict.
"""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path

import numpy as np

from kit.util import check_int

__all__ = ["as_dict", "configure", "check_int", "check_positive", "check_one_of", "optional_path",
           "optional_int", "check_names"]


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


def configure(config_type, first, args: tuple, options: dict):
    """The config a bench's ``run`` was called with, and whether it came as arguments.

    Args:
        config_type: the bench's config dataclass.
        first: ``run``'s first positional argument: a config, or the config's first field
            (None when not given).
        args, options: the remaining positional and keyword arguments.

    Returns:
        ``(config, as_arguments)``: ``as_arguments`` is False for ``run(config)``.
    """
    if isinstance(first, config_type):
        if args or options:
            raise TypeError(f"run takes a {config_type.__name__} alone, or its fields as arguments, not both")
        return first, False
    if dataclasses.is_dataclass(first) and not isinstance(first, type):
        raise TypeError(f"run takes a {config_type.__name__}, got a {type(first).__name__}")
    if first is None and not args:
        return config_type(**options), True
    return config_type(first, *args, **options), True


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
