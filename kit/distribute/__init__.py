"""Training on several devices and several machines, with TensorFlow's own engines: ``strategy``
(``make_strategy``: GPUs, or the CPU split into logical devices), ``input`` (``distributed_loader``,
both input patterns), ``service`` (tf.data service), ``multiworker`` (``MultiWorkerMirroredStrategy``,
``train_steps``), ``commands`` (``python -m kit service``); ``ceiling`` (the batch arithmetic and the input
ceiling: notebook 04).

Importing this package imports no case and no TensorFlow: the modules that import it at their top
load on the first use of one of their names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kit import lazy_face
from kit.distribute.ceiling import batch_arithmetic, ceiling_line, ceiling_summary, epoch_floor_s
from kit.distribute.local_servers import local_service
from kit.distribute.service import ServiceTimeoutError, service_problems

if TYPE_CHECKING:
    from kit.distribute.input import PATTERNS, distributed_loader, local_batches
    from kit.distribute.multiworker import multi_worker_strategy, tf_config, train_steps, weights_digest
    from kit.distribute.strategy import (
        SIMULATED_REPLICAS,
        describe,
        global_batch_size,
        make_strategy,
        per_replica_batch_size,
    )

#: The names of the modules that import TensorFlow (and Keras) at their top: loaded on first use.
_LAZY = {
    **dict.fromkeys(["PATTERNS", "distributed_loader", "local_batches"], "kit.distribute.input"),
    **dict.fromkeys(["multi_worker_strategy", "tf_config", "train_steps", "weights_digest"], "kit.distribute.multiworker"),
    **dict.fromkeys(["SIMULATED_REPLICAS", "describe", "global_batch_size", "make_strategy", "per_replica_batch_size"],
                    "kit.distribute.strategy"),
}

__all__ = ["SIMULATED_REPLICAS", "PATTERNS", "make_strategy", "describe", "global_batch_size",
           "per_replica_batch_size", "distributed_loader", "local_batches", "train_steps", "weights_digest",
           "tf_config", "multi_worker_strategy", "service_problems", "local_service", "ServiceTimeoutError",
           "batch_arithmetic", "epoch_floor_s", "ceiling_line", "ceiling_summary"]


__getattr__, __dir__ = lazy_face(__name__, _LAZY)
