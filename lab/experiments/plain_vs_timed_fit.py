"""A dev-corpus case's slow and fixed pipelines fitted two ways, side by side: through the kit's step
timer (``kit.doctor.measure.timed_fit``, which pulls each batch through Python to see the step wait
for it) and as Keras reads a ``tf.data`` pipeline (``model.fit(ds.repeat(), ...)``, timed from the
ends of the steps after the first two), each against the model on its first batch replayed. Prints
examples/s per round; the fixed over slow ratio is the fix's gain each way (issue 44: the timer's
per-step pull flattened a fast fix's gain, hence ``kit.doctor.measure.plain_fit``).

    python -m lab.experiments.plain_vs_timed_fit [--case tfrecord_parse] [--data FOLDER] [--rounds 2]
"""

import argparse
import importlib
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--case", default="tfrecord_parse", help="a module of tests/doctor_corpus")
    p.add_argument("--data", default="/tmp/kit-doctor-corpus", help="where the case's data is made")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--seconds", type=float, default=2.0, help="each fit")
    a = p.parse_args()

    import keras
    import tensorflow as tf

    from kit.doctor.measure import compiled_copy, replay, timed_fit
    from kit.doctor.sources import first_batch

    case = importlib.import_module(f"doctor_corpus.{a.case}")
    case.make_data(a.data)

    class Ends(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.ends = []

        def on_train_batch_end(self, batch, logs=None):
            self.ends.append(time.perf_counter())
            if self.ends[-1] - self.ends[0] > a.seconds:
                self.model.stop_training = True

    def plain(copy, ds, size):
        t = Ends()
        copy.fit(ds.repeat(), steps_per_epoch=10**9, epochs=1, verbose=0, callbacks=[t])
        e = np.array(t.ends[1:])
        return size * (len(e) - 1) / (e[-1] - e[0])

    for name, ds in (("slow", case.slow(a.data)), ("fixed", case.fixed(a.data))):
        batch, size = first_batch(ds, name)
        copy = compiled_copy(case.model(), batch, name)
        replayed = tf.data.Dataset.from_tensors(batch)
        for r in range(a.rounds):
            timer = timed_fit(copy, ds, max_seconds=a.seconds)["examples_per_s"]
            timer_ceiling = timed_fit(copy, replay(batch), max_seconds=a.seconds)["examples_per_s"]
            print(f"{name} round {r + 1}: through the timer {timer:,.0f}/s (ceiling {timer_ceiling:,.0f}/s); "
                  f"as Keras reads it {plain(copy, ds, size):,.0f}/s (ceiling {plain(copy, replayed, size):,.0f}/s)",
                  flush=True)


if __name__ == "__main__":
    main()
