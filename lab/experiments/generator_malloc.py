"""What TensorFlow's generator op costs a training step that never reads a generator (issue 55).

``from_generator`` (and so Keras's fit on a PyDataset or a generator) sets glibc's malloc trim threshold
at its first batch, which freezes the thresholds for the whole process (``lab.allocator``). This
times the segmentation user's U-Net (``lab/doctor_scripts/users/segmentation_user.py``: 128x128, batch 3)
on one batch replayed from memory in three fresh processes a round, the order rotated each round:

* ``own``: nothing else read (glibc's dynamic thresholds);
* ``generator``: a one-element ``from_generator`` read first, as the user's fit does before its steps;
* ``generator+own``: the same, then ``allocator.use(OWN)`` (the doctor's ``generator_malloc`` fix).

Prints each state's median step (ms) and system CPU per step (ms) over the rounds.

    python -m lab.experiments.generator_malloc [--rounds 3] [--steps 30]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

STATES = ("own", "generator", "generator+own")

CHILD = """
import json, os, sys, time
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, tensorflow as tf
from lab import allocator as malloc
from lab.doctor_scripts.users import segmentation_user as su
state, steps = sys.argv[1], int(sys.argv[2])
if state != "own":
    for _ in tf.data.Dataset.from_generator(lambda: iter([1]), output_signature=tf.TensorSpec((), tf.int32)):
        pass
if state == "generator+own":
    malloc.use(malloc.OWN)
model = su.unet((128, 128, 3), 6)
model.compile(optimizer="adam", loss=su.dice_ce_loss, metrics=["accuracy", su.mean_iou])
rng = np.random.default_rng(0)
x = rng.random((3, 128, 128, 3), dtype=np.float32)
y = np.eye(6, dtype=np.float32)[rng.integers(0, 6, (3, 128, 128))]
ds = tf.data.Dataset.from_tensors((x, y)).repeat()
model.fit(ds, steps_per_epoch=3, epochs=1, verbose=0)  # traced
t, c = time.perf_counter(), os.times()
model.fit(ds, steps_per_epoch=steps, epochs=1, verbose=0)
print(json.dumps({"step_ms": 1e3 * (time.perf_counter() - t) / steps,
                  "system_ms": 1e3 * (os.times().system - c.system) / steps}))
"""


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=30)
    a = p.parse_args(argv)
    runs: dict[str, list[dict]] = {s: [] for s in STATES}
    for r in range(a.rounds):
        for state in STATES[r % 3:] + STATES[:r % 3]:
            out = subprocess.run([sys.executable, "-c", CHILD, state, str(a.steps)], capture_output=True, text=True,
                                 timeout=600, check=True)
            runs[state].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"{'state':<15} {'step ms':>8} {'system ms':>10}   (medians of {a.rounds} rounds, {a.steps} steps each)")
    for state, rows in runs.items():
        print(f"{state:<15} {statistics.median(r['step_ms'] for r in rows):>8.1f} "
              f"{statistics.median(r['system_ms'] for r in rows):>10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
