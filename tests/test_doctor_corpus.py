"""The doctor's corpus of foreign pipelines (tests/doctor_corpus/): each case's slow pipeline and its
fixed twin deliver the same examples, once each per epoch; each case module has the names the scoring
script reads; and the scoring runs end to end on one case (slow). No timings are asserted here: the
ground truth is measured by scripts/doctor_corpus.py."""

from collections import Counter
from pathlib import Path

import doctor_corpus as dc
import pytest
from helpers import load_script

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """The corpus's generated data, shared by the module's tests (each case makes its own on first use)."""
    return tmp_path_factory.mktemp("doctor-corpus")


@pytest.mark.parametrize("name", dc.CASES)
def test_case_has_the_names(name):
    case = dc.load(name)
    for attr in dc.NAMES:
        assert hasattr(case, attr), f"{name} lacks {attr}"
    assert "http" in case.SOURCE and "\n" not in case.SOURCE
    assert case.VERDICT in dc.VERDICTS
    assert isinstance(case.PLANTED, tuple)
    assert all(code in dc.SPEED or code in dc.STRUCTURAL for code in case.PLANTED), case.PLANTED
    assert all(code in dc.SPEED for code in getattr(case, "TOLERATED", ()))


@pytest.mark.parametrize("name", dc.CASES)
def test_slow_and_fixed_deliver_the_same_examples(name, folder):
    case = dc.load(name)
    case.make_data(folder)
    case.make_data(folder)  # idempotent
    slow = dc.examples(case.slow(folder))
    fixed = dc.examples(case.fixed(folder))
    assert max(slow.values()) == 1 or not case.EXACT, "an example delivered twice in one epoch"
    if case.EXACT:
        assert slow == fixed
    else:  # random examples, or features: the same count and labels
        labels = Counter()
        for (_, y), n in slow.items():
            labels[y] += n
        fixed_labels = Counter()
        for (_, y), n in fixed.items():
            fixed_labels[y] += n
        assert labels == fixed_labels
    for code in dc.measured_codes(case):  # each single fix keeps the count
        assert sum(dc.examples(case.fixed(folder, code)).values()) == sum(slow.values())


@pytest.mark.slow
def test_scoring_runs_on_one_case(tmp_path):
    script = load_script("doctor_corpus")
    out = tmp_path / "out"
    results = script.main(["--only", "sequence_npy", "--rounds", "1", "--max-seconds", "1.5",
                           "--fit-seconds", "1.5", "--out", str(out), "--data", str(tmp_path / "data")])
    assert [r["case"] for r in results["cases"]] == ["sequence_npy"]
    row = results["cases"][0]
    assert row["true_verdict"] in dc.VERDICTS
    assert row["doctor_verdict"] is not None or row["error"]
    assert set(row["measured_gain"]) == {"pydataset_single_worker"}
    assert (out.with_suffix(".json")).exists() and (out.with_suffix(".md")).exists()
    assert "| sequence_npy |" in out.with_suffix(".md").read_text()
