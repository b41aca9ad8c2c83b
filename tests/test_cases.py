"""The shared case layer (kit.cases): typed options, build_loader, shard checks, TFRecord framing."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from kit import epochs, store
from kit.cases import LoaderOptions, Variant, VariantOptions, build_loader, check_shards
from kit.cases.stores import shard_tags, store_folder


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


