"""The derived-data store: content-keyed folders, atomic shard writes, manifest, resume, verify.

Every derived file (TFRecord shards, memmaps, feature caches) goes through ``build``:

* the folder's ``key`` is a fingerprint of the inputs and options (``fingerprint``),
  so a changed input never reuses a stale derivative;
* each shard is written under a temporary name, checksummed, then renamed; a small
  record of it goes to ``.partial/`` so an interrupted build resumes without
  redoing finished shards;
* ``manifest.json`` (counts, shapes, dtype, a SHA-256 per shard) is written last,
  atomically: a folder without it is never read as complete.

``verify`` re-reads a folder and checks it against its manifest.

The parts, one concept each:

* ``keys``: ``fingerprint``, ``files_fingerprint`` and the content-digest database;
* ``folder``: the folder's own files, ``claim``, ``store_lock``, atomic writes, free space;
* ``manifest``: ``Manifest``, one ``ShardRecord`` per file, read, checked and written;
* ``checks``: ``check_open`` at every open, ``verify`` and the kinds' deep checks;
* ``builder``: ``build`` and the resume of an interrupted one;
* ``files``: ``.npy`` reads, reserved memmaps, page-cache read hints.
"""

from __future__ import annotations

from kit.store.builder import Shard, build

# Importable from here but not listed: what the tests and bench digest use besides.
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
    free_bytes,
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
