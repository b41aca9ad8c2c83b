"""Every loader variant of the segmentation case, built by ``make_loader``; each yields ``(x, y)``:

* ``x``: images ``(B, H, W, 3)``, float32 in [0, 1], or the raw uint8 pixels, which
  ``kit.models.unet.unet(..., input_dtype="uint8")`` normalises on the accelerator (the default of
  ``class_index``, whose point is to move that work into the model);
* ``y``: class ids ``(B, H, W)`` uint8 (unknown colours and padding carry ``palette.ignore_label``),
  or with ``one_hot=True`` float32 ``(B, H, W, C)`` (ids outside 0..C-1 give all-zero rows).

Every pair comes exactly once per epoch, identical to ``PairIndex.read``, reshuffled every epoch
when ``shuffle`` is set.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import tensorflow as tf

from kit.cases import LoaderOptions, Variant, VariantOptions, check_shards
from kit.cases.loaders import NoOptions, check_variant, graph_only, serve
from kit.cases.pydataset import EpochPyDataset
from kit.epochs import not_resumable, num_batches, record
from kit.epochs.datasets import finish, order_batches, order_dataset
from kit.errors import DataError
from kit.segmentation.convert import DEFAULT_SHARD_MB, convert, open_memmap_store, parse_batch
from kit.segmentation.dali import DaliOptions, make_dali
from kit.segmentation.index import UNKNOWN, PairIndex, Palette, crop_or_pad
from kit.segmentation.variants import GRAPH_ONLY, VARIANTS, X_DTYPES, default_x_dtype
from kit.util import usable_cpus


@dataclass(frozen=True)
class PairOptions(LoaderOptions):
    """What every variant of this case takes, beside ``LoaderOptions``' fields; validates itself."""

    palette: Palette = field(kw_only=True)
    size: tuple[int, int] = (512, 512)
    x_dtype: str = "float32"
    one_hot: bool = False

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.palette, Palette):
            raise TypeError(f"palette must be a Palette, got {type(self.palette).__name__}")
        if self.x_dtype not in X_DTYPES:
            raise ValueError(f"x_dtype must be one of {X_DTYPES}, got {self.x_dtype!r}")
        if not isinstance(self.one_hot, bool):
            raise ValueError(f"one_hot must be True or False, got {self.one_hot!r}")


@dataclass(frozen=True)
class SequenceOptions(VariantOptions):
    """``sequence``: the user's DataGenerator settings (one worker)."""

    POSITIVE = ("workers", "max_queue_size")
    workers: int | None = 1
    use_multiprocessing: bool = False
    max_queue_size: int = 10


@dataclass(frozen=True)
class WorkerSequenceOptions(SequenceOptions):
    """``sequence_workers``: workers default to the usable CPUs, in processes."""

    workers: int | None = None
    use_multiprocessing: bool = True


@dataclass(frozen=True)
class NaiveOptions(VariantOptions):
    """``tfdata_naive``: the user's ``num_parallel_calls``."""

    POSITIVE = ("parallel_calls",)
    parallel_calls: int = 4


@dataclass(frozen=True)
class ClassIndexOptions(VariantOptions):
    """``class_index``: the store's format, folder and shard size, the TFRecord reader's window;
    ``check_store``: compare a reused store's files with their manifest's SHA-256 (None: as
    ``$KIT_CHECK_STORES`` says)."""

    POSITIVE = ("shuffle_buffer",)
    FLAGS = ("check_store",)
    format: str = "memmap"
    folder: str | None = None
    shard_mb: float = DEFAULT_SHARD_MB
    shuffle_buffer: int = 64
    check_store: bool | None = None

    def __post_init__(self):
        super().__post_init__()
        if self.format not in ("memmap", "tfrecord"):
            raise ValueError(f"format must be 'memmap' or 'tfrecord', got {self.format!r}")


def make_loader(name: str, index: PairIndex, palette: Palette, *, batch_size: int, size=(512, 512),
                shuffle: bool = True, seed: int = 0, workdir=None, x_dtype: str | None = None,
                one_hot: bool = False, progress: bool | str = True, service: str | None = None,
                service_timeout_s: float | None = None, **options):
    """The work behind ``kit.segmentation.make_loader``, whose docstring says every argument."""
    variant, vopts = check_variant(REGISTRY, name, service, service_timeout_s, **options)
    if not isinstance(index, PairIndex) or not isinstance(palette, Palette):
        raise TypeError("make_loader(name, index, palette, ...) takes a PairIndex and a Palette")
    size = index.check_size(size, palette)
    opts = PairOptions(batch_size, shuffle, seed, workdir, progress, palette=palette, size=size,
                       x_dtype=default_x_dtype(name) if x_dtype is None else x_dtype, one_hot=one_hot)
    return serve(variant.build(index, opts, vopts), name, len(index), batch_size, service, service_timeout_s)


def _needs_padding(index: PairIndex, size) -> bool:
    return bool(((index.heights < size[0]) | (index.widths < size[1])).any())


def _cv2_rgb(path: str, where: str) -> np.ndarray:
    """The user's ``load_image``: OpenCV decode, BGR to RGB (``IMREAD_COLOR``, not the user's ``-1``:
    three channels like the other decoders; EXIF rotation ignored as they ignore it)."""
    import cv2  # optional extra: cv2 (only the sequence variants decode with OpenCV)

    bgr = cv2.imread(path, cv2.IMREAD_COLOR | cv2.IMREAD_IGNORE_ORIENTATION)
    if bgr is None:
        reason = "file not found" if not os.path.exists(path) else "unreadable image, truncated or corrupt"
        raise DataError(f"{where}: {path}: {reason} (OpenCV could not decode it)")
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def _colour_loop(mask: np.ndarray, path: str, where: str, palette: Palette, opts: PairOptions):
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
            if palette.pad_id is not None and palette.pad_id < c:  # set wherever padding is (check_size)
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


def _sequence(index: PairIndex, opts: PairOptions, vopts: SequenceOptions):
    try:
        import cv2  # noqa: F401  # optional extra: cv2 (probed for a clear error)
    except ImportError:
        raise ImportError("the sequence variants decode with OpenCV, as the user's DataGenerator: "
                          "pip install opencv-python-headless") from None
    workers = usable_cpus() if vopts.workers is None else vopts.workers
    return PairSequence(index, opts, workers=workers, use_multiprocessing=vopts.use_multiprocessing,
                        max_queue_size=vopts.max_queue_size)


class PairSequence(EpochPyDataset):
    """The user's DataGenerator (a ``keras.utils.PyDataset``); reshuffles at every epoch's end."""

    def load(self, rows):
        opts, xs, ys = self.opts, [], []
        for r in rows:
            where = self.index.where(r)
            image = crop_or_pad(_cv2_rgb(self.index.images[r], where), opts.size, 0)
            xs.append(np.float32(image) / 255.0 if opts.x_dtype == "float32" else image)
            mask = _cv2_rgb(self.index.labels[r], where)
            ys.append(_colour_loop(mask, self.index.labels[r], where, opts.palette, opts))
        return np.stack(xs), np.stack(ys)


def _crop_tf(x, size):
    """Centred crop to at most ``size`` (the offsets of ``crop_or_pad``)."""
    h, w = tf.shape(x)[0], tf.shape(x)[1]
    top, left = tf.maximum(h - size[0], 0) // 2, tf.maximum(w - size[1], 0) // 2
    return x[top:top + size[0], left:left + size[1]]


def _pad_tf(x, size, fill):
    """Centred pad to ``size`` with ``fill`` (after ``_crop_tf``)."""
    h, w = tf.shape(x)[0], tf.shape(x)[1]
    ph, pw = size[0] - h, size[1] - w
    pads = [[ph // 2, ph - ph // 2], [pw // 2, pw - pw // 2]] + [[0, 0]] * (len(x.shape) - 2)
    x = tf.pad(x, pads, constant_values=tf.cast(fill, x.dtype))
    return tf.ensure_shape(x, tuple(size) + tuple(x.shape[2:]))


def _codes_tf(rgb):
    rgb = tf.cast(rgb, tf.int32)
    return rgb[..., 0] * 65536 + rgb[..., 1] * 256 + rgb[..., 2]


def _assert_known(y, unknown, code, path, where, palette: Palette):
    """Fails the pipeline, naming the file, a colour not in the palette and its pixel count."""
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


def _post(opts: PairOptions):
    """Per-batch ``x`` cast (uint8 to float32 in [0, 1]) and ``one_hot``, or None if neither."""
    if opts.x_dtype == "uint8" and not opts.one_hot:
        return None
    num_classes = opts.palette.num_classes

    def post(x, y):
        if opts.x_dtype == "float32" and x.dtype == tf.uint8:
            x = tf.cast(x, tf.float32) / 255.0
        if opts.one_hot and len(y.shape) == 3:
            y = tf.one_hot(tf.cast(y, tf.int32), num_classes, dtype=tf.float32)  # ids >= C: zeros
        return x, y

    return post


def _paths(index: PairIndex):
    return (tf.constant(list(index.images)), tf.constant(list(index.labels)),
            tf.constant([index.where(i) for i in range(len(index))]))


def _tfdata_naive(index: PairIndex, opts: PairOptions, vopts: NaiveOptions):
    palette = opts.palette
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

    def pipeline(order):
        return order.map(preprocess, num_parallel_calls=vopts.parallel_calls).batch(opts.batch_size)

    # Its order computed per epoch (resumable); tf.data service runs it over a splittable one.
    return finish(pipeline(order_dataset(len(index), opts)), len(index), opts.batch_size,
                  body=pipeline(order_dataset(len(index), opts, splittable=True)))


def _tfdata_tuned(index: PairIndex, opts: PairOptions, vopts: NoOptions):
    palette = opts.palette
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

    def pipeline(order):  # uint8 until batched: a quarter of float32's bytes to move
        return _with_post(order.map(load, num_parallel_calls=tf.data.AUTOTUNE).batch(opts.batch_size), opts)

    # Its order computed per epoch (resumable); tf.data service runs it over a splittable one.
    return finish(pipeline(order_dataset(len(index), opts)), len(index), opts.batch_size,
                  body=pipeline(order_dataset(len(index), opts, splittable=True)))


def _class_index(index: PairIndex, opts: PairOptions, vopts: ClassIndexOptions):
    palette = opts.palette
    folder, manifest = convert(index, palette, vopts.format, vopts.folder, size=opts.size, workdir=opts.workdir,
                               shard_mb=vopts.shard_mb, seed=opts.seed, progress=opts.progress,
                               check=vopts.check_store)
    paths = check_shards(folder, manifest)  # a shard cut short or replaced is refused before reading
    n, size = len(index), opts.size
    if vopts.format == "memmap":
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

        ds = order_batches(n, opts.batch_size, opts).map(load, num_parallel_calls=tf.data.AUTOTUNE)
        return finish(_with_post(ds, opts), n, opts.batch_size)
    # Records are written in a random order; plain tf.data reads them: the shards in parallel, the
    # records through a shuffle buffer, a batch of records parsed at once.
    files = tf.data.Dataset.from_tensor_slices(paths)
    if opts.shuffle:
        files = files.shuffle(len(paths), seed=opts.seed, reshuffle_each_iteration=True)
    ds = files.interleave(tf.data.TFRecordDataset, num_parallel_calls=tf.data.AUTOTUNE, deterministic=not opts.shuffle)
    if opts.shuffle:
        ds = ds.shuffle(vopts.shuffle_buffer, seed=opts.seed, reshuffle_each_iteration=True)
    body = _with_post(ds.batch(opts.batch_size).map(lambda s: parse_batch(s, size), num_parallel_calls=tf.data.AUTOTUNE),
                      opts).prefetch(tf.data.AUTOTUNE)
    ds = body.apply(tf.data.experimental.assert_cardinality(num_batches(n, opts.batch_size)))
    return not_resumable(record(ds, n, opts.batch_size, body),
                         "variant 'class_index' with format='tfrecord' shuffles its records through a shuffle "
                         "buffer, whose records a checkpoint would have to hold; use format='memmap', which "
                         "resumes mid-epoch")


def _with_post(ds, opts):
    post = _post(opts)
    return ds if post is None else ds.map(post, num_parallel_calls=tf.data.AUTOTUNE)


def _dali(index: PairIndex, opts: PairOptions, vopts: DaliOptions):
    return make_dali(index, opts, vopts, post=_post(opts))


#: Every variant: its description, builder, options and whether tf.data service can run it.
REGISTRY = {
    "sequence": Variant(VARIANTS["sequence"], _sequence, SequenceOptions),
    "sequence_workers": Variant(VARIANTS["sequence_workers"], _sequence, WorkerSequenceOptions),
    "tfdata_naive": Variant(VARIANTS["tfdata_naive"], _tfdata_naive, NaiveOptions, graph_only=True),
    "tfdata_tuned": Variant(VARIANTS["tfdata_tuned"], _tfdata_tuned, graph_only=True),
    "class_index": Variant(VARIANTS["class_index"], _class_index, ClassIndexOptions,
                           graph_only=("format", "tfrecord")),
    "dali": Variant(VARIANTS["dali"], _dali, DaliOptions),
}

# kit.segmentation.variants names them without importing this module: the same variants, the same
# graph-only ones.
if list(VARIANTS) != list(REGISTRY) or GRAPH_ONLY != graph_only(REGISTRY):
    raise RuntimeError("kit.segmentation.variants names other variants than kit.segmentation.loaders builds")
