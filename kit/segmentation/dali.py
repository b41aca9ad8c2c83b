"""The ``dali`` variant: NVIDIA DALI decodes the pairs and maps mask colours to class ids.

Optional (``pip install 'kit[dali]'``; the TensorFlow plugin needs ``--no-build-isolation``). Per epoch:

1. tf.data gives the epoch's row order (DALI's own reader neither gives every row once per epoch
   nor changes its file list), reads each file and checks it is complete, so a file cut short
   fails naming it and its CSV line;
2. DALI decodes the bytes (``device="mixed"`` on a GPU), maps colours to class ids with two
   ``fn.lookup_table`` (its keys stop below 65,536: ``(r, g)`` to a group, then ``group * 256 + b``
   to the id) and crops or pads both, centred, like ``crop_or_pad``;
3. tf.data trims the padding of the last batch (DALI runs full batches only), fails on a colour
   not in the palette with the reference decode's message, casts and one-hot encodes.

On a GPU the batches come back to the host as uint8, so the steps after are the same as on the CPU.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from kit.cases import VariantOptions
from kit.epochs import not_resumable
from kit.errors import DataError
from kit.segmentation.index import _PNG_END, UNKNOWN, PairIndex, Palette
from kit.util import usable_cpus

DEVICES = ("cpu", "gpu")
#: Batches DALI prepares ahead (its default).
PREFETCH = 2


@dataclass(frozen=True)
class DaliOptions(VariantOptions):
    """``dali``: ``device`` (``"cpu"`` or ``"gpu"``; None: a GPU when TensorFlow sees one),
    ``threads`` (DALI's CPU threads; None: the usable CPUs), ``parallel_reads`` (None: AUTOTUNE)."""

    POSITIVE = ("threads", "parallel_reads")
    device: str | None = None
    threads: int | None = None
    parallel_reads: int | None = None

    def __post_init__(self):
        super().__post_init__()
        if self.device is not None and self.device not in DEVICES:
            raise ValueError(f"device must be one of {DEVICES} or None, got {self.device!r}")


@functools.cache
def available() -> str | None:
    """None if DALI and its TensorFlow plugin import, else why not (one line, with the fix)."""
    try:
        import nvidia.dali  # noqa: F401  # optional extra: dali
    except ImportError as e:
        return (f"NVIDIA DALI is not installed ({e}); on Linux x86_64: "
                "pip install 'kit[dali]' then the plugin (make demo WITH_PEERS=1 does both), see the README")
    try:
        import nvidia.dali.plugin.tf  # noqa: F401  # optional extra: dali
    except ImportError as e:
        return (f"DALI's TensorFlow plugin does not load ({e}); install it with "
                "pip install --no-build-isolation nvidia-dali-tf-plugin-cuda120")
    return None


def lookup_keys(palette: Palette) -> tuple[list[int], list[int]]:
    """The two tables of the colour lookup: ``(r << 8 | g)`` keys of the first (their
    position is the group), ``group << 8 | b`` keys of the second (in class order)."""
    colours = palette.colours.astype(np.int64)
    rg = (colours[:, 0] << 8) | colours[:, 1]
    groups = sorted(set(rg.tolist()))  # at most 255 groups: group 255 means "unknown (r, g)"
    where = {k: i for i, k in enumerate(groups)}
    return groups, [(where[int(k)] << 8) | int(b) for k, b in zip(rg, colours[:, 2])]


def _pipeline(palette: Palette, size, *, batch_size: int, device: str, threads: int, seed: int):
    """The DALI pipeline: encoded image and mask bytes in; uint8 images, class ids, rows out."""
    from nvidia.dali import fn, pipeline_def, types  # optional extra: dali
    from nvidia.dali import math as dmath  # optional extra: dali

    h, w = size
    rg_keys, b_keys = lookup_keys(palette)
    unknown_id = palette.unknown_id
    pad_id = palette.pad_id if palette.pad_id is not None else 0
    gpu = device == "gpu"

    def centred(x, fill):
        # crop_or_pad's offsets: crop (h - H) // 2 from the top, pad (H - h) // 2 above.
        shape = fn.cast(x.shape(), dtype=types.INT32)
        top = dmath.max(shape[0] - h, 0) // 2 - dmath.max(h - shape[0], 0) // 2
        left = dmath.max(shape[1] - w, 0) // 2 - dmath.max(w - shape[1], 0) // 2
        anchor = fn.stack(top, left)
        return fn.slice(x, anchor, np.array([h, w], np.int32), axes=[0, 1], out_of_bounds_policy="pad",
                        fill_values=fill)

    @pipeline_def(batch_size=batch_size, num_threads=threads,
                  device_id=0 if gpu else None,  # type: ignore[arg-type]  # None: no GPU, as DALI documents
                  prefetch_queue_depth=PREFETCH, seed=seed)
    def pipe():
        image = fn.external_source(name="image", dtype=types.UINT8, ndim=1)
        mask = fn.external_source(name="mask", dtype=types.UINT8, ndim=1)
        row = fn.external_source(name="row", dtype=types.INT64, ndim=0)
        decoder = "mixed" if gpu else "cpu"
        # adjust_orientation=False: EXIF rotation is ignored, as Pillow and TensorFlow ignore it.
        x = fn.decoders.image(image, device=decoder, output_type=types.RGB, adjust_orientation=False)
        m = fn.decoders.image(mask, device=decoder, output_type=types.RGB, adjust_orientation=False)
        m = fn.cast(m, dtype=types.INT32)
        group = fn.lookup_table(m[:, :, 0] * 256 + m[:, :, 1], keys=rg_keys, values=list(range(len(rg_keys))),
                                default_value=255, dtype=types.INT32)
        ids = fn.lookup_table(group * 256 + m[:, :, 2], keys=b_keys, values=list(range(len(b_keys))),
                              default_value=unknown_id, dtype=types.UINT8)
        x, ids = centred(x, 0), centred(ids, pad_id)
        if gpu:
            x, ids = x.cpu(), ids.cpu()
        return x, ids, row

    return pipe()


def _complete(data, path, where, kind: str):
    """Fails, naming the file and its line, when a PNG or JPEG lacks its end marker."""
    import tensorflow as tf  # keeps kit.segmentation.dali light: TensorFlow (kit.bench.segmentation imports it)

    head = tf.strings.substr(data, 0, 4)
    tail = tf.strings.substr(data, tf.maximum(tf.strings.length(data) - 1024, 0), 1024)
    has = lambda marker: tf.size(tf.strings.split(tail, sep=marker)) > 1  # noqa: E731
    png, jpeg = tf.equal(head, b"\x89PNG"), tf.equal(tf.strings.substr(head, 0, 2), b"\xff\xd8")
    ok = tf.logical_and(tf.logical_or(tf.logical_not(png), has(_PNG_END)),
                        tf.logical_or(tf.logical_not(jpeg), has(b"\xff\xd9")))
    msg = tf.strings.join([where, ": ", kind, " ", path, ": truncated file (its end marker is missing); "
                           "it changed after the index was read"])
    with tf.control_dependencies([tf.debugging.Assert(ok, [msg])]):
        return tf.io.decode_raw(data, tf.uint8)


def _colour_error(index: PairIndex, palette: Palette, size):
    """Raises the reference decode's error for the first row with an unknown colour."""

    def fail(rows, unknown):
        for r, n in zip(rows, unknown):
            if n:
                index.read_ids(int(r), palette, size)  # raises DataError naming line, file, colour
                raise DataError(f"{index.where(int(r))}: {index.labels[int(r)]}: DALI found {int(n)} pixels "
                                "of colours not in the palette, the reference decode none")
        return np.int64(0)

    return fail


def make_dali(index: PairIndex, opts, vopts: DaliOptions, *, post=None):
    """The ``dali`` loader over ``index``: a ``tf.data.Dataset`` of one epoch per iteration; ``opts``:
    the case's ``PairOptions``, ``post``: a per-batch ``(x, ids) -> (x, y)`` map, or None."""
    why = available()
    if why is not None:
        raise ImportError(f"the dali variant needs DALI: {why}")
    import tensorflow as tf  # keeps kit.segmentation.dali light: TensorFlow (kit.bench.segmentation imports it)
    from nvidia.dali.plugin import tf as dali_tf  # optional extra: dali

    from kit.epochs.datasets import finish, order_dataset  # imports TensorFlow

    palette = opts.palette
    device = vopts.device or ("gpu" if tf.config.list_physical_devices("GPU") else "cpu")
    threads = vopts.threads or usable_cpus()
    reads = tf.data.AUTOTUNE if vopts.parallel_reads is None else vopts.parallel_reads
    n, bs = len(index), opts.batch_size
    pad = (-n) % bs
    images, labels = tf.constant(list(index.images)), tf.constant(list(index.labels))
    wheres = tf.constant([index.where(i) for i in range(n)])

    def rows():
        # One copy per DALI input, iterated once per epoch: sharing the seed, they give one order.
        order = order_dataset(n, opts)
        if pad:  # DALI runs full batches: pad with row -1 (it decodes row 0 again), trimmed below
            order = order.concatenate(tf.data.Dataset.from_tensors(tf.constant(-1, tf.int64)).repeat(pad))
        return order

    def read(table, kind):
        def one(r):
            r = tf.maximum(r, 0)
            return _complete(tf.io.read_file(table[r]), table[r], wheres[r], kind)

        return rows().map(one, num_parallel_calls=reads).prefetch(bs)

    pipe = _pipeline(palette, opts.size, batch_size=bs, device=device, threads=threads, seed=opts.seed)
    h, w = opts.size
    with tf.device("/cpu:0"):  # outputs on the host; on a GPU the pipeline itself runs there
        ds = dali_tf.experimental.DALIDatasetWithInputs(  # type: ignore[attr-defined]  # built by DALI at import
            pipeline=pipe, batch_size=bs, device_id=0 if device == "gpu" else None,
            input_datasets={"image": read(images, "image"), "mask": read(labels, "mask"), "row": rows()},
            output_dtypes=(tf.uint8, tf.uint8, tf.int64),
            output_shapes=((None, h, w, 3), (None, h, w), (None,)))
    check = palette.ignore_label is None
    fail = _colour_error(index, palette, opts.size)

    def trim(x, ids, row):
        keep = tf.reduce_sum(tf.cast(row >= 0, tf.int32))  # padding rows come last
        x, ids, row = x[:keep], ids[:keep], row[:keep]
        if check:
            unknown = tf.reduce_sum(tf.cast(tf.equal(ids, UNKNOWN), tf.int64), axis=[1, 2])
            ok = tf.cond(tf.reduce_any(unknown > 0),
                         lambda: tf.numpy_function(fail, [row, unknown], tf.int64, stateful=True),
                         lambda: tf.constant(0, tf.int64))
            with tf.control_dependencies([ok]):
                ids = tf.identity(ids)
        return x, ids

    ds = ds.map(trim, num_parallel_calls=tf.data.AUTOTUNE)
    if post is not None:
        ds = ds.map(post, num_parallel_calls=tf.data.AUTOTUNE)
    return not_resumable(finish(ds, n, bs), "variant 'dali' runs a DALI pipeline, whose state tf.data cannot "
                         "save; use 'class_index' (format='memmap') or 'tfdata_tuned', which resume mid-epoch")

