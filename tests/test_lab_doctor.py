"""lab/doctor_truth.py and lab/doctor_corpus.py (issues 30, 44): the ground truth of the doctor's corpus
(plain Keras fits, no kit code) and the doctor's score on it, each run end to end on one case (slow).
No timings are asserted."""

import sys
from pathlib import Path

import doctor_corpus as dc
import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # lab/ is not installed: imported from the repository root
    sys.path.insert(0, str(ROOT))

VERDICTS = ("input-bound", "compute-bound", "balanced")


@pytest.mark.slow
def test_truth_runs_on_one_case(tmp_path):
    from lab import doctor_truth

    out = tmp_path / "truth.json"
    result = doctor_truth.main(["--only", "csv_lines", "--rounds", "1", "--seconds", "0.2", "--min-steps", "3",
                                "--out", str(out), "--data", str(tmp_path / "data")])
    row = result["cases"][0]
    assert row["error"] is None
    assert row["true_verdict"] in VERDICTS
    assert set(row["measured_gain"]) == {"map_before_batch"}
    assert set(row["ratios_per_round"]) == {"slow", "map_before_batch", "replayed"}
    assert out.exists() and out.with_suffix(".md").exists()
    assert result["machine"]["cores"] and result["machine"]["load_average_at_end"]


@pytest.mark.slow
def test_scoring_runs_on_one_case(tmp_path):
    from lab import doctor_corpus

    out = tmp_path / "out"
    results = doctor_corpus.main(["--only", "sequence_npy", "--rounds", "1", "--max-seconds", "1.5",
                                  "--fit-seconds", "1.5", "--out", str(out), "--data", str(tmp_path / "data")])
    assert [r["case"] for r in results["cases"]] == ["sequence_npy"]
    row = results["cases"][0]
    assert row["true_verdict"] in dc.VERDICTS
    assert row["doctor_verdict"] is not None or row["error"]
    assert set(row["measured_gain"]) == {"pydataset_single_worker"}
    assert (out.with_suffix(".json")).exists() and (out.with_suffix(".md")).exists()
    assert "| sequence_npy |" in out.with_suffix(".md").read_text()


def test_the_scripts_parse_their_defaults_into_lab_results():
    """Their runs' files go to lab/results/ by default; neither needs kit to parse its arguments."""
    from lab import doctor_corpus, doctor_truth

    assert doctor_truth.parse(["--corpus", "dev"]).out == ROOT / "lab" / "results" / "doctor_truth_dev.json"
    assert doctor_corpus.parse([]).out == str(ROOT / "lab" / "results" / "doctor_corpus_dev")
