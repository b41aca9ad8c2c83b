"""The segmentation user's machine, one CPU core: the loaders (and the U-Net's training step) measured
in a child process pinned to one core (``os.sched_setaffinity``) with TensorFlow's thread pools at 1.

``one_core(csv, ...)`` starts the child, waits for it at most ``timeout_s`` (then kills it and every
worker process it started) and returns a ``OneCore``: the loaders' rates side by side in interleaved
rounds (``kit.timing.compare``, as ``python -m kit bench segmentation`` measures them), the CPUs the
child could run on and TensorFlow's thread counts as the child itself reported them, and the model's
step. This module imports no TensorFlow; the child (``python -m kit.segmentation.pinned``) does.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from kit.segmentation.case import USER_REPORT
from kit.segmentation.index import Palette
from kit.segmentation.variants import VARIANTS
from kit.util import check_int

#: What one core runs by default: the user's two pipelines and the two that remove the work.
DEFAULT_VARIANTS = ("sequence", "sequence_workers", "tfdata_naive", "tfdata_tuned", "class_index")

#: The variants whose rounds are capped by ``slow_seconds`` (they decode and loop over colours).
SLOW = ("sequence", "sequence_workers", "tfdata_naive")

#: Environment of the child: TensorFlow's two thread pools, OpenMP and BLAS at one thread, quiet logs.
ONE_THREAD_ENV = {"TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1", "OMP_NUM_THREADS": "1",
                  "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "2"}

#: Pins the child before it imports anything else (NumPy's and TensorFlow's pools size themselves on import).
_BOOT = ("import os, sys, runpy; os.sched_setaffinity(0, {int(sys.argv[1])}); "
         "sys.argv = [sys.argv[0]] + sys.argv[2:]; runpy.run_module('kit.segmentation.pinned', run_name='__main__')")


@dataclass
class OneCore:
    """What ``one_core`` measured.

    Attributes:
        rows: one row per variant (``kit.timing.compare``'s columns, ``x_sequence``,
            ``epoch_s_420``), in pairs.
        cpus: the CPUs the child could run on, as ``os.sched_getaffinity`` told the child.
        tf_threads: ``{"intra_op": n, "inter_op": n}`` as TensorFlow reported them in the child.
        model: the U-Net's training step on that core, or None where not asked: ``step_s`` (median
            over ``steps`` steps after a traced first one), ``pairs_per_s``, ``train_flops_per_pair``,
            ``filters``, ``depth``, ``num_classes``.
        spec: what the child was asked (batch, size, rounds, caps, workers, one_hot, the data).
        wall_s: the child's wall time, start to end.
    """

    rows: pd.DataFrame
    cpus: list[int]
    tf_threads: dict
    model: dict | None
    spec: dict = field(default_factory=dict)
    wall_s: float = 0.0

    def rate(self, variant: str) -> float:
        """Pairs per second of ``variant`` on the one core."""
        r = self.rows.set_index("variant")
        if variant not in r.index:
            raise KeyError(f"{variant!r} was not measured; measured: {list(r.index)}")
        return float(r.loc[variant, "examples_per_s"])

    def ratio(self, variant: str = "tfdata_naive", baseline: str = "sequence") -> float:
        """``variant``'s pairs/s over ``baseline``'s, side by side on the one core."""
        return self.rate(variant) / self.rate(baseline)

    def on_gpus(self, per_gpu, *, gpus: int | None = None, epoch: int | None = None) -> pd.DataFrame:
        """The user's epoch with this one core feeding ``gpus`` GPUs (default the user's four): per
        variant, ``epoch / min(one-core loader rate, gpus x per-GPU rate)``.

        Args:
            per_gpu: the model's rate on one GPU, pairs/s: a ``kit.timing.GpuRate`` (its ``per_replica``,
                ``low`` and ``high``, its ``kind`` carried into the rows) or a number (taken as measured).
            gpus: GPUs fed (the GPUs' rate assumed linear in their count: an upper bound).
            epoch: pairs per epoch (default the user's 420).

        Returns:
            One row per variant: ``one_core_pairs_s``, ``gpus_pairs_s`` (``_low``/``_high``),
            ``compute_kind``, ``bound`` ("input" where the core is slower than the GPUs, else "compute";
            "input or compute" where the GPUs' range straddles it), ``epoch_s`` and ``epochs_s`` (the
            user's epochs).
        """
        gpus = int(USER_REPORT["gpus"] if gpus is None else gpus)
        epoch = int(USER_REPORT["pairs_per_epoch"] if epoch is None else epoch)
        check_int("gpus", gpus)
        check_int("epoch", epoch)
        mid = float(getattr(per_gpu, "per_replica", per_gpu))
        low, high = float(getattr(per_gpu, "low", mid)), float(getattr(per_gpu, "high", mid))
        if not 0 < low <= mid <= high:
            raise ValueError(f"per_gpu must be a positive rate (low <= mid <= high), got {per_gpu!r}")
        d = pd.DataFrame({"variant": self.rows["variant"], "one_core_pairs_s": self.rows["examples_per_s"]})
        d["gpus_pairs_s"], d["gpus_pairs_s_low"], d["gpus_pairs_s_high"] = gpus * mid, gpus * low, gpus * high
        d["compute_kind"] = getattr(per_gpu, "kind", "measured")

        def bound(rate):
            return "input" if rate < gpus * low else "compute" if rate >= gpus * high else "input or compute"

        d["bound"] = [bound(v) for v in d["one_core_pairs_s"]]
        d["epoch_s"] = epoch / d[["one_core_pairs_s", "gpus_pairs_s"]].min(axis=1)
        d["epochs_s"] = int(USER_REPORT["epochs"]) * d["epoch_s"]
        return d

    @property
    def basis(self) -> str:
        """What the rates rest on, in words."""
        s = self.spec
        pairs = int(self.rows["examples"].sum())
        return (f"{len(self.cpus)} CPU core (affinity {self.cpus}, TensorFlow intra-op "
                f"{self.tf_threads.get('intra_op')}, inter-op {self.tf_threads.get('inter_op')} thread), "
                f"{s['pairs']} pairs of {s['size']}x{s['size']}, batch {s['batch_size']}, {s['rounds']} interleaved "
                f"rounds, {pairs} pairs timed in all")


def one_core(data, palette=None, *, variants=DEFAULT_VARIANTS, batch_size: int = 3, size: int = 512,
             rounds: int = 3, seconds: float = 3.0, slow_seconds: float = 8.0, warmup: int = 1,
             workers: int | None = None, one_hot: bool = False, model: bool = True, model_steps: int = 3,
             filters: int = 16, depth: int = 3, cpu: int | None = None, workdir=None,
             timeout_s: float = 900.0) -> OneCore:
    """Measures segmentation loaders on ONE CPU core, in a child process, side by side.

    Args:
        data: the index CSV (``image,label``); palette: its ``class_dict.csv`` (default: beside it).
        variants: names of ``VARIANTS`` (``sequence`` among them: the ratios are against it).
        batch_size: pairs per batch (3: the user's); size: the side pairs are cropped or padded to.
        rounds, seconds, slow_seconds, warmup: interleaved rounds, the time cap per round (``SLOW``
            variants: ``slow_seconds``) and the untimed batches before each.
        workers: ``sequence_workers``' worker processes (default: the user's, ``USER_REPORT``).
        one_hot: every variant delivers one-hot masks, as the user's did.
        model: also time the U-Net's training step (``kit.models.unet_model``, ``filters``, ``depth``)
            on that core, ``model_steps`` steps after a first, traced one, on a batch of the same shape.
        cpu: which CPU to pin to (default: the lowest this process may use).
        workdir: where the ``class_index`` store is built (default: the kit cache).
        timeout_s: the longest wait for the child; then it and its workers are killed.

    Returns:
        A ``OneCore``. Raises ``TimeoutError`` past ``timeout_s`` and ``RuntimeError`` when the child
        fails (with the end of its output).
    """
    variants = list(variants)
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise ValueError(f"unknown segmentation variant(s) {unknown}; known: {', '.join(VARIANTS)}")
    if "sequence" not in variants:
        raise ValueError(f"variants must include 'sequence' (the DataGenerator the ratios are against), got {variants}")
    for name, value in (("batch_size", batch_size), ("size", size), ("rounds", rounds), ("model_steps", model_steps),
                        ("filters", filters), ("depth", depth)):
        check_int(name, value)
    check_int("warmup", warmup, 0)
    for name, number in (("seconds", seconds), ("slow_seconds", slow_seconds), ("timeout_s", timeout_s)):
        if not (isinstance(number, (int, float)) and number > 0):
            raise ValueError(f"{name} must be positive, got {number!r}")
    usable = sorted(os.sched_getaffinity(0))
    cpu = usable[0] if cpu is None else cpu
    if cpu not in usable:
        raise ValueError(f"cpu must be one this process may run on {usable}, got {cpu!r}")
    csv = Path(data)
    if not csv.is_file():
        raise FileNotFoundError(f"{csv}: no such index CSV")
    palette = Path(palette if palette is not None else csv.parent / "class_dict.csv")
    Palette.from_csv(palette)  # a bad palette is named here, before a child starts
    spec = {"data": str(csv), "palette": str(palette),
            "variants": variants, "batch_size": batch_size, "size": size, "rounds": rounds, "seconds": seconds,
            "slow_seconds": slow_seconds, "warmup": warmup,
            "workers": USER_REPORT["datagenerator_workers"] if workers is None else workers,
            "one_hot": bool(one_hot), "model": bool(model), "model_steps": model_steps, "filters": filters,
            "depth": depth, "workdir": None if workdir is None else str(workdir)}
    out = _run_child(spec, cpu, timeout_s)
    rows = pd.DataFrame(out["rows"])
    spec["pairs"] = out["pairs"]
    return OneCore(rows, out["cpus"], out["tf_threads"], out["model"], spec, out["wall_s"])


def _run_child(spec: dict, cpu: int, timeout_s: float) -> dict:
    """Runs the child pinned to ``cpu``, in its own process group (killed whole on timeout)."""
    with tempfile.TemporaryDirectory(prefix="kit-one-core-") as tmp:
        spec_path, out_path = Path(tmp) / "spec.json", Path(tmp) / "out.json"
        spec_path.write_text(json.dumps(spec))
        env = {**os.environ, **ONE_THREAD_ENV}
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", _BOOT, str(cpu), str(spec_path), str(out_path)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            log, _ = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            log, _ = proc.communicate()
            raise TimeoutError(f"the one-core child ran past timeout_s={timeout_s:g} s and was killed; "
                               f"its last output: {_tail(log)}") from None
        finally:
            if proc.poll() is None:  # interrupted while waiting: leave nothing running
                _kill_group(proc)
        _kill_group(proc)  # workers a finished child left behind
        if proc.returncode != 0 or not out_path.exists():
            last = _tail(log).splitlines()[-1]
            raise RuntimeError(f"the one-core child failed (exit {proc.returncode}): {last}\nits output: {_tail(log)}")
        result = json.loads(out_path.read_text())
        result["wall_s"] = time.perf_counter() - t0
        return result


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:  # the group is gone already
        pass
    proc.wait()


def _tail(log: bytes | None, n: int = 1500) -> str:
    text = (log or b"").decode(errors="replace").strip()
    return text[-n:] if text else "(nothing)"


# --- the child: pinned by _BOOT before this module is imported ------------------------------------

def _orphan_guard(parent: int) -> None:
    """Ends the child's process group (it and its workers) once its parent is gone: a parent killed
    outright cannot kill them itself."""
    import threading

    def watch():
        while os.getppid() == parent:
            time.sleep(1.0)
        os.killpg(0, signal.SIGKILL)

    threading.Thread(target=watch, daemon=True, name="kit-orphan-guard").start()


def _child(spec_path: str, out_path: str) -> None:
    _orphan_guard(os.getppid())
    spec = json.loads(Path(spec_path).read_text())
    import tensorflow as tf  # the child only: after the affinity and the thread environment are set

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    cpus = sorted(os.sched_getaffinity(0))
    threads = {"intra_op": tf.config.threading.get_intra_op_parallelism_threads(),
               "inter_op": tf.config.threading.get_inter_op_parallelism_threads()}
    rows, pairs = _loaders(spec)
    model = _model_step(spec) if spec["model"] else None
    Path(out_path).write_text(json.dumps({"rows": rows, "cpus": cpus, "tf_threads": threads, "model": model,
                                          "pairs": pairs}))


def _loaders(spec: dict) -> tuple[list[dict], int]:
    from kit import timing
    from kit.segmentation.convert import convert
    from kit.segmentation.index import PairIndex
    from kit.segmentation.variants import make_loader
    from kit.system.pagecache import warm_page_cache
    from kit.timing.batches import iterate

    index = PairIndex.from_csv(spec["data"])
    pal = Palette.from_csv(spec["palette"])
    size, workdir = spec["size"], spec["workdir"]
    warm_page_cache(index.images + index.labels)
    if "class_index" in spec["variants"]:  # built (or found) before any timing
        convert(index, pal, size=size, workdir=workdir, progress=False)
    loaders = {}
    for v in spec["variants"]:
        opts = {"workers": spec["workers"]} if v == "sequence_workers" else {}
        ld = make_loader(v, index, pal, batch_size=spec["batch_size"], size=size, shuffle=True, seed=0,
                         workdir=workdir, one_hot=spec["one_hot"], progress=False, **opts)
        loaders[v] = ld.repeat() if hasattr(ld, "repeat") else _epochs(ld, iterate)
    caps = {v: spec["slow_seconds"] if v in SLOW else spec["seconds"] for v in loaders}
    df = timing.compare(loaders, baselines="sequence", num_batches=10_000, warmup=spec["warmup"],
                        rounds=spec["rounds"], max_seconds=caps, epoch_examples=(int(USER_REPORT["pairs_per_epoch"]),))
    df = df.drop(columns=["wait_share"], errors="ignore")  # no consumer here: nothing waits
    return df.to_dict(orient="records"), len(index)


def _epochs(pydataset, iterate):
    """A PyDataset read epoch after epoch, as ``model.fit`` reads it (its workers restart with each
    epoch), so that a round is cut by its time cap, never by an epoch's end."""
    def batches():
        while True:
            yield from iterate(pydataset)  # closing this generator closes the epoch's reader
    return batches


def _model_step(spec: dict) -> dict:
    import keras
    import numpy as np

    from kit.models.audio import training_flops
    from kit.models.unet import segmentation_loss, unet

    n = Palette.from_csv(spec["palette"]).num_classes
    b, s = spec["batch_size"], spec["size"]
    keras.utils.set_random_seed(0)
    model = unet(n, input_shape=(s, s, 3), filters=spec["filters"], depth=spec["depth"])
    model.compile("adam", loss=segmentation_loss(one_hot=spec["one_hot"]))
    rng = np.random.default_rng(0)
    x = rng.random((b, s, s, 3), dtype=np.float32)
    ids = rng.integers(0, n, (b, s, s))
    y = np.eye(n, dtype=np.float32)[ids] if spec["one_hot"] else ids.astype(np.uint8)
    model.train_on_batch(x, y)  # traces the step
    steps = []
    for _ in range(spec["model_steps"]):
        t0 = time.perf_counter()
        model.train_on_batch(x, y)
        steps.append(time.perf_counter() - t0)
    step = float(np.median(steps))
    return {"step_s": step, "pairs_per_s": b / step, "steps": len(steps), "batch_size": b, "size": s,
            "train_flops_per_pair": training_flops(model), "filters": spec["filters"], "depth": spec["depth"],
            "num_classes": n}


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2])
