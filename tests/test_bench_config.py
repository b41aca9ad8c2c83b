"""Benches as functions (issues 32, 42): each bench's frozen config checks itself and declares its
flags, one registration builds every ``bench NAME`` command from the configs, each module's
``run(config)`` returns a ``BenchResult`` whose JSON is the bench JSON plus the config,
``kit.bench.run(name, ...)`` takes a config or its fields, and the demo (``kit.demo``) calls it with a config."""

import argparse
import dataclasses
import importlib
import json
import math
import re
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import pandas as pd
import pytest

from kit import bench
from kit.bench import BENCHES, BenchResult
from kit.bench.configs import LoadersConfig
from kit.bench.options import add_arguments, from_args, option
from kit.cli import build_parser

#: bench module -> its config class.
CONFIGS = {
    "kit.bench.spectrogram": "SpectrogramConfig",
    "kit.bench.transfer": "TransferConfig",
    "kit.bench.segmentation": "SegmentationConfig",
    "kit.bench.scaling": "ScalingConfig",
    "kit.bench.compare": "CompareConfig",
}


def _config(module):
    return getattr(importlib.import_module(module), CONFIGS[module])


def test_every_bench_has_a_config():
    assert set(CONFIGS) | {"kit.bench.loaders"} == {b.module for b in BENCHES.values()}  # loaders: one per case
    for module in CONFIGS:  # the module's config is the table's (kit.bench.configs)
        assert next(b for b in BENCHES.values() if b.module == module).config is _config(module)


def test_the_command_line_imports_no_bench_module():
    """``python -m kit bench --help`` builds every subcommand from the configs alone (``kit.bench.configs``):
    no bench module, no TensorFlow."""
    code = ("import sys; from kit.cli import build_parser; build_parser(); "
            "print(sorted(m for m in sys.modules if m.startswith('kit.bench.') or m.split('.')[0] in "
            "('tensorflow', 'keras')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['kit.bench.configs', 'kit.bench.options']"


@pytest.mark.parametrize("options,shown", [
    (dict(case="video"), "unknown case 'video'"),
    (dict(case="spectrogram", variants="generator,nope"), "unknown variant(s) nope"),
    (dict(case="spectrogram", batch_size=0), "batch_size must be a positive integer, got 0"),
    (dict(case="spectrogram", rounds=0), "rounds must be a positive integer, got 0"),
])
def test_the_generic_loader_bench_config_refuses_a_bad_value(options, shown):
    assert LoadersConfig(case="segmentation").rounds == 3
    with pytest.raises(ValueError) as e:
        LoadersConfig(**options)
    assert shown in str(e.value)


@pytest.mark.parametrize("module,field,bad,shown", [
    ("kit.bench.spectrogram", "batch_size", 0, "got 0"),
    ("kit.bench.spectrogram", "generator_seconds", 0.0, "got 0.0"),
    ("kit.bench.spectrogram", "round_seconds", 0.0, "got 0.0"),
    ("kit.bench.spectrogram", "limit_seconds", -1.0, "got -1.0"),
    ("kit.bench.segmentation", "seconds", 0.0, "got 0.0"),
    ("kit.bench.spectrogram", "warmup", -1, "got -1"),
    ("kit.bench.spectrogram", "variants", "generator,nope", "unknown variant(s) nope"),
    ("kit.bench.transfer", "loader", "generator", "got 'generator'"),
    ("kit.bench.transfer", "head_epochs", 0, "got 0"),
    ("kit.bench.transfer", "frames", 0, "got 0"),
    ("kit.bench.segmentation", "size", (0, 64), "got (0, 64)"),
    ("kit.bench.segmentation", "num_batches", 0, "got 0"),
    ("kit.bench.segmentation", "slow_seconds", float("inf"), "got inf"),
    ("kit.bench.segmentation", "variants", ["sequence", "fast"], "unknown variant(s) fast"),
    ("kit.bench.scaling", "replicas", (1, 0), "got 0"),
    ("kit.bench.scaling", "model", "big", "got 'big'"),
    ("kit.bench.scaling", "variant", "pydataset", "got 'pydataset'"),
    ("kit.bench.scaling", "devices", "tpu", "got 'tpu'"),
    ("kit.bench.compare", "replicas", (0, 2), "got (0, 2)"),
    ("kit.bench.compare", "rounds", True, "got True"),
])
def test_a_config_refuses_a_bad_value_naming_it(module, field, bad, shown):
    config = _config(module)
    config()  # the defaults are valid
    with pytest.raises(ValueError) as e:
        config(**{field: bad})
    msg = str(e.value)
    assert shown in msg, msg  # the value
    if field != "variants":  # and the field (an unknown variant names the variant alone)
        assert field in msg, msg


def test_configs_are_frozen_and_normalised():
    from kit.bench.segmentation import SegmentationConfig
    from kit.bench.spectrogram import SpectrogramConfig

    c = SpectrogramConfig("data/index.csv", variants="generator, in_memory", workdir="w")
    assert c.data == Path("data/index.csv") and c.workdir == Path("w")
    assert c.variants == ("generator", "in_memory")
    assert SpectrogramConfig(variants="").variants is None  # none named: every variant
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.rounds = 5
    assert SegmentationConfig(size=[64, 96]).size == (64, 96)
    with pytest.raises(TypeError):
        SpectrogramConfig("a.csv", ["generator"])  # only the data is positional, as run's was


def _parsed(*argv):
    """The config ``python -m kit bench ARGV`` runs with (the command's own parser)."""
    args = build_parser().parse_args(["bench", *argv])
    return from_args(BENCHES[args.bench_name].config, args, **args.bench_fixed)


@pytest.mark.parametrize("name", [n for n in BENCHES if n != "loaders"] + ["loaders"])
def test_the_commands_defaults_are_the_configs_defaults(name):
    """The config of a command given no options is the config's defaults: the CLI, the demo and
    a notebook calling ``run`` all start from the same place."""
    if name == "loaders":  # its command is one per case without a bench of its own (tests/test_third_case.py)
        p = argparse.ArgumentParser()
        add_arguments(p, LoadersConfig, default_batch=8)
        assert from_args(LoadersConfig, p.parse_args([]), case="segmentation") == LoadersConfig(case="segmentation")
        return
    assert _parsed(name) == BENCHES[name].config()


def test_the_command_reads_the_options_into_the_config():
    c = _parsed("spectrogram", "--batches", "7", "--variants", "memmap,tfrecord", "--batch-size", "32")
    assert (c.num_batches, c.variants, c.batch_size) == (7, ("memmap", "tfrecord"), 32)
    c = _parsed("segmentation", "--size", "64x96", "--profile", "--one-hot")
    assert (c.size, c.profile, c.one_hot) == ((64, 96), True, True)
    assert _parsed("scaling", "--replicas", "1,2,4").replicas == (1, 2, 4)
    assert _parsed("compare", "--replicas", "2", "--fast").replicas == (2,)
    assert _parsed("transfer", "--frames", "64", "--data", "d.csv").frames == 64
    with pytest.raises(ValueError, match="--replicas expects positive integers, got '0,2'"):
        _parsed("scaling", "--replicas", "0,2")


def test_a_config_field_declares_its_flag():
    """``option``: the flag's name, help, type or choices and a short form, all in the field; ``add_arguments``
    and ``from_args`` turn the dataclass into arguments and back."""
    @dataclasses.dataclass(frozen=True)
    class Config:
        name: str = option("a", "which one", choices=("a", "b"))
        count: int = option(3, "how many (default {n})", short="-n", type=int)
        quiet: bool = option(False, "say less", action="store_true")
        scale: float = 1.0  # no flag

    p = argparse.ArgumentParser()
    add_arguments(p, Config, n=3)
    assert "how many (default 3)" in p.format_help() and "-n COUNT, --count COUNT" in p.format_help()
    assert from_args(Config, p.parse_args([])) == Config()
    assert from_args(Config, p.parse_args(["-n", "5", "--name", "b", "--quiet"]), scale=2.0) == Config("b", 5, True, 2.0)


def test_bench_result_json_is_todays_form_plus_the_config():
    from kit.bench.spectrogram import SpectrogramConfig

    rows = pd.DataFrame({"variant": ["a", "b"], "examples_per_s": [10.0, math.nan], "batches": [3, 4]})
    config = SpectrogramConfig(Path("d/index.csv"), variants=("generator", "memmap"), rounds=2)
    res = BenchResult("spectrogram", rows, config, {"batch_size": 64, "epoch_examples": 100},
                      run_id="r1", machine={"host": "h"})
    obj = res.to_json()
    assert list(obj) == ["bench", "run_id", "rows", "machine", "batch_size", "epoch_examples", "config"]
    assert obj["bench"] == "spectrogram" and obj["run_id"] == "r1" and obj["machine"] == {"host": "h"}
    assert obj["rows"] == [{"variant": "a", "examples_per_s": 10.0, "batches": 3},
                           {"variant": "b", "examples_per_s": None, "batches": 4}]
    assert obj["config"] == {**dataclasses.asdict(config), "data": "d/index.csv", "variants": ["generator", "memmap"]}
    assert json.loads(json.dumps(obj, allow_nan=False)) == obj  # plain JSON
    # A result made without a config has no config key.
    assert "config" not in BenchResult("x", rows, run_id="r", machine={}).to_json()


def test_save_writes_the_json_and_appends_the_ledger(tmp_path, monkeypatch):
    from kit import results
    from kit.bench import save
    from kit.bench.options import as_dict
    from kit.bench.scaling import ScalingConfig

    monkeypatch.setenv("KIT_RESULTS", str(tmp_path / "ledger.jsonl"))
    config = ScalingConfig(replicas=(1,), rounds=2)
    res = BenchResult("scaling", pd.DataFrame({"variant": ["in_memory"], "seconds": [0.5]}), config,
                      machine={"host": "h"})
    obj = save(res, tmp_path / "out" / "scaling.json")
    assert json.loads((tmp_path / "out" / "scaling.json").read_text()) == obj
    assert obj["config"] == as_dict(config) and obj["config"]["replicas"] == [1]
    ledger = results.load(tmp_path / "ledger.jsonl")
    assert list(ledger["variant"]) == ["in_memory"] and set(ledger["run_id"]) == {res.run_id}


def test_run_takes_a_config_or_its_fields(monkeypatch):
    """``kit.bench.run(name, config)`` or ``run(name, **fields)``: the one entry, a ``BenchResult``
    either way, the bench module's ``run`` given the config."""
    from kit.bench import scaling, transfer
    from kit.bench.scaling import ScalingConfig
    from kit.bench.transfer import TransferConfig

    seen = []

    def fake_scaling(config, *, log=print):
        seen.append(config)
        return BenchResult("scaling", pd.DataFrame({"variant": ["in_memory"]}), config, machine={})

    monkeypatch.setattr(scaling, "run", fake_scaling)
    config = ScalingConfig(replicas=(1,), steps=2)
    res = bench.run("scaling", config)
    assert isinstance(res, BenchResult) and res.name == "scaling" and res.config == config
    res = bench.run("scaling", replicas=(1,), steps=2)  # the fields as keywords: the same result
    assert isinstance(res.rows, pd.DataFrame) and seen == [config] * 2
    with pytest.raises(TypeError, match="not both"):
        bench.run("scaling", config, rounds=3)
    with pytest.raises(TypeError, match="takes a ScalingConfig"):
        bench.run("scaling", TransferConfig())
    with pytest.raises(ValueError, match="steps must be a positive integer, got 0"):
        bench.run("scaling", steps=0)
    with pytest.raises(ValueError, match="unknown bench 'video'"):
        bench.run("video")

    def fake_run(config, *, progress, log=print):
        assert progress is False
        return BenchResult("transfer", pd.DataFrame({"variant": ["x"]}), config, {"fastest_loader": "memmap"},
                           machine={})

    monkeypatch.setattr(transfer, "run", fake_run)
    res = bench.run("transfer", data="i.csv", frames=10, progress=False)  # notebook 07's form
    assert list(res.rows["variant"]) == ["x"] and res.info == {"fastest_loader": "memmap"}
    assert res.config == TransferConfig("i.csv", frames=10)


def test_the_demo_calls_each_benchs_run_with_a_config(tmp_path, monkeypatch, capsys):
    """``python -m kit demo`` builds each loader bench's config and calls its ``run``: no
    argparse namespace in between; its JSON carries the config."""
    from kit import demo, samples
    from kit.bench import segmentation, spectrogram
    from kit.bench.options import as_dict

    monkeypatch.setenv("KIT_FAST", "1")
    monkeypatch.setenv("KIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("KIT_RESULTS", str(tmp_path / "ledger.jsonl"))
    calls = {}  # bench -> its config (the demo goes over the cases in the registry's order)

    def fake(name):
        def run(config, *args, **kwargs):
            assert not args and not kwargs, (args, kwargs)
            calls[name] = config
            return BenchResult(name, pd.DataFrame({"variant": ["v"], "examples_per_s": [1.0]}), config,
                               {"batch_size": 1}, machine={"host": "h"})
        return run

    monkeypatch.setattr(spectrogram, "run", fake("spectrogram"))
    monkeypatch.setattr(segmentation, "run", fake("segmentation"))
    monkeypatch.setattr(spectrogram, "show", lambda res: print(f"shown {res.name}"))
    monkeypatch.setattr(segmentation, "show", lambda res: print(f"shown {res.name}"))
    code = demo.steps(Namespace(reports=str(tmp_path / "r"), no_notebooks=True, notebooks=None))
    assert code == 0
    out = capsys.readouterr().out
    assert "shown spectrogram" in out and "shown segmentation" in out
    assert sorted(calls) == ["segmentation", "spectrogram"]
    spec, seg = calls["spectrogram"], calls["segmentation"]
    assert spec == spectrogram.SpectrogramConfig(samples.embedded("spectrogram"), rounds=1, num_batches=2,
                                                 round_seconds=0.05, generator_seconds=1.0, limit_seconds=0.05)
    assert seg == segmentation.SegmentationConfig(samples.embedded("segmentation"), rounds=1, num_batches=2,
                                                  batch_size=1, size=(64, 64), seconds=0.5, slow_seconds=1.0)
    for name, config in (("spectrogram", spec), ("segmentation", seg)):
        obj = json.loads((tmp_path / "r" / f"bench_{name}.json").read_text())
        assert obj["bench"] == name and obj["config"] == as_dict(config)


def test_no_bench_module_parses_arguments_for_the_demo():
    source = (Path(__file__).resolve().parent.parent / "kit" / "demo.py").read_text()
    demo = source[source.index("def steps"):]
    assert "parse_args" not in demo and "Namespace" not in demo and not re.search(r"\.main\(", demo)
