"""The TensorFlow tutorial "Simple audio recognition" as written: a folder of one-second WAV files per
command, loaded with ``keras.utils.audio_dataset_from_directory``, squeezed, turned into spectrograms
(STFT) on whole batches, then ``cache().shuffle().prefetch()``; its model starts with a ``Resizing`` and
an adapted ``Normalization`` (non-trainable, but weightless preprocessing: no backbone to freeze) and
trains two convolutions and a wide dense layer. A control: nothing planted; the model's step is the
limit."""

from __future__ import annotations

from pathlib import Path

from doctor_corpus._common import CLASSES, done, mark

from doctor_corpus_heldout._heldout import RATE, compiled, sine_wav

SOURCE = ("TensorFlow tutorial 'Simple audio recognition: Recognizing keywords' (audio_dataset_from_directory, "
          "STFT spectrograms, cache/shuffle/prefetch, Resizing + Normalization model): "
          "https://www.tensorflow.org/tutorials/audio/simple_audio")
DOMAIN = "audio"
PLANTED: tuple = ()
TOLERATED: tuple = ()
VERDICT = "compute-bound"
EXACT = False  # the files are shuffled each epoch (as the tutorial's loader does): the same examples

NAME = "simple_audio"
N, BATCH = 256, 64
FRAMES, BINS = 124, 129  # the tutorial's STFT (frame 255, step 128) of 16,000 samples


def make_data(folder) -> None:
    if done(folder, NAME, n=N):
        return
    for i in range(N):
        sine_wav(Path(folder) / NAME / f"command_{i % CLASSES}" / f"clip_{i:04d}.wav", i % CLASSES, seed=100 + i)
    mark(folder, NAME, n=N)


def get_spectrogram(waveform):
    import tensorflow as tf

    spectrogram = tf.abs(tf.signal.stft(waveform, frame_length=255, frame_step=128))
    return spectrogram[..., tf.newaxis]


def slow(folder):
    import keras
    import tensorflow as tf

    ds = keras.utils.audio_dataset_from_directory(str(Path(folder) / NAME), batch_size=BATCH, seed=0,
                                                  output_sequence_length=RATE, verbose=False)
    ds = ds.map(lambda audio, label: (tf.squeeze(audio, axis=-1), label), tf.data.AUTOTUNE)
    ds = ds.map(lambda audio, label: (get_spectrogram(audio), label), num_parallel_calls=tf.data.AUTOTUNE)
    return ds.cache().shuffle(1000).prefetch(tf.data.AUTOTUNE)


def fixed(folder, code=None):
    return slow(folder)


def model():
    import keras
    import numpy as np

    keras.utils.set_random_seed(0)
    norm = keras.layers.Normalization()
    norm.adapt(np.random.default_rng(0).gamma(1.0, 1.0, (64, FRAMES, BINS, 1)).astype("float32"))
    return compiled(keras.Sequential([
        keras.Input((FRAMES, BINS, 1)),
        keras.layers.Resizing(32, 32),
        norm,
        keras.layers.Conv2D(32, 3, activation="relu"),
        keras.layers.Conv2D(64, 3, activation="relu"),
        keras.layers.MaxPooling2D(),
        keras.layers.Dropout(0.25),
        keras.layers.Flatten(),
        keras.layers.Dense(128, activation="relu"),
        keras.layers.Dropout(0.5),
        keras.layers.Dense(CLASSES),
    ]))
