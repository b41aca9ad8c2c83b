"""The order a loader delivers frames in, read back from the frames themselves (notebook 03).

A store that reads near-sequentially (TFRecord records of many frames, memmap blocks) trades
some of the order's randomness for speed. ``epoch_rows`` recovers which index row each
delivered frame is (by its content: every frame of the kit's sample data differs), so the
order of any variant can be measured the same way, without asking the loader how it orders:

* ``one_file_batches``: the share of batches whose frames all come from one source file (a
  fully random order over many files: about 0; file order: about 1);
* ``files_per_batch``: the median number of distinct source files in a batch;
* ``same_position`` (two epochs): the share of frames delivered at the same position in both
  epochs (a loader that repeats its order: 1; a reshuffled one: about 0);
* ``batch_mates_kept`` (two epochs): the share of pairs of frames sharing a batch in the first
  epoch that share one again in the second, beside ``batch_mates_kept_if_random``.

``fit_orders`` reads the order ``model.fit`` itself trains on, epoch by epoch: a loader can be
right when iterated and still give ``fit`` the same order every epoch (Grain's, without
``repeat()``: notebook 03).
"""

from __future__ import annotations

import hashlib

import keras
import numpy as np
import tensorflow as tf

from kit.epochs.datasets import block_order_dataset
from kit.errors import DataError
from kit.spectrogram.index import FrameIndex
from kit.timing.batches import iterate


def _digest(frame: np.ndarray) -> bytes:
    return hashlib.blake2b(np.ascontiguousarray(frame, np.float32).tobytes(), digest_size=16).digest()


def frame_digests(index: FrameIndex, store_dtype: str = "float32") -> dict[bytes, int]:
    """Each row's frame, as a loader of a ``store_dtype`` store delivers it (float32 after the
    store's rounding), by its digest -> the row. Raises ``DataError`` if two rows hold the same
    frame (their order could not be told apart)."""
    frames = index.read_all().astype(store_dtype).astype(np.float32)
    out: dict[bytes, int] = {}
    for i, f in enumerate(frames):
        d = _digest(f)
        if d in out:
            raise DataError(f"{index.csv_path}: rows {out[d]} and {i} hold the same frame: "
                            "their positions in an epoch cannot be told apart")
        out[d] = i
    return out


def epoch_rows(loader, index: FrameIndex, *, digests: dict[bytes, int] | None = None,
               store_dtype: str = "float32") -> tuple[np.ndarray, list[int]]:
    """One epoch of ``loader`` as the index rows it delivered, in order, and each batch's
    size. A frame that is no row of ``index``, or a label that is not its row's, raises
    ``DataError``."""
    digests = digests if digests is not None else frame_digests(index, store_dtype)
    rows: list[int] = []
    sizes: list[int] = []
    shape = tuple(index.frame_shape)
    for x, y in iterate(loader):
        x = np.asarray(x).reshape((-1,) + shape)
        y = np.asarray(y).reshape(len(x), -1)
        y = y.argmax(axis=1) if y.shape[1] > 1 else y[:, 0]
        for f, label in zip(x, y):
            row = digests.get(_digest(f))
            if row is None:
                raise DataError(f"a delivered frame (batch {len(sizes)}) is no row of {index.csv_path}")
            if int(label) != int(index.labels[row]):
                raise DataError(f"{index.csv_path}: row {row} delivered with label {int(label)}, "
                                f"not {int(index.labels[row])}")
            rows.append(row)
        sizes.append(len(x))
    return np.asarray(rows, np.int64), sizes


def order_quality(index: FrameIndex, rows: np.ndarray, sizes: list[int],
                  previous: np.ndarray | None = None, seed: int = 0) -> dict:
    """The order of one epoch (``rows`` in batches of ``sizes``) in numbers (the module's
    docstring); with ``previous``, the epoch before, also what the two share."""
    rows = np.asarray(rows)
    cuts = np.cumsum(sizes)[:-1]
    batches = np.split(rows, cuts)
    files = [np.unique(index.file_ids[b]) for b in batches if len(b)]
    out = {"one_file_batches": float(np.mean([len(f) == 1 for f in files])),
           "files_per_batch": float(np.median([len(f) for f in files]))}
    if previous is not None:
        previous = np.asarray(previous)
        n = len(index)
        out["same_position"] = float(np.mean(previous == rows)) if len(previous) == len(rows) else 0.0
        out.update(batch_mates(rows, previous, sizes, n, seed=seed))
    return out


def batch_mates(rows: np.ndarray, previous: np.ndarray, sizes, n: int, *, seed: int = 0) -> dict:
    """What two epochs' orders (``rows`` after ``previous``, in batches of ``sizes``) share:
    ``batch_mates_kept``, the share of frame pairs sharing a batch in ``previous`` that share one
    again in ``rows`` (sampled pairs), beside ``batch_mates_kept_if_random``."""
    def batch_of(order):
        b = np.full(n, -1, np.int64)
        b[np.asarray(order)] = np.repeat(np.arange(len(sizes)), sizes)[:len(order)]
        return b

    now, before = batch_of(rows), batch_of(previous)
    rng = np.random.default_rng(seed)
    a, c = rng.integers(0, n, 200_000), rng.integers(0, n, 200_000)
    together = (before[a] == before[c]) & (a != c)
    kept = float(np.mean(now[a][together] == now[c][together])) if together.any() else 0.0
    return {"batch_mates_kept": kept, "batch_mates_kept_if_random": float(np.mean(sizes) / n)}


def fit_orders(data, index: FrameIndex, *, epochs: int = 2, digests: dict[bytes, int] | None = None,
               **fit) -> list[np.ndarray]:
    """The index rows ``model.fit(data, epochs=epochs, **fit)`` trains on, one array per epoch.

    A small model (global pooling, one dense layer) records each batch its ``train_step``
    receives (run eagerly, so the batches are NumPy-readable); each frame is named by its
    content, its label checked, as ``epoch_rows`` does."""

    digests = digests if digests is not None else frame_digests(index)
    seen: list[list[int]] = []
    shape = tuple(index.frame_shape)

    class Recording(keras.Model):
        def train_step(self, batch):
            x, y = batch[0], batch[1]
            rows, _ = epoch_rows([(np.asarray(x), np.asarray(y))], index, digests=digests)
            seen[-1].extend(rows.tolist())
            return super().train_step(batch)

    inputs = keras.Input(shape + (1,))
    pooled = keras.layers.GlobalAveragePooling2D()(inputs)
    model = Recording(inputs, keras.layers.Dense(index.num_classes)(pooled))
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True), run_eagerly=True)
    model.fit(data, epochs=epochs, verbose=0,
              callbacks=[keras.callbacks.LambdaCallback(on_epoch_begin=lambda e, logs: seen.append([]))], **fit)
    return [np.asarray(e, np.int64) for e in seen]


def order_randomness(rows: np.ndarray, *, batch_size: int, n: int, previous: np.ndarray | None = None) -> dict:
    """How random one epoch's order of the rows ``0..n-1`` is, in numbers, without an index (notebook 03).

    Returns:
        ``batch_span``: the median stretch of the file a batch draws from, as a fraction of
        the file (about 1 for a fully random order, the window's share for a block order);
        ``neighbours_kept``: the share of frames whose next frame in the epoch is within
        ``batch_size`` rows of it in the file (0 for random, near 1 for file order);
        ``batch_mates_kept`` (with ``previous``, the epoch before): the share of frame pairs
        sharing a batch in both epochs, against the share a fully random order keeps.
    """
    rows = np.asarray(rows)
    batches = [rows[i:i + batch_size] for i in range(0, len(rows), batch_size)]
    spans = [(b.max() - b.min() + 1) / n for b in batches if len(b) > 1]
    out = {"batch_span": float(np.median(spans)),
           "neighbours_kept": float(np.mean(np.abs(np.diff(rows)) <= batch_size))}
    if previous is not None:
        sizes = [len(b) for b in batches]
        out.update(batch_mates(rows, previous, sizes, n))
    return out


def epoch_orders(order: str, n: int, *, batch_size: int, seed: int = 0, epochs: int = 2, **blocks) -> list:
    """The row order of ``epochs`` successive epochs of the memmap variant's ``order``
    (``"random"`` or ``"blocks"``, with ``block``/``window`` in ``blocks``), as arrays."""
    if order == "blocks":
        ds = block_order_dataset(n, batch_size, seed=seed, **blocks)
    elif order == "random":
        ds = tf.data.Dataset.range(n).shuffle(n, seed=seed, reshuffle_each_iteration=True).batch(batch_size)
    else:
        raise ValueError(f"order must be 'random' or 'blocks', got {order!r}")
    return [np.concatenate([b.numpy() for b in ds]) for _ in range(epochs)]


#: The epoch orders ``read_cold_and_warm`` compares, as ``make_loader("memmap", ...)`` options.
ORDER_LOADERS = {"random": {"order": "random"}, "blocks": {"order": "blocks"},
                 "blocks, read_ahead=0": {"order": "blocks", "read_ahead": 0}}


def read_cold_and_warm(loaders: dict, files, *, expected: int, labels: np.ndarray | None = None,
                       rounds: int = 3):
    """Each loader's whole epoch read **cold** (``files`` evicted from the page cache first) and then
    **warm** (at once again, its pages cached: nothing read from the disk), the loaders interleaved
    in each of ``rounds`` rounds, after one untimed epoch each (it builds the pipeline) (notebook 03b).

    Returns:
        A DataFrame, one row per loader and state: ``order`` (the loader's name), ``state``,
        ``examples_per_s`` and ``epoch_s`` (medians over the rounds), ``round_min`` and ``round_max``
        (the rounds' rates); ``disk_s`` on the cold rows: the median cold epoch less the median warm
        one, what reading from the disk added (0 at least).
    """
    import pandas as pd

    from kit.system.pagecache import evict
    from kit.timing.rates import timed_epoch

    if rounds < 1:
        raise ValueError(f"rounds must be positive, got {rounds}")
    for loader in loaders.values():
        timed_epoch(loader, expected=expected, labels=labels)
    seconds: dict = {(name, state): [] for name in loaders for state in ("cold", "warm")}
    for _ in range(rounds):
        for name, loader in loaders.items():
            evict(files)
            seconds[name, "cold"].append(timed_epoch(loader, expected=expected, labels=labels)[1])
            seconds[name, "warm"].append(timed_epoch(loader, expected=expected, labels=labels)[1])
    rows = []
    for (name, state), times in seconds.items():
        t = np.asarray(times)
        rows.append({"order": name, "state": state, "examples_per_s": expected / float(np.median(t)),
                     "epoch_s": float(np.median(t)), "round_min": expected / t.max(), "round_max": expected / t.min()})
    warm = {r["order"]: r["epoch_s"] for r in rows if r["state"] == "warm"}
    for r in rows:  # a warm epoch reads nothing from the disk: no disk time to state, a blank
        r["disk_s"] = round(max(0.0, r["epoch_s"] - warm[r["order"]]), 4) if r["state"] == "cold" else ""
    return pd.DataFrame(rows).astype({"disk_s": object})


def order_why(epochs, *, store_mb: float) -> str:
    """The order that won the cold epochs of ``epochs`` (``read_cold_and_warm``'s table) and why, in
    one paragraph of Markdown computed from it: the disk time each order's cold epoch spent, and
    what its own work cost warm, where nothing is read from the disk."""
    cold = epochs[epochs["state"] == "cold"].set_index("order")
    warm = epochs[epochs["state"] == "warm"].set_index("order")["epoch_s"]
    disk = cold["disk_s"].astype(float)
    win = str(cold["examples_per_s"].idxmax())
    family = "blocks" if win.startswith("blocks") else "random"
    others = cold[[not str(o).startswith(family) for o in cold.index]]
    if others.empty:
        return f"Read cold, the **{win}** order won here ({cold.loc[win, 'examples_per_s']:,.0f} frames/s)."
    rival = str(others["examples_per_s"].idxmax())
    said = (f"Read cold, the **{win}** order won here: {cold.loc[win, 'examples_per_s']:,.0f} frames/s against "
            f"{cold.loc[rival, 'examples_per_s']:,.0f} for `{rival}` (medians of the rounds).")
    spent = (f"Each cold epoch spent {disk[win]:.3f} s ({win}) and {disk[rival]:.3f} s ({rival}) reading from the "
             "disk (cold less warm)")
    extra = warm[rival] - warm[win]  # what the loser's own work cost more, warm
    if family == "blocks":
        why = (f"{spent}: the near-sequential reads the block order is built for"
               + (f", saving more than the {-extra:.3f} s its own work costs warm." if extra < 0 else "."))
        return f"{said} {why}"
    work = "drawing its order" + ("" if "read_ahead=0" in rival else ", asking the kernel for each window's blocks")
    own = (f"Warm, where nothing is read from the disk, `{rival}` took {extra:.3f} s more per epoch than random: "
           f"the block order's own work ({work}) costs CPU time." if extra > 0
           else f"Warm, `{rival}` was no slower ({-extra:.3f} s faster per epoch).")
    repaid = ("less, but not enough to repay that work" if disk[rival] < disk[win]
              else "the block order saved no disk time here")
    return (f"{said} {own} {spent}: {repaid}. A store of {store_mb:,.0f} MB read from this machine's disk pays "
            "little for scattered reads; the block order pays where each seek costs (a spinning disk, a network "
            "volume) and the store outgrows the page cache (`python -m lab.scale` measures that).")
