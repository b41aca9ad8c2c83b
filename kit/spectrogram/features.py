"""The frozen-backbone feature cache: run the backbone once, train the head from the cache.

When only a head trains on a frozen network, every epoch recomputes the same
backbone output for every frame. ``extract_features`` runs the backbone once over
an index and stores the embeddings (float16 by default) with their labels; the head
then trains from the cache at the speed of a Dense layer (``head_loader``,
``train_head``).

The cache is a ``kit.store`` folder: parts of ``part_frames`` rows each
(``features-00000-of-00003.npy``, ``(rows, D)``) and ``labels.npy`` ``(N,)`` int64,
written atomically one part at a time (an interrupted extraction resumes at the
first unfinished part), with a manifest and checksums (``python -m kit verify``).
Its key is a fingerprint of the backbone (architecture and every weight, BN
statistics included), of the index's content and of the dtype: a changed backbone
or index never reuses a stale cache.

Caching is valid only while what it stores would not change: the backbone is frozen
(weights and batch-norm statistics), and frames are not augmented on the fly.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import tensorflow as tf

from kit import store, timing
from kit.cases.loaders import LoaderOptions
from kit.epochs.datasets import finish, order_batches
from kit.models.audio import compile_classifier, leaf_layers
from kit.spectrogram import make_loader
from kit.spectrogram.index import FrameIndex
from kit.store.checks import register_check
from kit.store.files import load_npy, open_memmap
from kit.store.folder import default_workdir
from kit.store.manifest import FORMAT_VERSION
from kit.util import check_int

KIND = "feature-cache"
DTYPES = ("float16", "float32")
#: Loader variants that deliver frames in index order when not shuffled (TFRecord
#: shards hold them in a shuffled order, so they cannot fill the cache row by row).
ORDERED_LOADERS = ("memmap", "in_memory", "numpy_function", "pydataset", "generator")
#: 32,768 rows a part: 64 MB at float16 x 1,024, the most of the backbone's work an
#: interruption can lose.
DEFAULT_PART_FRAMES = 32_768
#: Head steps run per call into the compiled train function: 260k frames/s against
#: 80k at 1 (a Dense head at batch 256 on 2 CPU cores is all per-step overhead).
DEFAULT_STEPS_PER_EXECUTION = 64


# --------------------------------------------------------------------------- keys


_IRRELEVANT = ("name", "trainable", "seed")


def _clean(config: dict) -> dict:
    """A layer's config without what does not change its output once its weights are set."""
    return {k: v for k, v in config.items()
            if k not in _IRRELEVANT and not k.endswith(("initializer", "regularizer", "constraint"))}


def weights_fingerprint(model) -> str:
    """SHA-256 of a model's architecture and of every weight (trainable or not).

    Layer names, initialisers and ``trainable`` flags are left out: they do not
    change what the model computes once its weights are set, and Keras numbers
    automatic names differently every time a model is built.
    """
    h = hashlib.sha256()
    arch = [(type(layer).__name__, _clean(layer.get_config())) for layer in leaf_layers(model)]
    h.update(json.dumps([arch, list(model.input_shape), list(model.output_shape)],
                        sort_keys=True, default=str).encode())
    for w in model.weights:
        a = np.ascontiguousarray(np.asarray(w.numpy()))
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def cache_key(backbone, index: FrameIndex, *, dtype: str = "float16",
              part_frames: int = DEFAULT_PART_FRAMES) -> str:
    """Key of the cache of ``backbone`` over ``index``: backbone, index content, layout."""
    return _key(weights_fingerprint(backbone), index, dtype, part_frames)


def _key(backbone_key: str, index: FrameIndex, dtype: str, part_frames: int) -> str:
    return store.fingerprint(KIND, backbone_key, index.fingerprint(), dtype, int(part_frames),
                             FORMAT_VERSION)


def default_folder(key: str, workdir=None) -> Path:
    root = Path(workdir) if workdir is not None else default_workdir()
    return root / f"features-{key[:16]}"


# --------------------------------------------------------------------------- the cache


@dataclass(frozen=True, eq=False)
class FeatureCache:
    """A complete feature cache. Open one with ``FeatureCache.open`` or get it from
    ``extract_features``.

    Attributes:
        folder: the store's folder.
        manifest: its ``kit.store.Manifest``.
        seconds: how long this call's extraction took; None when the cache was reused.
        resumed_rows: rows found done from an interrupted extraction (not recomputed).
    """

    folder: Path
    manifest: store.Manifest
    seconds: float | None = None
    resumed_rows: int = 0
    _cache: dict = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, folder, *, key: str | None = None) -> "FeatureCache":
        """Opens a complete cache (with ``key``, if given).

        Raises:
            kit.store.StoreError: the folder holds no complete feature cache (with that key).
        """
        m = store.complete(folder, key)
        if m is None:
            raise store.StoreError(f"{folder}: no complete feature cache"
                                   + (f" with key {key[:16]}..." if key else ""))
        if m.kind != KIND:
            raise store.StoreError(f"{folder}: holds a {m.kind!r} store, not a feature cache")
        return cls(Path(folder), m)

    def __len__(self) -> int:
        return int(self.manifest.meta["count"])

    @property
    def key(self) -> str:
        return self.manifest.key

    @property
    def dim(self) -> int:
        return int(self.manifest.meta["dim"])

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.manifest.meta["dtype"])

    @property
    def classes(self) -> tuple[str, ...]:
        return tuple(self.manifest.meta["classes"])

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    @property
    def nbytes(self) -> int:
        return len(self) * self.dim * self.dtype.itemsize

    @property
    def labels(self) -> np.ndarray:
        """Per row, the class id (int64), in index order."""
        if "labels" not in self._cache:
            self._cache["labels"] = load_npy(self.folder / "labels.npy", mmap=False)
        return self._cache["labels"]

    def _parts(self) -> list[tuple[int, int, np.ndarray]]:
        if "parts" not in self._cache:
            self._cache["parts"] = [
                (start, stop, load_npy(self.folder / name))
                for name, start, stop in self.manifest.meta["parts"]]
        return self._cache["parts"]

    def read_all(self) -> np.ndarray:
        """Every embedding in index order, ``(N, D)`` in the cache's dtype, in RAM."""
        parts = self._parts()
        if len(parts) == 1:
            return np.array(parts[0][2])
        return np.concatenate([p for _, _, p in parts])

    def gather(self, rows) -> np.ndarray:
        """Embeddings of ``rows`` (integer positions), in that order, from the memory maps."""
        rows = np.asarray(rows, dtype=np.int64)
        parts = self._parts()
        if len(parts) == 1:
            return parts[0][2][rows]
        starts = np.array([s for s, _, _ in parts])
        which = np.searchsorted(starts, rows, side="right") - 1
        out = np.empty((len(rows), self.dim), self.dtype)
        for k in np.unique(which):
            sel = which == k
            out[sel] = parts[k][2][rows[sel] - parts[k][0]]
        return out

    @property
    def reused(self) -> bool:
        """True when this object opened an existing cache rather than extracting it."""
        return self.seconds is None

    @property
    def extraction(self) -> dict:
        """What the extraction that built this cache measured, read from its manifest, so a
        reused cache still has its figure: ``rows`` computed, ``seconds``, ``frames_per_s``
        and ``created`` (when it finished). ``seconds`` and ``frames_per_s`` are None for a
        cache written before the kit recorded them, or when every row was resumed."""
        meta = self.manifest.meta
        seconds, rows = meta.get("build_seconds"), meta.get("built")
        rate = rows / seconds if seconds and rows else None
        return {"rows": rows, "seconds": seconds, "frames_per_s": rate, "created": meta.get("created")}

    def __repr__(self) -> str:
        if self.seconds is not None:
            state = f"extracted in {self.seconds:.1f} s"
        else:
            ex = self.extraction
            took = f" in {ex['seconds']:.1f} s" if ex["seconds"] is not None else ""
            state = f"reused: extracted {ex['created']}{took}"
        return (f"FeatureCache({len(self):,} x {self.dim} {self.dtype}, {self.nbytes / 1e6:.1f} MB, "
                f"{state}, {self.folder})")


# --------------------------------------------------------------------------- extraction


def _numpy_batches(loader):
    """Iterates a loader's batches as NumPy arrays (tf.data or a PyDataset)."""
    if hasattr(loader, "as_numpy_iterator"):
        return loader.as_numpy_iterator()
    return (loader[i] for i in range(len(loader)))


class _Cursor:
    """One pass over the loader shared by the parts, so that a resumed extraction
    reads past finished parts without running the backbone on them."""

    def __init__(self, loader):
        self.loader, self.it, self.pos = loader, None, 0

    def between(self, start: int, stop: int):
        if self.it is None or self.pos > start:
            self.it, self.pos = _numpy_batches(self.loader), 0
        while self.pos < stop:
            try:
                x, y = next(self.it)
            except StopIteration:
                raise store.StoreError(
                    f"the loader ended after {self.pos:,} rows; the index has more") from None
            first, self.pos = self.pos, self.pos + len(x)
            if self.pos <= start:
                continue
            yield first, x, y


def _runner(backbone):
    """The backbone as a compiled function of a batch of frames (inference mode)."""

    spec = tf.TensorSpec((None,) + tuple(backbone.input_shape[1:]), tf.float32)

    @tf.function(input_signature=[spec])
    def run(x):
        return backbone(x, training=False)

    return lambda x: run(x).numpy()


def extract_features(backbone, index: FrameIndex, *, loader: str = "memmap", batch_size: int = 256,
                     out=None, workdir=None, dtype: str = "float16", progress: bool | str = True,
                     part_frames: int = DEFAULT_PART_FRAMES, loader_options: dict | None = None) -> FeatureCache:
    """Runs ``backbone`` once over every frame of ``index`` and caches the embeddings.

    Reuses a complete cache with the same key, resumes an interrupted one, and
    rebuilds one whose backbone or index changed.

    Args:
        backbone: a Keras model, frames ``(B, H, W, 1)`` -> embeddings ``(B, D)``;
            run in inference mode (``training=False``).
        index: the frames, in the order the cache's rows will have.
        loader: the spectrogram loader variant that reads the frames, one of
            ``ORDERED_LOADERS`` (read in index order, no shuffle).
        batch_size: frames per backbone call.
        out: the cache's folder; by default ``features-<key>`` under ``workdir``.
        workdir: where default folders (cache and loader stores) go
            (``kit.store.default_workdir()`` if None).
        dtype: ``"float16"`` (half the disk and RAM; ample for a head's inputs) or ``"float32"``.
        progress: show a tqdm bar (a string sets its description).
        part_frames: rows per part file (rounded up to a multiple of ``batch_size``):
            the most an interruption can cost.
        loader_options: passed to the loader (``{"store_dtype": "float16"}`` reads a
            float16 memmap store).

    Returns:
        The ``FeatureCache``.

    Raises:
        ValueError: bad options, a backbone whose input does not fit the frames or whose
            output is not ``(B, D)``, or embeddings that are not finite in ``dtype``
            (naming the file and frame).
        kit.errors.DataError: unreadable frames (from the loader).
    """

    dim = _check_options(backbone, index, loader=loader, batch_size=batch_size, part_frames=part_frames, dtype=dtype)
    part_frames = int(math.ceil(part_frames / batch_size) * batch_size)

    backbone_key = weights_fingerprint(backbone)
    key = _key(backbone_key, index, dtype, part_frames)
    folder = Path(out) if out is not None else default_folder(key, workdir)
    done = store.complete(folder, key)
    if done is not None:
        return FeatureCache(folder, done)

    n = len(index)
    parts, shards = _layout(n, part_frames)
    meta = {"module": __name__, "count": n, "dim": dim, "dtype": dtype, "parts": parts,
            "classes": list(index.classes), "frame_shape": list(index.frame_shape),
            "backbone": backbone.name, "backbone_key": backbone_key,
            "index_key": index.fingerprint(), "source": str(index.csv_path), "loader": loader,
            "batch_size": int(batch_size)}
    # Built before the extraction starts (the memmap variant converts the frames once, with its own bar).
    frames = make_loader(loader, index, batch_size=batch_size, shuffle=False, workdir=workdir,
                         progress=bool(progress), **(loader_options or {}))
    extraction = _Extraction(backbone, index, frames, loader=loader, dtype=dtype, dim=dim)
    t0 = time.perf_counter()
    manifest = store.build(folder, kind=KIND, key=key, shards=shards, write=extraction.write, meta=meta,
                           progress="features" if progress is True else progress)
    return FeatureCache(folder, manifest, seconds=time.perf_counter() - t0, resumed_rows=n - extraction.computed)


def _check_options(backbone, index: FrameIndex, *, loader: str, batch_size: int, part_frames: int,
                   dtype: str) -> int:
    """Refuses bad options, or a backbone that does not take the index's frames or does not
    output embeddings ``(B, D)`` (ValueError); returns ``D``."""
    if loader not in ORDERED_LOADERS:
        raise ValueError(f"loader must be one of {', '.join(ORDERED_LOADERS)} (frames in index order), "
                         f"got {loader!r}")
    check_int("batch_size", batch_size)
    check_int("part_frames", part_frames)
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    want = tuple(index.frame_shape) + (1,)
    got = tuple(backbone.input_shape[1:])
    if got != want:
        raise ValueError(f"the backbone takes frames of shape {got}, the index holds {want}")
    if len(backbone.output_shape) != 2:
        raise ValueError(f"the backbone must output embeddings (batch, dim), got {backbone.output_shape}")
    return int(backbone.output_shape[-1])


def _layout(n: int, part_frames: int) -> tuple[list[tuple[str, int, int]], list[store.Shard]]:
    """The cache's part files ``(name, start, stop)`` of ``part_frames`` rows each, and its shards:
    the labels, then the parts."""
    count = math.ceil(n / part_frames)
    width = max(5, len(str(count)))
    parts = [(f"features-{k:0{width}d}-of-{count:0{width}d}.npy", k * part_frames,
              min(n, (k + 1) * part_frames)) for k in range(count)]
    shards = [store.Shard("labels.npy", 0)] + [store.Shard(name, stop - start, (start, stop))
                                               for name, start, stop in parts]
    return parts, shards


class _Extraction:
    """Writes the cache's shards for ``store.build``: the labels, and each part's embeddings
    from the frames ``frames`` delivers in index order (the backbone is compiled on the first
    part that needs it). ``computed``: the rows embedded in this run (not resumed)."""

    def __init__(self, backbone, index: FrameIndex, frames, *, loader: str, dtype: str, dim: int) -> None:
        self.backbone, self.index, self.loader, self.dtype, self.dim = backbone, index, loader, dtype, dim
        self.cursor = _Cursor(frames)
        self.run: Callable[[np.ndarray], np.ndarray] | None = None
        self.computed = 0

    def write(self, shard: store.Shard, tmp: Path, advance) -> None:
        if shard.name == "labels.npy":
            with open(tmp, "wb") as f:
                np.save(f, self.index.labels.astype(np.int64))
            return
        start, stop = shard.task
        if self.run is None:
            self.run = _runner(self.backbone)
        run = self.run
        mm = open_memmap(tmp, dtype=self.dtype, shape=(stop - start, self.dim))
        for first, x, y in self.cursor.between(start, stop):
            emb = self._embed(run, first, x, y)
            mm[first - start:first - start + len(emb)] = emb
            self.computed += len(emb)
            advance(len(emb))
        mm.flush()
        del mm

    def _embed(self, run, first: int, x, y) -> np.ndarray:
        """``run``'s embeddings of the batch of rows from ``first``, checked to be those rows and finite."""
        index, dtype = self.index, self.dtype
        if not np.array_equal(y, index.labels[first:first + len(y)]):
            raise store.StoreError(f"loader {self.loader!r} delivered rows {first}..{first + len(y) - 1} "
                                   "out of index order; the cache would mislabel them")
        with np.errstate(over="ignore"):  # overflow to inf is caught just below
            emb = run(np.asarray(x, np.float32)).astype(dtype)
        bad = ~np.isfinite(emb).all(axis=1)
        if bad.any():
            row = first + int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{index.files[index.file_ids[row]]} frame {index.frames[row]} (index row {row}): "
                f"the backbone's embedding is not finite in {dtype}"
                + (" (over 65504: extract with dtype='float32')" if dtype == "float16" else ""))
        return emb


@register_check(KIND)
def _check(folder: Path, manifest: store.Manifest, shard: store.ShardRecord) -> str | None:
    meta = manifest.meta
    try:
        arr = load_npy(folder / shard.name)
    except ValueError as e:
        return f"not a readable .npy ({e})"
    if shard.name == "labels.npy":
        if arr.shape != (meta["count"],):
            return f"shape {arr.shape}, manifest implies ({meta['count']},)"
        if len(arr) and not (0 <= arr.min() and arr.max() < len(meta["classes"])):
            return f"labels outside 0..{len(meta['classes']) - 1}"
        return None
    want = (shard.count, meta["dim"])
    if arr.shape != want or arr.dtype != np.dtype(meta["dtype"]):
        return f"{arr.shape} {arr.dtype}, manifest implies {want} {meta['dtype']}"
    if not np.isfinite(arr).all():
        return "holds non-finite embeddings"
    return None


# --------------------------------------------------------------------------- training the head


def head_loader(cache: FeatureCache, *, batch_size: int, rows=None, shuffle: bool = True, seed: int = 0,
                in_memory: bool = True):
    """Batches of cached embeddings for the head: ``(x, y)``, x float32 ``(B, D)``, y int64 ``(B,)``.

    Every selected row exactly once per epoch, reshuffled every epoch (seeded). The
    row order for a seed is the one the spectrogram loaders' ``memmap`` and
    ``in_memory`` variants give ``index.subset(rows)`` for that seed, so a head
    trained here sees the same batches as one trained end to end.

    Args:
        cache: the feature cache.
        batch_size: rows per batch (the last may be smaller).
        rows: integer positions (or a boolean mask) of the rows to serve; all by default.
        shuffle: reshuffle every epoch.
        seed: makes the shuffles reproducible.
        in_memory: hold the cache in RAM (``nbytes``: 2 GB for 1M float16 x 1,024) and
            gather each batch in the graph; False gathers from the memory-mapped parts
            through ``tf.numpy_function`` (for caches larger than RAM).

    Returns:
        A ``tf.data.Dataset`` of a known number of batches, prefetched.
    """

    check_int("batch_size", batch_size)
    n = len(cache)
    rows = np.arange(n) if rows is None else np.arange(n)[np.asarray(rows)]
    if len(rows) == 0:
        raise ValueError("rows selects no rows of the cache")
    m = len(rows)
    ds = order_batches(m, batch_size, LoaderOptions(batch_size, shuffle, seed))
    labels = cache.labels
    if in_memory:
        if "variables" not in cache._cache:  # one copy in RAM per cache, shared by its loaders
            # Variables: the dataset graph refers to the data instead of copying it.
            cache._cache["variables"] = (tf.Variable(cache.read_all(), trainable=False),
                                         tf.Variable(labels, trainable=False))
        x_all, y_all = cache._cache["variables"]
        rows_t = tf.constant(rows)

        def gather(pos):
            r = tf.gather(rows_t, pos)
            return tf.cast(tf.gather(x_all, r), tf.float32), tf.gather(y_all, r)
    else:
        dim = cache.dim

        def gather_np(pos):
            r = rows[pos]
            return cache.gather(r).astype(np.float32), labels[r]

        def gather(pos):
            x, y = tf.numpy_function(gather_np, [pos], (tf.float32, tf.int64), stateful=False)
            return tf.ensure_shape(x, (None, dim)), tf.ensure_shape(y, (None,))

    return finish(ds.map(gather, num_parallel_calls=tf.data.AUTOTUNE), m, batch_size)


def train_head(head, cache: FeatureCache, *, rows=None, validation_rows=None, epochs: int = 1,
               batch_size: int = 256, shuffle: bool = True, seed: int = 0, learning_rate: float = 1e-3,
               steps_per_execution: int = DEFAULT_STEPS_PER_EXECUTION, compile: bool = True,
               in_memory: bool = True, verbose: int = 0) -> pd.DataFrame:
    """Trains ``head`` on cached embeddings and reports each epoch's time.

    Args:
        head: a Keras model, embeddings ``(B, D)`` -> logits (``kit.models.audio.head``).
        cache: the feature cache.
        rows: training rows (positions or a mask); all by default.
        validation_rows: rows evaluated after each epoch (``val_accuracy``), or None.
        epochs, batch_size, shuffle, seed: as for the loaders (``head_loader``).
        learning_rate: Adam's, when compiling.
        steps_per_execution: train steps per call of the compiled function, when compiling.
        compile: compile ``head`` (Adam, sparse cross-entropy from logits, accuracy);
            False keeps the caller's compilation.
        in_memory: see ``head_loader``.
        verbose: Keras's.

    Returns:
        ``kit.timing.fit``'s table: one row per epoch with ``examples``, ``seconds``,
        ``examples_per_s`` and the metrics Keras logged.
    """

    if compile:
        compile_classifier(head, learning_rate=learning_rate, steps_per_execution=steps_per_execution)
    train = head_loader(cache, batch_size=batch_size, rows=rows, shuffle=shuffle, seed=seed,
                        in_memory=in_memory)
    val = None
    if validation_rows is not None:
        val = head_loader(cache, batch_size=batch_size, rows=validation_rows, shuffle=False,
                          in_memory=in_memory)
    # Many steps per execution: the batch pulls cannot be timed one by one (wait=False).
    return timing.fit(head, train, epochs=epochs, wait=False, validation_data=val, verbose=verbose)


def embedding_stats(cache: FeatureCache, *, rows=None) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of each embedding dimension over ``rows`` (all by default), float32.

    Variances are floored at a tenth of their median: dimensions that are (nearly)
    constant on these rows, such as channels a ReLU never opens, would otherwise
    blow up when standardised. For ``kit.models.audio.head(standardize=...)``.
    """
    rows = np.arange(len(cache)) if rows is None else np.arange(len(cache))[np.asarray(rows)]
    rows = np.sort(rows)
    total = np.zeros(cache.dim)
    squares = np.zeros(cache.dim)
    for i in range(0, len(rows), 65_536):  # in chunks: 1M x 1,024 at float64 would be 8 GB
        x = cache.gather(rows[i:i + 65_536]).astype(np.float64)
        total += x.sum(axis=0)
        squares += np.square(x).sum(axis=0)
    mean = total / len(rows)
    var = np.maximum(squares / len(rows) - np.square(mean), 0.0)
    floor = 0.1 * float(np.median(var)) + 1e-12
    return mean.astype(np.float32), np.maximum(var, floor).astype(np.float32)


def evaluate_head(head, cache: FeatureCache, *, rows=None, batch_size: int = 1024) -> dict:
    """The head's loss and accuracy on cached rows: ``{"loss": ..., "accuracy": ...}``."""
    data = head_loader(cache, batch_size=batch_size, rows=rows, shuffle=False)
    return head.evaluate(data, verbose=0, return_dict=True)
