"""Small helpers every part of the kit shares: argument checks, durations, JSON output. Imports no
TensorFlow, pandas or other part of the kit, so any module may use it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path

import numpy as np

#: The oldest TensorFlow and Keras the kit was tested with, as pyproject.toml's floors (a test keeps
#: the two equal).
VERSION_FLOORS = {"tensorflow": "2.21", "keras": "3.15"}


def check_int(name: str, value, minimum: int = 1) -> int:
    """``value`` as an ``int`` if it is an integer (not a bool) of at least ``minimum``, else a
    ``ValueError`` naming the argument (``batch_size must be a positive integer, got 0``)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        what = {0: "a non-negative integer", 1: "a positive integer"}.get(minimum, f"an integer >= {minimum}")
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return int(value)


def _int_arg(text: str, minimum: int, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be {what}, got {value}")
    return value


def positive_int(text: str) -> int:
    """argparse type: a positive integer, or one clear error."""
    return _int_arg(text, 1, "positive")


def positive_float(text: str) -> float:
    """argparse type: a positive, finite number, or one clear error."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def port_number(text: str) -> int:
    """argparse type: a TCP port, 1..65535 (0 is refused: leave the option out for any free port)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port in 1..65535 (leave it out for any free one), got {value}")
    return value


def non_negative_int(text: str) -> int:
    """argparse type: an integer >= 0, or one clear error."""
    return _int_arg(text, 0, "non-negative")


def size_arg(text: str):
    """argparse type: ``512`` -> 512, ``384x512`` -> (384, 512) (height x width)."""
    try:
        parts = [int(v) for v in text.lower().replace("x", ",").split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected SIZE or HEIGHTxWIDTH, got {text!r}") from None
    if len(parts) not in (1, 2) or min(parts) <= 0:
        raise argparse.ArgumentTypeError(f"expected SIZE or HEIGHTxWIDTH (positive), got {text!r}")
    return tuple(parts) if len(parts) == 2 else parts[0]


def write_json(path: str | os.PathLike | None, obj) -> None:
    """Writes a result object as JSON (``-`` for standard output; None: nothing)."""
    if path is None:
        return
    text = json.dumps(obj, indent=1, default=float)
    if str(path) == "-":
        print(text)
    else:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text + "\n")


def format_duration(seconds: float) -> str:
    """1.2 s, 3.4 min, 5.6 h: a duration in the unit that reads best."""
    if not math.isfinite(seconds):
        return "inf"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity), else the machine's count."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def process_io() -> dict | None:
    """This process's I/O counters (``/proc/self/io``: ``rchar`` read, ``read_bytes`` from the disk),
    or None where there is none."""
    try:
        with open("/proc/self/io") as f:
            return {k: int(v) for k, v in (line.split(":") for line in f if ":" in line)}
    except OSError:
        return None


def process_alive(pid: int) -> bool:
    """True while process ``pid`` exists (someone else's counts): whether a temp file or lock named
    after it still has an owner."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class OneLineParser(argparse.ArgumentParser):
    """The kit's command-line parser: a usage error is one line, ``kit: error: ...``, exit 2."""

    def error(self, message):  # one line, exit 2 (argparse prints usage too)
        self.exit(2, f"kit: error: {message}\n")
