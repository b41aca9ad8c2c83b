"""kit.spectrogram.compare_transfer: the frozen backbone's head trained three ways (notebook 07, step 6),
public and apart from kit.bench (``python -m kit bench transfer`` runs it: tests/test_bench_transfer.py)."""

import json
import subprocess
import sys

import pytest

from kit import spectrogram
from kit.bench.configs import TransferConfig

#: On tiny data, in a fresh process: the table (and its attrs) as JSON, then whether kit.bench was imported.
RUN = """
import json, sys
from kit import samples, spectrogram
csv = samples.make_spectrogram(sys.argv[1] + "/d", files=2, frames_per_file=40, seed=1)
df = spectrogram.compare_transfer(csv, frames=64, alpha=0.25, batch_size=16, batches=1, rounds=1, head_epochs=1,
                                  workdir=sys.argv[1] + "/work", progress=False, log=lambda line: None)
print(json.dumps({"rows": json.loads(df.to_json(orient="records")), "attrs": df.attrs,
                  "bench": sorted(m for m in sys.modules if m == "kit.bench" or m.startswith("kit.bench."))}))
"""


@pytest.mark.slow
def test_compare_transfer_delivers_the_three_paths_and_the_extraction_without_kit_bench(tmp_path):
    out = subprocess.run([sys.executable, "-c", RUN, str(tmp_path)], capture_output=True, text=True, check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["bench"] == []  # nothing of kit.bench imported, before or during the run
    attrs = res["attrs"]
    fastest = attrs["fastest_loader"]
    assert fastest in ("memmap", "in_memory") and attrs["frames"] == 64 and attrs["epoch_examples"] == 1_000_000
    assert attrs["backbone"]["params"] > 0 and attrs["data"].endswith("index.csv")
    rows = {r["variant"]: r for r in res["rows"]}
    assert list(rows) == ["generator", fastest, "feature_cache", "extraction"]
    assert rows["generator"]["examples"] == 16 and rows[fastest]["examples"] == 16  # 1 round x 1 batch of 16
    assert rows["feature_cache"]["examples"] == 64 and rows["extraction"]["examples"] == 64  # 1 epoch; once
    assert rows["extraction"]["x_generator"] is None and rows["generator"]["x_generator"] == 1.0
    assert rows[fastest][f"x_{fastest}"] == 1.0
    for r in rows.values():
        assert r["seconds"] > 0 and r["examples_per_s"] == pytest.approx(r["examples"] / r["seconds"])
        assert r["epoch_s_1000000"] == pytest.approx(1e6 / r["examples_per_s"])
        assert r["batch_size"] == 16 and r["basis"] and r["setup"]


def test_the_public_module_imports_neither_kit_bench_nor_tensorflow():
    code = ("import sys; import kit.spectrogram.transfer; from kit.spectrogram import compare_transfer, default_data; "
            "print(sorted(m for m in sys.modules if m.startswith('kit.bench') or m.split('.')[0] in "
            "('tensorflow', 'keras')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("option,bad,shown", [
    ("loader", "generator", "loader must be 'auto' or one of"),
    ("head_epochs", 0, "head_epochs must be a positive integer, got 0"),
    ("frames", 0, "frames must be a positive integer, got 0"),
    ("batch_size", 2.5, "batch_size must be a positive integer, got 2.5"),
    ("alpha", float("nan"), "alpha must be a positive number, got nan"),
    ("weights", 3, "weights must be a path, got 3"),
])
def test_a_bad_option_is_named_with_its_value_as_the_bench_config_names_it(option, bad, shown):
    """The function checks its options before it reads any data; the bench's ``TransferConfig`` runs the
    same checks, so both say the same."""
    with pytest.raises(ValueError) as e:
        spectrogram.compare_transfer("no-such.csv", **{option: bad})
    assert shown in str(e.value) and repr(bad) in str(e.value)
    if option != "weights":  # the config makes a path of it first (its own check)
        with pytest.raises(ValueError) as c:
            TransferConfig(**{option: bad})
        assert str(c.value) == str(e.value)


def test_frames_beyond_the_data_are_refused(tmp_path):
    from kit import samples

    csv = samples.make_spectrogram(tmp_path / "d", files=2, frames_per_file=10, seed=1)
    with pytest.raises(ValueError, match="frames must be at most the data's 20 frames, got 21"):
        spectrogram.compare_transfer(csv, frames=21, workdir=tmp_path / "work", log=lambda line: None)
