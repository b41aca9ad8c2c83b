"""Training on several devices and several machines, with TensorFlow's own engines.

* ``kit.distribute.strategy``: ``make_strategy(replicas)``, a ``MirroredStrategy`` over the
  visible GPUs, or over the CPU split into logical devices (a simulation);
* ``kit.distribute.input``: both input patterns (``distributed_loader``), from any case's
  loader factory;
* ``kit.distribute.service``: tf.data service (``through_service``, the servers,
  ``local_service``);
* ``kit.distribute.multiworker``: ``MultiWorkerMirroredStrategy`` and ``train_steps``;
* ``kit.distribute.commands``: ``python -m kit service dispatcher|worker``.

This package imports no case and no TensorFlow: ``strategy``, ``input`` and ``multiworker``
import it at their top and load on the first use of one of their names; ``service`` imports it
only inside its functions, as ``kit.cases`` and the CLI (to register its commands) import it.
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
