"""Checks any index applies to its rows: class lists, label ids, duplicate rows, finite values.

Both cases call these, so a rule holds the same everywhere:

* labels become class ids through one class list (``classes=`` or a ``classes.txt``
  beside the index); integer labels stay integers, and a stray string among them is
  an error naming its line; an id far beyond the number of distinct labels is an
  error, not a huge allocation;
* a row listed twice, or one example with two labels, is an error naming both lines;
* class names are neither empty nor repeated;
* frames with NaN or inf are an error (or, on request, a warning) naming where.

Every problem is one ``DataError`` naming the file and the line.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from kit.errors import DataError

#: The file beside an index that lists its class names, one a line, in id order.
CLASSES_FILE = "classes.txt"
#: Integer labels without a class list: the largest id may be at most this many past
#: 10x the number of distinct labels (a sparse subset of 1,000 classes passes; an id of
#: 20,000,000,000 among 3 labels, which would allocate 20 billion class names, does not).
ID_SLACK = 1000


def read_classes(path: str | os.PathLike) -> tuple[str, ...]:
    """Class names from a ``classes.txt`` (one a line, blank lines ignored), checked.

    Raises:
        DataError: the file is missing, or a name is repeated.
    """
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        raise DataError(f"{path}: class list not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"{path}: cannot read the class list ({e})") from None
    names, where = [], []
    for i, text in enumerate(lines):
        if text.strip():
            names.append(text.strip())
            where.append(f"{path.name} line {i + 1}")
    if not names:
        raise DataError(f"{path}: the class list is empty")
    check_names(names, where)
    return tuple(names)


def check_names(names: Sequence[str], where: Sequence[str]) -> None:
    """Refuses empty or repeated class names. ``where[k]`` says where name ``k`` comes from.

    Raises:
        DataError: naming the line(s).
    """
    seen: dict[str, int] = {}
    for k, name in enumerate(names):
        if not str(name).strip():
            raise DataError(f"{where[k]}: empty class name")
        if name in seen:
            raise DataError(f"{_both(where[seen[name]], where[k])}: the class name {name!r} twice")
        seen[name] = k


def resolve_classes(classes, csv_path: Path) -> tuple[str, ...] | None:
    """The class list to use: ``classes`` (names, or a path to a classes.txt), else a
    ``classes.txt`` beside the index, else None."""
    if classes is None:
        beside = Path(csv_path).parent / CLASSES_FILE
        return read_classes(beside) if beside.exists() else None
    if isinstance(classes, (str, os.PathLike)):
        return read_classes(classes)
    names = tuple(str(c).strip() for c in classes)
    if not names:
        raise ValueError("classes must name at least one class")
    check_names(names, [f"classes[{k}]" for k in range(len(names))])
    return names


def class_ids(raw: pd.Series, line: Callable[[int], str], *,
              classes: Sequence[str] | None = None) -> tuple[np.ndarray, tuple[str, ...]]:
    """Labels (stripped strings, one per row) -> ``(int64 ids, class names)``.

    With ``classes``, a label is a name in it (its position) or, when it is not a name,
    an integer id below ``len(classes)``; anything else is an error. Without, integer
    labels stay integers (classes ``"0".."max"``) and string labels map to ids in sorted
    order; a mix is an error naming the first stray line.

    Raises:
        DataError: naming the CSV line of the first bad label.
    """
    raw = raw.reset_index(drop=True)
    empty = (raw == "").to_numpy()
    if empty.any():
        raise DataError(f"{line(int(np.flatnonzero(empty)[0]))}: empty label")
    as_num = pd.to_numeric(raw, errors="coerce")
    is_int = (as_num.notna() & (as_num == as_num.round())).to_numpy()
    if classes is not None:
        lookup = {c: k for k, c in enumerate(classes)}
        ids = raw.map(lookup)
        numeric = ids.isna().to_numpy() & is_int
        ids[numeric] = as_num[numeric]
        bad = ids.isna().to_numpy() | ~((ids.fillna(-1) >= 0) & (ids.fillna(-1) < len(classes))).to_numpy()
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(f"{line(i)}: label {raw.iloc[i]!r} is not in the class list "
                            f"({len(classes)} classes: {', '.join(list(classes)[:5])}"
                            f"{', ...' if len(classes) > 5 else ''})")
        return ids.to_numpy().astype(np.int64), tuple(classes)
    if is_int.all():
        if (as_num.abs() >= 2 ** 62).any():
            i = int(np.flatnonzero((as_num.abs() >= 2 ** 62).to_numpy())[0])
            raise DataError(f"{line(i)}: label {raw.iloc[i]} is far beyond any class id")
        ids = as_num.to_numpy().astype(np.int64)
        if (ids < 0).any():
            i = int(np.flatnonzero(ids < 0)[0])
            raise DataError(f"{line(i)}: label {ids[i]} is negative")
        distinct = len(np.unique(ids))
        limit = 10 * distinct + ID_SLACK
        if ids.max() >= limit:
            i = int(np.argmax(ids))
            raise DataError(f"{line(i)}: label {ids[i]} is far beyond the {distinct} distinct labels "
                            f"(ids up to {limit - 1} without a class list); pass classes= or put a "
                            f"{CLASSES_FILE} beside the index")
        return ids, tuple(str(c) for c in range(int(ids.max()) + 1))
    if is_int.any():
        # Mostly integers with a stray string (or the reverse): name the odd line out.
        odd = ~is_int if is_int.sum() >= (~is_int).sum() else is_int
        i = int(np.flatnonzero(odd)[0])
        kind = "a name" if odd is not is_int and not is_int[i] else "an integer"
        raise DataError(f"{line(i)}: label {raw.iloc[i]!r} is {kind} among "
                        f"{'integer' if kind == 'a name' else 'name'} labels; use one kind "
                        f"(or a {CLASSES_FILE} beside the index that names every class)")
    names = tuple(sorted(set(raw)))
    lookup = {c: k for k, c in enumerate(names)}
    return raw.map(lookup).to_numpy().astype(np.int64), names


def check_unique_rows(keys: Sequence[np.ndarray], labels: np.ndarray | None, line: Callable[[int], str],
                      what: str) -> None:
    """Refuses an example listed twice, and one example with two labels.

    Args:
        keys: per-row arrays that together identify an example (e.g. path, frame).
        labels: per-row labels (None: the key is the whole row).
        line: row -> where it is (``index.csv line N``).
        what: how to name the example in the message (``"frame"``, ``"pair"``).

    Raises:
        DataError: naming both lines.
    """
    df = pd.DataFrame({f"k{j}": np.asarray(k) for j, k in enumerate(keys)})
    later = df.duplicated(keep="first").to_numpy()
    if not later.any():
        return
    b = int(np.flatnonzero(later)[0])
    a = int(np.flatnonzero((df.iloc[:b] == df.iloc[b]).all(axis=1).to_numpy())[0])
    shown = ", ".join(str(v) for v in df.iloc[a].tolist())
    if labels is not None and labels[a] != labels[b]:
        raise DataError(f"{_both(line(a), line(b))}: the same {what} ({shown}) with two labels, "
                        f"{labels[a]!r} and {labels[b]!r}")
    raise DataError(f"{_both(line(a), line(b))}: the same {what} ({shown}) listed twice; each example "
                    "belongs in an epoch once")


def _both(x: str, y: str) -> str:
    """``a.csv line 2`` and ``a.csv line 5`` -> ``a.csv lines 2 and 5``."""
    px, _, nx = x.rpartition(" line ")
    py, _, ny = y.rpartition(" line ")
    return f"{px} lines {nx} and {ny}" if px and px == py else f"{x} and {y}"


#: What non-finite values (NaN, inf) in the data do: ``"error"`` (default) or ``"warn"``.
NONFINITE = ("error", "warn")


def check_finite(arr: np.ndarray, where: Callable[[int], str], *, nonfinite: str = "error") -> None:
    """Refuses (or warns about) NaN or inf in ``arr``; ``where(k)`` names item ``k`` of its first axis.

    Raises:
        DataError: naming the first item with a non-finite value (``nonfinite="error"``).
    """
    if nonfinite not in NONFINITE:
        raise ValueError(f"nonfinite must be one of {NONFINITE}, got {nonfinite!r}")
    arr = np.asarray(arr)
    if not np.issubdtype(arr.dtype, np.floating):
        return
    ok = np.isfinite(arr.reshape(len(arr), -1)).all(axis=1)
    if ok.all():
        return
    k = int(np.flatnonzero(~ok)[0])
    msg = (f"{where(k)}: holds NaN or inf ({int((~ok).sum())} of {len(arr)} here); "
           "fix the data, or pass nonfinite='warn' (--allow-nonfinite) to keep it")
    if nonfinite == "error":
        raise DataError(msg)
    warnings.warn(msg, stacklevel=3)
