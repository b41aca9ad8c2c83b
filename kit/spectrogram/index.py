"""``FrameIndex``: the validated list of spectrogram frames a loader serves.

The index CSV has columns ``path,frame,label[,split]``: ``path`` relative to the
CSV's folder, ``frame`` the position in that ``.npy`` file's first axis, ``label``
an int or a class name (names map to ids in sorted order, see ``classes``).

``FrameIndex.from_csv`` checks everything before any training: every file exists,
is a NumPy array that needs no pickle, is not truncated, has 3 dimensions
``(frames, H, W)`` with the same ``(H, W)`` and dtype (float16 or float32) as the
others, and every frame number is in range. Each problem is one ``DataError``
naming the CSV line and the file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from kit.cases import CsvIndex, validate
from kit.errors import DataError
from kit.store.files import load_npy
from kit.store.keys import files_fingerprint

DTYPES = (np.dtype("float32"), np.dtype("float16"))


def open_frames(path: str | os.PathLike) -> np.ndarray:
    """Memory-maps a ``.npy`` file of frames, refusing anything that needs pickle.

    Raises:
        DataError: naming the file, when it is missing, truncated, not a NumPy
            file, or holds Python objects.
    """
    try:
        return load_npy(path)
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except ValueError as e:
        msg = str(e)
        if "object" in msg.lower() or "pickle" in msg.lower():
            raise DataError(
                f"{path}: holds Python objects and would need pickle to load; refused "
                "(save it as a numeric array)"
            ) from None
        raise DataError(f"{path}: not a readable .npy array, truncated or corrupt ({msg})") from None
    except (OSError, EOFError) as e:
        raise DataError(f"{path}: cannot read ({e})") from None


@dataclass(frozen=True, eq=False)
class FrameIndex(CsvIndex):
    """A validated index of frames. Build it with ``FrameIndex.from_csv``.

    Attributes:
        csv_path: the CSV it came from.
        files: absolute paths of the distinct ``.npy`` files, in first-seen order.
        file_ids: per row, the position of its file in ``files``.
        frames: per row, the frame number within the file.
        labels: per row, the class id (int64).
        classes: class names in id order (ints become their decimal strings).
        frame_shape: ``(H, W)`` of every frame.
        file_dtype: dtype of the files (loaders deliver float32).
        file_frames: per file, how many frames it holds.
        split: per row, the ``split`` column, or None.
    """

    csv_path: Path
    files: tuple[Path, ...]
    file_ids: np.ndarray
    frames: np.ndarray
    labels: np.ndarray
    classes: tuple[str, ...]
    frame_shape: tuple[int, int]
    file_dtype: np.dtype
    file_frames: np.ndarray
    split: np.ndarray | None = None
    _key: list = field(default_factory=list, repr=False)

    COLUMNS = ("path", "frame", "label")

    def __len__(self) -> int:
        return len(self.frames)

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    @property
    def paths(self) -> np.ndarray:
        """Per row, the absolute path of its file (as str)."""
        return np.asarray([str(p) for p in self.files], dtype=object)[self.file_ids]

    @classmethod
    def from_csv(cls, path: str | os.PathLike, *, classes=None) -> "FrameIndex":
        """Reads and validates an index CSV. Raises ``DataError`` on any problem.

        Args:
            path: the index CSV.
            classes: the class list (names in id order, or the path of a ``classes.txt``);
                by default a ``classes.txt`` beside the index, if there is one. Give two
                splits' indexes the same list and a class gets the same id in both.
        """
        df, csv_path = cls.read_csv(path, dtype={"path": str, "label": str, "split": str})
        return cls._from_frame(df, csv_path, validate.resolve_classes(classes, csv_path))

    @classmethod
    def _from_frame(cls, df: pd.DataFrame, csv_path: Path, classes=None) -> "FrameIndex":
        name = csv_path.name

        def line(i: int) -> str:  # data row i is on CSV line i + 2 (1-based, after the header)
            return f"{name} line {i + 2}"

        frames = pd.to_numeric(df["frame"], errors="coerce")
        bad = frames.isna() | (frames != frames.round())
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataError(f"{line(i)}: frame {df['frame'].iloc[i]!r} is not an integer")
        frames = frames.to_numpy().astype(np.int64)

        raw = df["label"].astype(str).str.strip()
        labels, classes = validate.class_ids(raw, line, classes=classes)

        rel = df["path"].astype(str).str.strip()
        if (rel == "").any():
            i = int(np.flatnonzero((rel == "").to_numpy())[0])
            raise DataError(f"{line(i)}: empty path")
        uniq, first_row, file_ids = np.unique(rel.to_numpy(), return_index=True, return_inverse=True)
        order = np.argsort(first_row)  # files in first-seen order
        remap = np.empty_like(order)
        remap[order] = np.arange(len(order))
        file_ids = remap[file_ids]
        root = csv_path.parent
        files = tuple((root / uniq[k]).resolve() for k in order)
        first_rows = first_row[order]
        # Paths resolved: two spellings of one file are the same frame.
        resolved = np.unique(np.asarray([str(f) for f in files]), return_inverse=True)[1][file_ids]
        validate.check_unique_rows([resolved, frames], raw.to_numpy(), line, "frame")

        shape: tuple[int, int] | None = None
        dtype = None
        file_frames = np.empty(len(files), np.int64)
        for k, (f, row) in enumerate(zip(files, first_rows)):
            try:
                arr = open_frames(f)
            except DataError as e:
                raise DataError(f"{line(int(row))}: {e}") from None
            if arr.ndim != 3:
                raise DataError(
                    f"{line(int(row))}: {f}: expected an array (frames, H, W), got shape {arr.shape}"
                )
            if arr.dtype not in DTYPES:
                raise DataError(f"{line(int(row))}: {f}: dtype {arr.dtype}; expected float32 or float16")
            if shape is None:
                shape, dtype = (int(arr.shape[1]), int(arr.shape[2])), arr.dtype
            elif arr.shape[1:] != shape or arr.dtype != dtype:
                raise DataError(
                    f"{line(int(row))}: {f}: frames are {arr.shape[1:]} {arr.dtype}, but "
                    f"{files[0]} has {shape} {dtype}; all files must agree"
                )
            file_frames[k] = arr.shape[0]
        limit = file_frames[file_ids]
        out = (frames < 0) | (frames >= limit)
        if out.any():
            i = int(np.flatnonzero(out)[0])
            raise DataError(
                f"{line(i)}: frame {frames[i]} is out of range for {files[file_ids[i]]}, "
                f"which holds {limit[i]} frames (0..{limit[i] - 1})"
            )
        assert shape is not None  # read_csv refuses an index without rows: one file at least was read
        split = cls.split_column(df)
        key = [rel.tolist(), frames.tolist(), labels.tolist(), list(classes),
               files_fingerprint(files)]
        return cls(csv_path, files, file_ids.astype(np.int64), frames, labels, classes,
                   shape, np.dtype(dtype), file_frames, split, key)

    def _take(self, rows: np.ndarray, split, key: list) -> "FrameIndex":
        return FrameIndex(self.csv_path, self.files, self.file_ids[rows], self.frames[rows],
                          self.labels[rows], self.classes, self.frame_shape, self.file_dtype,
                          self.file_frames, split, key)

    def read(self, i: int) -> np.ndarray:
        """Row ``i``'s frame straight from its file, float32 ``(H, W)`` (for checks)."""
        arr = open_frames(self.files[self.file_ids[i]])
        return np.asarray(arr[self.frames[i]], dtype=np.float32)

    def read_all(self) -> np.ndarray:
        """Every frame in index order, float32 ``(N, H, W)``, reading each file once."""
        out = np.empty((len(self),) + self.frame_shape, np.float32)
        for k, rows in self.rows_by_file():
            out[rows] = open_frames(self.files[k])[self.frames[rows]]
        return out

    def rows_by_file(self):
        """Yields ``(file_id, rows)`` with the rows of each file, so each file is opened once."""
        order = np.argsort(self.file_ids, kind="stable")
        ids = self.file_ids[order]
        cuts = np.flatnonzero(np.diff(ids)) + 1
        for rows in np.split(order, cuts):
            yield int(self.file_ids[rows[0]]), rows
