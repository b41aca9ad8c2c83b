"""keras-io "Text classification from scratch" (IMDB reviews as text files in pos/neg folders, integer
token sequences of fixed length, an embedding model), with the example's ``TextVectorization`` replaced
by a hand-written Python tokenizer (lower-case, strip punctuation, split, look up in a vocabulary dict,
pad) called through ``tf.py_function`` in a map that already runs in parallel
(``num_parallel_calls=AUTOTUNE``). Planted: that Python, which holds the GIL, so the parallel map's
threads take turns (the fix: the same tokenization in graph ops, ``TextVectorization`` on whole batches)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from doctor_corpus._common import done, mark

from doctor_corpus_heldout._heldout import COMMON, LEANING, compiled, sentence_texts

SOURCE = ("keras-io 'Text classification from scratch' (IMDB text files, TextVectorization, embedding model): "
          "https://keras.io/examples/nlp/text_classification_from_scratch/")
DOMAIN = "text"
PLANTED = ("python_in_pipeline",)
TOLERATED = ("no_cache",)  # the token sequences fit in memory: a cache after the tokenizer also removes it
VERDICT = "input-bound"
EXACT = True

NAME = "text_scratch"
N, WORDS, LENGTH, BATCH = 2000, 160, 200, 32
VOCAB = ["", "[UNK]"] + sorted(set(COMMON) | {w for ws in LEANING[:2] for w in ws})
_INDEX = {w: i for i, w in enumerate(VOCAB)}
_PUNCT = re.compile(r"[^\w\s]")


def make_data(folder) -> None:
    if done(folder, NAME, n=N, words=WORDS):
        return
    texts, labels = sentence_texts(N, WORDS, 2, seed=61)
    for i, (text, k) in enumerate(zip(texts, labels)):
        path = Path(folder) / NAME / ("pos" if k == 0 else "neg") / f"{i:05d}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    mark(folder, NAME, n=N, words=WORDS)


def python_tokenize(text) -> np.ndarray:
    """The hand-written tokenizer: ids of the first LENGTH words, 0-padded (1 for unknown words)."""
    words = _PUNCT.sub("", text.numpy().decode().lower()).split()[:LENGTH]
    ids = [_INDEX.get(w, 1) for w in words]
    return np.asarray(ids + [0] * (LENGTH - len(ids)), np.int64)


def _texts(folder):
    import tensorflow as tf

    files = sorted(str(p) for p in (Path(folder) / NAME).glob("*/*.txt"))
    labels = [int(Path(f).parent.name == "neg") for f in files]
    return tf.data.Dataset.from_tensor_slices((files, labels)).map(
        lambda f, y: (tf.io.read_file(f), y), num_parallel_calls=tf.data.AUTOTUNE)


def slow(folder):
    import tensorflow as tf

    def tokenize(text, label):
        ids = tf.py_function(python_tokenize, [text], tf.int64)
        ids.set_shape([LENGTH])
        return ids, label

    return _texts(folder).map(tokenize, num_parallel_calls=tf.data.AUTOTUNE).batch(BATCH).prefetch(tf.data.AUTOTUNE)


def fixed(folder, code=None):
    import keras
    import tensorflow as tf

    vectorize = keras.layers.TextVectorization(vocabulary=VOCAB[2:], output_sequence_length=LENGTH,
                                               standardize="lower_and_strip_punctuation")
    return _texts(folder).batch(BATCH).map(lambda t, y: (tf.cast(vectorize(t), tf.int64), y),
                                           num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def model():
    import keras

    keras.utils.set_random_seed(0)
    return compiled(keras.Sequential([keras.Input((LENGTH,), dtype="int64"), keras.layers.Embedding(len(VOCAB), 16),
                                      keras.layers.GlobalAveragePooling1D(), keras.layers.Dense(2)]))
