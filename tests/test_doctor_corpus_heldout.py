"""The held-out half of the doctor's corpus (tests/doctor_corpus_heldout/, issue 44): each case module
has the interface the scoring reads, its codes are in the doctor's vocabulary (docs/doctor.md's table),
the half spans enough cases, public sources and domains, and neither it nor its ground-truth script
(lab/doctor_truth.py) imports kit. The slow test builds data and trains: the slow and fixed pipelines
of each case yield batches of one structure. No timing is asserted: the ground truth is
lab/results/doctor_truth_heldout.json (the truth script's test: test_lab_doctor.py)."""

import re
from pathlib import Path

import doctor_corpus as dev
import doctor_corpus_heldout as held
import pytest

ROOT = Path(__file__).resolve().parent.parent
URL = re.compile(r"https?://[^\s)]+")
VERDICTS = ("input-bound", "compute-bound", "balanced")


def vocabulary() -> dict[str, str]:
    """The doctor's finding codes and their kinds, from docs/doctor.md's table."""
    rows = re.findall(r"^\| `(\w+)` \| (\w+) \|", (ROOT / "docs" / "doctor.md").read_text(), re.M)
    assert len(rows) >= 10, "docs/doctor.md's table of findings not found"
    return dict(rows)


def urls(source: str) -> list[str]:
    return [u.rstrip(".,;") for u in URL.findall(source)]


@pytest.mark.parametrize("name", held.CASES)
def test_case_has_the_interface(name):
    case = held.load(name)
    for attr in held.NAMES:
        assert hasattr(case, attr), f"{name} lacks {attr}"
    assert case.NAME == name
    assert urls(case.SOURCE) and "\n" not in case.SOURCE
    assert case.DOMAIN in held.DOMAINS
    assert case.VERDICT in VERDICTS
    assert isinstance(case.EXACT, bool)
    assert isinstance(case.PLANTED, tuple) and isinstance(case.TOLERATED, tuple)
    for fn in ("make_data", "slow", "fixed", "model"):
        assert callable(getattr(case, fn))


@pytest.mark.parametrize("name", held.CASES)
def test_codes_are_the_doctors(name):
    case = held.load(name)
    codes = vocabulary()
    for code in case.PLANTED + case.TOLERATED:
        assert code in codes, f"{name}: {code} is not in docs/doctor.md's table"
        assert codes[code] != "symptom", f"{name}: {code} is a symptom, not a planted cause"
    assert not set(case.PLANTED) & set(case.TOLERATED)


def test_the_half_is_broad_enough():
    cases = [held.load(n) for n in held.CASES]
    assert len(cases) >= 12
    assert len({urls(c.SOURCE)[0] for c in cases}) >= 6
    assert len({c.DOMAIN for c in cases}) >= 4
    assert sum(not c.PLANTED for c in cases) >= 3, "at least three controls"
    # New sources: at least six of the held-out half's URLs appear in no development case's SOURCE.
    dev_urls = {u for n in dev.CASES for u in urls(dev.load(n).SOURCE)}
    assert len({urls(c.SOURCE)[0] for c in cases} - dev_urls) >= 6
    assert not set(held.CASES) & set(dev.CASES)


def test_nothing_imports_kit():
    files = [ROOT / "lab" / "doctor_truth.py", *sorted((ROOT / "tests" / "doctor_corpus_heldout").glob("*.py"))]
    for path in files:
        text = path.read_text()
        assert not re.search(r"^\s*(from kit\b|import kit\b)", text, re.M), f"{path.name} imports kit"


@pytest.mark.slow
def test_slow_and_fixed_batches_have_one_structure(tmp_path):
    import keras
    import tensorflow as tf

    for name in held.CASES:
        case = held.load(name)
        case.make_data(tmp_path)
        case.make_data(tmp_path)  # idempotent
        batches = []
        for source in [case.slow(tmp_path), case.fixed(tmp_path)] + [case.fixed(tmp_path, c) for c in case.PLANTED]:
            batch = source[0] if isinstance(source, keras.utils.PyDataset) else next(iter(source))
            batches.append(tf.nest.map_structure(lambda t: (tuple(t.shape), tf.as_dtype(t.dtype)), tuple(batch)))
        assert all(b == batches[0] for b in batches), f"{name}: {batches}"
