"""Training across machines: ``tf_config`` / ``multi_worker_strategy`` (the cluster each worker
joins), ``train_steps`` (a training loop that works under every strategy) and ``run_multiworker``
(one worker of ``python -m kit multiworker``)."""

from __future__ import annotations

import hashlib
import json
import os
from typing import Callable, Sequence

import keras
import numpy as np
import tensorflow as tf

from kit.distribute.servers import parse_address
from kit.distribute.strategy import global_batch_size


def tf_config(workers: Sequence[str], index: int) -> dict:
    """The ``TF_CONFIG`` of worker ``index`` in a cluster of ``workers`` (``host:port`` each; worker 0
    is the chief). Set it as ``json.dumps(...)`` before creating the strategy, on every machine."""
    workers = [str(w).strip() for w in (workers.split(",") if isinstance(workers, str) else workers)]
    if not workers:
        raise ValueError("workers must list at least one host:port")
    for w in workers:
        parse_address(w)
    if len(set(workers)) != len(workers):
        raise ValueError(f"workers lists an address twice: {workers}")
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < len(workers):
        raise ValueError(f"index must be in 0..{len(workers) - 1}, got {index!r}")
    return {"cluster": {"worker": workers}, "task": {"type": "worker", "index": int(index)}}


def multi_worker_strategy(workers: Sequence[str], index: int):
    """Sets ``TF_CONFIG`` for this worker and returns a ``MultiWorkerMirroredStrategy``. Call it first
    thing in the process, on every worker; it waits until all the workers have started."""
    os.environ["TF_CONFIG"] = json.dumps(tf_config(workers, index))
    try:
        return tf.distribute.MultiWorkerMirroredStrategy()
    except RuntimeError as e:
        raise RuntimeError(f"MultiWorkerMirroredStrategy must be created before any other TensorFlow "
                           f"work in the process ({e})") from None


def run_multiworker(*, workers: Sequence[str], index: int, make_data: Callable, make_model: Callable,
                    per_replica_batch: int = 8, steps: int = 3, learning_rate: float = 0.05) -> dict:
    """One worker of a multi-worker run: a few steps of a model on its shard of the data (the
    gradients all-reduced, so all workers end with the same weights). Returns ``{"worker",
    "replicas", "global_batch", "losses", "digest", "weights"}``.

    Args:
        workers: ``host:port`` of every worker, the same list on each.
        index: this worker's position in ``workers``.
        make_data: ``make_data(strategy)`` -> the distributed dataset
            (``kit.distribute.distributed_loader(strategy, ..., pattern="per_replica")``).
        make_model: ``make_model()`` -> a Keras model of logits, built under the strategy's scope.
        per_replica_batch: for the report (the data sets the batches).
        steps: training steps.
        learning_rate: SGD's.
    """
    strategy = multi_worker_strategy(workers, index)
    data = make_data(strategy)
    with strategy.scope():
        model = make_model()
        optimizer = keras.optimizers.SGD(learning_rate)
    losses = train_steps(strategy, model, data, steps=steps, optimizer=optimizer)
    return {"worker": index, "replicas": strategy.num_replicas_in_sync,
            "global_batch": global_batch_size(per_replica_batch, strategy), "losses": losses,
            "digest": weights_digest(model), "weights": [w.tolist() for w in model.get_weights()]}


def train_steps(strategy, model, data, *, steps: int | None = None, optimizer=None, loss=None) -> list[float]:
    """A plain custom training loop: ``steps`` steps of ``model`` on distributed ``data``; returns the
    global mean loss of each step.

    Works with every strategy, ``MultiWorkerMirroredStrategy`` included (where Keras 3's
    ``model.fit`` fails: keras-team/keras#20585). Each replica averages its losses over the *global*
    batch and the gradients are summed, so a step on N replicas equals one on the global batch.

    Args:
        strategy: the strategy ``model`` was built under.
        model: a Keras model (variables made under ``strategy.scope()``).
        data: a distributed dataset of ``(x, y)`` (``distributed_loader``).
        steps: how many steps; None runs to the end of ``data``.
        optimizer: made under the scope; default ``model.optimizer``.
        loss: a per-example loss ``loss(y, y_pred)``; default sparse categorical
            cross-entropy on logits.
    """
    optimizer = optimizer or model.optimizer
    if optimizer is None:
        raise ValueError("no optimizer: pass optimizer= or compile the model first")
    if loss is None:
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)

    def replica_step(x, y):
        with tf.GradientTape() as tape:
            per_example = loss(y, model(x, training=True))
            mean = tf.nn.compute_average_loss(per_example)  # over the global batch
        grads = tape.gradient(mean, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return mean

    @tf.function
    def step(batch):
        per_replica = strategy.run(replica_step, args=batch)
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    losses = []
    for i, batch in enumerate(data):
        if steps is not None and i >= steps:
            break
        losses.append(float(step(batch)))
    if steps is not None and len(losses) < steps:
        raise ValueError(f"data ended after {len(losses)} of {steps} steps")
    return losses


def weights_digest(model) -> str:
    """A short hash of a model's weights (equal weights, equal digest)."""
    h = hashlib.sha256()
    for w in model.get_weights():
        h.update(np.ascontiguousarray(w, dtype=np.float32).tobytes())
    return h.hexdigest()[:16]
