"""Whole warm epochs with freed batch buffers kept (``kit.system.memory``) and with malloc as it comes
(``KIT_MALLOC=default``), in pairs of fresh processes run one after the other: the default
bench data (200 files x 100 frames, in the kit cache), the loaders built and run once, then
the median of ``--epochs`` whole epochs each, the variants interleaved. Prints frames/s per
run and, per pair, kept / as it comes.

    PYTHONPATH=. python scripts/experiments/malloc_pairs.py [--pairs 3] [--epochs 3] [--variants in_memory,memmap,tfrecord]
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def one_run(variants, epochs):
    from kit.system import memory

    memory.keep_freed_memory()  # before any buffer: as python -m kit and the notebooks do
    import numpy as np

    from kit import samples, spectrogram
    from kit.bench.spectrogram import DEFAULT_FILES, DEFAULT_FRAMES_PER_FILE

    csv = samples.cached("spectrogram", files=DEFAULT_FILES, frames_per_file=DEFAULT_FRAMES_PER_FILE)
    index = spectrogram.FrameIndex.from_csv(csv)
    loaders = {v: spectrogram.make_loader(v, index, batch_size=256, progress=False) for v in variants}
    for loader in loaders.values():  # built, traced and read once: warm
        for _ in loader:
            pass
    rates = {v: [] for v in variants}
    for _ in range(epochs):
        for v, loader in loaders.items():
            t, n = time.perf_counter(), 0
            for _, y in loader:
                n += int(y.shape[0])
            assert n == len(index), (v, n)  # every frame, once
            rates[v].append(n / (time.perf_counter() - t))
    return {"kept": memory.malloc_setting()["kept_by_kit"], **{v: float(np.median(r)) for v, r in rates.items()}}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--variants", default="in_memory,memmap,tfrecord")
    p.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a child: one run, JSON out
    a = p.parse_args()
    variants = a.variants.split(",")
    if a.one:
        print(json.dumps(one_run(variants, a.epochs)))
        return
    import pandas as pd

    env = {k: v for k, v in os.environ.items() if k != "KIT_MALLOC"}
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    rows = []
    for pair in range(1, a.pairs + 1):
        for setting in ("kept", "as it comes"):
            child_env = dict(env, **({"KIT_MALLOC": "default"} if setting != "kept" else {}))
            r = subprocess.run([sys.executable, __file__, "--one", "--epochs", str(a.epochs), "--variants", a.variants],
                               env=child_env, capture_output=True, text=True, check=True, timeout=1800)
            got = json.loads(r.stdout.strip().splitlines()[-1])
            assert got.pop("kept") == (setting == "kept"), "the child did not get the setting it was given"
            rows.append({"pair": pair, "malloc": setting, **got})
            print(rows[-1], flush=True)
    df = pd.DataFrame(rows).set_index(["pair", "malloc"])
    ratio = df.xs("kept", level="malloc") / df.xs("as it comes", level="malloc")
    print("\nframes/s, the median of whole warm epochs:\n" + df.round(0).to_string())
    print("\nkept / as it comes, per pair:\n" + ratio.round(2).to_string())


if __name__ == "__main__":
    main()
