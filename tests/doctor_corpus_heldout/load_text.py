"""The TensorFlow tutorial "Load text" (Stack Overflow questions, four languages as classes, a fixed
train/validation split, ``TextVectorization``, a convolutional model), its pipeline: the file list
shuffled once with ``reshuffle_each_iteration=False`` so that the split stays fixed, the training part
read and cached, reshuffled after the cache every epoch, batched and vectorised on whole batches. A
control: the shuffle before the cache is the split's, not the epochs' order (a reshuffle follows the
cache); the model's convolutions are the limit."""

from __future__ import annotations

from pathlib import Path

from doctor_corpus._common import CLASSES, done, mark

from doctor_corpus_heldout._heldout import COMMON, LEANING, compiled, sentence_texts

SOURCE = ("TensorFlow tutorial 'Load text' (Stack Overflow questions, fixed split, TextVectorization, Conv1D "
          "model): https://www.tensorflow.org/tutorials/load_data/text")
DOMAIN = "text"
PLANTED: tuple = ()
TOLERATED: tuple = ()
VERDICT = "compute-bound"
EXACT = False  # reshuffled each epoch: the same examples in another order

NAME = "load_text"
N, WORDS, LENGTH, BATCH, TRAIN = 1500, 120, 250, 64, 1200
LANGUAGES = ("csharp", "java", "javascript", "python")
VOCAB = sorted(set(COMMON) | {w for ws in LEANING for w in ws})


def make_data(folder) -> None:
    if done(folder, NAME, n=N, words=WORDS):
        return
    texts, labels = sentence_texts(N, WORDS, CLASSES, seed=71)
    for i, (text, k) in enumerate(zip(texts, labels)):
        path = Path(folder) / NAME / LANGUAGES[k] / f"{i:05d}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    mark(folder, NAME, n=N, words=WORDS)


def slow(folder):
    import keras
    import tensorflow as tf

    files = sorted(str(p) for p in (Path(folder) / NAME).glob("*/*.txt"))
    labels = [LANGUAGES.index(Path(f).parent.name) for f in files]
    ds = tf.data.Dataset.from_tensor_slices((files, labels)).shuffle(N, seed=42, reshuffle_each_iteration=False)
    train = ds.take(TRAIN).map(lambda f, y: (tf.io.read_file(f), y), num_parallel_calls=tf.data.AUTOTUNE)
    vectorize = keras.layers.TextVectorization(vocabulary=VOCAB, output_sequence_length=LENGTH)
    train = train.cache().shuffle(TRAIN).batch(BATCH)
    return train.map(lambda t, y: (vectorize(t), y), num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def fixed(folder, code=None):
    return slow(folder)


def model():
    import keras

    keras.utils.set_random_seed(0)
    return compiled(keras.Sequential([
        keras.Input((LENGTH,), dtype="int64"), keras.layers.Embedding(len(VOCAB) + 2, 64),
        keras.layers.Conv1D(128, 5, activation="relu"), keras.layers.Conv1D(128, 5, activation="relu"),
        keras.layers.GlobalMaxPooling1D(), keras.layers.Dense(CLASSES)]))
