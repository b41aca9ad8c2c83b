"""Every loader variant of the spectrogram case, built by one function.

``make_loader(name, index, *, batch_size, shuffle=True, seed=0, workdir=None, **options)``
returns a batch source that yields ``(x, y)``: ``x`` float32 ``(B, H, W, 1)``, ``y``
int64 ``(B,)``, every frame of the index exactly once per epoch (the last batch may
be smaller). Each variant reshuffles every epoch when ``shuffle`` is set.

``VARIANTS`` lists them, from the user's generator (the floor) to all data in RAM
(the ceiling).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from kit.epochs import epoch_order, finish, num_batches, order_dataset, reject
from kit.spectrogram.convert import DEFAULT_SHARD_MB
from kit.spectrogram.convert import convert as _to_store
from kit.spectrogram.convert import parse_batch as _parse_batch
from kit.spectrogram.index import FrameIndex, open_frames
from kit.store import StoreError

VARIANTS = {
    "generator": "the user's pattern: a Python generator that np.loads a whole file for every frame",
    "pydataset": "keras.utils.PyDataset reading frames by memory map (workers, use_multiprocessing)",
    "numpy_function": "tf.data with a per-frame tf.numpy_function, parallel map, prefetch (GIL-bound)",
    "memmap": "frames consolidated once into one memory-mapped .npy; one sorted gather per batch in the graph",
    "tfrecord": "TFRecord shards: parallel interleave, shuffle buffer, batch, vectorised parse",
    "in_memory": "all frames in RAM, one gather per batch: the ceiling",
}

#: Variants whose pipeline is pure TensorFlow graph (no Python function): what
#: tf.data service can run.
GRAPH_ONLY = ("tfrecord", "in_memory")


@dataclass(frozen=True)
class LoaderOptions:
    """Common options of every variant; validates itself."""

    batch_size: int
    shuffle: bool = True
    seed: int = 0

    def __post_init__(self):
        if not isinstance(self.batch_size, (int, np.integer)) or self.batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {self.batch_size!r}")


def make_loader(name: str, index: FrameIndex, *, batch_size: int, shuffle: bool = True, seed: int = 0,
                workdir=None, **options):
    """Builds the loader variant ``name`` over ``index``.

    Args:
        name: one of ``VARIANTS``.
        index: a ``FrameIndex``.
        batch_size: examples per batch (the last batch of an epoch may be smaller).
        shuffle: reshuffle every epoch.
        seed: makes the shuffles reproducible (where the variant allows it).
        workdir: where derived stores (memmap, TFRecord shards) are built.
        **options: variant-specific:
            ``pydataset``: ``workers`` (1), ``use_multiprocessing`` (False), ``max_queue_size`` (10);
            ``tfrecord``: ``shard_mb`` (100), ``shuffle_buffer`` (4096), ``cycle_length`` (4);
            ``memmap``/``tfrecord``: ``folder`` (use this store folder), ``progress`` (True);
            tf.data variants: ``service`` (``grpc://host:port`` of a tf.data service dispatcher,
            for variants in ``GRAPH_ONLY``).

    Returns:
        A ``tf.data.Dataset`` for every variant but ``pydataset`` (a ``keras.utils.PyDataset``).
        All go straight into ``model.fit`` and ``kit.timing.measure``.
    """
    if name not in VARIANTS:
        raise ValueError(f"unknown variant {name!r}; choose one of {', '.join(VARIANTS)}")
    opts = LoaderOptions(batch_size, shuffle, seed)
    service = options.pop("service", None)
    if service is not None and name not in GRAPH_ONLY:
        raise ValueError(
            f"variant {name!r} runs Python code in its pipeline, which tf.data service workers "
            f"cannot run; use one of {', '.join(GRAPH_ONLY)} with service="
        )
    build = _BUILDERS[name]
    loader = build(index, opts, workdir=workdir, progress=options.pop("progress", True), **options)
    if service is not None:
        from kit.distribute import through_service

        loader = through_service(loader, service, examples=len(index))
    return loader



# --------------------------------------------------------------------------- generator


def _generator(index: FrameIndex, opts: LoaderOptions, *, workdir=None, progress=True, **options):
    import tensorflow as tf

    reject("generator", options)
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
                whole = np.load(paths[index.file_ids[r]], allow_pickle=False)
                x.append(whole[index.frames[r]].reshape(h, w, 1))
            yield np.asarray(x, dtype=np.float32), index.labels[rows]

    ds = tf.data.Dataset.from_generator(batches, output_signature=(
        tf.TensorSpec((None, h, w, 1), tf.float32), tf.TensorSpec((None,), tf.int64)))
    return ds.apply(tf.data.experimental.assert_cardinality(num_batches(len(index), opts.batch_size)))


# --------------------------------------------------------------------------- pydataset


def _pydataset(index: FrameIndex, opts: LoaderOptions, *, workdir=None, progress=True, workers: int = 1,
               use_multiprocessing: bool = False, max_queue_size: int = 10, **options):
    reject("pydataset", options)
    return _pydataset_class()(index, opts, workers=workers, use_multiprocessing=use_multiprocessing,
                          max_queue_size=max_queue_size)


@functools.cache
def _pydataset_class():
    import keras

    class FramePyDataset(keras.utils.PyDataset):
        """Batches of frames read by memory map; reshuffles at every epoch's end."""

        def __init__(self, index: FrameIndex, opts: LoaderOptions, **kwargs):
            super().__init__(**kwargs)
            self.index, self.opts = index, opts
            self.epoch = 0
            self._order = epoch_order(len(index), opts.shuffle, opts.seed, 0)
            self._maps = {}

        def __len__(self):
            return num_batches(len(self.index), self.opts.batch_size)

        def _frames(self, k):
            m = self._maps.get(k)
            if m is None:
                m = self._maps[k] = open_frames(self.index.files[k])
            return m

        def __getitem__(self, i):
            if not 0 <= i < len(self):
                raise IndexError(f"batch {i} out of range (0..{len(self) - 1})")
            rows = self._order[i * self.opts.batch_size:(i + 1) * self.opts.batch_size]
            h, w = self.index.frame_shape
            x = np.empty((len(rows), h, w, 1), np.float32)
            for j, r in enumerate(rows):
                x[j, :, :, 0] = self._frames(self.index.file_ids[r])[self.index.frames[r]]
            return x, self.index.labels[rows]

        def on_epoch_end(self):
            self.epoch += 1
            self._order = epoch_order(len(self.index), self.opts.shuffle, self.opts.seed, self.epoch)

    FramePyDataset.__module__ = __name__  # pickles by reference through __getattr__ below
    return FramePyDataset


def __getattr__(name):
    # FramePyDataset subclasses keras.utils.PyDataset: built on first use, so that
    # importing this module does not import Keras.
    if name == "FramePyDataset":
        return _pydataset_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --------------------------------------------------------------------------- numpy_function


def _numpy_function(index: FrameIndex, opts: LoaderOptions, *, workdir=None, progress=True, **options):
    import tensorflow as tf

    reject("numpy_function", options)
    h, w = index.frame_shape
    files = index.files
    file_ids, frames, labels = index.file_ids, index.frames, index.labels
    maps = {}

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
    ds = ds.batch(opts.batch_size)
    return finish(ds, num_batches(len(index), opts.batch_size))


# --------------------------------------------------------------------------- memmap


def _memmap(index: FrameIndex, opts: LoaderOptions, *, workdir=None, folder=None, progress=True,
            **options):
    import tensorflow as tf

    reject("memmap", options)
    folder, manifest = _to_store(index, "memmap", folder, workdir=workdir, progress=progress,
                                 adopt=True)
    path = folder / "frames.npy"
    labels = tf.constant(index.labels)  # labels come from the index, never from the store
    n, (h, w) = len(index), index.frame_shape
    offset = npy_data_offset(path)
    size = path.stat().st_size
    if offset % 64 or (size - offset) != n * h * w * 4:
        raise StoreError(f"{path}: unexpected layout (data at byte {offset}, {size} bytes); reconvert")

    def mapped(_):
        # The whole .npy file mapped into memory as one immutable tensor (no copy, no
        # Python), the header skipped, viewed as (N, H, W, 1).
        flat = tf.raw_ops.ImmutableConst(dtype=tf.float32, shape=[size // 4], memory_region_name=str(path))
        return tf.reshape(flat[offset // 4:], (n, h, w, 1))

    # Map the file once for the dataset's lifetime: the cache holds the tensor (a
    # reference to the mapping, not a copy), so batches don't re-map and re-fault.
    frames = tf.data.Dataset.from_tensors(0).map(mapped).cache().repeat()

    def gather(rows, frames):
        rows = tf.sort(rows)  # forward through the file: readahead and the page cache work for us
        return tf.gather(frames, rows), tf.gather(labels, rows)

    ds = tf.data.Dataset.zip((order_dataset(len(index), opts).batch(opts.batch_size), frames))
    ds = ds.map(gather, num_parallel_calls=tf.data.AUTOTUNE)
    return finish(ds, num_batches(len(index), opts.batch_size))


def npy_data_offset(path) -> int:
    """Byte offset of the array data in a ``.npy`` file (after its header)."""
    with open(path, "rb") as f:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            np.lib.format.read_array_header_1_0(f)
        else:
            np.lib.format.read_array_header_2_0(f)
        return f.tell()


# --------------------------------------------------------------------------- tfrecord


def _tfrecord(index: FrameIndex, opts: LoaderOptions, *, workdir=None, folder=None,
              shard_mb: float = DEFAULT_SHARD_MB, shuffle_buffer: int = 4096,
              cycle_length: int = 4, progress=True, **options):
    import tensorflow as tf

    reject("tfrecord", options)
    if shuffle_buffer <= 0 or cycle_length <= 0:
        raise ValueError(f"shuffle_buffer and cycle_length must be positive, got "
                         f"{shuffle_buffer!r}, {cycle_length!r}")
    folder, manifest = _to_store(index, "tfrecord", folder, workdir=workdir,
                                        shard_mb=shard_mb, seed=opts.seed, progress=progress, adopt=True)
    # A shard cut short or replaced since it was written is refused before reading.
    for s in manifest.shards:
        path = folder / s["name"]
        if not path.exists() or path.stat().st_size != s["bytes"]:
            raise StoreError(
                f"{path}: missing or {path.stat().st_size if path.exists() else 0} bytes where the "
                f"manifest says {s['bytes']}; run `python -m kit verify {folder}` and reconvert"
            )
    paths = [str(folder / s["name"]) for s in manifest.shards]
    files = tf.data.Dataset.from_tensor_slices(paths)
    if opts.shuffle:
        files = files.shuffle(len(paths), seed=opts.seed, reshuffle_each_iteration=True)
    # An 8 MB read buffer per file: 1.3-1.9x the rate of TFRecordDataset's 256 KB default
    # on the default bench data (32 MB was no better), measured side by side on 2 cores.
    ds = files.interleave(lambda f: tf.data.TFRecordDataset(f, buffer_size=8 << 20),
                          cycle_length=min(cycle_length, len(paths)),
                          num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if opts.shuffle:
        ds = ds.shuffle(shuffle_buffer, seed=opts.seed, reshuffle_each_iteration=True)
    ds = ds.batch(opts.batch_size)  # batch first, then parse the whole batch at once
    shape = index.frame_shape
    ds = ds.map(lambda s: _parse_batch(s, shape), num_parallel_calls=tf.data.AUTOTUNE)
    return finish(ds, num_batches(len(index), opts.batch_size))


# --------------------------------------------------------------------------- in_memory


def _in_memory(index: FrameIndex, opts: LoaderOptions, *, workdir=None, progress=True, **options):
    import tensorflow as tf

    reject("in_memory", options)
    # Held in variables, so the dataset graph refers to the data instead of copying it;
    # in host memory, where tf.data runs, even on a machine with GPUs.
    with tf.device("/CPU:0"):
        x = tf.Variable(index.read_all()[..., None], trainable=False)
        y = tf.Variable(index.labels, trainable=False)
    ds = order_dataset(len(index), opts).batch(opts.batch_size)
    ds = ds.map(lambda rows: (tf.gather(x, rows), tf.gather(y, rows)),
                num_parallel_calls=tf.data.AUTOTUNE)
    return finish(ds, num_batches(len(index), opts.batch_size))


_BUILDERS = {
    "generator": _generator,
    "pydataset": _pydataset,
    "numpy_function": _numpy_function,
    "memmap": _memmap,
    "tfrecord": _tfrecord,
    "in_memory": _in_memory,
}
