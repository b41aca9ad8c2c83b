"""The compute ceiling in a fresh process, for a fit Keras reads through TensorFlow's generator op.

Keras reads a PyDataset or a Python generator through ``tf.data.Dataset.from_generator``, whose op calls
glibc's ``mallopt(M_TRIM_THRESHOLD, 128 KB)`` at its first batch, once per process (its log says "Memory
patch applied"; tensorflow/tensorflow#37653). Setting a threshold turns glibc's dynamic thresholds off
where they stand: from then on a training step's large tensors are mapped and unmapped, and paid for in
page faults, every step, in the whole process (``tests/test_malloc.py``). The same model on the same
batch in a process that never read a generator keeps the dynamic thresholds, which grow to its tensors.

So, under ``kit doctor run``, where the script's fit reads through that op:

- ``as_the_fit_would()`` reads one element of a ``from_generator`` dataset at the fit's call, before the
  doctor reads anything: the process then has the thresholds the user's fit gives it at its first batch
  (the doctor's own reads would otherwise have grown them first). The doctor does not set them itself.
- ``ceiling_in_child()`` runs the script again in a child process (``ENV`` set) up to its first fit;
  there the hooks time the model's step on one batch replayed from memory (``child_ceiling``), which is
  what the fit reaches once its input no longer goes through a Python generator, and the child ends.

``watch()`` in a notebook has no script to run again: its ceiling is the one timed in the kernel.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: Set in the child that times the ceiling: its hooks time the ceiling at the first fit, then it ends.
ENV = "KIT_DOCTOR_FRESH"
#: The share of the doctor's budget the child's ceiling rounds take (two rounds), at least ``LEAST_S``. The
#: child's run is reported apart (``fresh_s``), beside the budget, as the script's own set-up is.
SHARE, LEAST_S = 0.1, 1.0
#: What the child may take past twice the script's own set-up (measured in this process) and four times its
#: rounds: TensorFlow's start and the model's trace and compile, which a large model makes long (so2sat_lcz's
#: child, at 20 s, timed out).
GRACE_S = 60.0


def reads_generator(call) -> bool:
    """Whether Keras's ``fit`` reads what ``call`` (a ``run.Fit``) was given through TensorFlow's generator op:
    not arrays in memory, not a ``tf.data`` dataset (a PyDataset, a generator, an iterator)."""
    from kit.doctor.sources import is_dataset  # noqa: PLC0415

    return not call.in_memory and not is_dataset(call.x)


def glibc() -> bool:
    """Whether this process's C library is glibc (the thresholds the op sets are glibc's)."""
    import platform  # noqa: PLC0415

    return platform.libc_ver()[0] == "glibc"


def as_the_fit_would() -> None:
    """Reads one element of a ``from_generator`` dataset: TensorFlow's generator op sets the process's malloc
    thresholds (once per process) as the user's fit would at its first batch."""
    import tensorflow as tf  # noqa: PLC0415

    for _ in tf.data.Dataset.from_generator(lambda: iter([0]), output_signature=tf.TensorSpec((), tf.int32)):
        pass


def child_seconds(max_seconds: float) -> float:
    """The child's ceiling rounds, in all."""
    return max(LEAST_S, SHARE * max_seconds)


def ceiling_in_child(script: str | None, module: str | None, args: list[str], *, max_seconds: float,
                     setup_s: float, cwd: str) -> tuple[dict | None, str]:
    """Runs the script again in a child (``ENV`` set) to time the compute ceiling there; bounded by the
    script's set-up time ``setup_s`` (as measured in this process) and the rounds, plus ``GRACE_S``.
    Returns ``(result, why)``: the child's ``child_ceiling`` result and its wall time, or None and why not."""
    seconds = child_seconds(max_seconds)
    timeout = 2 * setup_s + 4 * seconds + GRACE_S
    with tempfile.TemporaryDirectory(prefix="kit-doctor-fresh-") as tmp:
        out = Path(tmp) / "ceiling.json"
        target = ["-m", module] if module else [os.path.abspath(script or "")]
        cmd = [sys.executable, "-m", "kit", "doctor", "run", "--max-seconds", f"{seconds:g}",
               "--wait-seconds", f"{timeout:g}", "--json", str(out), *target, *args]
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, cwd=cwd, env={**os.environ, ENV: "1"}, capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, f"the script run again did not reach its fit and time it within {timeout:.0f} s"
        wall = time.perf_counter() - t0
        report = json.loads(out.read_text()) if out.exists() else {}
        if proc.returncode != 0 or report.get("ended") != "fresh ceiling":
            last = ((proc.stderr or "").strip().splitlines() or ["no output"])[-1][:200]
            return None, f"the script run again ended without timing it (exit {proc.returncode}: {last})"
        return {**report["fresh"], "wall_s": wall}, ""


def child_ceiling(call, max_seconds: float) -> dict:
    """In the child: the model's step on the fit's first batch (read in Python, never through the generator
    op) replayed from memory, in two rounds of ``max_seconds / 2``, on a copy compiled as the doctor's is."""
    import tensorflow as tf  # noqa: PLC0415

    from kit.doctor.copying import lending  # noqa: PLC0415
    from kit.doctor.measure import compiled_copy, fit_once, pooled  # noqa: PLC0415
    from kit.doctor.sources import first_batch  # noqa: PLC0415

    source, _ = call.source()
    name = f"the input of {call.where}"
    with lending():
        batch, size = first_batch(source, name)
        copy = compiled_copy(call.model, batch, name)
        ceiling = tf.data.Dataset.from_tensors(batch)
        runs = [fit_once(copy, ceiling, batch_size=size, max_seconds=max_seconds / 2) for _ in range(2)]
    return {"ceiling_examples_per_s": pooled(runs), "ceiling_rounds": [float(r["examples_per_s"]) for r in runs],
            "batch_size": size}
