"""The doctor's corpus of foreign pipelines (tests/doctor_corpus/): each case's slow pipeline and its
fixed twin deliver the same examples, once each per epoch, and each case module has the names the scoring
reads. No timings are asserted here: the ground truth and the scoring are lab/doctor_truth.py and
lab/doctor_corpus.py (their tests: test_lab_doctor.py)."""

from collections import Counter

import doctor_corpus as dc
import pytest


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
