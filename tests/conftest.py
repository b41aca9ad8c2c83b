"""Shared fixtures. Every test runs with its own kit cache, so nothing leaks between tests; data a
test only reads (the embedded samples, a tiny segmentation source, a small backbone) is built once
per process and shared."""

import gc
import os
import shutil
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _collect_garbage():
    """A test's garbage is collected as the test ends, not in whichever later test is running when the
    collector next runs: a tf.data iterator left in a reference cycle (an exception's frames, a
    function's closure) was destroyed there, and its destructor waited on the iterator's autotuning
    thread with the GIL held, the whole worker idle (how long: results/NOTES.md). What survives is
    then frozen (``gc.freeze``): it is not garbage now, and the next test's collection scans only what
    that test made, so that all the collections of a run cost less than the collector's own did."""
    yield
    gc.collect()
    gc.freeze()


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    """What the session has imported by now (TensorFlow, Keras) is out of the collector's sight too."""
    gc.freeze()


@pytest.fixture(autouse=True)
def _doctor_progress():
    """A test that ends a doctor run over its budget leaves kit.doctor.progress cancelled: cleared after each
    test, so that a later test's Budget in the same worker is not given no time."""
    yield
    progress = sys.modules.get("kit.doctor.progress")
    if progress is not None:
        progress.start()


@pytest.fixture(autouse=True)
def _kit_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("KIT_CACHE", str(tmp_path_factory.mktemp("kit-cache")))
    # Bench runs append to the results ledger: into the test's own, never reports/.
    monkeypatch.setenv("KIT_RESULTS", str(tmp_path_factory.mktemp("kit-results") / "results.jsonl"))


# ------------------------------------------------------------------------- spectrogram


@pytest.fixture(scope="session")
def spec_csv():
    from kit import samples

    return samples.embedded("spectrogram")


@pytest.fixture(scope="session")
def spec_index(spec_csv):
    from kit.spectrogram import FrameIndex

    return FrameIndex.from_csv(spec_csv)


@pytest.fixture
def spec(tmp_path):
    """A tiny spectrogram sample: 2 files x 3 frames, and its index (the test's own: it may damage it)."""
    from kit import samples
    from kit.spectrogram import FrameIndex

    csv = samples.make_spectrogram(tmp_path / "data", files=2, frames_per_file=3, seed=1)
    return FrameIndex.from_csv(csv)


# ------------------------------------------------------------------------- segmentation


@pytest.fixture(scope="session")
def tiny_src(tmp_path_factory):
    """5 generated pairs at 64x64 (fast), shared; tests copy it (``data``) before damaging it."""
    from kit import samples

    return samples.make_segmentation(tmp_path_factory.mktemp("seg") / "tiny", images=5, size=64).parent


@pytest.fixture
def data(tmp_path, tiny_src):
    """The test's own copy of ``tiny_src``."""
    dst = tmp_path / "data"
    shutil.copytree(tiny_src, dst)
    return dst


@pytest.fixture
def index(data):
    from kit.segmentation import PairIndex

    return PairIndex.from_csv(data / "index.csv")


@pytest.fixture
def palette(data):
    from kit.segmentation import Palette

    return Palette.from_csv(data / "class_dict.csv")


# ------------------------------------------------------------------------- models


@pytest.fixture(scope="session")
def small():
    """A cheap backbone (alpha 0.25: 256-d embedding) for the feature cache's mechanics."""
    from kit.models import audio

    return audio.backbone(alpha=0.25, seed=0)


@pytest.fixture(scope="session")
def learnable(tmp_path_factory):
    """700 frames of 5 classes with distinct spectral patterns: 400 train, 300 validation."""
    import numpy as np

    from kit import samples
    from kit.spectrogram import FrameIndex

    csv = samples.make_spectrogram(tmp_path_factory.mktemp("learnable") / "d", files=14,
                                   frames_per_file=50, seed=3)
    index = FrameIndex.from_csv(csv)
    train = np.arange(len(index)) < 400
    return index, train, ~train


# ------------------------------------------------------------------------- the order tests run in


def _rank(item):
    """Where a test starts in the run: the longest first, so that the pytest-xdist workers (make
    test) end together on short tests instead of one idling while another finishes a notebook.
    Notebook 05's two runs with the browser, then the other notebooks (the later ones the longer),
    then the rest of the browser, then the other tests marked slow, then the rest.
    (test_distribute.py starts first on one worker whatever its rank: its tests are one xdist group,
    the largest.)"""
    where = item.nodeid.split("/")[-1]
    if where.startswith("test_browser.py::test_notebook_05_twice"):
        return (0, [])
    if where.startswith("test_notebooks.py::test_runs_headless"):
        return (0, [-ord(c) for c in item.name.partition("[")[2]])  # 08 before 07 ... before 00
    if where.startswith("test_browser.py"):
        return (1, [])
    return (2 if item.get_closest_marker("slow") else 3, [])


@pytest.hookimpl(trylast=True)  # after pytest-xdist's own hook
def pytest_collection_modifyitems(config, items):
    items.sort(key=_rank)  # stable: the order within each group is kept
    _xdist_groups(config, items)


def _xdist_groups(config, items):
    """``--dist loadgroup`` sends the tests of one ``xdist_group`` to one worker by a suffix on their
    node ids ("test_x@distribute"), which pytest-xdist 3.8 writes to ``item._nodeid``; pytest 9.2
    keeps node ids in ``item._id`` and ignores that, so every group was split between the workers
    and test_distribute.py's module fixtures (a MirroredStrategy child, a tf.data service) started
    on both (pytest-dev/pytest-xdist#1386). The suffix is written where pytest reads it; with a
    pytest-xdist that does so itself, nothing is left to do."""
    if not getattr(config.option, "loadgroup", False):  # set on the workers of --dist loadgroup
        return
    try:
        from _pytest.nodeid import NodeId
    except ImportError:  # pytest before 9.2: pytest-xdist's suffix works
        return
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        suffix = "@" + "_".join(names)
        if names and not item.nodeid.endswith(suffix) and isinstance(getattr(item, "_id", None), NodeId):
            item._id = NodeId.parse(item.nodeid + suffix)
