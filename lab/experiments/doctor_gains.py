"""For each finding code: the doctor's expected gain on the test pipeline that plants it, next to the
gain measured by applying the fix (side by side in one run). Uses tests/test_doctor.py's pipelines.

    python -m lab.experiments.doctor_gains [--seconds 3] [--json FILE]
"""

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import test_doctor as t  # noqa: E402

from kit import doctor, timing  # noqa: E402
from kit.doctor.findings import SYMPTOMS


def loader_gain(planted, fixed, seconds):
    df = timing.compare({"planted": planted, "fixed": fixed}, baselines="planted", num_batches=None,
                        warmup=1, rounds=3, max_seconds=seconds / 6)
    return float(df.loc[df["variant"] == "fixed", "x_planted"].iloc[0])


def fit_gain(planted, fixed, seconds):
    df = doctor.compare_fits({"planted": planted, "fixed": fixed}, baseline="planted", max_seconds=seconds, rounds=3)
    return float(df.loc[df["variant"] == "fixed", "x_planted"].iloc[0])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--json", default=None)
    a = p.parse_args()
    s = a.seconds
    rows = []

    def add(code, pipeline, d, measured, how):
        rows.append({"code": code, "pipeline": pipeline, "top": d.top if code not in SYMPTOMS else d.codes[0],
                     "expected_gain": d.gain(code), "measured_gain": measured, "measured_by": how})
        print(rows[-1], flush=True)

    for make in t.TFDATA:
        code = make.__name__
        d = doctor.diagnose(make(False), max_seconds=s)
        add(code, f"tests/test_doctor.py::{code}", d, loader_gain(make(False), make(True), s), "timing.compare, loaders alone")
    # no_prefetch only matters next to a model: measured with one too
    def labelled(fixed):
        import tensorflow as tf

        ds = tf.data.Dataset.from_tensor_slices((t.X, t.Y)).batch(t.B)
        ds = ds.map(lambda x, y: (t._heavy(x), y), num_parallel_calls=tf.data.AUTOTUNE)
        return ds.prefetch(tf.data.AUTOTUNE) if fixed else ds

    model = t._model(frozen_width=256, trainable_prefix=True)
    d = doctor.diagnose(labelled(False), model, max_seconds=s)
    add("no_prefetch", "no_prefetch + labels, 2x Dense(256) model", d,
        fit_gain((labelled(False), model), (labelled(True), model), s), "doctor.compare_fits")

    with tempfile.TemporaryDirectory() as tmp:
        frames, paths = 64, []
        for k in range(4):
            path = Path(tmp) / f"f{k}.npy"
            np.save(path, np.full((frames, 1024), k, np.float32))
            paths.append(path)

        def planted():
            for k, path in enumerate(paths):
                for start in range(0, frames, t.B):
                    yield np.stack([np.load(path)[i] for i in range(start, start + t.B)]), np.full(t.B, k)

        def fixed():
            for k, path in enumerate(paths):
                whole = np.load(path)
                for start in range(0, frames, t.B):
                    yield whole[start:start + t.B], np.full(t.B, k)

        d = doctor.diagnose(planted, max_seconds=s)
        add("read_amplification", "generator loading a whole 64-frame file per frame", d,
            loader_gain(planted, fixed, s), "timing.compare, loaders alone")

    d = doctor.diagnose(t._pydataset(1), max_seconds=s)
    add("pydataset_single_worker", "PyDataset(workers=1)", d,
        loader_gain(t._pydataset(1), t._pydataset(2), s), "timing.compare, loaders alone (fix: workers=2)")

    d = doctor.diagnose(t._slow_batches, t._model(), max_seconds=s)
    add("input_bound", "generator sleeping 20 ms per batch + Dense model", d,
        fit_gain((t._slow_batches, t._model()), (t._memory_batches, t._model()), s),
        "doctor.compare_fits (fix: batches from memory)")

    heavy = t._model(frozen_width=2048)
    d = doctor.diagnose(t._memory_batches, heavy, max_seconds=s)
    add("compute_bound", "batches from memory + 2x Dense(2048) frozen + Dense head", d,
        fit_gain((t._memory_batches, heavy), (t._memory_batches, t._model()), s),
        "doctor.compare_fits (fix: the head alone, a lighter model)")
    import keras

    prefix = keras.Sequential(heavy.layers[:2])
    feats = np.asarray(prefix.predict(t.X, verbose=0))

    def cached():
        for i in range(0, t.N, t.B):
            yield feats[i:i + t.B], t.Y[i:i + t.B]

    head = keras.Sequential([keras.Input((2048,)), keras.layers.Dense(4)])
    head.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    add("frozen_backbone_recomputed", "batches from memory + 2x Dense(2048) frozen + Dense head", d,
        fit_gain((t._memory_batches, heavy), (cached, head), s),
        "doctor.compare_fits (fix: head on cached features)")

    df = pd.DataFrame(rows)
    with pd.option_context("display.width", 250, "display.max_colwidth", 60):
        print(df.to_string(index=False))
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1, default=float) + "\n")


if __name__ == "__main__":
    main()
