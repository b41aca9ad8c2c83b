"""``kit.segmentation.one_core``: the loaders (and the U-Net's step) measured in a child process pinned
to one CPU core with TensorFlow's thread pools at 1, as the segmentation user's machine ran them; the
child reports its own affinity, a bad argument gets one clear error before any child starts, and the
wait for the child is bounded (the child and its workers killed past it)."""

import shutil
import time

import pytest

from kit import DataError, samples, segmentation
from kit.segmentation import pinned


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return samples.make_segmentation(tmp_path_factory.mktemp("one-core") / "seg", images=12, size=64)


def test_the_child_runs_on_one_core_and_every_variant_asked_has_a_rate(data, tmp_path):
    asked = ("sequence", "sequence_workers", "tfdata_naive")
    r = segmentation.one_core(data, variants=asked, size=64, rounds=1, seconds=0.2, slow_seconds=0.3, workers=2,
                              model_steps=1, filters=4, depth=2, workdir=tmp_path, timeout_s=180)
    assert len(r.cpus) == 1  # as the child's os.sched_getaffinity(0) told it
    assert r.tf_threads == {"intra_op": 1, "inter_op": 1}
    assert list(r.rows["variant"]) == list(asked)
    assert (r.rows["examples_per_s"] > 0).all() and (r.rows["examples"] > 0).all()
    assert r.rows.set_index("variant").loc["sequence", "x_sequence"] == pytest.approx(1.0)
    assert r.ratio("tfdata_naive") == pytest.approx(r.rate("tfdata_naive") / r.rate("sequence"))
    assert r.model["step_s"] > 0 and r.model["size"] == 64 and r.model["batch_size"] == 3
    assert r.model["train_flops_per_pair"] > 0
    assert "1 CPU core" in r.basis and r.spec["workers"] == 2
    with pytest.raises(KeyError, match="'class_index' was not measured"):
        r.rate("class_index")


def test_the_user_s_workers_are_the_default(data, monkeypatch):
    seen = {}
    monkeypatch.setattr(pinned, "_run_child", lambda spec, cpu, timeout_s: seen.update(spec, cpu=cpu) or
                        {"rows": [], "cpus": [cpu], "tf_threads": {}, "model": None, "pairs": 12, "wall_s": 0.0})
    segmentation.one_core(data, size=64)
    assert seen["workers"] == segmentation.USER_REPORT["datagenerator_workers"] == 8
    assert seen["batch_size"] == segmentation.USER_REPORT["batch_size"] == 3


@pytest.mark.parametrize("kwargs, message", [
    ({"variants": ("sequence", "nope")}, r"unknown segmentation variant\(s\) \['nope'\]; known: sequence"),
    ({"variants": ("tfdata_naive",)}, "variants must include 'sequence'"),
    ({"batch_size": 0}, "batch_size must be"),
    ({"seconds": 0}, "seconds must be positive, got 0"),
    ({"timeout_s": -1}, "timeout_s must be positive, got -1"),
    ({"cpu": 10_000}, "cpu must be one this process may run on"),
])
def test_a_bad_argument_gets_one_clear_error_before_any_child(data, monkeypatch, kwargs, message):
    monkeypatch.setattr(pinned.subprocess, "Popen", lambda *a, **k: pytest.fail("a child was started"))
    with pytest.raises(ValueError, match=message):
        segmentation.one_core(data, **kwargs)


def test_a_missing_index_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no-such.csv"):
        segmentation.one_core(tmp_path / "no-such.csv")


def test_the_wait_is_bounded_and_the_child_killed(data, monkeypatch):
    started = []
    real = pinned.subprocess.Popen

    def popen(*a, **k):
        started.append(real(*a, **k))
        return started[-1]

    monkeypatch.setattr(pinned.subprocess, "Popen", popen)
    t0 = time.perf_counter()
    with pytest.raises(TimeoutError, match=r"ran past timeout_s=0.5 s and was killed"):
        segmentation.one_core(data, size=64, timeout_s=0.5)  # importing TensorFlow alone takes longer
    assert time.perf_counter() - t0 < 30
    assert len(started) == 1 and started[0].poll() is not None


def test_a_missing_palette_is_named_before_any_child(data, tmp_path, monkeypatch):
    monkeypatch.setattr(pinned.subprocess, "Popen", lambda *a, **k: pytest.fail("a child was started"))
    with pytest.raises(DataError, match="missing-palette.csv: palette file not found"):
        segmentation.one_core(data, tmp_path / "missing-palette.csv")


def test_a_failing_child_says_what_went_wrong(data, tmp_path):
    broken = tmp_path / "seg"
    shutil.copytree(data.parent, broken)
    next((broken / "images").iterdir()).unlink()  # the child's index check names it
    with pytest.raises(RuntimeError, match=r"(?s)the one-core child failed \(exit 1\): .*DataError.*images"):
        segmentation.one_core(broken / "index.csv", size=64, model=False, timeout_s=120)


def test_one_core_feeding_four_gpus_is_bounded_by_the_slower_side():
    import pandas as pd

    from kit import timing

    r = pinned.OneCore(pd.DataFrame({"variant": ["sequence", "tfdata_tuned", "class_index"],
                                     "examples_per_s": [5.0, 50.0, 100.0], "examples": [10, 100, 200]}),
                       cpus=[0], tf_threads={"intra_op": 1, "inter_op": 1}, model=None)
    gpu = timing.GpuRate(10.0, 5.0, 20.0, "assumed", "NVIDIA V100", "a test's basis")
    d = r.on_gpus(gpu).set_index("variant")  # the user's 4 GPUs and 420 pairs an epoch
    assert list(d["gpus_pairs_s"]) == [40.0] * 3 and list(d["gpus_pairs_s_low"]) == [20.0] * 3
    assert list(d["bound"]) == ["input", "input or compute", "compute"]
    assert list(d["epoch_s"]) == pytest.approx([84.0, 10.5, 10.5])
    assert list(d["epochs_s"]) == pytest.approx([252.0, 31.5, 31.5])
    assert set(d["compute_kind"]) == {"assumed"}
    assert r.on_gpus(25.0, gpus=2, epoch=100).set_index("variant").loc["sequence", "epoch_s"] == pytest.approx(20.0)
    with pytest.raises(ValueError, match="per_gpu must be a positive rate"):
        r.on_gpus(0.0)


def test_a_stage_total_below_the_timer_gives_a_share_of_zero_not_nan():
    import pandas as pd

    from kit.segmentation.profile import pipeline_costs

    stages = [("NumPy/OpenCV", s, 2.0) for s in ("decode image", "decode mask", "image to float32 / 255",
                                                 "colour loop -> class ids (12 colours)")]
    stages += [("TensorFlow", s, 0.0) for s in ("decode image", "decode mask", "convert_image_dtype to float32",
                                               "colour loop -> class ids (12 colours)", "vectorised lookup -> class ids")]
    costs = pd.DataFrame([{"library": lib, "stage": s, "ms_per_pair": ms, "variants": ""} for lib, s, ms in stages])
    d = pipeline_costs(costs).set_index("variant")
    assert d.loc["sequence", "colour_loop_share"] == pytest.approx(0.25)
    assert d.loc["tfdata_tuned", "colour_loop_share"] == 0.0 and not d["colour_loop_share"].isna().any()
