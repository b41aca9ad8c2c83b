"""Training on several devices and several machines, with TensorFlow's own engines: ``strategy``
(``make_strategy``: GPUs, or the CPU split into logical devices), ``input`` (``distributed_loader``,
both input patterns), ``service`` (tf.data service), ``multiworker`` (``MultiWorkerMirroredStrategy``,
``train_steps``), ``commands`` (``python -m kit service``).

Importing this package imports no case and no TensorFlow: the modules that import it at their top
load on the first use of one of their names.
"""

import importlib

from kit.distribute.service import (
    SERVICE_TIMEOUT_S,
    ServiceTimeoutError,
    local_service,
    service_problems,
    through_service,
)

#: The names of the modules that import TensorFlow (and Keras) at their top: loaded on first use.
_LAZY = {
    **dict.fromkeys(["PATTERNS", "distributed_loader", "local_batches", "shard_rows"], "kit.distribute.input"),
    **dict.fromkeys(["multi_worker_strategy", "run_multiworker", "tf_config", "train_steps", "weights_digest"],
                    "kit.distribute.multiworker"),
    **dict.fromkeys(["SIMULATED_REPLICAS", "describe", "global_batch_size", "is_simulated", "make_strategy",
                     "per_replica_batch_size", "split_cpu"], "kit.distribute.strategy"),
}

__all__ = ["SIMULATED_REPLICAS", "PATTERNS", "make_strategy", "describe", "global_batch_size",
           "per_replica_batch_size", "distributed_loader", "local_batches", "train_steps", "weights_digest",
           "tf_config", "multi_worker_strategy", "service_problems", "through_service", "local_service",
           "SERVICE_TIMEOUT_S", "ServiceTimeoutError"]


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_LAZY])
