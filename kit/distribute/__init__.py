"""Training on several devices and several machines, with TensorFlow's own engines.

* ``kit.distribute.strategy``: ``make_strategy(replicas)``, a ``MirroredStrategy`` over the
  visible GPUs, or over the CPU split into logical devices (a simulation);
* ``kit.distribute.input``: both input patterns (``distributed_loader``), from any case's
  loader factory;
* ``kit.distribute.service``: tf.data service (``through_service``, the servers,
  ``local_service``);
* ``kit.distribute.multiworker``: ``MultiWorkerMirroredStrategy`` and ``train_steps``;
* ``kit.distribute.commands``: ``python -m kit service dispatcher|worker``.

This package imports no case, and TensorFlow only inside functions: importing it (the
CLI does, to register its commands) initialises nothing.
"""

from kit.distribute.input import PATTERNS, distributed_loader, local_batches, shard_rows
from kit.distribute.multiworker import multi_worker_strategy, run_multiworker, tf_config, train_steps, weights_digest
from kit.distribute.service import (
                                    DISPATCHER_TIMEOUT_S,
                                    SERVICE_TIMEOUT_S,
                                    ServiceTimeoutError,
                                    check_dispatcher,
                                    free_port,
                                    local_service,
                                    parse_address,
                                    python_ops,
                                    run_dispatcher,
                                    run_worker,
                                    service_problems,
                                    through_service,
)
from kit.distribute.strategy import (
                                    SIMULATED_REPLICAS,
                                    describe,
                                    global_batch_size,
                                    is_simulated,
                                    make_strategy,
                                    per_replica_batch_size,
                                    split_cpu,
)

__all__ = ["SIMULATED_REPLICAS", "PATTERNS", "make_strategy", "split_cpu", "describe", "is_simulated",
           "global_batch_size", "per_replica_batch_size", "shard_rows", "distributed_loader", "local_batches",
           "train_steps", "weights_digest", "tf_config", "multi_worker_strategy", "run_multiworker",
           "parse_address", "python_ops", "service_problems", "through_service", "free_port", "run_dispatcher",
           "run_worker", "local_service", "check_dispatcher", "DISPATCHER_TIMEOUT_S", "SERVICE_TIMEOUT_S",
           "ServiceTimeoutError"]
