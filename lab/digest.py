"""``python -m lab.digest``: what the content digest in a store's key costs.

A store's key follows its sources' content (``kit.store.files_fingerprint``): the cheap
``(size, mtime_ns)`` plus a BLAKE2b digest of each file. This bench times, on the same
files in one run, the ways of fingerprinting them:

* ``stat``: size and mtime only (the key before content digests);
* ``sample-cold``: sampled digests (head, tail, 8 blocks), nothing cached, the files
  evicted from the page cache first (``kit.system.pagecache.evict``);
* ``sample-cached``: the same again in a new process's view: digests from the on-disk
  cache, the files still evicted;
* ``full-cold``: every byte hashed (``KIT_DIGEST=full``), files evicted first.

Each is also given relative to loading the index cold (``FrameIndex.from_csv``: every
file's header and, now, its sampled digest), as ``x_index``.

``run(DigestConfig(...))`` returns a ``kit.bench.BenchResult``.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import KW_ONLY, dataclass
from pathlib import Path

import pandas as pd

from kit.bench import BenchResult, print_table
from kit.bench.options import check_int, option, optional_path
from kit.bench.spectrogram import default_data
from kit.spectrogram import FrameIndex
from kit.store.keys import files_fingerprint, forget_digests
from kit.system import pagecache
from kit.util import positive_int

__all__ = ["DigestConfig", "run", "show", "main"]


@dataclass(frozen=True)
class DigestConfig:
    """What ``run`` measures: the files of the index ``csv`` (the spectrogram bench's default
    data if None), fingerprinted every way once per round, ``rounds`` rounds."""

    csv: Path | None = option(None, "index CSV (default: the spectrogram bench data, 200 files x 100 frames)",
                              flag="--data", type=Path)
    _: KW_ONLY
    rounds: int = option(3, "interleaved measuring rounds (default 3)", type=positive_int)

    def __post_init__(self):
        optional_path(self, "csv")
        check_int("rounds", self.rounds)


def run(config: DigestConfig, *, log=print) -> BenchResult:
    """Times each way of fingerprinting the index's files, one row a way (``log``: unused, as
    every bench's ``run`` takes it)."""
    return BenchResult("digest", _measure(config.csv, config.rounds), config)


def _measure(csv, rounds: int):
    csv = Path(csv) if csv is not None else default_data()
    files = [str(f) for f in FrameIndex.from_csv(csv).files]
    size = sum(os.path.getsize(f) for f in files)
    rows = []
    old_cache = os.environ.get("KIT_CACHE")
    try:
        for r in range(rounds):  # interleaved: every way once per round
            ways = {
                "index": lambda: FrameIndex.from_csv(csv),
                "stat": lambda: [(f, os.stat(f).st_size, os.stat(f).st_mtime_ns) for f in files],
                "sample-cold": lambda: files_fingerprint(files, digest="sample"),
                "sample-cached": lambda: files_fingerprint(files, digest="sample"),
                "full-cold": lambda: files_fingerprint(files, digest="full"),
            }
            with tempfile.TemporaryDirectory(prefix="kit-digest-") as tmp:
                for name, fn in ways.items():
                    # A fresh digest cache for each way but "sample-cached", which finds
                    # what "sample-cold" just wrote, as a second process would.
                    cache = Path(tmp) / ("sample" if name.startswith("sample") else name)
                    os.environ["KIT_CACHE"] = str(cache)
                    forget_digests()  # nothing in this process's memory
                    if name != "sample-cached":
                        pagecache.evict(files)
                    t0 = time.perf_counter()
                    fn()
                    rows.append({"variant": name, "round": r, "seconds": time.perf_counter() - t0})
    finally:
        if old_cache is None:
            os.environ.pop("KIT_CACHE", None)
        else:
            os.environ["KIT_CACHE"] = old_cache
    df = pd.DataFrame(rows).groupby("variant", sort=False)["seconds"].median().reset_index()
    df["files"] = len(files)
    df["MB"] = size / 1e6
    df["files_per_s"] = len(files) / df["seconds"]
    df["x_index"] = df["seconds"] / float(df.loc[df["variant"] == "index", "seconds"].iloc[0])
    return df


def show(res) -> None:
    print_table(res.rows)


def main(argv=None) -> int:
    """``python -m lab.digest [--data CSV] [--rounds N]``."""
    from lab.command import main as command

    return command("digest", DigestConfig, run, show, argv, description=__doc__.split("\n")[0])


if __name__ == "__main__":
    raise SystemExit(main())
