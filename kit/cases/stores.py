"""What the cases' derived stores share, without TensorFlow: folder names, shard names, shard sizes.

* ``store_folder``: ``<workdir>/<case>-<format>-<key[:16]>``, the content-keyed folder;
* ``shard_tags``: ``00000-of-00003`` names of ``count`` shards;
* ``check_shards``: every shard of a manifest present at the size it was written (before
  reading: a shard cut short or replaced is refused).

The TensorFlow half, the deep check of a TFRecord shard, is ``kit.cases.tfrecords``.
"""

from __future__ import annotations

from pathlib import Path

from kit import store
from kit.store.folder import default_workdir


def store_folder(case: str, fmt: str, key: str, workdir=None) -> Path:
    """The content-keyed folder of a ``case`` store in format ``fmt`` under ``workdir``."""
    root = Path(workdir) if workdir is not None else default_workdir()
    return root / f"{case}-{fmt}-{key[:16]}"


def shard_tags(count: int) -> list[str]:
    """``["00000-of-00003", ...]``: the numbering of ``count`` shards (at least 5 digits)."""
    width = max(5, len(str(count)))
    return [f"{k:0{width}d}-of-{count:0{width}d}" for k in range(count)]


def check_shards(folder: Path, manifest: store.Manifest) -> list[str]:
    """Paths of every shard of ``manifest``, each checked against the size it was written at.

    Raises:
        kit.store.StoreError: a shard missing or of another size, naming it.
    """
    paths = []
    for s in manifest.shards:
        path = Path(folder) / s.name
        size = path.stat().st_size if path.exists() else 0
        if size != s.bytes:
            raise store.StoreError(
                f"{path}: missing or {size} bytes where the manifest says {s.bytes}; "
                f"run `python -m kit verify {folder}` and reconvert"
            )
        paths.append(str(path))
    return paths
