"""The derived-data store: content-keyed folders, atomic shard writes, manifest, resume, verify.

Every derived file (TFRecord shards, memmaps, feature caches) goes through ``build``: the folder's
``key`` fingerprints the inputs and options, so a changed input never reuses a stale derivative;
each shard is written under a temporary name, checksummed and renamed, so an interrupted build
resumes; ``manifest.json`` is written last, so a folder without it is never read as complete.
``verify`` re-reads a folder against its manifest.
"""

from __future__ import annotations

from kit.store.builder import Shard, build

# Importable from here but not listed: what the tests and the lab's digest instrument use besides.
from kit.store.checks import (
    DEEP_CHECKS,  # noqa: F401
    check_open,
    checks_on,
    register_check,
    verify,
)
from kit.store.files import (
    KERNEL_READ_DEFAULT,  # noqa: F401
    ask_to_read,
    kernel_read_bytes,
    load_npy,
    open_memmap,
    read_npy_header,
)
from kit.store.folder import (  # noqa: F401
    LOCK,
    MANIFEST,
    PARTIAL,
    STORE_MARKER,
    StoreError,
    atomic_path,
    check_free_space,
    default_workdir,
    store_kind,
    store_lock,
)
from kit.store.keys import files_fingerprint, fingerprint, forget_digests
from kit.store.manifest import FORMAT_VERSION, Manifest, ShardRecord, complete

# What the kit's modules and notebooks call; the rest lives in the parts above.
__all__ = ["StoreError", "Manifest", "fingerprint", "complete", "build", "checks_on", "verify",
           # what the kit's other packages call through this one
           "FORMAT_VERSION", "Shard", "ShardRecord", "ask_to_read", "check_open", "files_fingerprint",
           "forget_digests", "kernel_read_bytes", "load_npy", "open_memmap", "read_npy_header",
           "register_check"]
