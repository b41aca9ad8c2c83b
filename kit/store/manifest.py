"""The manifest: what a complete store holds (``Manifest``, one ``ShardRecord`` per file), read, checked and written.

On disk it is ``manifest.json``, one JSON object (indent 1, sorted keys)::

    {"count": 12, "key": "<fingerprint>", "kind": "spectrogram-memmap",
     "meta": {...}, "shards": [{"bytes": 1664, "count": 12, "ends": "<blake2b>",
     "name": "frames.npy", "sha256": "<sha256>"}, ...], "version": 2}
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.store.folder import MANIFEST, StoreError, inside, write_json_atomic

#: 2: content digests in index keys, ``ends`` digests per shard, the folder marker.
FORMAT_VERSION = 2

#: The keys of a manifest object, each with the type it must have.
_REQUIRED = {"kind": str, "key": str, "count": int, "shards": list}
_OPTIONAL = ("meta", "version")
#: The keys of a shard's object: the first three are required.
_SHARD_KEYS = ("name", "count", "bytes", "sha256", "ends")


@dataclass(frozen=True)
class ShardRecord:
    """One written file of a store, as the manifest lists it."""

    name: str  # its path inside the store folder
    count: int  # the examples it holds (0 for a file beside them, as labels.npy)
    bytes: int
    sha256: str | None = None
    ends: str | None = None  # checks.ends_digest, checked at every open; None in a format-1 manifest

    @classmethod
    def from_dict(cls, d: dict) -> ShardRecord:
        """The record of a shard's JSON object (keys it does not know are ignored)."""
        return cls(**{k: d[k] for k in _SHARD_KEYS if k in d})

    def to_dict(self) -> dict[str, Any]:
        """The shard's JSON object: ``name``, ``count``, ``bytes`` and the digests it has."""
        d = {"name": self.name, "count": self.count, "bytes": self.bytes}
        d.update({k: getattr(self, k) for k in ("sha256", "ends") if getattr(self, k) is not None})
        return d

    def __getitem__(self, key: str) -> Any:
        """``shard["bytes"]``, as when the manifest's shards were plain dicts."""
        if key not in _SHARD_KEYS:
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        """``shard.get("ends")``, as when the manifest's shards were plain dicts."""
        value = getattr(self, key, None) if key in _SHARD_KEYS else None
        return default if value is None else value


@dataclass
class Manifest:
    """What a complete store holds. Its ``meta`` is free-form, per kind; ``build`` adds ``created``,
    ``build_seconds`` and ``built``, and ``meta["module"]`` names the module whose ``register_check``
    deep-checks the kind in ``verify``."""

    kind: str  # what the store holds ("spectrogram-tfrecord", ...)
    key: str  # the fingerprint of its inputs and options
    count: int  # the sum of its shards' counts
    shards: list[ShardRecord]  # in the order they were planned
    meta: dict[str, Any] = field(default_factory=dict)
    version: int = FORMAT_VERSION  # of the kit that wrote it

    @classmethod
    def load(cls, folder: str | os.PathLike) -> Manifest:
        """Reads and checks ``folder/manifest.json`` (every shard name must stay inside ``folder``).
        Raises ``StoreError`` naming what is wrong."""
        path = Path(folder) / MANIFEST
        try:
            with open(path) as f:
                d = json.load(f)
        except FileNotFoundError:
            raise StoreError(f"{folder}: no {MANIFEST}; the store is missing or incomplete") from None
        except NotADirectoryError:
            raise StoreError(f"{folder}: not a folder") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise StoreError(f"{path}: not valid JSON ({e})") from None
        _check_fields(d, path, folder)
        return cls.from_dict(d)

    @classmethod
    def from_dict(cls, d: dict) -> Manifest:
        """The manifest of its JSON object (as checked by ``load``)."""
        return cls(**{**d, "shards": [ShardRecord.from_dict(sh) for sh in d["shards"]]})

    def to_dict(self) -> dict[str, Any]:
        """The JSON object ``manifest.json`` holds."""
        return {"kind": self.kind, "key": self.key, "count": self.count,
                "shards": [s.to_dict() for s in self.shards], "meta": self.meta, "version": self.version}

    def save(self, folder: str | os.PathLike) -> None:
        """Writes ``folder/manifest.json``, whole or not at all."""
        write_json_atomic(Path(folder) / MANIFEST, self.to_dict())

    def path(self, folder: str | os.PathLike, shard: ShardRecord) -> Path:
        """The file of ``shard`` in ``folder``, checked to stay inside it."""
        return inside(folder, shard.name)


def _check_fields(d: Any, path: Path, folder: str | os.PathLike) -> None:
    """Raises ``StoreError`` unless ``d`` has a manifest's fields, of their types, and no others,
    and names no shard outside ``folder``."""
    if not isinstance(d, dict) or any(not isinstance(d.get(k), t) for k, t in _REQUIRED.items()):
        raise StoreError(f"{path}: malformed manifest (needs kind, key, count and a list of shards)")
    extra = set(d) - {*_REQUIRED, *_OPTIONAL}
    if not isinstance(d.get("meta", {}), dict) or extra:
        raise StoreError(f"{path}: malformed manifest (unexpected fields {sorted(extra)})")
    for i, sh in enumerate(d["shards"]):
        if not isinstance(sh, dict) or not isinstance(sh.get("name"), str) \
                or not isinstance(sh.get("count"), int) or not isinstance(sh.get("bytes"), int):
            raise StoreError(f"{path}: malformed manifest (shard {i} needs a name, a count and bytes)")
        inside(folder, sh["name"], what=str(path))


def complete(folder: str | os.PathLike, key: str | None = None) -> Manifest | None:
    """The manifest if ``folder`` holds a complete store (with ``key``, if given), else None.
    Raises ``StoreError`` for a malformed manifest (such a store is neither used nor rebuilt over)."""
    if not (Path(folder) / MANIFEST).is_file():
        return None
    m = Manifest.load(folder)
    if key is not None and m.key != key:
        return None
    return m
