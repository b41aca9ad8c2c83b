"""keras-io "The Functional API", its multi-input, multi-output example (issue tickets: a title and a
body as token ids, the tags as a multi-hot vector; predict a priority and a department), fed from an
array of tickets whose tags are stored as text ("t3 t17 t5") and turned into the multi-hot vector per
example by Python in a ``tf.numpy_function`` (stateful to TensorFlow, so the map runs serially).
Planted: that per-example Python (the fix: ``batch`` first, then the tags split and multi-hot encoded in
graph ops, ``tf.strings`` + ``StringLookup``). A parallel map alone helps little, its Python holding the
GIL: ``serial_map`` is tolerated, not planted. The recurrent layers are pooled embeddings here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from doctor_corpus._common import done, mark

from doctor_corpus_heldout._heldout import compiled

SOURCE = ("keras-io 'The Functional API' (multi-input, multi-output ticket model: title, body, tags -> "
          "priority, department): https://keras.io/guides/functional_api/")
DOMAIN = "multi-input or subclassed"
PLANTED = ("python_in_pipeline",)
TOLERATED = ("serial_map", "no_cache")
VERDICT = "input-bound"
EXACT = True

NAME = "multi_input"
N, WORDS, TITLE, BODY, TAGS, DEPARTMENTS, BATCH = 8192, 2000, 10, 100, 12, 4, 64


def make_data(folder) -> None:
    if done(folder, NAME, n=N):
        return
    rng = np.random.default_rng(81)
    tags = [" ".join(f"t{k}" for k in sorted(set(rng.integers(0, TAGS, rng.integers(1, 5)).tolist())))
            for _ in range(N)]
    (Path(folder) / NAME).mkdir(parents=True, exist_ok=True)
    np.savez(Path(folder) / NAME / "tickets.npz", title=rng.integers(1, WORDS, (N, TITLE)),
             body=rng.integers(1, WORDS, (N, BODY)), tags=np.asarray(tags),
             priority=rng.uniform(0, 1, N).astype(np.float32), department=rng.integers(0, DEPARTMENTS, N))
    mark(folder, NAME, n=N)


def _tickets(folder):
    import tensorflow as tf

    d = np.load(Path(folder) / NAME / "tickets.npz")
    return tf.data.Dataset.from_tensor_slices(
        ({"title": d["title"], "body": d["body"], "tags": d["tags"]},
         {"priority": d["priority"], "department": d["department"]}))


def multi_hot(text) -> np.ndarray:
    """The tags' text ("t3 t17") as a multi-hot float vector, in Python."""
    out = np.zeros(TAGS, np.float32)
    for tag in text.decode().split():
        out[int(tag[1:])] = 1.0
    return out


def slow(folder):
    import tensorflow as tf

    def encode(x, y):
        tags = tf.numpy_function(multi_hot, [x["tags"]], tf.float32)
        tags.set_shape([TAGS])
        return {"title": x["title"], "body": x["body"], "tags": tags}, y

    return _tickets(folder).map(encode).batch(BATCH).prefetch(tf.data.AUTOTUNE)


def fixed(folder, code=None):
    import keras
    import tensorflow as tf

    lookup = keras.layers.StringLookup(vocabulary=[f"t{k}" for k in range(TAGS)], output_mode="multi_hot",
                                       num_oov_indices=0)

    def encode(x, y):
        tags = tf.cast(lookup(tf.strings.split(x["tags"])), tf.float32)
        return {"title": x["title"], "body": x["body"], "tags": tags}, y

    return _tickets(folder).batch(BATCH).map(encode, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def model():
    import keras

    keras.utils.set_random_seed(0)
    title = keras.Input((TITLE,), name="title", dtype="int64")
    body = keras.Input((BODY,), name="body", dtype="int64")
    tags = keras.Input((TAGS,), name="tags")
    t = keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(WORDS, 16)(title))
    b = keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(WORDS, 16)(body))
    x = keras.layers.concatenate([t, b, tags])
    priority = keras.layers.Dense(1, name="priority")(x)
    department = keras.layers.Dense(DEPARTMENTS, name="department")(x)
    m = keras.Model({"title": title, "body": body, "tags": tags}, {"priority": priority, "department": department})
    return compiled(m, loss={"priority": "mse",
                             "department": keras.losses.SparseCategoricalCrossentropy(from_logits=True)})
