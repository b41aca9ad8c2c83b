"""``PairIndex`` and ``Palette``: the validated image/mask pairs and the colour code of the masks.

The index CSV has columns ``image,label[,split]`` (paths relative to the CSV); the palette is a
CamVid-style ``class_dict.csv`` (``name,r,g,b``; class ``k`` on data row ``k``).
``PairIndex.from_csv`` checks every pair from file headers and tails only (exists, an 8-bit image,
not cut short, image and mask of one size); ``PairIndex.check`` decodes everything once. Each
problem is one ``DataError`` naming the CSV line and the file.

The reference decode (``PairIndex.read``, Pillow), which every loader variant must match: images as
RGB; each mask colour to its class id through one lookup in a table of all 2**24 colours; both
cropped or padded, centred, as ``tf.image.resize_with_crop_or_pad`` does (masks pad with
``Palette.pad_id``).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image, UnidentifiedImageError

from kit import store
from kit.cases import CsvIndex, validate
from kit.errors import DataError
from kit.progress import tqdm
from kit.store.keys import files_fingerprint

#: Pillow modes of 8-bit images that every decoder (Pillow, OpenCV, TensorFlow) turns into the same RGB.
MODES = ("1", "L", "LA", "P", "PA", "RGB", "RGBA", "RGBX")
#: The class id that marks "colour not in the palette" while looking up; never delivered.
UNKNOWN = 255
#: A PNG file ends with its 12-byte IEND chunk (length 0, type, CRC).
_PNG_END = b"\x00\x00\x00\x00IEND\xaeB`\x82"


def as_size(size) -> tuple[int, int]:
    """``512`` or ``(512, 512)`` -> ``(height, width)``, validated."""
    if isinstance(size, (int, np.integer)) and not isinstance(size, bool):
        size = (size, size)
    try:
        h, w = (int(v) for v in size)
    except (TypeError, ValueError):
        raise ValueError(f"size must be an int or (height, width), got {size!r}") from None
    if h <= 0 or w <= 0:
        raise ValueError(f"size must be positive, got {size!r}")
    return h, w


def crop_or_pad(arr: np.ndarray, size: tuple[int, int], fill=0) -> np.ndarray:
    """Crops or pads ``arr`` (H, W, ...) to ``size``, centred, padding with ``fill``, at the offsets of
    ``tf.image.resize_with_crop_or_pad``."""
    th, tw = size
    h, w = arr.shape[:2]
    top, left = max(h - th, 0) // 2, max(w - tw, 0) // 2
    arr = arr[top:top + th, left:left + tw]
    h, w = arr.shape[:2]
    if (h, w) == (th, tw):
        return arr
    out = np.full((th, tw) + arr.shape[2:], fill, arr.dtype)
    top, left = (th - h) // 2, (tw - w) // 2
    out[top:top + h, left:left + w] = arr
    return out


def read_rgb(path: str | os.PathLike) -> np.ndarray:
    """Decodes an image file into RGB uint8 ``(H, W, 3)`` with Pillow (the reference decode); a
    ``DataError`` names a file missing, not an image, truncated or corrupt."""
    try:
        with Image.open(path) as im:
            _check_mode(path, im.mode)
            im.load()
            return np.asarray(im.convert("RGB"))
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except UnidentifiedImageError:
        raise DataError(f"{path}: not an image file (unreadable)") from None
    except (OSError, SyntaxError, ValueError) as e:  # Pillow's truncated/corrupt data errors
        raise DataError(f"{path}: unreadable image, truncated or corrupt ({e})") from None


def _check_mode(path, mode: str) -> None:
    if mode not in MODES:
        raise DataError(f"{path}: image mode {mode!r} is not supported; convert it to 8-bit RGB, grey-scale "
                        "or palette PNG (16-bit and float images decode differently in each library)")


@dataclass(frozen=True, eq=False)
class Palette:
    """The classes and their mask colours. Build it with ``Palette.from_csv``.

    Attributes:
        names: class names in id order.
        colours: ``(C, 3)`` uint8, the RGB colour of each class.
        ignore_label: the id that pixels of unknown colour (and padding) get, which the loss
            skips; ``None`` (default): an unknown colour is an error.
        source: the CSV it came from (for messages).
    """

    names: tuple[str, ...]
    colours: np.ndarray
    ignore_label: int | None = None
    source: str = "palette"

    def __post_init__(self):
        n = len(self.names)
        if n == 0:
            raise ValueError("a palette needs at least one class")
        if n > UNKNOWN:
            raise ValueError(f"at most {UNKNOWN} classes fit uint8 class ids, got {n}")
        if self.colours.shape != (n, 3) or self.colours.dtype != np.uint8:
            raise ValueError(f"colours must be uint8 of shape ({n}, 3), got "
                             f"{self.colours.dtype} {self.colours.shape}")
        if self.ignore_label is not None and (
                not isinstance(self.ignore_label, (int, np.integer)) or isinstance(self.ignore_label, bool)
                or not 0 <= self.ignore_label <= 255):
            raise ValueError(f"ignore_label must be an integer in 0..255 or None, got {self.ignore_label!r}")

    @classmethod
    def from_csv(cls, path: str | os.PathLike, *, ignore_label: int | None = None) -> "Palette":
        """Reads a CamVid-style ``class_dict.csv`` (``name,r,g,b``). Raises ``DataError``."""
        path = Path(path)
        if not path.exists():
            raise DataError(f"{path}: palette file not found")
        try:
            df = pd.read_csv(path, dtype={"name": str}, keep_default_na=False, skipinitialspace=True)
        except pd.errors.EmptyDataError:
            raise DataError(f"{path}: palette is empty (no header, no rows)") from None
        except pd.errors.ParserError as e:
            raise DataError(f"{path}: not a valid CSV ({e})") from None
        df.columns = [str(c).strip().lower() for c in df.columns]
        missing = [c for c in ("name", "r", "g", "b") if c not in df.columns]
        if missing:
            raise DataError(f"{path}: missing column(s) {', '.join(missing)}; a palette needs "
                            f"name,r,g,b, found {','.join(df.columns)}")
        if len(df) == 0:
            raise DataError(f"{path}: palette has a header but no rows")
        if len(df) > UNKNOWN:
            raise DataError(f"{path}: {len(df)} classes; at most {UNKNOWN} fit uint8 class ids")
        rgb = df[["r", "g", "b"]].apply(pd.to_numeric, errors="coerce")
        bad = rgb.isna().any(axis=1) | (rgb < 0).any(axis=1) | (rgb > 255).any(axis=1) | (rgb != rgb.round()).any(axis=1)
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            shown = ", ".join(str(v) for v in df[["r", "g", "b"]].iloc[i].tolist())
            raise DataError(f"{path.name} line {i + 2}: colour ({shown}) is not three integers in 0..255")
        colours = rgb.to_numpy().astype(np.uint8)
        codes = _codes(colours)
        uniq, first, counts = np.unique(codes, return_index=True, return_counts=True)
        if (counts > 1).any():
            c = uniq[np.flatnonzero(counts > 1)[0]]
            rows = np.flatnonzero(codes == c)
            raise DataError(f"{path.name} lines {rows[0] + 2} and {rows[1] + 2}: the same colour "
                            f"{tuple(int(v) for v in colours[rows[0]])} for two classes")
        names = tuple(str(s).strip() for s in df["name"])
        validate.check_names(names, [f"{path.name} line {i + 2}" for i in range(len(names))])
        return cls(names, colours, ignore_label, str(path))

    def __len__(self) -> int:
        return len(self.names)

    @property
    def num_classes(self) -> int:
        return len(self.names)

    def with_ignore_label(self, ignore_label: int | None) -> "Palette":
        """The same palette with another ignore label (see the class docstring)."""
        return replace(self, ignore_label=ignore_label)

    @property
    def pad_id(self) -> int | None:
        """The id of padded mask pixels: the ignore label, else the class of (0, 0, 0), else None."""
        if self.ignore_label is not None:
            return int(self.ignore_label)
        black = np.flatnonzero((self.colours == 0).all(axis=1))
        return int(black[0]) if len(black) else None

    @property
    def unknown_id(self) -> int:
        """What the lookup gives a colour not in the palette: the ignore label, or ``UNKNOWN``."""
        return UNKNOWN if self.ignore_label is None else int(self.ignore_label)

    def fingerprint(self) -> str:
        return store.fingerprint("palette", list(self.names), self.colours.tolist(), self.ignore_label)

    @functools.cached_property
    def lut(self) -> np.ndarray:
        """Class id of every 24-bit colour ``r << 16 | g << 8 | b`` (16 MB, uint8)."""
        lut = np.full(1 << 24, self.unknown_id, np.uint8)
        lut[_codes(self.colours)] = np.arange(len(self.names), dtype=np.uint8)
        return lut

    def lookup(self, rgb: np.ndarray, path: str | os.PathLike = "mask") -> np.ndarray:
        """Class ids ``(H, W)`` uint8 of a colour mask ``(H, W, 3)``, in one vectorised lookup; a
        colour not in the palette (no ignore label set) raises ``DataError``."""
        ids = self.lut[_codes(rgb)]
        if self.ignore_label is None:
            self.check_known(rgb, ids == UNKNOWN, path)
        return ids

    def check_known(self, rgb: np.ndarray, unknown: np.ndarray, path) -> None:
        """Raises ``DataError`` if any pixel is flagged ``unknown`` (a colour not in the palette)."""
        if not unknown.any():
            return
        colours, counts = np.unique(rgb[unknown].reshape(-1, 3), axis=0, return_counts=True)
        k = int(np.argmax(counts))
        more = (f"; {len(colours)} unknown colours, {int(counts.sum()):,} pixels in all"
                if len(colours) > 1 else "")
        raise DataError(f"{path}: colour {tuple(int(v) for v in colours[k])} is not in the palette "
                        f"({self.source}): {int(counts[k]):,} pixels{more}. Add the colour to the palette, "
                        f"or set an ignore label (Palette.from_csv(..., ignore_label=255)) so the loss skips it")

    def one_hot(self, ids: np.ndarray) -> np.ndarray:
        """``(..., C)`` float32 one-hot of class ids; ids outside 0..C-1 (ignored) get all zeros."""
        return (ids[..., None] == np.arange(len(self.names), dtype=ids.dtype)).astype(np.float32)


def _codes(rgb: np.ndarray) -> np.ndarray:
    """``r << 16 | g << 8 | b`` as int32, for ``(..., 3)`` uint8 colours."""
    rgb = np.asarray(rgb)
    return (rgb[..., 0].astype(np.int32) << 16) | (rgb[..., 1].astype(np.int32) << 8) | rgb[..., 2]


@dataclass(frozen=True, eq=False)
class PairIndex(CsvIndex):
    """A validated index of image/mask pairs. Build it with ``PairIndex.from_csv``.

    Attributes:
        csv_path: the CSV it came from.
        images: absolute path of each row's image (str).
        labels: absolute path of each row's colour mask (str).
        heights, widths: per row, the size of the image (and of its mask).
        lines: per row, its line in the CSV (for messages).
        split: per row, the ``split`` column, or None.
    """

    csv_path: Path
    images: tuple[str, ...]
    labels: tuple[str, ...]
    heights: np.ndarray
    widths: np.ndarray
    lines: np.ndarray
    split: np.ndarray | None = None
    _key: list = field(default_factory=list, repr=False)

    COLUMNS = ("image", "label")

    def __len__(self) -> int:
        return len(self.images)

    def where(self, i: int) -> str:
        """``index.csv line N``: where row ``i`` comes from."""
        return f"{self.csv_path.name} line {int(self.lines[i])}"

    @classmethod
    def from_csv(cls, path: str | os.PathLike) -> "PairIndex":
        """Reads and validates an index CSV (headers and tails only). Raises ``DataError``."""
        df, csv_path = cls.read_csv(path, dtype=str)
        name, root = csv_path.name, csv_path.parent
        images, labels = [], []
        sizes = np.empty((len(df), 2), np.int64)
        for i, (img_rel, lab_rel) in enumerate(zip(df["image"].str.strip(), df["label"].str.strip())):
            where = f"{name} line {i + 2}"
            if not img_rel or not lab_rel:
                raise DataError(f"{where}: empty {'image' if not img_rel else 'label'} path")
            img, lab = str((root / img_rel).resolve()), str((root / lab_rel).resolve())
            img_size = _header(img, where, "image")
            lab_size = _header(lab, where, "mask")
            if img_size != lab_size:
                raise DataError(f"{where}: image {img} is {img_size[0]}x{img_size[1]} (width x height) but its "
                                f"mask {lab} is {lab_size[0]}x{lab_size[1]}; an image and its mask must match")
            images.append(img)
            labels.append(lab)
            sizes[i] = img_size[1], img_size[0]
        validate.check_unique_rows([np.asarray(images)], np.asarray(labels), lambda i: f"{name} line {i + 2}",
                                   "image")
        split = cls.split_column(df)
        key = [images, labels, files_fingerprint(images), files_fingerprint(labels)]
        return cls(csv_path, tuple(images), tuple(labels), sizes[:, 0], sizes[:, 1],
                   np.arange(len(df)) + 2, split, key)

    def _take(self, rows: np.ndarray, split, key: list) -> "PairIndex":
        pick = lambda seq: tuple(seq[r] for r in rows)  # noqa: E731
        return PairIndex(self.csv_path, pick(self.images), pick(self.labels), self.heights[rows],
                         self.widths[rows], self.lines[rows], split, key)

    def check_size(self, size, palette: Palette) -> tuple[int, int]:
        """Validates the target ``size`` against the pairs; returns it as ``(height, width)``. A pair
        that needs padding where the palette has no id for it raises ``DataError``."""
        size = as_size(size)
        if palette.pad_id is None:
            small = np.flatnonzero((self.heights < size[0]) | (self.widths < size[1]))
            if len(small):
                i = int(small[0])
                raise DataError(f"{self.where(i)}: {self.labels[i]} is {self.widths[i]}x{self.heights[i]}, smaller "
                                f"than the target {size[1]}x{size[0]} (width x height), and the palette has no "
                                f"class for padded pixels: set an ignore label (Palette.from_csv(..., ignore_label=255))")
        return size

    def read(self, i: int, palette: Palette, size=(512, 512)) -> tuple[np.ndarray, np.ndarray]:
        """Row ``i`` decoded by the reference decode: ``(image (H, W, 3) uint8, class ids (H, W) uint8)``."""
        size = self.check_size(size, palette)
        image = self.read_image(i, size)
        return image, self.read_ids(i, palette, size)

    def read_image(self, i: int, size) -> np.ndarray:
        """Row ``i``'s image, RGB uint8, cropped or padded (black) to ``size``."""
        try:
            return crop_or_pad(read_rgb(self.images[i]), as_size(size), 0)
        except DataError as e:
            raise DataError(f"{self.where(i)}: {e}") from None

    def read_ids(self, i: int, palette: Palette, size) -> np.ndarray:
        """Row ``i``'s class ids, uint8, cropped (before the lookup) and padded with ``pad_id``."""
        size = as_size(size)
        try:
            rgb = read_rgb(self.labels[i])
            ids = palette.lookup(crop_or_pad(rgb, (min(size[0], rgb.shape[0]), min(size[1], rgb.shape[1]))),
                                 self.labels[i])
        except DataError as e:
            raise DataError(f"{self.where(i)}: {e}") from None
        return crop_or_pad(ids, size, palette.pad_id if palette.pad_id is not None else 0)

    def check(self, palette: Palette, *, progress: bool = False) -> None:
        """Decodes every pair once; the first corrupt image or unknown mask colour raises ``DataError``."""
        for i in tqdm(range(len(self)), desc="check", unit="pair", disable=not progress):
            try:
                read_rgb(self.images[i])
                palette.lookup(read_rgb(self.labels[i]), self.labels[i])
            except DataError as e:
                raise DataError(f"{self.where(i)}: {e}") from None


def _header(path: str, where: str, what: str) -> tuple[int, int]:
    """(width, height) of an image file from its header; checks mode and that it is complete."""
    try:
        with Image.open(path) as im:
            fmt, mode, size = im.format, im.mode, im.size
    except FileNotFoundError:
        raise DataError(f"{where}: {what} {path}: file not found") from None
    except UnidentifiedImageError:
        raise DataError(f"{where}: {what} {path}: not an image file (unreadable)") from None
    except (OSError, SyntaxError, ValueError) as e:
        raise DataError(f"{where}: {what} {path}: unreadable image header ({e})") from None
    try:
        _check_mode(path, mode)
    except DataError as e:
        raise DataError(f"{where}: {what} {e}") from None
    if fmt in ("PNG", "JPEG"):
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(f.tell() - 1024, 0))
            tail = f.read()
        # A JPEG's end marker may have a few bytes after it.
        complete = _PNG_END in tail if fmt == "PNG" else b"\xff\xd9" in tail
        if not complete:
            raise DataError(f"{where}: {what} {path}: truncated {fmt} file (its end marker is missing)")
    return size
