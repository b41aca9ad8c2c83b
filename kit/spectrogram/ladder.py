"""The tf.data guide's ladder, on the spectrogram case: one change per rung.

``ladder(index, batch_size=...)`` returns the rungs in order, each a ``tf.data.Dataset``
that yields the same batches as the loader variants:

1. ``map``: a per-frame ``tf.numpy_function`` read, one frame at a time, then batch;
2. ``+prefetch``: reading overlaps with the consumer;
3. ``+parallel map``: several frames read at once (bounded by Python's GIL);
4. ``+vectorise``: batch the row numbers first, then read the whole batch in one
   gather from the consolidated memmap, inside the graph (the ``memmap`` variant).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from kit.epochs import num_batches, order_dataset
from kit.spectrogram.index import FrameIndex, open_frames
from kit.spectrogram.loaders import LoaderOptions, make_loader

__all__ = ["RUNGS", "ladder"]

RUNGS = ("map", "+prefetch", "+parallel map", "+vectorise")


def _per_frame(index: FrameIndex, opts: LoaderOptions, *, parallel: bool, prefetch: bool):
    h, w = index.frame_shape
    maps = {}

    def read_one(i):
        k = int(index.file_ids[i])
        if k not in maps:
            maps[k] = open_frames(index.files[k])
        return np.asarray(maps[k][index.frames[i]], np.float32).reshape(h, w, 1), index.labels[i]

    def load(i):
        x, y = tf.numpy_function(read_one, [i], (tf.float32, tf.int64), stateful=False)
        return tf.ensure_shape(x, (h, w, 1)), tf.ensure_shape(y, ())

    ds = order_dataset(len(index), opts)
    ds = ds.map(load, num_parallel_calls=tf.data.AUTOTUNE if parallel else None)
    ds = ds.batch(opts.batch_size)
    ds = ds.apply(tf.data.experimental.assert_cardinality(num_batches(len(index), opts.batch_size)))
    if prefetch:
        ds = ds.prefetch(tf.data.AUTOTUNE)
    else:  # tf.data would otherwise add a prefetch by itself (inject_prefetch)
        options = tf.data.Options()
        options.experimental_optimization.inject_prefetch = False
        ds = ds.with_options(options)
    return ds


def ladder(index: FrameIndex, *, batch_size: int, shuffle: bool = True, seed: int = 0,
           workdir=None) -> dict:
    """The rungs of the ladder, name -> dataset, in order (see the module docstring)."""
    opts = LoaderOptions(batch_size, shuffle, seed)
    return {
        "map": _per_frame(index, opts, parallel=False, prefetch=False),
        "+prefetch": _per_frame(index, opts, parallel=False, prefetch=True),
        "+parallel map": _per_frame(index, opts, parallel=True, prefetch=True),
        "+vectorise": make_loader("memmap", index, batch_size=batch_size, shuffle=shuffle, seed=seed,
                                  workdir=workdir, progress=False),
    }
