"""What the cases' derived stores share: folder names, shard names and checks, one TFRecord reader.

* ``store_folder``: ``<workdir>/<case>-<format>-<key[:16]>``, the content-keyed folder;
* ``shard_tags``: ``00000-of-00003`` names of ``count`` shards;
* ``check_shards``: every shard of a manifest present at the size it was written
  (before reading: a shard cut short or replaced is refused);
* ``read_tfrecords``: shards read ahead in parallel, interleaved, with a read buffer,
  shuffled, batched, then parsed a whole batch at once by the case's parse (records of
  a block of examples: read without their CRCs when the store was checked at open);
* ``check_tfrecord_shard``: the deep check ``kit.store.verify`` runs on a shard.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Callable, Sequence

from kit import store
from kit.epochs import order_dataset, window_seeds

__all__ = ["DEFAULT_READ_BUFFER", "FIXED_READ_BUFFER", "MIN_RECORDS_PER_BATCH", "TFRECORD_FRAMING", "TFRECORD_HEAD",
           "store_folder", "shard_tags", "check_shards", "read_tfrecords", "check_tfrecord_shard", "record_batches",
           "window_records", "window_order", "whole_records"]

#: Batches are cut from whole records (``read_tfrecords(block=...)``) only when a batch
#: holds at least this many: a record's examples always share a batch, so each example
#: then keeps at most 1/8 of its batch-mates from one epoch to the next.
MIN_RECORDS_PER_BATCH = 8

#: An 8 MB read buffer per file: 1.3-1.9x the rate of TFRecordDataset's 256 KB default
#: on the spectrogram bench data (32 MB was no better), measured side by side on 2 cores.
DEFAULT_READ_BUFFER = 8 << 20

#: 256 KB for shards read in fixed-length pieces (``read_tfrecords(parse_framed=...)``):
#: whole epochs of the spectrogram bench data took 12.8-14.0 ms of CPU a batch of 256,
#: against 14.3-15.8 ms with 8 MB (3 runs side by side, 2 cores).
FIXED_READ_BUFFER = 256 << 10

#: Records read ahead per shard being read (``read_tfrecords``).
SHARD_PREFETCH = 4

#: Bytes of TFRecord framing around each record's data: its length (8 bytes) and the
#: length's CRC (4) before, the data's CRC (4) after.
TFRECORD_FRAMING = 16
#: The framing's bytes before a record's data: its length and the length's CRC.
TFRECORD_HEAD = 12


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
        path = Path(folder) / s.name
        size = path.stat().st_size if path.exists() else 0
        if size != s.bytes:
            raise store.StoreError(
                f"{path}: missing or {size} bytes where the manifest says {s.bytes}; "
                f"run `python -m kit verify {folder}` and reconvert"
            )
        paths.append(str(path))
    return paths


def read_tfrecords(paths: Sequence[str], parse: Callable, opts, *, shuffle_buffer: int,
                   cycle_length: int = 4, read_buffer: int | None = None, block: int | None = None,
                   tail: Sequence[str] = (), splittable: bool = False, record_bytes: int | None = None,
                   parse_framed: Callable | None = None, end_records: bool = False):
    """Batches of TFRecord shards, parsed a whole batch (or a whole record) at a time.

    The epoch order is computed, never buffered, so the loader resumes mid-epoch from a
    checkpoint of a few KB (``kit.epochs.iterator_checkpoint``): the shards in an order
    permuted from a per-iteration seed pair (``kit.epochs.order_dataset``), read
    ``cycle_length`` at a time, and the stream cut into windows of ``shuffle_buffer``
    examples whose order is permuted, each window by its own seed pair drawn afresh
    every epoch (``stateless_shuffle``). Every example exactly once per epoch,
    reshuffled every epoch, deterministic by the seed.

    Args:
        paths: the shard files.
        parse: ``parse(serialized_batch) -> (x, y)``, vectorised over the batch; with
            ``block``, ``parse(records) -> (x, y)`` of the examples of one record or of a
            batch of records.
        opts: ``LoaderOptions`` (batch size, shuffle, seed).
        shuffle_buffer: examples permuted together: how far apart in the shards two
            neighbours of a batch may lie.
        cycle_length: shards read at once (each read ahead by ``SHARD_PREFETCH`` records in
            its own thread).
        read_buffer: bytes of read buffer per shard; None: ``DEFAULT_READ_BUFFER``, or
            ``FIXED_READ_BUFFER`` for shards read as fixed-length records.
        block: every record of ``paths`` holds ``block`` examples (those of ``tail``
            fewer). When the batch is a whole number of records, at least
            ``MIN_RECORDS_PER_BATCH`` of them, the windows permute whole records and each
            batch is that many records, decoded at once: a record's examples always
            share a batch (the price of decoding straight into the batch; their other
            batch-mates change every epoch). Otherwise (or with no whole record at
            all, a store smaller than one record) each record is decoded on its own
            and the windows permute its examples one by one, which costs a copy of every
            example at each step.
        tail: shards read after all of ``paths``, in order, never permuted: the short
            record of a store whose other records are whole.
        record_bytes: with ``block``, the length of every record of ``paths``.
        parse_framed: with ``record_bytes`` and ``end_records``, for a store whose every
            byte was checked at open (``kit.store.check_open``): ``paths`` are read in
            pieces of a fixed length (``tf.data.FixedLengthRecordDataset``) from the first
            record's data on, each a record's data, its CRC and the next record's length
            and the length's CRC (``TFRECORD_HEAD`` bytes), so that the data comes first
            and the CRCs are not computed again (TensorFlow's wheel computes them without
            the CPU's CRC instruction: the largest cost of reading, profiled). Each batch
            goes to ``parse_framed``, which must check each record's stated length (that of
            the next record, or 0 for the end record). The records of ``tail`` are read
            with their CRCs and framed to match (``_framed``).
        end_records: every shard ends in an empty record (after which its last record is
            one fixed-length piece like the others); read with their CRCs, empty records
            are dropped.
        splittable: the pipeline for tf.data service (``kit.epochs.finish(..., body=)``):
            its distributed epochs split the shards among the workers, which a computed
            order is not; there, the shards through ``order_dataset(..., splittable=True)``
            and the examples through a shuffle buffer of ``shuffle_buffer``.

    Returns:
        A ``tf.data.Dataset`` of ``(x, y)`` batches (not yet guarded: ``kit.epochs.finish``).
    """
    import tensorflow as tf  # keeps kit.cases light: TensorFlow

    if parse_framed is not None and not end_records:
        raise ValueError("parse_framed reads shards that end in an empty record: pass end_records=True")
    read = functools.partial(_read_shards, splittable=splittable, cycle_length=cycle_length, read_buffer=read_buffer,
                             end_records=end_records)
    tail = list(tail)
    whole = block is not None and not splittable and whole_records(opts.batch_size, block) and len(paths) > 0
    if not whole:
        paths, tail = list(paths) + tail, []
    names = tf.constant(list(paths))
    files = order_dataset(len(paths), opts, splittable=splittable).map(lambda i: tf.gather(names, i))
    if whole:  # batches of whole records
        return _whole_records(files, len(paths), tail, parse, opts, block, shuffle_buffer, read_buffer, read,
                              record_bytes, parse_framed, end_records)
    ds = read(files, len(paths))
    if block is not None:  # each record decoded once for its block, then one example at a time
        ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE).unbatch()
    if opts.shuffle and splittable:
        ds = ds.shuffle(shuffle_buffer, seed=opts.seed, reshuffle_each_iteration=True)
    elif opts.shuffle:
        ds = _permuted(ds, shuffle_buffer, opts.seed)
    # unbatch + batch, never rebatch: rebatch has no symbolic checkpoint (kit.epochs).
    ds = ds.batch(opts.batch_size)
    if block is not None:
        return ds
    return ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE)  # the whole batch parsed at once


def _read_shards(files, count, dataset=None, *, splittable, cycle_length, read_buffer, end_records):
    """The records of the shards ``files`` names (``count`` of them), ``cycle_length`` read at once;
    ``dataset(file)`` reads one shard (default: its TFRecords, ``_tfrecords``)."""
    import tensorflow as tf  # keeps kit.cases light: TensorFlow

    dataset = dataset or (lambda f: _tfrecords(f, read_buffer, end_records))
    if splittable:  # tf.data service splits the shards among its workers: its parallel interleave
        return files.interleave(dataset, cycle_length=min(cycle_length, count),
                                num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    # Each shard read ahead in its own thread (prefetch), the shards interleaved in
    # order. Not interleave(num_parallel_calls=...): under symbolic checkpointing its
    # save of the elements it opens ahead crashed the process (a segfault in
    # ParallelInterleaveIterator::WriteFutureElements, TF 2.21) within about 150
    # loaders started here; as fast on the spectrogram bench data, side by side.
    # (Under tf.data service this form delivered some records twice.)
    return files.interleave(lambda f: dataset(f).prefetch(SHARD_PREFETCH),
                            cycle_length=min(cycle_length, count))


def _permuted(ds, size, seed):
    """``ds`` in windows of ``size`` elements, each in its own order this epoch (its own seed pair)."""
    import tensorflow as tf  # keeps kit.cases light: TensorFlow

    def permute(window, pair):
        order = tf.random.experimental.stateless_shuffle(
            tf.range(tf.shape(tf.nest.flatten(window)[0])[0]), seed=pair)
        return tf.nest.map_structure(lambda t: tf.gather(t, order), window)

    ds = tf.data.Dataset.zip(ds.batch(size), window_seeds(seed))
    return ds.map(permute, num_parallel_calls=tf.data.AUTOTUNE).unbatch()


def _tfrecords(paths, read_buffer, end_records):
    """TFRecordDataset over ``paths`` (its CRCs computed), without the empty end records."""
    import tensorflow as tf  # keeps kit.cases light: TensorFlow

    ds = tf.data.TFRecordDataset(paths, buffer_size=read_buffer or DEFAULT_READ_BUFFER)
    return ds.filter(lambda r: tf.strings.length(r) > 0) if end_records else ds


def _whole_records(files, count, tail, parse, opts, block, shuffle_buffer, read_buffer, read, record_bytes,
                   parse_framed, end_records):
    """``read_tfrecords``' batches of whole records: ``k`` records a batch, decoded at once.

    Shuffled, the records are taken in windows of a whole number of batches, and each
    window is cut into batches along its own permutation, each batch gathered from
    the window once: a record's bytes are copied once between reading and decoding
    (permuting a window, then unbatching and batching its records, copied them three
    times: 0.37-0.44x of ``in_memory`` against 0.49-0.60x on the spectrogram bench,
    2 cores). The short records of ``tail`` come last, in the last batch."""
    import tensorflow as tf  # keeps kit.cases light: TensorFlow

    k = opts.batch_size // block
    framed = record_bytes is not None and parse_framed is not None
    if framed:  # each piece: a record's data, its CRC, the next record's length and its CRC
        ds = read(files, count, lambda f: tf.data.FixedLengthRecordDataset(
            f, record_bytes + TFRECORD_FRAMING, header_bytes=TFRECORD_HEAD,
            footer_bytes=TFRECORD_FRAMING - TFRECORD_HEAD, buffer_size=read_buffer or FIXED_READ_BUFFER))
        parse = parse_framed
    else:
        ds = read(files, count)
    if tail:
        short = _tfrecords(tail, read_buffer, end_records)
        ds = ds.concatenate(short.map(_framed) if framed else short)
    if not opts.shuffle:
        return ds.batch(k).map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    full = None if record_bytes is None else record_bytes + (TFRECORD_FRAMING if framed else 0)
    size = window_records(shuffle_buffer, block, k)

    def batches(window, pair):
        # The tail's short records (only ever at the end of the last window) stay last.
        lengths = tf.strings.length(window)
        body = tf.reduce_sum(tf.cast(tf.equal(lengths, full if full is not None else lengths[0]), tf.int32))
        order = window_order(tf.shape(window)[0], body, pair)
        return tf.data.Dataset.range(tf.cast((tf.shape(window)[0] + k - 1) // k, tf.int64)).map(
            lambda b: tf.gather(window, order[b * k:(b + 1) * k]))

    ds = tf.data.Dataset.zip(ds.batch(size), window_seeds(opts.seed)).flat_map(batches)
    return ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE)


def whole_records(batch_size: int, block: int) -> bool:
    """Whether batches of ``batch_size`` are cut from whole records of ``block`` examples:
    a whole number of them, at least ``MIN_RECORDS_PER_BATCH``."""
    return batch_size % block == 0 and batch_size // block >= MIN_RECORDS_PER_BATCH


def window_records(shuffle_buffer: int, block: int, per_batch: int) -> int:
    """Records a window holds: ``shuffle_buffer`` examples in records of ``block``, rounded
    down to whole batches of ``per_batch`` records (at least one batch)."""
    return max(1, shuffle_buffer // block // per_batch) * per_batch


def window_order(n, body, pair):
    """The order of a window of ``n`` records whose first ``body`` are whole: those permuted
    by the seed pair ``pair``, the rest (the tail's short record) kept last."""
    import tensorflow as tf  # keeps kit.cases light: TensorFlow

    return tf.concat([tf.random.experimental.stateless_shuffle(tf.range(body), seed=pair), tf.range(body, n)], 0)


def record_batches(counts: Sequence[int], opts, *, per_batch: int, window: int, cycle_length: int,
                   tail: bool = False, read_ahead: bool = False):
    """The epoch order of ``read_tfrecords``' batches of whole records, as record ids.

    The records of shard ``i`` (``counts[i]`` of them) are ids ``sum(counts[:i])`` on; the
    tail's short record, with ``tail``, is id ``sum(counts)``. The shards are taken in the
    order ``order_dataset`` permutes per epoch, ``cycle_length`` interleaved, the stream
    cut into windows of ``window`` records, each window permuted by its own seed pair
    (``window_seeds``, ``window_order``) and cut into batches of ``per_batch`` records:
    the same batches, for the same seed, as ``read_tfrecords(block=...)`` reads from the
    shards themselves (unshuffled: the records in that order).

    Returns:
        A ``tf.data.Dataset`` of ``(ids, ahead)``: ``ids`` the ``per_batch`` record ids of a
        batch (-1 pads the last one). With ``read_ahead``, the first batch of each window
        carries in ``ahead`` the records of its window and of the next one (-1 pads; the
        other batches carry -1s), for asking the kernel for them while the window is read
        (the windows taken one behind the read of the ids, a window of ids the only state);
        else ``ahead`` is empty.
    """
    import tensorflow as tf  # keeps kit.cases light: TensorFlow

    if window % per_batch:
        raise ValueError(f"window must be whole batches of {per_batch} records, got {window}")
    counts = [int(c) for c in counts]
    starts = tf.constant([sum(counts[:i]) for i in range(len(counts))], tf.int64)
    sizes = tf.constant(counts, tf.int64)
    total = sum(counts)
    ids = order_dataset(len(counts), opts).interleave(
        lambda i: tf.data.Dataset.range(starts[i], starts[i] + sizes[i]), cycle_length=min(cycle_length, len(counts)))
    if tail:
        ids = ids.concatenate(tf.data.Dataset.from_tensors(tf.constant(total, tf.int64)))
    k = per_batch
    none = tf.constant(-1, tf.int64)

    def batches(records, pair, following):
        n = tf.shape(records)[0]
        body = tf.reduce_sum(tf.cast(records < total, tf.int32))
        order = window_order(n, body, pair) if opts.shuffle else tf.range(n)
        rows = (n + k - 1) // k
        cut = tf.reshape(tf.concat([tf.gather(records, order), tf.fill([rows * k - n], none)], 0), [rows, k])
        if following is None:
            return tf.data.Dataset.from_tensor_slices((cut, tf.zeros([rows, 0], tf.int64)))
        wide = 2 * window
        first = tf.concat([records, following, tf.fill([wide - n - tf.shape(following)[0]], none)], 0)
        ahead = tf.concat([first[None], tf.fill([rows - 1, wide], none)], 0)
        return tf.data.Dataset.from_tensor_slices((cut, ahead))

    windows = tf.data.Dataset.zip(ids.batch(window), window_seeds(opts.seed))
    if not read_ahead:
        return windows.flat_map(lambda records, pair: batches(records, pair, None))
    # One window behind: each window goes out with the next one's records (an empty one last).
    empty = (tf.zeros([0], tf.int64), tf.zeros([2], tf.int64))
    lagged = windows.concatenate(tf.data.Dataset.from_tensors(empty)).scan(
        empty, lambda previous, current: (current, (previous, current[0]))).skip(1)
    return lagged.flat_map(lambda previous, following: batches(previous[0], previous[1], following))


def _framed(record):
    """A record as ``read_tfrecords`` reads the last one of a shard in its fixed-length
    pieces: the data, 4 bytes where its CRC goes, then the end record's length (0, as 8
    bytes) and 4 more (the CRCs, never read, are zeros)."""
    import tensorflow as tf  # keeps kit.cases light: TensorFlow

    return tf.strings.join([record, b"\0" * TFRECORD_FRAMING])


def check_tfrecord_shard(path: Path, count: int, parse: Callable, *, batch: int | None = 256,
                         inspect: Callable | None = None, end_record: bool = False) -> str | None:
    """Reads a TFRecord shard through ``parse``: None when it holds ``count`` readable
    records (and ``inspect(x, y, first)`` finds nothing in any batch, ``first`` the
    position of its first record), else what is wrong. ``batch=None`` passes the
    records one at a time (records that each hold a block of examples); with
    ``end_record``, the shard must end in one empty record, and have no other."""
    import tensorflow as tf  # keeps kit.cases light: TensorFlow

    if end_record and batch is not None:
        raise ValueError("end_record needs batch=None (records one at a time)")
    seen, ended = 0, False
    records = tf.data.TFRecordDataset(str(path))
    try:
        for serialized in (records if batch is None else records.batch(batch)):
            if end_record and (ended or int(tf.strings.length(serialized)) == 0):
                if ended:
                    return "records after the empty end record"
                ended = True
                continue
            x, y = parse(serialized)
            problem = inspect(x, y, seen) if inspect is not None else None
            if problem:
                return problem
            seen += int(y.shape[0])
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as e:
        return f"unreadable records ({e.message.splitlines()[0]})"
    if seen != count:
        return f"{seen} records, manifest says {count}"
    if end_record and not ended:
        return "no empty end record (cut short, or an older layout)"
    return None
