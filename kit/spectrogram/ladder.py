"""The tf.data guide's ladder, on the spectrogram case: one change per rung.

``ladder(index, batch_size=...)`` returns the rungs in order, each a ``tf.data.Dataset``
that yields the same batches as the loader variants; ``CHANGES`` says what each rung changes
against the one below it, and ``source(rung)`` is the rung's own code (notebook 02 shows it):

1. ``map``: tf.data over row numbers, each frame read by ``np.load`` of its whole file (the
   user's read) in a per-frame ``tf.numpy_function``, one call at a time, then batch;
2. ``+memory maps``: the frame read through its file's memory map (only its own bytes);
3. ``+vectorise``: batch the row numbers first, then one Python call reads the whole batch;
4. ``+prefetch``: reading overlaps with the consumer's step (it gains only against a consumer
   that works: ``kit.timing.compare(..., step_s=...)``);
5. ``+parallel map``: several batches read at once (bounded by Python's GIL);
6. ``+in the graph``: the frames consolidated once into one memmap, each batch one gather
   inside the graph, no Python at all (the ``memmap`` variant).

TensorFlow applies two of these rungs by itself (``tf.data.Options``' default optimisations
``inject_prefetch`` and ``map_parallelization``: a stateless map runs in parallel, a prefetch
is added at the end). The rungs below them turn those off, so that each rung shows its own
change; a pipeline written as the ``map`` rung but with the defaults on gets both for free.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import tensorflow as tf

from kit.spectrogram.index import FrameIndex
from kit.spectrogram.loaders import LoaderOptions, make_loader

#: What each rung changes against the rung below it.
CHANGES = {
    "map": "tf.data over row numbers; a per-frame numpy_function np.loads the frame's whole file",
    "+memory maps": "the frame read through its file's memory map: its own bytes, not the whole file",
    "+vectorise": "batch the row numbers first, then one numpy_function call reads the whole batch",
    "+prefetch": "prefetch: the next batch is read while the consumer works on this one",
    "+parallel map": "num_parallel_calls=AUTOTUNE: several batches read at once (the GIL bounds it)",
    "+in the graph": "the frames consolidated once into one memmap; one gather per batch in the graph",
}
#: The rungs, in order.
RUNGS = tuple(CHANGES)


def rows(index: FrameIndex, opts: LoaderOptions):
    """The epoch's row numbers, reshuffled every epoch."""
    ds = tf.data.Dataset.range(len(index))
    if opts.shuffle:
        ds = ds.shuffle(len(index), seed=opts.seed, reshuffle_each_iteration=True)
    return ds


def only_its_own_change(ds, *, prefetch: bool, parallel: bool):
    """TensorFlow's own prefetch and map parallelisation off where the rung has not made that
    change yet, so that each rung shows its own (see the module docstring)."""
    options = tf.data.Options()
    options.experimental_optimization.inject_prefetch = prefetch
    options.experimental_optimization.map_parallelization = parallel
    return ds.with_options(options)


def as_tensors(read, index: FrameIndex, batched: bool = False):
    """``read`` (NumPy: row numbers -> frames, labels) as a tf.data map function, its shapes restored."""
    h, w = index.frame_shape

    def load(i):
        x, y = tf.numpy_function(read, [i], (tf.float32, tf.int64), stateful=False)
        return tf.ensure_shape(x, (None, h, w, 1) if batched else (h, w, 1)), tf.ensure_shape(y, (None,) if batched else ())

    return load


def whole_file(index: FrameIndex):
    """The user's read: ``np.load`` the frame's whole file, keep one frame."""
    h, w = index.frame_shape

    def read(i):
        frames = np.load(index.files[int(index.file_ids[i])], allow_pickle=False)
        return frames[index.frames[i]].astype(np.float32).reshape(h, w, 1), index.labels[i]

    return read


def memory_mapped(index: FrameIndex):
    """One frame through its file's memory map, opened once per file."""
    h, w = index.frame_shape
    maps: dict = {}

    def read(i):
        k = int(index.file_ids[i])
        if k not in maps:
            maps[k] = np.load(index.files[k], mmap_mode="r", allow_pickle=False)
        return np.asarray(maps[k][index.frames[i]], np.float32).reshape(h, w, 1), index.labels[i]

    return read


def memory_mapped_batch(index: FrameIndex):
    """A batch of rows through the files' memory maps: one call, every frame of the batch."""
    one = memory_mapped(index)

    def read(rows):
        frames, labels = zip(*(one(i) for i in rows))
        return np.stack(frames), np.asarray(labels, np.int64)

    return read


def rung_map(index: FrameIndex, opts: LoaderOptions):
    ds = rows(index, opts)
    ds = ds.map(as_tensors(whole_file(index), index))  # one frame per call, one call at a time
    ds = ds.batch(opts.batch_size)
    return only_its_own_change(ds, prefetch=False, parallel=False)


def rung_memory_maps(index: FrameIndex, opts: LoaderOptions):
    ds = rows(index, opts)
    ds = ds.map(as_tensors(memory_mapped(index), index))  # changed: the frame's bytes, not its file
    ds = ds.batch(opts.batch_size)
    return only_its_own_change(ds, prefetch=False, parallel=False)


def rung_vectorise(index: FrameIndex, opts: LoaderOptions):
    ds = rows(index, opts)
    ds = ds.batch(opts.batch_size)  # changed: batch the row numbers first ...
    ds = ds.map(as_tensors(memory_mapped_batch(index), index, batched=True))  # ... one call reads the batch
    return only_its_own_change(ds, prefetch=False, parallel=False)


def rung_prefetch(index: FrameIndex, opts: LoaderOptions):
    ds = rows(index, opts)
    ds = ds.batch(opts.batch_size)
    ds = ds.map(as_tensors(memory_mapped_batch(index), index, batched=True))
    ds = ds.prefetch(tf.data.AUTOTUNE)  # changed: read the next batch while the consumer works
    return only_its_own_change(ds, prefetch=True, parallel=False)


def rung_parallel_map(index: FrameIndex, opts: LoaderOptions):
    ds = rows(index, opts)
    ds = ds.batch(opts.batch_size)
    ds = ds.map(as_tensors(memory_mapped_batch(index), index, batched=True),
                num_parallel_calls=tf.data.AUTOTUNE)  # changed: several batches at once
    ds = ds.prefetch(tf.data.AUTOTUNE)
    return only_its_own_change(ds, prefetch=True, parallel=True)


def rung_in_the_graph(index: FrameIndex, opts: LoaderOptions, workdir=None):
    # changed: the frames consolidated once into one memmap (a verified store in the kit cache),
    # each batch one sorted gather inside the graph: no Python per frame or per batch
    return make_loader("memmap", index, batch_size=opts.batch_size, shuffle=opts.shuffle, seed=opts.seed,
                       workdir=workdir, progress=False)


_BUILDERS: dict[str, Callable[..., Any]] = {"map": rung_map, "+memory maps": rung_memory_maps, "+vectorise": rung_vectorise,
             "+prefetch": rung_prefetch, "+parallel map": rung_parallel_map, "+in the graph": rung_in_the_graph}


#: What every rung builds on, shown once before the rungs: the epoch's rows, TensorFlow's defaults
#: turned off, the NumPy read as a map function, and the three reads.
HELPERS = (rows, only_its_own_change, as_tensors, whole_file, memory_mapped, memory_mapped_batch)


def source(rung: str | None = None) -> str:
    """The code of ``rung`` as the kit runs it (its builder); None: the helpers every rung uses."""
    return "\n\n".join(inspect.getsource(f) for f in (HELPERS if rung is None else [_BUILDERS[rung]]))


def ladder(index: FrameIndex, *, batch_size: int, shuffle: bool = True, seed: int = 0,
           workdir=None) -> dict:
    """The rungs of the ladder, name -> dataset, in order (see the module docstring)."""
    opts = LoaderOptions(batch_size, shuffle, seed)
    rungs = {name: build(index, opts) for name, build in _BUILDERS.items() if name != "+in the graph"}
    rungs["+in the graph"] = rung_in_the_graph(index, opts, workdir)
    return rungs


#: Why a rung can give nothing where it is measured, said beside it when it did not gain.
_WHY_NOT = {
    "+prefetch": "a consumer that does no work between batches leaves reading ahead nothing to overlap "
                 "with; in training the step is that work",
    "+parallel map": "every numpy_function call holds Python's GIL, so parallel calls queue for it ({cpus} "
                     "usable CPUs here)",
}


def steps(df):
    """Each rung against the rung below it (``map`` against the ``generator`` where the table has it),
    from ``kit.timing.compare``'s table of the rungs (its
    ``variant``, ``examples_per_s``, ``round_min``, ``round_max``): ``rung``, ``change``, ``x_below``
    (the ratio of the rates), ``low`` and ``high`` (the widest the rounds allow: this rung's slowest
    round over the rung below's fastest, and the other way round) and ``verdict``: ``gain`` where even
    ``low`` is above 1.05, ``loss`` where even ``high`` is below 0.95, else ``unclear``."""
    rates = df.set_index("variant")
    rows = []
    order = ("generator", *RUNGS) if "generator" in rates.index else RUNGS  # the first rung against the user's
    for below, rung in zip(order, order[1:]):
        a, b = rates.loc[below], rates.loc[rung]
        low, high = b["round_min"] / a["round_max"], b["round_max"] / a["round_min"]
        rows.append({"rung": rung, "change": CHANGES[rung], "x_below": b["examples_per_s"] / a["examples_per_s"],
                     "low": low, "high": high,
                     "verdict": "gain" if low > 1.05 else "loss" if high < 0.95 else "unclear"})
    return pd.DataFrame(rows)


def reading(table, *, cpus: int) -> list[str]:
    """One sentence per rung of ``steps``' table, each computed from its row; then which rung gained most."""
    out = []
    for r in table.itertuples():
        said = {"gain": "gained", "loss": "lost", "unclear": "changed nothing clear:"}[r.verdict]
        line = f"{r.rung} ({r.change}) {said} {r.x_below:,.2f}x (rounds {r.low:,.2f}-{r.high:,.2f}x)"
        if r.verdict != "gain" and r.rung in _WHY_NOT:
            line += f"; why here: {_WHY_NOT[r.rung].format(cpus=cpus)}"
        out.append(line)
    top = table.loc[table["x_below"].idxmax()]
    out.append(f"The biggest rung in this run: {top.rung}, {top.x_below:,.1f}x the rung below it.")
    return out
