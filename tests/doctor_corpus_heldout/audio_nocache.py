"""The TensorFlow "Simple audio recognition" pipeline written per example, as many users adapt it:
each WAV read and decoded (``tf.audio.decode_wav``), its spectrogram computed (STFT, then a log-mel
projection) in a parallel map, batched and prefetched, under a light classifier. Planted: the
tutorial's ``cache()`` left out, so every epoch decodes every WAV and recomputes every spectrogram
although they fit in memory (the fix: ``cache()`` after the spectrogram map)."""

from __future__ import annotations

from pathlib import Path

from doctor_corpus._common import CLASSES, done, mark

from doctor_corpus_heldout._heldout import RATE, compiled, sine_wav

SOURCE = ("TensorFlow tutorial 'Simple audio recognition' (decode_wav, STFT spectrogram map; its cache() left "
          "out): https://www.tensorflow.org/tutorials/audio/simple_audio")
DOMAIN = "audio"
PLANTED = ("no_cache",)
TOLERATED: tuple = ()
VERDICT = "input-bound"
EXACT = True

NAME = "audio_nocache"
N, BATCH, MELS = 384, 32, 64
FRAMES = 1 + (RATE - 512) // 128  # 122 frames of 512 samples every 128


def make_data(folder) -> None:
    if done(folder, NAME, n=N):
        return
    for i in range(N):
        sine_wav(Path(folder) / NAME / f"command_{i % CLASSES}" / f"clip_{i:04d}.wav", i % CLASSES, seed=500 + i)
    mark(folder, NAME, n=N)


def _pipeline(folder, *, cache: bool):
    import tensorflow as tf

    root = Path(folder) / NAME
    files = sorted(str(p) for p in root.glob("command_*/*.wav"))
    labels = [int(Path(f).parent.name.split("_")[1]) for f in files]
    mel = tf.signal.linear_to_mel_weight_matrix(MELS, 257, RATE, 40.0, 7600.0)

    def load(path, label):
        audio, _ = tf.audio.decode_wav(tf.io.read_file(path), desired_channels=1)
        audio = tf.squeeze(audio, axis=-1)
        spec = tf.abs(tf.signal.stft(audio, frame_length=512, frame_step=128))
        logmel = tf.math.log(tf.tensordot(spec, mel, 1) + 1e-6)
        return logmel[..., tf.newaxis], label

    ds = tf.data.Dataset.from_tensor_slices((files, labels)).map(load, num_parallel_calls=tf.data.AUTOTUNE)
    if cache:
        ds = ds.cache()
    return ds.batch(BATCH).prefetch(tf.data.AUTOTUNE)


def slow(folder):
    return _pipeline(folder, cache=False)


def fixed(folder, code=None):
    return _pipeline(folder, cache=True)


def model():
    import keras

    keras.utils.set_random_seed(0)
    return compiled(keras.Sequential([
        keras.Input((FRAMES, MELS, 1)),
        keras.layers.AveragePooling2D(4),
        keras.layers.Flatten(),
        keras.layers.Dense(CLASSES),
    ]))
