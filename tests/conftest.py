"""Shared fixtures. Every test runs with its own kit cache, so nothing leaks between tests."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _kit_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("KIT_CACHE", str(tmp_path_factory.mktemp("kit-cache")))
    # Bench runs append to the results ledger: into the test's own, never reports/.
    monkeypatch.setenv("KIT_RESULTS", str(tmp_path_factory.mktemp("kit-results") / "results.jsonl"))


@pytest.fixture(scope="session")
def spec_csv():
    from kit import samples

    return samples.embedded("spectrogram")


@pytest.fixture(scope="session")
def spec_index(spec_csv):
    from kit.spectrogram import FrameIndex

    return FrameIndex.from_csv(spec_csv)


#: Test files whose tests run longest (each notebook twice, a browser, child processes): they
#: start first, so the two pytest-xdist workers (make test) end together on short tests instead
#: of one of them idling while the other finishes a notebook.
LONGEST_FIRST = ("test_notebooks.py::test_runs_headless", "test_browser.py", "test_distribute.py",
                 "test_scale.py", "test_demo.py")


def pytest_collection_modifyitems(config, items):
    def rank(item):
        where = item.nodeid.split("/")[-1]
        return next((k for k, prefix in enumerate(LONGEST_FIRST) if where.startswith(prefix)), len(LONGEST_FIRST))

    items.sort(key=rank)  # stable: the order within each group is kept
