"""kit.scenario: the two users declared once, and the spectrogram user's four epochs measured once per run."""

from pathlib import Path

import nbformat
import pytest

from kit import scenario, segmentation, spectrogram
from kit.report import index as report_index

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def test_each_user_is_declared_once_and_the_cases_read_it_from_there():
    s, g = scenario.SPECTROGRAM, scenario.SEGMENTATION
    assert (s.frames, s.global_batch, s.gpus, s.per_replica_batch) == (1_000_000, 256, 2, 128)
    assert spectrogram.USER_REPORT == {"epoch_s": s.reported_epoch_s, "frames": s.frames, "gpus": s.gpus,
                                       "global_batch": s.global_batch}
    assert (g.size, g.batch, g.steps, g.epochs, g.cores, g.gpus, g.pairs_per_epoch) == (512, 3, 140, 3, 1, 4, 420)
    assert segmentation.USER_REPORT["datagenerator_s"] == g.datagenerator_s
    assert segmentation.USER_REPORT["tfdata_s"] == g.tfdata_s
    assert round(g.tfdata_over_datagenerator, 2) == 0.61  # 126 s / 208 s: the rewrite reads at 0.61x


def _stating(name):
    """The notebooks whose headline cell states ``name`` (by its constant or the scenario's figures)."""
    out = []
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        head = [c.source for c in nbformat.read(path, as_version=4).cells if "headline" in c.metadata.get("tags", [])]
        if any(name in src or ".figures" in src and name in scenario.USER_EPOCHS for src in head):
            out.append(path.stem[:3])
    return out


def test_the_required_quantities_are_stated_by_the_pages_that_measure_them_and_by_05():
    for name in scenario.USER_EPOCHS:
        assert {"01_", "05_"} <= set(_stating(name)), (name, _stating(name))
    assert "02_" in _stating("PREFETCH_GAIN")
    assert "06_" in _stating(scenario.SEGMENTATION_ONE_CORE)


@pytest.mark.slow
def test_the_users_epochs_are_measured_once_at_the_users_layout(tmp_path, monkeypatch):
    """In a demo run a later page gets the first page's figures; each epoch is the frames over the slower
    of its loader and its compute, the generator measured at the declared layout."""
    monkeypatch.setenv(report_index.RUN_ENV, str(tmp_path / "run"))
    monkeypatch.setenv(report_index.NOTEBOOK_ENV, "01_first")
    first = spectrogram.user_epochs(fast=True)
    assert first.where == "measured here"
    for name in scenario.USER_EPOCHS:
        b = first.basis(name)
        assert first[name] == pytest.approx(scenario.SPECTROGRAM.frames / min(b["loader_rate"], b["compute_rate"]),
                                            rel=1e-9)
        assert b["bound"] == ("input" if b["loader_rate"] < b["compute_rate"] else "compute")
    assert first.basis("user_epoch_generator_this_machine")["frames_per_file"] == scenario.SPECTROGRAM.frames_per_file
    assert first["user_epoch_generator_user_gpus"] > first["user_epoch_best_user_gpus"]
    assert first.step_s() == pytest.approx(256 / first.basis("user_epoch_best_user_gpus")["compute_rate"])
    monkeypatch.setenv(report_index.NOTEBOOK_ENV, "05_later")
    later = spectrogram.user_epochs(fast=True)
    assert later.figures == first.figures and later.where == "measured in 01_first, this run"
    assert "40 hours" in later.sentence() and len(later.table()) == 4
    assert not report_index.disagreements([{"notebook": n, **f} for n in ("01", "05") for f in later.figures])
