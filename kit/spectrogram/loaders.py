"""Every loader variant of the spectrogram case, built by one function.

``make_loader(name, index, *, batch_size, shuffle=True, seed=0, workdir=None, **options)``
returns a batch source that yields ``(x, y)``: ``x`` float32 ``(B, H, W, 1)``, ``y``
int64 ``(B,)``, every frame of the index exactly once per epoch (the last batch may
be smaller). Each variant reshuffles every epoch when ``shuffle`` is set.

``VARIANTS`` lists them, from the user's generator (the floor) to all data in RAM
(the ceiling).
"""

from __future__ import annotations

import os
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from kit.cases import LoaderOptions, Variant, VariantOptions, check_shards
from kit.cases.loaders import NoOptions, check_variant, graph_only, serve
from kit.cases.pydataset import EpochPyDataset
from kit.epochs import epoch_order, not_resumable, num_batches, record
from kit.epochs.datasets import (
    BLOCK_FRAMES,
    WINDOW_BLOCKS,
    block_order_dataset,
    finish,
    order_batches,
    order_dataset,
)
from kit.spectrogram.convert import (
    DEFAULT_RECORD_FRAMES,
    DEFAULT_SHARD_MB,
    STORE_DTYPES,
    decode_records,
    examples_dtype,
    parse_examples,
    records_dtype,
)
from kit.spectrogram.convert import convert as to_store
from kit.spectrogram.grain import GrainOptions, make_grain
from kit.spectrogram.index import FrameIndex, open_frames
from kit.spectrogram.variants import GRAPH_ONLY, VARIANTS
from kit.store import StoreError
from kit.store.files import ask_to_read, kernel_read_bytes, load_npy, read_npy_header
from kit.system import pagecache


@dataclass(frozen=True)
class PyDatasetOptions(VariantOptions):
    """``pydataset``: Keras's own workers."""

    POSITIVE = ("workers", "max_queue_size")
    workers: int = 1
    use_multiprocessing: bool = False
    max_queue_size: int = 10


@dataclass(frozen=True)
class StoreOptions(VariantOptions):
    """What the store-backed variants share: the store folder to use (default: a
    content-keyed folder under ``workdir``) and the dtype it holds the frames in
    (``"float16"``: half the bytes on disk and in the page cache; frames come back as
    float32, cast in the graph). A store given by ``folder`` is read in its own dtype.
    ``check_store``: compare a reused store's files with their SHA-256 in its manifest
    (once per change of a file; False skips it, None follows ``$KIT_CHECK_STORES``)."""

    FLAGS = ("check_store",)
    folder: str | None = None
    store_dtype: str = "float32"
    check_store: bool | None = None

    def __post_init__(self):
        super().__post_init__()
        if self.store_dtype not in STORE_DTYPES:
            raise ValueError(f"store_dtype must be one of {STORE_DTYPES}, got {self.store_dtype!r}")


#: ``memmap`` in block order: windows of blocks asked of the kernel ahead of the gather.
READ_AHEAD_WINDOWS = 2


@dataclass(frozen=True)
class MemmapOptions(StoreOptions):
    """``memmap``: the epoch order. ``"random"``: a permutation of every frame (the same
    order ``in_memory`` gives a seed). ``"blocks"``: blocks of ``block_frames``
    consecutive frames shuffled, then shuffled within windows of ``window_blocks`` blocks
    (``kit.epochs.block_order_dataset``): near-sequential reads when the store is larger
    than the page cache, at the cost of some randomness (notebook 03). ``read_ahead``
    (block order only): the blocks of the next ``read_ahead`` windows are asked of the
    kernel (``posix_fadvise(..., POSIX_FADV_WILLNEED)``) before the gather faults on them,
    so a store read from disk is read in whole blocks, many at once, instead of a page
    fault's small readahead at a time; 0 turns it off."""

    POSITIVE = ("block_frames", "window_blocks")
    order: str = "random"
    block_frames: int = BLOCK_FRAMES
    window_blocks: int = WINDOW_BLOCKS
    read_ahead: int = READ_AHEAD_WINDOWS

    def __post_init__(self):
        super().__post_init__()
        if self.order not in ("random", "blocks"):
            raise ValueError(f"order must be 'random' or 'blocks', got {self.order!r}")
        if isinstance(self.read_ahead, bool) or not isinstance(self.read_ahead, int) or self.read_ahead < 0:
            raise ValueError(f"read_ahead must be a whole number of windows (0 turns it off), got {self.read_ahead!r}")


@dataclass(frozen=True)
class GuideOptions(StoreOptions):
    """``tfrecord_guide``: shard size and the shuffle buffer (frames; the same 4096 as the
    ``tfrecord`` variant's windows, so that both mix the same span of the shards)."""

    POSITIVE = ("shuffle_buffer",)
    shard_mb: float = DEFAULT_SHARD_MB
    shuffle_buffer: int = 4096


@dataclass(frozen=True)
class TFRecordOptions(StoreOptions):
    """``tfrecord``: shard size, frames per record, ``shuffle_buffer`` (frames; the records
    shuffled together hold about this many) and ``cycle_length`` (shards read at once)."""

    POSITIVE = ("record_frames", "shuffle_buffer", "cycle_length")
    shard_mb: float = DEFAULT_SHARD_MB
    record_frames: int = DEFAULT_RECORD_FRAMES
    shuffle_buffer: int = 4096
    cycle_length: int = 4


def make_loader(name: str, index: FrameIndex, *, batch_size: int, shuffle: bool = True, seed: int = 0,
                workdir=None, progress: bool | str = True, service: str | None = None,
                service_timeout_s: float | None = None, **options):
    """Builds the loader variant ``name`` over ``index``: the work behind ``kit.spectrogram.make_loader``
    (``kit.spectrogram.variants``), whose docstring says every argument and what comes back."""
    variant, vopts = check_variant(REGISTRY, name, service, service_timeout_s, **options)
    loader = variant.build(index, LoaderOptions(batch_size, shuffle, seed, workdir, progress), vopts)
    return serve(loader, name, len(index), batch_size, service, service_timeout_s)


# --------------------------------------------------------------------------- generator


def _generator(index: FrameIndex, opts: LoaderOptions, vopts: NoOptions):
    h, w = index.frame_shape
    paths = [str(p) for p in index.files]
    epoch = [0]

    def batches():
        # The user's pattern, kept faithfully slow: for every single frame, np.load
        # reads the whole file, then one frame is kept.
        order = epoch_order(len(index), opts.shuffle, opts.seed, epoch[0])
        epoch[0] += 1
        for start in range(0, len(order), opts.batch_size):
            rows = order[start:start + opts.batch_size]
            x = []
            for r in rows:
                whole = load_npy(paths[index.file_ids[r]], mmap=False)
                x.append(whole[index.frames[r]].reshape(h, w, 1))
            yield np.asarray(x, dtype=np.float32), index.labels[rows]

    ds = tf.data.Dataset.from_generator(batches, output_signature=(
        tf.TensorSpec((None, h, w, 1), tf.float32), tf.TensorSpec((None,), tf.int64)))
    return not_resumable(finish(ds, len(index), opts.batch_size, prefetch=False),
                         "variant 'generator' reads through a Python generator, whose position lives in "
                         "Python and cannot be saved or restored by tf.data; use 'numpy_function', 'memmap' "
                         "or 'in_memory' (same examples, same batches), which resume mid-epoch")


# --------------------------------------------------------------------------- pydataset


def _pydataset(index: FrameIndex, opts: LoaderOptions, vopts: PyDatasetOptions):
    return FramePyDataset(
        index, opts, workers=vopts.workers, use_multiprocessing=vopts.use_multiprocessing,
        max_queue_size=vopts.max_queue_size)


class _FrameBatches:
    """Batches of frames read by memory map (a ``keras.utils.PyDataset``); reshuffles at every epoch's end."""

    def load(self, rows):
        maps = self.__dict__.setdefault("maps", {})  # one memory map per file, opened on first use
        h, w = self.index.frame_shape
        x = np.empty((len(rows), h, w, 1), np.float32)
        for j, r in enumerate(rows):
            k = self.index.file_ids[r]
            if k not in maps:
                maps[k] = open_frames(self.index.files[k])
            x[j, :, :, 0] = maps[k][self.index.frames[r]]
        return x, self.index.labels[rows]


class FramePyDataset(_FrameBatches, EpochPyDataset):
    """Batches of frames read by memory map (a ``keras.utils.PyDataset``); reshuffles at every epoch's end."""


# --------------------------------------------------------------------------- numpy_function


def _numpy_function(index: FrameIndex, opts: LoaderOptions, vopts: NoOptions):
    h, w = index.frame_shape
    files = index.files
    file_ids, frames, labels = index.file_ids, index.frames, index.labels
    maps: dict[int, np.ndarray] = {}  # file id -> its frames, opened on first use

    def read_one(i):
        # `i` arrives as a NumPy int: look the row up in plain arrays (the answer's
        # `path.numpy()` inside a numpy function fails: there are no tensors here).
        k = int(file_ids[i])
        m = maps.get(k)
        if m is None:
            m = maps[k] = open_frames(files[k])
        return np.asarray(m[frames[i]], np.float32).reshape(h, w, 1), labels[i]

    def load(i):
        x, y = tf.numpy_function(read_one, [i], (tf.float32, tf.int64), stateful=False)
        # numpy_function loses static shapes; restore them (the answer took them
        # from a tensor of unknown shape, which cannot work).
        return tf.ensure_shape(x, (h, w, 1)), tf.ensure_shape(y, ())

    ds = order_dataset(len(index), opts).map(load, num_parallel_calls=tf.data.AUTOTUNE)
    return finish(ds.batch(opts.batch_size), len(index), opts.batch_size)


# --------------------------------------------------------------------------- memmap


def _memmap(index: FrameIndex, opts: LoaderOptions, vopts: MemmapOptions):
    folder, manifest = to_store(index, "memmap", vopts.folder, workdir=opts.workdir, progress=opts.progress,
                                adopt=True, store_dtype=vopts.store_dtype, check=vopts.check_store)
    path = folder / "frames.npy"
    labels = tf.constant(index.labels)  # labels come from the index, never from the store
    dtype = tf.as_dtype(manifest.meta.get("dtype", "float32"))  # the store's, whatever was asked
    n, (h, w) = len(index), index.frame_shape
    offset = npy_data_offset(path)
    size = path.stat().st_size
    if offset % 64 or (size - offset) != n * h * w * dtype.size:
        raise StoreError(f"{path}: unexpected layout (data at byte {offset}, {size} bytes); reconvert")

    mapping = _Mapping(path)  # the file mapped once, on first use, until released

    def opened(_rows, blocks=None):
        if blocks is not None and blocks[0] >= 0:  # block order, read ahead (-1: nothing to ask for)
            hints(blocks)
        return mapping.get()

    def gather(rows, blocks=None):
        # The whole file memory-mapped by NumPy (once: batches don't re-map and re-fault)
        # and handed to TensorFlow without a copy (an aligned array becomes a tensor over
        # the same pages), viewed as (N, H, W, 1). Not tf.raw_ops.ImmutableConst: it has
        # no inputs, so TensorFlow's constant folding evaluated it when the iterator was
        # made and copied the whole file into memory (a 12 GB read at a million float16
        # frames; py-spy --native showed it). Not a cached dataset of the tensor either:
        # an iterator checkpoint then saved the cache, the whole store (30 MB for 29 MB).
        # A stateless function of the batch's rows (and, read ahead, of the blocks to ask
        # for, in the same call): never folded, as it has inputs, and never pruned, as its
        # output is the frames; a stateful one logged "PyFunc is stateful" once a batch.
        inputs = [rows] if blocks is None else [rows, blocks]
        frames = tf.reshape(tf.numpy_function(opened, inputs, dtype, stateful=False), (n, h, w, 1))
        rows = tf.sort(rows)  # forward through the file: readahead and the page cache work for us
        x = tf.gather(frames, rows)
        return (x if dtype == tf.float32 else tf.cast(x, tf.float32)), tf.gather(labels, rows)

    if vopts.order == "blocks":
        # Near-sequential: shuffled blocks of consecutive frames, shuffled within windows.
        ahead = vopts.read_ahead if hasattr(os, "posix_fadvise") else 0  # Linux (and others with it)
        rows = block_order_dataset(n, opts.batch_size, block=vopts.block_frames, window=vopts.window_blocks,
                                   shuffle=opts.shuffle, seed=opts.seed, read_ahead=ahead)
        # Each window's blocks asked of the kernel `ahead` windows before the gather reaches
        # them, in the gather's own step (a few batches of an epoch's thousands list any).
        hints = _BlockHints(path, offset, vopts.block_frames, h * w * dtype.size, n) if ahead else None
    else:
        rows = order_batches(len(index), opts.batch_size, opts)
    ds = rows.map(gather, num_parallel_calls=tf.data.AUTOTUNE)  # every core: finish turns autotune off
    return finish(ds, len(index), opts.batch_size)


class _BlockHints:
    """Called with block ids (``kit.epochs.block_order_dataset``'s ``read_ahead``), before
    the gather reaches them: asks the kernel to read each block's frames
    (``kit.store.ask_to_read``: the reads start at once, in the background, in whole
    blocks, many at a time, and the call returns). A hint only: a block not read in time
    is read by the gather's page faults, as without it (``python -m lab.experiments.read_ahead_pairs``
    measures both, cold and warm)."""

    def __init__(self, path, offset: int, block_frames: int, frame_bytes: int, frames: int):
        self.path, self.offset = Path(path), offset
        self.block_frames, self.frame_bytes, self.frames = block_frames, frame_bytes, frames
        self.piece = kernel_read_bytes(path)  # the most one hint reads
        self._fd: list[int] = []  # opened at the first call; closed with this object
        weakref.finalize(self, _close_all, self._fd)

    def __call__(self, blocks: np.ndarray) -> None:
        if not self._fd:
            self._fd.append(os.open(self.path, os.O_RDONLY))
        for b in blocks[blocks >= 0].tolist():
            first = b * self.block_frames
            count = min(self.block_frames, self.frames - first)
            ask_to_read(self._fd[0], self.offset + first * self.frame_bytes, count * self.frame_bytes,
                              self.piece)


def _close_all(fds: list) -> None:
    while fds:
        os.close(fds.pop())


class _Mapping:
    """A memmap store's frames file, mapped on first use and kept mapped for the loader's
    batches; ``release_store_mappings`` unmaps it (the next batch maps it again)."""

    def __init__(self, path):
        self.path = Path(path)
        self.array = None
        _MAPPINGS.add(self)

    def get(self) -> np.ndarray:
        if self.array is None:
            self.array = open_store_frames(self.path)
        return self.array


_MAPPINGS: "weakref.WeakSet[Any]" = weakref.WeakSet()  # every _Mapping


def release_store_mappings() -> int:
    """Unmaps every memmap store file that a loader of this process holds mapped, so that
    its pages can leave the page cache (``posix_fadvise(..., POSIX_FADV_DONTNEED)`` keeps
    pages that a process maps: ``kit.system.pagecache.evict`` calls this first). A live
    loader maps its file again at its next batch. Returns how many were released. (A
    loader's mapping otherwise lives as long as TensorFlow keeps its ``numpy_function``,
    which can outlast the loader itself.)"""
    released = 0
    for m in list(_MAPPINGS):
        if m.array is not None:
            m.array = None
            released += 1
    return released


pagecache.on_evict(release_store_mappings)  # pages a loader maps would stay cached through an eviction


def open_store_frames(path) -> np.ndarray:
    """A memmap store's frames, memory-mapped read-only (no pickle)."""
    return load_npy(path)


def npy_data_offset(path) -> int:
    """Byte offset of the array data in a ``.npy`` file (after its header)."""
    with open(path, "rb") as f:
        read_npy_header(f)
        return f.tell()


# --------------------------------------------------------------------------- tfrecord


def _tfrecord(index: FrameIndex, opts: LoaderOptions, vopts: TFRecordOptions):
    folder, manifest = to_store(index, "tfrecord", vopts.folder, workdir=opts.workdir, shard_mb=vopts.shard_mb,
                                seed=opts.seed, progress=opts.progress, adopt=True, store_dtype=vopts.store_dtype,
                                record_frames=vopts.record_frames, check=vopts.check_store)
    paths = check_shards(folder, manifest)  # a shard cut short or replaced is refused before reading
    k = int(manifest.meta["options"]["record_frames"])

    def pipeline(num_records):
        return tfrecord_pipeline(paths, index.frame_shape, records_dtype(manifest), batch_size=opts.batch_size,
                                 record_frames=k, num_records=num_records, shuffle=opts.shuffle, seed=opts.seed,
                                 shuffle_buffer=vopts.shuffle_buffer, cycle_length=vopts.cycle_length)

    # Through tf.data service each worker reads a part of the shards: its records are not counted
    # there (body), the reading side checks the epoch's examples instead (kit.distribute).
    body = pipeline(None)
    ds = pipeline(sum(-(-s.count // k) for s in manifest.shards)).apply(
        tf.data.experimental.assert_cardinality(num_batches(len(index), opts.batch_size)))
    record(ds, len(index), opts.batch_size, body)
    return not_resumable(ds, "variant 'tfrecord' shuffles its records through a shuffle buffer, whose records a "
                             "checkpoint would have to hold; use 'memmap' or 'in_memory' (same examples, same "
                             "batches), which resume mid-epoch")


def tfrecord_pipeline(paths, frame_shape, dtype, *, batch_size, record_frames, num_records, shuffle=True, seed=0,
                      shuffle_buffer=4096, cycle_length=4):
    """The ``tfrecord`` variant's pipeline, plain tf.data: shards of records of ``record_frames``
    frames (``kit.spectrogram.convert``), read in parallel, the records shuffled, a batch of
    records decoded at once (``decode_records``). ``num_records``: the store's records, every one
    of which an epoch must read (a shard cut short fails the epoch instead of shortening it); None
    leaves the count unchecked."""

    def decode(records):  # one record, or a batch of them: frames (n, H, W, 1) float32, labels (n,)
        return decode_records(records, frame_shape, dtype)

    files = tf.data.Dataset.from_tensor_slices(paths)
    if shuffle:
        files = files.shuffle(len(paths), seed=seed, reshuffle_each_iteration=True)
    # buffer_size=0: no read buffer. A record of 32 frames (786 KB at 96x64 float32) is larger than
    # TFRecordDataset's default 256 KB buffer, which then only adds a copy of every byte; unbuffered,
    # each record is read straight into its string (measured: results/NOTES.md, issue 56).
    records = files.interleave(lambda f: tf.data.TFRecordDataset(f, buffer_size=0), cycle_length=cycle_length,
                               num_parallel_calls=tf.data.AUTOTUNE, deterministic=not shuffle)
    if num_records is not None:
        records = records.apply(tf.data.experimental.assert_cardinality(num_records))  # every record, or an error
    if shuffle:
        records = records.shuffle(max(1, shuffle_buffer // record_frames), seed=seed, reshuffle_each_iteration=True)
    if batch_size % record_frames == 0:  # a batch is whole records: batch them, then decode once a batch
        ds = records.batch(batch_size // record_frames).map(decode, num_parallel_calls=tf.data.AUTOTUNE)
    else:  # else decode each record and cut its frames into batches
        ds = records.map(decode, num_parallel_calls=tf.data.AUTOTUNE).unbatch().batch(batch_size)
    return ds.prefetch(tf.data.AUTOTUNE)


# --------------------------------------------------------------------------- tfrecord_guide


def _tfrecord_guide(index: FrameIndex, opts: LoaderOptions, vopts: GuideOptions):
    # The pipeline TensorFlow's tf.data performance guide builds over the store its TFRecord
    # tutorial writes (a tf.train.Example per frame), every knob as documented: the files
    # shuffled, read in parallel and interleaved (AUTOTUNE: as many as there are cores),
    # order traded for speed (deterministic=False), a shuffle buffer, batch then one
    # vectorised parse_example a batch on parallel calls, prefetch; tf.data's autotuner on.
    folder, manifest = to_store(index, "tfexample", vopts.folder, workdir=opts.workdir, shard_mb=vopts.shard_mb,
                                seed=opts.seed, progress=opts.progress, adopt=True, store_dtype=vopts.store_dtype,
                                check=vopts.check_store)
    dtype = examples_dtype(manifest)  # the store's, whatever was asked
    paths = check_shards(folder, manifest)
    shape = index.frame_shape

    @tf.autograph.experimental.do_not_convert
    def parse(serialized):
        return parse_examples(serialized, shape, dtype)

    def pipeline(examples):  # examples: every frame an epoch must read (None: through tf.data service)
        files = tf.data.Dataset.from_tensor_slices(paths)
        if opts.shuffle:
            files = files.shuffle(len(paths), seed=opts.seed, reshuffle_each_iteration=True)
        ds = files.interleave(tf.data.TFRecordDataset, num_parallel_calls=tf.data.AUTOTUNE,
                              deterministic=not opts.shuffle)  # unshuffled: the shards' order, every epoch
        if examples is not None:  # the kit's guard: every frame, or an error
            ds = ds.apply(tf.data.experimental.assert_cardinality(examples))
        if opts.shuffle:
            ds = ds.shuffle(vopts.shuffle_buffer, seed=opts.seed, reshuffle_each_iteration=True)
        return ds.batch(opts.batch_size).map(parse, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)

    body = pipeline(None)
    ds = pipeline(len(index)).apply(tf.data.experimental.assert_cardinality(-(-len(index) // opts.batch_size)))
    record(ds, len(index), opts.batch_size, body)
    return not_resumable(ds, "variant 'tfrecord_guide' shuffles through a shuffle buffer, whose frames a "
                             "checkpoint would have to hold; use 'memmap' or 'in_memory' (same examples, same "
                             "batches), which resume mid-epoch")


# --------------------------------------------------------------------------- grain


def _grain(index: FrameIndex, opts: LoaderOptions, vopts: GrainOptions):
    # The pipeline lives in kit.spectrogram.grain (optional: it needs the peers extra).
    return make_grain(index, opts, vopts)


# --------------------------------------------------------------------------- in_memory


def _in_memory(index: FrameIndex, opts: LoaderOptions, vopts: NoOptions):
    # Held in variables, so the dataset graph refers to the data instead of copying it;
    # in host memory, where tf.data runs, even on a machine with GPUs.
    with tf.device("/CPU:0"):
        x = tf.Variable(index.read_all()[..., None], trainable=False)
        y = tf.Variable(index.labels, trainable=False)
    def pipeline(batches):
        return batches.map(lambda rows: (tf.gather(x, rows), tf.gather(y, rows)), num_parallel_calls=tf.data.AUTOTUNE)

    # Its order computed per epoch (resumable); tf.data service runs it over a splittable one.
    return finish(pipeline(order_batches(len(index), opts.batch_size, opts)), len(index), opts.batch_size,
                  body=pipeline(order_batches(len(index), opts.batch_size, opts, splittable=True)))


#: Every variant: its description, builder, options and whether tf.data service can run it.
REGISTRY = {
    "generator": Variant(VARIANTS["generator"], _generator),
    "pydataset": Variant(VARIANTS["pydataset"], _pydataset, PyDatasetOptions),
    "numpy_function": Variant(VARIANTS["numpy_function"], _numpy_function),
    "memmap": Variant(VARIANTS["memmap"], _memmap, MemmapOptions),
    "tfrecord_guide": Variant(VARIANTS["tfrecord_guide"], _tfrecord_guide, GuideOptions, graph_only=True),
    "tfrecord": Variant(VARIANTS["tfrecord"], _tfrecord, TFRecordOptions, graph_only=True),
    "grain": Variant(VARIANTS["grain"], _grain, GrainOptions),
    "in_memory": Variant(VARIANTS["in_memory"], _in_memory, graph_only=True),
}

# kit.spectrogram.variants names them without importing this module: the same variants, the same
# graph-only ones.
if list(VARIANTS) != list(REGISTRY) or GRAPH_ONLY != graph_only(REGISTRY):
    raise RuntimeError("kit.spectrogram.variants names other variants than kit.spectrogram.loaders builds")
