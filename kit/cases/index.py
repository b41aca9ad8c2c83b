"""``CsvIndex``: what every case's index shares.

A case's index is a frozen dataclass with at least ``csv_path``, ``split`` (the
``split`` column, or None) and a content key, subclassing ``CsvIndex``. It reads
its CSV with ``read_csv`` (the validation preamble: the file exists, is a CSV, has
the required columns and at least one row), validates its own columns, and
implements ``_take(rows, split, key)``, the rows ``rows`` as a new index. The rest
(``fingerprint``, ``subset``, ``of_split``) comes from here.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from kit import store
from kit.errors import DataError


class CsvIndex:
    """Base of a case's validated index (see the module docstring).

    Subclasses set ``COLUMNS`` (the required columns, in the order the message
    names them) and implement ``__len__`` and ``_take``.
    """

    #: Required columns; an optional ``split`` column is always allowed.
    COLUMNS: tuple[str, ...] = ()

    # What every subclass has (its dataclass fields): the CSV, its split column, the content key.
    csv_path: Path
    split: np.ndarray | None
    _key: list

    def __len__(self) -> int:
        raise NotImplementedError

    @classmethod
    def read_csv(cls, path: str | os.PathLike, *, dtype) -> tuple[pd.DataFrame, Path]:
        """Reads an index CSV: ``(rows, resolved path)``. Raises ``DataError`` on a missing
        file, an empty or malformed CSV, a missing column, or no rows."""
        csv_path = Path(path).resolve()
        if not csv_path.exists():
            raise DataError(f"{path}: index file not found")
        try:
            df = pd.read_csv(csv_path, dtype=dtype, keep_default_na=False)
        except pd.errors.EmptyDataError:
            raise DataError(f"{path}: index is empty (no header, no rows)") from None
        except pd.errors.ParserError as e:
            raise DataError(f"{path}: not a valid CSV ({e})") from None
        missing = [c for c in cls.COLUMNS if c not in df.columns]
        if missing:
            raise DataError(
                f"{path}: missing column(s) {', '.join(missing)}; an index needs "
                f"{','.join(cls.COLUMNS)}[,split], found {','.join(map(str, df.columns))}"
            )
        if len(df) == 0:
            raise DataError(f"{path}: index has a header but no rows")
        return df, csv_path

    @staticmethod
    def split_column(df: pd.DataFrame) -> np.ndarray | None:
        """The ``split`` column as strings, or None."""
        return df["split"].astype(str).to_numpy() if "split" in df.columns else None

    def fingerprint(self) -> str:
        """Key of the index's content: its rows, and each file's size and mtime."""
        return store.fingerprint(self._key)

    def subset(self, rows):
        """A new index of the given rows (a boolean mask or integer positions)."""
        rows = np.arange(len(self))[rows]
        if len(rows) == 0:
            raise DataError(f"{self.csv_path.name}: the subset selects no rows")
        split = None if self.split is None else self.split[rows]
        return self._take(rows, split, [self._key, rows.tolist()])

    def of_split(self, name: str):
        """The rows whose ``split`` column equals ``name``."""
        if self.split is None:
            raise DataError(f"{self.csv_path.name}: has no split column")
        return self.subset(self.split == name)

    def _take(self, rows: np.ndarray, split, key: list):
        raise NotImplementedError
