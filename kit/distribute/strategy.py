"""Strategies on this machine: ``tf.distribute.MirroredStrategy`` over GPUs, or over the CPU split
into logical devices (a simulation: the same code and results, not the speed)."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from kit.util import check_int

#: Logical CPU devices ``make_strategy()`` makes when there is no GPU and no count is given.
SIMULATED_REPLICAS = 2

DEVICE_CHOICES = ("auto", "gpu", "cpu")


def split_cpu(devices: int) -> None:
    """Splits the CPU into at least ``devices`` logical devices, for a simulated multi-device run.

    Must run before TensorFlow initialises its devices; again with the same or a smaller count it
    does nothing. Raises ``RuntimeError`` (saying what to do) when it comes too late.
    """
    devices = check_int("devices", devices)
    cpu = tf.config.list_physical_devices("CPU")[0]
    current = tf.config.get_logical_device_configuration(cpu)
    if current is not None and len(current) >= devices:
        return
    try:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(devices)])
    except RuntimeError:
        have = len(tf.config.list_logical_devices("CPU"))
        if have >= devices:
            return
        raise RuntimeError(
            f"too late to split the CPU into {devices} logical devices: TensorFlow has already "
            f"initialised its devices in this process ({have} logical CPU device(s)). Call "
            f"kit.distribute.make_strategy({devices}) before any other TensorFlow work (first "
            f"thing in the script, or the first cell of the notebook; restart the kernel)"
        ) from None


def make_strategy(replicas: int | None = None, *, devices: str = "auto"):
    """A ``tf.distribute.MirroredStrategy`` for ``replicas`` replicas on this machine.

    With GPUs: over the first ``replicas`` visible GPUs (all by default). Without (or with
    ``devices="cpu"``): over ``replicas`` logical devices the CPU is split into (default
    ``SIMULATED_REPLICAS``), a simulation sharing the same cores (``describe`` says which).

    On the CPU the first call must come before TensorFlow initialises its devices; later ones may
    use up to as many replicas. The same devices give the same strategy object.

    Args:
        replicas: how many replicas; None means every GPU, or ``SIMULATED_REPLICAS``.
        devices: ``"auto"`` (GPUs when visible, else the CPU), ``"gpu"`` or ``"cpu"``.

    Raises:
        ValueError: bad arguments, or more replicas than GPUs.
        RuntimeError: the CPU split comes too late (see ``split_cpu``).
    """
    if replicas is not None:
        replicas = check_int("replicas", replicas)
    if devices not in DEVICE_CHOICES:
        raise ValueError(f"devices must be one of {', '.join(DEVICE_CHOICES)}, got {devices!r}")
    gpus = tf.config.list_physical_devices("GPU") if devices != "cpu" else []
    if devices == "gpu" and not gpus:
        raise ValueError("devices='gpu' but TensorFlow sees no GPU (check `nvidia-smi` and the "
                         "tensorflow[and-cuda] install)")
    if gpus:
        n = len(gpus) if replicas is None else replicas
        if n > len(gpus):
            raise ValueError(f"{n} replicas asked for, but {len(gpus)} GPU(s) are visible; use "
                             f"at most {len(gpus)}, or devices='cpu' to simulate {n} on the CPU")
        return _mirrored(tuple(f"/gpu:{i}" for i in range(n)))
    n = SIMULATED_REPLICAS if replicas is None else replicas
    split_cpu(n)
    return _mirrored(tuple(f"/cpu:{i}" for i in range(n)))


_STRATEGIES: dict = {}


def _mirrored(devices: tuple):
    # One strategy per device set and process: two over the same devices number their all-reduces
    # alike, and a second model's reduce collides with the first's.
    if devices not in _STRATEGIES:
        _STRATEGIES[devices] = tf.distribute.MirroredStrategy(list(devices))
    return _STRATEGIES[devices]


def is_simulated(strategy) -> bool:
    """True when the strategy's replicas are logical devices of one CPU."""
    devs = [d.upper() for d in strategy.extended.worker_devices]
    return len(devs) > 1 and not any("GPU" in d for d in devs) and _num_workers(strategy) == 1


def _num_workers(strategy) -> int:
    resolver = getattr(strategy, "cluster_resolver", None)
    spec = resolver.cluster_spec().as_dict() if resolver is not None else {}
    return max(1, len(spec.get("worker", [])) + len(spec.get("chief", [])))


def describe(strategy) -> str:
    """One line: how many replicas on what, and whether it is a simulation."""
    n = strategy.num_replicas_in_sync
    devs = strategy.extended.worker_devices
    workers = _num_workers(strategy)
    kind = "GPU" if any("GPU" in d.upper() for d in devs) else "CPU"
    where = f"{len(devs)} {kind} device(s)" + (f" on each of {workers} workers" if workers > 1 else "")
    text = f"{type(strategy).__name__}: {n} replica(s) in sync, {where}"
    if is_simulated(strategy):
        text += (" -- SIMULATION: logical devices sharing one CPU's cores; the same code and "
                 "results as N devices, not their speed")
    return text


def _replicas(replicas) -> int:
    """``replicas``, an int or a strategy, as a checked count."""
    n = replicas if isinstance(replicas, (int, np.integer)) else replicas.num_replicas_in_sync
    return check_int("replicas", n)


def global_batch_size(per_replica: int, replicas) -> int:
    """Global batch = per-replica batch x replicas (``replicas`` an int or a strategy)."""
    return check_int("per_replica", per_replica) * _replicas(replicas)


def per_replica_batch_size(global_batch: int, replicas) -> int:
    """Per-replica batch of a global batch; refuses a global batch the replicas cannot share evenly."""
    global_batch, n = check_int("global_batch", global_batch), _replicas(replicas)
    if global_batch % n:
        raise ValueError(f"global batch {global_batch} does not split evenly over {n} replicas; "
                         f"use a multiple of {n}")
    return global_batch // n
