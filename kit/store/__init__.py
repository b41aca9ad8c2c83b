"""The derived-data store: content-keyed folders, atomic shard writes, manifest, resume, verify.

Every derived file (TFRecord shards, memmaps, feature caches) goes through ``build``: the folder's
``key`` fingerprints the inputs and options, so a changed input never reuses a stale derivative;
each shard is written under a temporary name, checksummed and renamed, so an interrupted build
resumes; ``manifest.json`` is written last, so a folder without it is never read as complete.
``verify`` re-reads a folder against its manifest.
"""

from __future__ import annotations

from kit.store.builder import Shard, build
from kit.store.checks import verify
from kit.store.folder import StoreError
from kit.store.keys import fingerprint
from kit.store.manifest import Manifest, ShardRecord, complete

#: What users and the kit's cases call; the rest lives in the modules (``kit.store.folder``, ``files``,
#: ``checks``, ``keys``, ``manifest``, ``builder``), where the kit's own code imports it from.
__all__ = ["build", "Shard", "verify", "complete", "Manifest", "ShardRecord", "fingerprint", "StoreError"]
