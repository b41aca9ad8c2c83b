"""The shared case layer (kit.cases): typed options, build_loader, shard checks, TFRecord framing."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from kit import epochs, store
from kit.cases import LoaderOptions, Variant, VariantOptions, build_loader, check_shards, shard_tags, store_folder


@dataclass(frozen=True)
class _Opts(VariantOptions):
    POSITIVE = ("workers",)
    workers: int = 1
    mode: str = "a"


class _Loader(list):
    """Any loader: here, a list of batches."""


class _Index:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n


def _registry(built):
    def build(index, opts, vopts):
        built.append(vopts)
        return _Loader([np.arange(index.n)])

    return {"python": Variant("runs Python", build, _Opts),
            "graph": Variant("pure graph", build, graph_only=True),
            "maybe": Variant("graph only in mode b", build, _Opts, graph_only=("mode", "b"))}


def test_variant_options_are_typed_and_validated():
    built = []
    reg = _registry(built)
    loader = build_loader(reg, "python", _Index(7), LoaderOptions(4), workers=3)
    assert built == [_Opts(workers=3, mode="a")]
    rec = epochs.epoch_of(loader)
    assert (rec.examples, rec.batch_size, rec.batches) == (7, 4, 2)
    with pytest.raises(ValueError, match=r"variant 'graph' takes no option\(s\) mode, workers"):
        build_loader(reg, "graph", _Index(7), LoaderOptions(4), workers=2, mode="b")
    with pytest.raises(ValueError, match="workers must be a positive integer, got 0"):
        build_loader(reg, "python", _Index(7), LoaderOptions(4), workers=0)
    with pytest.raises(ValueError, match="unknown variant 'nope'; choose one of python, graph, maybe"):
        build_loader(reg, "nope", _Index(7), LoaderOptions(4))
    with pytest.raises(ValueError, match="batch_size must be a positive integer, got 0"):
        LoaderOptions(0)
    with pytest.raises(ValueError, match="batch_size must be a positive integer, got True"):
        LoaderOptions(True)


def test_service_is_refused_for_python_pipelines_before_building():
    built = []
    reg = _registry(built)
    for name, opts in (("python", {}), ("maybe", {"mode": "a"})):
        with pytest.raises(ValueError, match=r"runs Python code .* use one of graph, maybe with mode='b' with service="):
            build_loader(reg, name, _Index(3), LoaderOptions(2), "grpc://localhost:1", **opts)
    assert built == []


def test_shard_checks_and_names(tmp_path):
    assert shard_tags(3) == ["00000-of-00003", "00001-of-00003", "00002-of-00003"]
    assert store_folder("demo", "tfrecord", "abcdef0123456789ff", tmp_path) == tmp_path / "demo-tfrecord-abcdef0123456789"

    def write(shard, tmp, advance):
        tmp.write_bytes(b"x" * 10)

    folder = tmp_path / "s"
    m = store.build(folder, kind="demo", key="k", shards=[store.Shard("a.bin", 1), store.Shard("b.bin", 1)],
                    write=write, progress=False)
    assert check_shards(folder, m) == [str(folder / "a.bin"), str(folder / "b.bin")]
    (folder / "b.bin").write_bytes(b"x" * 4)  # cut short after it was written
    with pytest.raises(store.StoreError, match=r"b\.bin: missing or 4 bytes where the manifest says 10"):
        check_shards(folder, m)


def test_framed_records_are_what_fixed_length_reading_gives_and_their_length_is_checked(tmp_path):
    """A format-4 shard (records, then an empty end record) read from its first record's
    data in pieces of a record and its framing gives each record's data first, then the
    next record's stated length; ``_framed`` frames the tail's record as the last piece
    (the CRCs aside); ``decode_records(framed=True)`` decodes the pieces and refuses a
    stated length that is neither the record's nor 0."""
    import tensorflow as tf

    from kit.cases.stores import TFRECORD_FRAMING, TFRECORD_HEAD, _framed
    from kit.spectrogram.convert import decode_records

    frames = np.arange(4 * 3 * 4, dtype=np.float32).reshape(4, 3, 4)
    data = [frames[i:i + 2].tobytes() + np.array([7 + i, 8 + i], np.int64).tobytes() for i in (0, 2)]
    path = tmp_path / "one.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as w:
        for d in data + [b""]:
            w.write(d)
    pieces = [p.numpy() for p in tf.data.FixedLengthRecordDataset(
        str(path), len(data[0]) + TFRECORD_FRAMING, header_bytes=TFRECORD_HEAD,
        footer_bytes=TFRECORD_FRAMING - TFRECORD_HEAD)]
    assert [p[:len(data[0])] for p in pieces] == data
    assert [np.frombuffer(p[-12:-4], np.int64)[0] for p in pieces] == [len(data[0]), 0]
    built = _framed(tf.constant(data[1])).numpy()
    assert len(built) == len(pieces[1]) and built[:-16] == data[1] and built[-12:-4] == pieces[1][-12:-4]
    x, y = decode_records(tf.constant(pieces), (3, 4), framed=True)
    assert np.array_equal(x.numpy()[..., 0], frames) and list(y.numpy()) == [7, 8, 9, 10]
    x, y = decode_records(tf.constant([pieces[0], built]), (3, 4), framed=True)
    assert np.array_equal(x.numpy()[..., 0], frames) and list(y.numpy()) == [7, 8, 9, 10]
    wrong = pieces[0][:-12] + np.int64(len(data[0]) + 8).tobytes() + pieces[0][-4:]
    with pytest.raises(tf.errors.InvalidArgumentError, match="states another length"):
        decode_records(tf.constant([wrong]), (3, 4), framed=True)


def test_a_tfrecord_shard_without_its_end_record_or_with_records_after_it_fails_its_check(tmp_path):
    """The deep check of a format-4 shard: one empty end record, last, and none other."""
    import tensorflow as tf

    from kit.cases import check_tfrecord_shard
    from kit.spectrogram.convert import decode_records

    record = np.zeros((2, 3, 4), np.float32).tobytes() + np.array([1, 2], np.int64).tobytes()

    def check(*records):
        path = tmp_path / "s.tfrecord"
        with tf.io.TFRecordWriter(str(path)) as w:
            for r in records:
                w.write(r)
        return check_tfrecord_shard(path, 4, lambda r: decode_records(r, (3, 4)), batch=None, end_record=True)

    assert check(record, record, b"") is None
    assert "no empty end record" in check(record, record)
    assert "after the empty end record" in check(record, b"", record)
    assert "manifest says 4" in check(record, b"")
