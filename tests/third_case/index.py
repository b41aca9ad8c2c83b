"""A toy third case's index: rows of small float tables in .npy files (``table,row,target``)."""

from pathlib import Path

import numpy as np
import pandas as pd


class RowIndex:
    """The validated index: each row names a table file, a row in it and an integer target."""

    def __init__(self, tables: list[Path], rows: np.ndarray, targets: np.ndarray):
        self.tables, self.rows, self.targets = tables, rows, targets

    def __len__(self) -> int:
        return len(self.rows)

    @classmethod
    def from_csv(cls, csv) -> "RowIndex":
        csv = Path(csv)
        df = pd.read_csv(csv)
        missing = {"table", "row", "target"} - set(df.columns)
        if missing:
            raise ValueError(f"{csv}: missing column(s) {sorted(missing)}")
        tables = [csv.parent / t for t in df["table"]]
        for line, t in enumerate(tables, start=2):
            if not t.is_file():
                raise FileNotFoundError(f"{csv}, row {line}: {t} not found")
        return cls(tables, df["row"].to_numpy(np.int64), df["target"].to_numpy(np.int64))

    def load(self) -> np.ndarray:
        """Every row's values, in index order."""
        return np.stack([np.load(t, allow_pickle=False)[r] for t, r in zip(self.tables, self.rows)])
