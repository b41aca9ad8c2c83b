"""Every loader variant of the segmentation case, built by one function.

``make_loader(name, index, palette, *, batch_size, size=(512, 512), shuffle=True, seed=0,
workdir=None, **options)`` returns a batch source yielding ``(x, y)`` in one form:

* ``x``: images ``(B, H, W, 3)``, float32 in [0, 1] (``x_dtype="float32"``), or the raw
  uint8 pixels (``x_dtype="uint8"``), which a model built with
  ``kit.models.unet.unet(..., input_dtype="uint8")`` normalises itself, on the accelerator.
  The default is float32, except for ``class_index``, whose point is to move that
  work into the model (its default is uint8);
* ``y``: class ids ``(B, H, W)`` uint8 for ``SparseCategoricalCrossentropy`` (pixels of
  unknown colour or padding carry ``palette.ignore_label``, for ``ignore_class=``), or
  with ``one_hot=True`` float32 ``(B, H, W, C)`` for ``CategoricalCrossentropy`` (ids
  outside 0..C-1 give all-zero rows).

Every pair of the index comes exactly once per epoch (the last batch may be smaller),
identical to ``PairIndex.read`` (the reference decode); each variant reshuffles every
epoch when ``shuffle`` is set. ``VARIANTS`` lists them.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import numpy as np

from kit.epochs import epoch_order, finish, num_batches, order_dataset, reject
from kit.errors import DataError
from kit.segmentation.convert import DEFAULT_SHARD_MB, convert, open_memmap_store, parse_batch
from kit.segmentation.index import UNKNOWN, PairIndex, Palette, crop_or_pad

VARIANTS = {
    "sequence": "the user's DataGenerator: keras PyDataset, one worker; OpenCV decode, float "
                "conversion, a loop over the palette colours per mask (the baseline)",
    "sequence_workers": "the same PyDataset with workers (default: the usable CPUs) and use_multiprocessing",
    "tfdata_naive": "the user's tf.data rewrite: decode_png, convert_image_dtype, an equal/reduce_all "
                    "per palette colour in the graph, map with 4 parallel calls, batch",
    "tfdata_tuned": "tf.data: native decode, one vectorised palette lookup (no colour loop), uint8 "
                    "until a per-batch cast, parallel map, prefetch",
    "class_index": "converted once: uint8 images and class-index maps in memmap (or TFRecord) shards, "
                   "one vectorised read per batch; normalisation (and one-hot) in the model",
}

#: Variants whose pipeline is pure TensorFlow graph (no Python function), what tf.data
#: service can run; ``class_index`` is too with ``format="tfrecord"``.
GRAPH_ONLY = ("tfdata_naive", "tfdata_tuned")
X_DTYPES = ("float32", "uint8")


def default_x_dtype(name: str) -> str:
    """The ``x`` dtype a variant delivers unless told: uint8 for ``class_index``, else float32."""
    return "uint8" if name == "class_index" else "float32"


@dataclass(frozen=True)
class LoaderOptions:
    """Options every variant shares; validates itself."""

    batch_size: int
    size: tuple[int, int] = (512, 512)
    shuffle: bool = True
    seed: int = 0
    x_dtype: str = "float32"
    one_hot: bool = False

    def __post_init__(self):
        if not isinstance(self.batch_size, (int, np.integer)) or isinstance(self.batch_size, bool) \
                or self.batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {self.batch_size!r}")
        if self.x_dtype not in X_DTYPES:
            raise ValueError(f"x_dtype must be one of {X_DTYPES}, got {self.x_dtype!r}")
        if not isinstance(self.one_hot, bool):
            raise ValueError(f"one_hot must be True or False, got {self.one_hot!r}")


def make_loader(name: str, index: PairIndex, palette: Palette, *, batch_size: int, size=(512, 512),
                shuffle: bool = True, seed: int = 0, workdir=None, **options):
    """Builds the loader variant ``name`` over ``index``.

    Args:
        name: one of ``VARIANTS``.
        index: a ``PairIndex``.
        palette: the masks' colour code (and ignore label), a ``Palette``.
        batch_size: pairs per batch (the last batch of an epoch may be smaller).
        size: ``(height, width)`` (or one int) every pair is cropped or padded to.
        shuffle: reshuffle every epoch.
        seed: makes the shuffles reproducible.
        workdir: where the ``class_index`` store is built.
        **options: ``x_dtype`` (``"float32"`` or ``"uint8"``, see the module docstring),
            ``one_hot`` (False), and per variant:
            ``sequence``/``sequence_workers``: ``workers`` (1 / the usable CPUs),
            ``use_multiprocessing`` (False / True), ``max_queue_size`` (10);
            ``tfdata_naive``: ``parallel_calls`` (4, the user's setting);
            ``class_index``: ``format`` (``"memmap"`` or ``"tfrecord"``), ``folder`` (use this
            store folder), ``shard_mb`` (100), ``shuffle_buffer`` (64, tfrecord), ``progress`` (True);
            graph-only pipelines: ``service`` (``grpc://host:port`` of a tf.data service dispatcher).

    Returns:
        A ``keras.utils.PyDataset`` for the ``sequence`` variants, else a ``tf.data.Dataset``
        (ending with ``assert_cardinality``, so a short epoch fails loudly). All go
        straight into ``model.fit`` and ``kit.timing.measure``.
    """
    if name not in VARIANTS:
        raise ValueError(f"unknown variant {name!r}; choose one of {', '.join(VARIANTS)}")
    if not isinstance(index, PairIndex) or not isinstance(palette, Palette):
        raise TypeError("make_loader(name, index, palette, ...) takes a PairIndex and a Palette")
    size = index.check_size(size, palette)
    opts = LoaderOptions(batch_size, size, shuffle, seed, options.pop("x_dtype", default_x_dtype(name)),
                         options.pop("one_hot", False))
    service = options.pop("service", None)
    graph_only = name in GRAPH_ONLY or (name == "class_index" and options.get("format") == "tfrecord")
    if service is not None and not graph_only:
        raise ValueError(
            f"variant {name!r} runs Python code in its pipeline, which tf.data service workers cannot "
            f"run; use one of {', '.join(GRAPH_ONLY)}, or class_index with format='tfrecord', with service="
        )
    loader = _BUILDERS[name](index, palette, opts, workdir=workdir, progress=options.pop("progress", True),
                             **options)
    if service is not None:
        from kit.distribute import through_service

        loader = through_service(loader, service)
    return loader



def _usable_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _needs_padding(index: PairIndex, size) -> bool:
    return bool(((index.heights < size[0]) | (index.widths < size[1])).any())


# --------------------------------------------------------------------------- sequence


def _cv2_rgb(path: str, where: str) -> np.ndarray:
    """The user's ``load_image``: OpenCV decode, BGR to RGB.

    ``IMREAD_COLOR`` (not the user's ``-1``) turns grey-scale and palette images into
    three channels and drops alpha, like the other decoders; EXIF rotation is ignored,
    as Pillow and TensorFlow ignore it.
    """
    import cv2

    bgr = cv2.imread(path, cv2.IMREAD_COLOR | cv2.IMREAD_IGNORE_ORIENTATION)
    if bgr is None:
        reason = "file not found" if not os.path.exists(path) else "unreadable image, truncated or corrupt"
        raise DataError(f"{where}: {path}: {reason} (OpenCV could not decode it)")
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def _colour_loop(mask: np.ndarray, path: str, where: str, palette: Palette, opts: LoaderOptions):
    """The user's ``one_hot_it``: one comparison of the whole mask per palette colour."""
    h, w = opts.size
    mask = crop_or_pad(mask, (min(h, mask.shape[0]), min(w, mask.shape[1])))  # crop only
    planes = [np.all(mask == colour, axis=-1) for colour in palette.colours]
    c, ignore = len(planes), palette.ignore_label
    if opts.one_hot:
        stacked = np.stack(planes, axis=-1)
        known = stacked.any(axis=-1)
        if ignore is None:
            _raise_unknown(palette, mask, ~known, path, where)
        y = np.float32(stacked)
        if ignore is not None and ignore < c:
            y[~known, ignore] = 1.0
        if y.shape[:2] != (h, w):
            region = crop_or_pad(np.zeros(y.shape[:2], bool), opts.size, True)
            y = crop_or_pad(y, opts.size, 0.0)
            if palette.pad_id < c:
                y[region, palette.pad_id] = 1.0
        return y
    ids = np.full(mask.shape[:2], palette.unknown_id, np.uint8)
    for k, plane in enumerate(planes):
        ids[plane] = k
    if ignore is None:
        _raise_unknown(palette, mask, ids == UNKNOWN, path, where)
    return crop_or_pad(ids, opts.size, palette.pad_id if palette.pad_id is not None else 0)


def _raise_unknown(palette, mask, unknown, path, where):
    try:
        palette.check_known(mask, unknown, path)
    except DataError as e:
        raise DataError(f"{where}: {e}") from None


def _sequence(index, palette, opts, *, workdir=None, progress=True, workers: int = 1, use_multiprocessing: bool = False,
              max_queue_size: int = 10, **options):
    reject("sequence", options)
    return _make_sequence(index, palette, opts, workers, use_multiprocessing, max_queue_size)


def _sequence_workers(index, palette, opts, *, workdir=None, progress=True, workers: int | None = None,
                      use_multiprocessing: bool = True, max_queue_size: int = 10, **options):
    reject("sequence_workers", options)
    workers = _usable_cpus() if workers is None else workers
    return _make_sequence(index, palette, opts, workers, use_multiprocessing, max_queue_size)


def _make_sequence(index, palette, opts, workers, use_multiprocessing, max_queue_size):
    try:
        import cv2  # noqa: F401
    except ImportError:
        raise ImportError("the sequence variants decode with OpenCV, as the user's DataGenerator: "
                          "pip install opencv-python-headless") from None
    if not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    return _sequence_class()(index, palette, opts, workers=workers, use_multiprocessing=use_multiprocessing,
                             max_queue_size=max_queue_size)


@functools.cache
def _sequence_class():
    import keras

    class PairSequence(keras.utils.PyDataset):
        """The user's DataGenerator as a PyDataset; reshuffles at every epoch's end."""

        def __init__(self, index: PairIndex, palette: Palette, opts: LoaderOptions, **kwargs):
            super().__init__(**kwargs)
            self.index, self.palette, self.opts = index, palette, opts
            self.epoch = 0
            self._order = epoch_order(len(index), opts.shuffle, opts.seed, 0)

        def __len__(self):
            return num_batches(len(self.index), self.opts.batch_size)

        def __getitem__(self, i):
            if not 0 <= i < len(self):
                raise IndexError(f"batch {i} out of range (0..{len(self) - 1})")
            bs = self.opts.batch_size
            xs, ys = [], []
            for r in self._order[i * bs:(i + 1) * bs]:
                where = self.index.where(r)
                image = crop_or_pad(_cv2_rgb(self.index.images[r], where), self.opts.size, 0)
                xs.append(np.float32(image) / 255.0 if self.opts.x_dtype == "float32" else image)
                mask = _cv2_rgb(self.index.labels[r], where)
                ys.append(_colour_loop(mask, self.index.labels[r], where, self.palette, self.opts))
            return np.stack(xs), np.stack(ys)

        def on_epoch_end(self):
            self.epoch += 1
            self._order = epoch_order(len(self.index), self.opts.shuffle, self.opts.seed, self.epoch)

    PairSequence.__module__ = __name__  # pickles by reference through __getattr__ below
    return PairSequence


def __getattr__(name):
    # PairSequence subclasses keras.utils.PyDataset: built on first use, so that
    # importing this module does not import Keras.
    if name == "PairSequence":
        return _sequence_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --------------------------------------------------------------------------- tf.data helpers


def _crop_tf(x, size):
    """Centred crop to at most ``size`` (the offsets of ``crop_or_pad``)."""
    import tensorflow as tf

    h, w = tf.shape(x)[0], tf.shape(x)[1]
    top, left = tf.maximum(h - size[0], 0) // 2, tf.maximum(w - size[1], 0) // 2
    return x[top:top + size[0], left:left + size[1]]


def _pad_tf(x, size, fill):
    """Centred pad to ``size`` with ``fill`` (after ``_crop_tf``)."""
    import tensorflow as tf

    h, w = tf.shape(x)[0], tf.shape(x)[1]
    ph, pw = size[0] - h, size[1] - w
    pads = [[ph // 2, ph - ph // 2], [pw // 2, pw - pw // 2]] + [[0, 0]] * (len(x.shape) - 2)
    x = tf.pad(x, pads, constant_values=tf.cast(fill, x.dtype))
    return tf.ensure_shape(x, tuple(size) + tuple(x.shape[2:]))


def _codes_tf(rgb):
    import tensorflow as tf

    rgb = tf.cast(rgb, tf.int32)
    return rgb[..., 0] * 65536 + rgb[..., 1] * 256 + rgb[..., 2]


def _assert_known(y, unknown, code, path, where, palette: Palette):
    """Fails the pipeline, naming the file, a colour not in the palette and its pixel count."""
    import tensorflow as tf

    def fail():
        first = tf.boolean_mask(code, unknown)[0]
        count = tf.reduce_sum(tf.cast(tf.equal(code, first), tf.int64))
        total = tf.reduce_sum(tf.cast(unknown, tf.int64))
        text = lambda v: tf.strings.as_string(v)  # noqa: E731
        msg = tf.strings.join([
            where, ": ", path, ": colour (", text(first // 65536), ", ", text(first // 256 % 256), ", ",
            text(first % 256), f") is not in the palette ({palette.source}): ", text(count), " pixels (",
            text(total), " of unknown colours in all). Add the colour to the palette, or set an ignore "
            "label so the loss skips it"])
        with tf.control_dependencies([tf.debugging.Assert(False, [msg])]):
            return tf.identity(y)

    return tf.cond(tf.reduce_any(unknown), fail, lambda: y)


def _post(opts: LoaderOptions, num_classes: int):
    """Per-batch ``x`` cast (uint8 to float32 in [0, 1]) and ``one_hot``, or None if neither."""
    import tensorflow as tf

    if opts.x_dtype == "uint8" and not opts.one_hot:
        return None

    def post(x, y):
        if opts.x_dtype == "float32" and x.dtype == tf.uint8:
            x = tf.cast(x, tf.float32) / 255.0
        if opts.one_hot and len(y.shape) == 3:
            y = tf.one_hot(tf.cast(y, tf.int32), num_classes, dtype=tf.float32)  # ids >= C: zeros
        return x, y

    return post


def _paths(index: PairIndex):
    import tensorflow as tf

    return (tf.constant(list(index.images)), tf.constant(list(index.labels)),
            tf.constant([index.where(i) for i in range(len(index))]))


# --------------------------------------------------------------------------- tfdata_naive


def _tfdata_naive(index, palette, opts, *, workdir=None, progress=True, parallel_calls: int = 4, **options):
    import tensorflow as tf

    reject("tfdata_naive", options)
    h, w = opts.size
    colours = [tuple(int(v) for v in c) for c in palette.colours]  # the user's label_values
    c, ignore, pad_id = len(colours), palette.ignore_label, palette.pad_id
    padding = _needs_padding(index, opts.size)
    images, labels, wheres = _paths(index)

    def preprocess(i):
        # The user's preprocess_fn, with channels=3 so grey and RGBA files convert.
        x = tf.io.decode_png(tf.io.read_file(images[i]), channels=3)
        if opts.x_dtype == "float32":
            x = tf.image.convert_image_dtype(x, tf.float32, saturate=False)
        x = tf.image.resize_with_crop_or_pad(x, h, w)
        y = _crop_tf(tf.io.decode_png(tf.io.read_file(labels[i]), channels=3), opts.size)
        semantic_map = []
        for colour in colours:  # one full pass over the mask per colour
            semantic_map.append(tf.reduce_all(tf.equal(y, colour), axis=-1))
        if opts.one_hot:
            stacked = tf.stack(semantic_map, axis=-1)
            unknown = tf.logical_not(tf.reduce_any(stacked, axis=-1))
            onehot = tf.cast(stacked, tf.float32)
            if ignore is None:
                onehot = _assert_known(onehot, unknown, _codes_tf(y), labels[i], wheres[i], palette)
            elif ignore < c:
                onehot += tf.cast(unknown, tf.float32)[..., None] * tf.one_hot(ignore, c)
            if padding:
                inside = _pad_tf(tf.ones(tf.shape(onehot)[:2]), opts.size, 0.0)
                onehot = _pad_tf(onehot, opts.size, 0.0)
                if pad_id < c:
                    onehot += (1.0 - inside)[..., None] * tf.one_hot(pad_id, c)
            return x, tf.ensure_shape(onehot, (h, w, c))
        ids = tf.fill(tf.shape(y)[:2], tf.constant(palette.unknown_id, tf.uint8))
        for k, plane in enumerate(semantic_map):
            ids = tf.where(plane, tf.constant(k, tf.uint8), ids)
        if ignore is None:
            ids = _assert_known(ids, tf.equal(ids, UNKNOWN), _codes_tf(y), labels[i], wheres[i], palette)
        return x, _pad_tf(ids, opts.size, pad_id if pad_id is not None else 0)

    ds = order_dataset(len(index), opts)
    ds = ds.map(preprocess, num_parallel_calls=parallel_calls).batch(opts.batch_size)
    return finish(ds, num_batches(len(index), opts.batch_size))


# --------------------------------------------------------------------------- tfdata_tuned


def _tfdata_tuned(index, palette, opts, *, workdir=None, progress=True, **options):
    import tensorflow as tf

    reject("tfdata_tuned", options)
    images, labels, wheres = _paths(index)
    pad_id = palette.pad_id if palette.pad_id is not None else 0
    padding = _needs_padding(index, opts.size)
    lut = tf.constant(palette.lut)  # class id of every 24-bit colour: one gather per mask

    def decode(path):
        x = tf.io.decode_image(tf.io.read_file(path), channels=3, expand_animations=False)
        return _crop_tf(x, opts.size)

    def load(i):
        x = decode(images[i])
        rgb = decode(labels[i])  # crop first: the lookup then runs on the kept pixels only
        code = _codes_tf(rgb)
        ids = tf.gather(lut, code)
        if palette.ignore_label is None:
            ids = _assert_known(ids, tf.equal(ids, UNKNOWN), code, labels[i], wheres[i], palette)
        if padding:
            x, ids = _pad_tf(x, opts.size, 0), _pad_tf(ids, opts.size, pad_id)
        else:
            x, ids = tf.ensure_shape(x, opts.size + (3,)), tf.ensure_shape(ids, opts.size)
        return x, ids

    ds = order_dataset(len(index), opts).map(load, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.batch(opts.batch_size)  # uint8 until here: a quarter of float32's bytes to move
    post = _post(opts, palette.num_classes)
    if post is not None:
        ds = ds.map(post, num_parallel_calls=tf.data.AUTOTUNE)
    return finish(ds, num_batches(len(index), opts.batch_size))


# --------------------------------------------------------------------------- class_index


def _class_index(index, palette, opts, *, workdir=None, format: str = "memmap", folder=None,
                 shard_mb: float = DEFAULT_SHARD_MB, shuffle_buffer: int = 64, progress=True, **options):
    import tensorflow as tf

    from kit import store

    reject("class_index", options)
    if not isinstance(shuffle_buffer, int) or shuffle_buffer <= 0:
        raise ValueError(f"shuffle_buffer must be a positive integer, got {shuffle_buffer!r}")
    folder, manifest = convert(index, palette, format, folder, size=opts.size, workdir=workdir,
                               shard_mb=shard_mb, seed=opts.seed, progress=progress)
    # A shard cut short or replaced since it was written is refused before reading.
    for s in manifest.shards:
        path = folder / s["name"]
        if not path.exists() or path.stat().st_size != s["bytes"]:
            raise store.StoreError(
                f"{path}: missing or {path.stat().st_size if path.exists() else 0} bytes where the "
                f"manifest says {s['bytes']}; run `python -m kit verify {folder}` and reconvert"
            )
    n, size = len(index), opts.size
    if format == "memmap":
        images, labels, starts = open_memmap_store(folder, manifest)

        def gather(rows):
            rows = np.sort(rows)  # sequential reads within each shard
            x = np.empty((len(rows),) + size + (3,), np.uint8)
            y = np.empty((len(rows),) + size, np.uint8)
            shard = np.searchsorted(starts, rows, side="right") - 1
            cuts = np.flatnonzero(np.diff(shard)) + 1
            for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(rows)]):
                k = shard[a]
                np.take(images[k], rows[a:b] - starts[k], axis=0, out=x[a:b])
                np.take(labels[k], rows[a:b] - starts[k], axis=0, out=y[a:b])
            return x, y

        def load(rows):
            x, y = tf.numpy_function(gather, [rows], (tf.uint8, tf.uint8), stateful=False)
            return tf.ensure_shape(x, (None,) + size + (3,)), tf.ensure_shape(y, (None,) + size)

        ds = order_dataset(n, opts).batch(opts.batch_size).map(load, num_parallel_calls=tf.data.AUTOTUNE)
    else:
        paths = [str(folder / s["name"]) for s in manifest.shards]
        files = tf.data.Dataset.from_tensor_slices(paths)
        if opts.shuffle:
            files = files.shuffle(len(paths), seed=opts.seed, reshuffle_each_iteration=True)
        ds = files.interleave(tf.data.TFRecordDataset, cycle_length=min(4, len(paths)),
                              num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        if opts.shuffle:  # records are written in a random order; 64 x 1 MB mixes them further
            ds = ds.shuffle(shuffle_buffer, seed=opts.seed, reshuffle_each_iteration=True)
        ds = ds.batch(opts.batch_size).map(lambda s: parse_batch(s, size), num_parallel_calls=tf.data.AUTOTUNE)
    post = _post(opts, palette.num_classes)
    if post is not None:
        ds = ds.map(post, num_parallel_calls=tf.data.AUTOTUNE)
    return finish(ds, num_batches(n, opts.batch_size))


_BUILDERS = {
    "sequence": _sequence,
    "sequence_workers": _sequence_workers,
    "tfdata_naive": _tfdata_naive,
    "tfdata_tuned": _tfdata_tuned,
    "class_index": _class_index,
}
