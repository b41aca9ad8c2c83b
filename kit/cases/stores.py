"""What the cases' derived stores share: folder names, shard names and checks, one TFRecord reader.

* ``store_folder``: ``<workdir>/<case>-<format>-<key[:16]>``, the content-keyed folder;
* ``shard_tags``: ``00000-of-00003`` names of ``count`` shards;
* ``check_shards``: every shard of a manifest present at the size it was written
  (before reading: a shard cut short or replaced is refused);
* ``read_tfrecords``: shards read by a parallel interleave with a read buffer,
  shuffled, batched, then parsed a whole batch at once by the case's parse;
* ``check_tfrecord_shard``: the deep check ``kit.store.verify`` runs on a shard.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from kit import store

__all__ = ["DEFAULT_READ_BUFFER", "store_folder", "shard_tags", "check_shards", "read_tfrecords",
           "check_tfrecord_shard", "tfrecord_not_resumable"]

#: An 8 MB read buffer per file: 1.3-1.9x the rate of TFRecordDataset's 256 KB default
#: on the spectrogram bench data (32 MB was no better), measured side by side on 2 cores.
DEFAULT_READ_BUFFER = 8 << 20


def store_folder(case: str, fmt: str, key: str, workdir=None) -> Path:
    """The content-keyed folder of a ``case`` store in format ``fmt`` under ``workdir``."""
    root = Path(workdir) if workdir is not None else store.default_workdir()
    return root / f"{case}-{fmt}-{key[:16]}"


def shard_tags(count: int) -> list[str]:
    """``["00000-of-00003", ...]``: the numbering of ``count`` shards (at least 5 digits)."""
    width = max(5, len(str(count)))
    return [f"{k:0{width}d}-of-{count:0{width}d}" for k in range(count)]


def check_shards(folder: Path, manifest: store.Manifest) -> list[str]:
    """Paths of every shard of ``manifest``, each checked against the size it was written at.

    Raises:
        kit.store.StoreError: a shard missing or of another size, naming it.
    """
    paths = []
    for s in manifest.shards:
        path = Path(folder) / s["name"]
        size = path.stat().st_size if path.exists() else 0
        if size != s["bytes"]:
            raise store.StoreError(
                f"{path}: missing or {size} bytes where the manifest says {s['bytes']}; "
                f"run `python -m kit verify {folder}` and reconvert"
            )
        paths.append(str(path))
    return paths


def read_tfrecords(paths: Sequence[str], parse: Callable, opts, *, shuffle_buffer: int,
                   cycle_length: int = 4, read_buffer: int = DEFAULT_READ_BUFFER, block: int | None = None):
    """Batches of TFRecord shards, parsed a whole batch at a time.

    Args:
        paths: the shard files.
        parse: ``parse(serialized_batch) -> (x, y)``, vectorised over the batch.
        opts: ``LoaderOptions`` (batch size, shuffle, seed).
        shuffle_buffer: records in the shuffle buffer (records are written in a
            seeded random order, so the buffer only mixes them further).
        cycle_length: shards read at once.
        read_buffer: bytes of read buffer per shard.
        block: records hold blocks of up to ``block`` examples each: the shuffle buffer
            holds ``shuffle_buffer`` examples' worth of whole records, ``parse(record)``
            decodes one record into a batch of its examples: one decode per block. Shuffled,
            the decoded examples pass through a shuffle buffer of examples before batching;
            unshuffled, the blocks are cut into batches (``rebatch``).

    Returns:
        A ``tf.data.Dataset`` of ``(x, y)`` batches (not yet guarded: ``kit.epochs.finish``).
    """
    import tensorflow as tf

    files = tf.data.Dataset.from_tensor_slices(list(paths))
    if opts.shuffle:
        files = files.shuffle(len(paths), seed=opts.seed, reshuffle_each_iteration=True)
    ds = files.interleave(lambda f: tf.data.TFRecordDataset(f, buffer_size=read_buffer),
                          cycle_length=min(cycle_length, len(paths)),
                          num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if block is not None:
        if opts.shuffle:  # whole records: shuffle_buffer examples' worth
            ds = ds.shuffle(max(1, -(-shuffle_buffer // block)), seed=opts.seed, reshuffle_each_iteration=True)
        ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE)  # each record decoded once for its block
        if opts.shuffle:
            # A record's frames were written side by side: shuffling whole records alone would
            # serve them in the same order and together in every epoch (on small data, whole
            # epochs repeated). The decoded frames go through a shuffle buffer of frames.
            ds = ds.unbatch().shuffle(shuffle_buffer, seed=opts.seed, reshuffle_each_iteration=True)
            return ds.batch(opts.batch_size)
        return ds.rebatch(opts.batch_size)
    if opts.shuffle:
        ds = ds.shuffle(shuffle_buffer, seed=opts.seed, reshuffle_each_iteration=True)
    ds = ds.batch(opts.batch_size)  # batch first, then parse the whole batch at once
    return ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE)


def tfrecord_not_resumable(variant: str, shuffle: bool) -> str:
    """Why a ``read_tfrecords`` loader cannot resume mid-epoch (``kit.epochs.not_resumable``)."""
    if shuffle:
        why = ("its shuffle buffers (of records, then of examples) hold the examples they have read: its "
               "position is not a place in an order computed from the seed, and a checkpoint would hold "
               "the buffers' data (up to shuffle_buffer examples)")
    else:
        why = "its records are cut into batches by rebatch, which saves its buffer, not a position"
    return (f"variant {variant!r} reads TFRecord shards sequentially and {why}; use the memmap store "
            f"(random access: every epoch's order is computed from the seed), which resumes mid-epoch")


def check_tfrecord_shard(path: Path, count: int, parse: Callable, *, batch: int | None = 256,
                         inspect: Callable | None = None) -> str | None:
    """Reads a TFRecord shard through ``parse``: None when it holds ``count`` readable
    records (and ``inspect(x, y, first)`` finds nothing in any batch, ``first`` the
    position of its first record), else what is wrong. ``batch=None`` passes the
    records one at a time (records that each hold a block of examples)."""
    import tensorflow as tf

    seen = 0
    records = tf.data.TFRecordDataset(str(path))
    try:
        for serialized in (records if batch is None else records.batch(batch)):
            x, y = parse(serialized)
            problem = inspect(x, y, seen) if inspect is not None else None
            if problem:
                return problem
            seen += int(y.shape[0])
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as e:
        return f"unreadable records ({e.message.splitlines()[0]})"
    if seen != count:
        return f"{seen} records, manifest says {count}"
    return None
