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
