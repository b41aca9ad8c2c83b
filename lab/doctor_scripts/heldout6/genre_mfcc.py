"""Music genre classification (model A), training: ml_a_training.py of top-n-genre-classification, a standalone script
that loads clips picked at random from the genre folders, computes their MFCCs with librosa into NumPy arrays, then
fits a CNN on the arrays (``model.fit(x_train, y_train, epochs=75, steps_per_epoch=100, validation_data=...)``).

Source: https://github.com/jaskee1/top-n-genre-classification at fc5aad938828742bee8d95bbd492fd0adaf1670d
(genre_muse/ml/a/ml_a_training.py). Re-written here in the source's structure and order, not copied:
get_test_and_validation_data picks a genre folder and a file in it at random (with replacement) until 6397 clips are
loaded, each ``librosa.load(file_path, offset=5, duration=20)`` (resampled to 22050 Hz) and
``librosa.feature.mfcc(y=y, sr=sr, hop_length=1024, n_mfcc=20)``, then every validation file the same way; train_model
adds a channel axis and builds BatchNormalization, Conv2D 64 7x7, MaxPooling 2, Conv2D 128, 128 3x3, Dropout 0.5,
MaxPooling 2, Conv2D 256, 256 3x3, MaxPooling 2, Flatten, Dense 128, Dropout, Dense 64, Dropout, Dense 8 softmax,
compiled with SGD(0.01) and sparse categorical crossentropy, fitted ``model.fit(x_train, y_train, epochs=75,
steps_per_epoch=100, validation_data=(x_valid, y_valid))`` (batch size 32 by default: half the clips an epoch).

Changed: data paths (``$DOCTOR_SCRIPTS_DATA/genre_mfcc/fma_small_split_wav/``: 96 training and 32 validation generated
4 s clips at 22050 Hz, for FMA small's 30 s clips); 640 random picks for 6397; offset 1 and duration 3 for 5 and 20
(4 s clips); steps_per_epoch 10 for 100 (still half the 640 clips an epoch); epochs 3 for 75; the CNN's filters a
quarter of the source's (16, 32, 32, 64, 64 for 64, 128, 128, 256, 256) and its Dense layers 32 and 16 for 128 and 64;
librosa (not installed here) re-written with NumPy: load as a 16-bit WAV read by ``wave`` from the offset for the
duration (already 22050 Hz: no resampling), mfcc as librosa computes it (centred 2048-point frames every 1024 samples,
zero padded, Hann window, power spectrum, 128 Slaney mel filters, power_to_db with top_db 80, DCT-II ortho, 20 kept);
the per-file progress prints left out; ``input_shape=`` on
BatchNormalization -> an Input layer first (Keras 3); ``model.save("model_a.h5")`` after the fit left out (not part of the fit).
"""

import datetime
import os
import random
import wave

import numpy as np
import tensorflow as tf
from tensorflow import keras

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "genre_mfcc")
TRAINING_FILE_PATH = os.path.join(DATA, 'fma_small_split_wav/fma_train/')
VALIDATION_FILE_PATH = os.path.join(DATA, 'fma_small_split_wav/fma_validate/')


# ----------------------------------------------------------------------------- librosa (load, feature.mfcc), in NumPy
def librosa_load(path, offset=0.0, duration=None, sr=22050):
    with wave.open(path, "rb") as w:
        assert w.getframerate() == sr
        w.setpos(int(offset * sr))
        n = w.getnframes() - int(offset * sr) if duration is None else int(duration * sr)
        y = np.frombuffer(w.readframes(n), "<i2").astype(np.float32) / 32768.0
    return y, sr


def _mel_filters(sr, n_fft, n_mels=128):
    def hz_to_mel(f):  # Slaney
        f = np.asarray(f, float)
        return np.where(f >= 1000, 15 + 27 * np.log(np.maximum(f, 1e-10) / 1000) / np.log(6.4), 3 * f / 200)

    def mel_to_hz(m):
        return np.where(m >= 15, 1000 * np.exp(np.log(6.4) / 27 * (m - 15)), 200 * m / 3)

    fftfreqs = np.linspace(0, sr / 2, 1 + n_fft // 2)
    hz = mel_to_hz(np.linspace(hz_to_mel(0), hz_to_mel(sr / 2), n_mels + 2))
    fdiff, ramps = np.diff(hz), hz[:, None] - fftfreqs[None, :]
    weights = np.maximum(0, np.minimum(-ramps[:-2] / fdiff[:-1, None], ramps[2:] / fdiff[1:, None]))
    return weights * (2.0 / (hz[2:n_mels + 2] - hz[:n_mels]))[:, None]


def librosa_mfcc(y, sr=22050, hop_length=1024, n_mfcc=20, n_fft=2048, n_mels=128):
    padded = np.pad(y, n_fft // 2)
    frames = np.lib.stride_tricks.sliding_window_view(padded, n_fft)[::hop_length]
    power = np.abs(np.fft.rfft(frames * np.hanning(n_fft + 1)[:-1], n_fft)) ** 2
    mel = _mel_filters(sr, n_fft, n_mels) @ power.T
    db = 10 * np.log10(np.maximum(mel, 1e-10))
    db = np.maximum(db, db.max() - 80.0)
    k = np.arange(n_mels)
    dct = np.sqrt(2.0 / n_mels) * np.cos(np.pi * np.arange(n_mfcc)[:, None] * (2 * k[None, :] + 1) / (2 * n_mels))
    dct[0] /= np.sqrt(2)
    return (dct @ db).astype(np.float32)


# ----------------------------------------------------------------------------- ml_a_training.py
def get_test_and_validation_data():
    """
    Gets the test and validation data
    :return: the test and validation data
    """
    x_train = []
    y_train = []
    x_valid = []
    y_valid = []

    genres = ["electronic", "experimental", "folk", "hiphop", "instrumental", "international", "pop", "rock"]

    start = datetime.datetime.now()
    counter = 0

    while counter < 640:
        folder = random.choice(os.listdir(TRAINING_FILE_PATH))
        filename = random.choice(os.listdir(TRAINING_FILE_PATH + folder))

        try:
            file_path = TRAINING_FILE_PATH + folder + '/' + filename
            y, sr = librosa_load(file_path, offset=1, duration=3)

            mfcc = librosa_mfcc(y=y, sr=sr, hop_length=1024, n_mfcc=20)

            x_train.append(mfcc)
            y_train.append(genres.index(folder))

            counter += 1
        except Exception:
            print("exception on " + filename)

    for folder in os.listdir(VALIDATION_FILE_PATH):
        for filename in os.listdir(VALIDATION_FILE_PATH + folder):
            try:
                file_path = VALIDATION_FILE_PATH + folder + '/' + filename
                y, sr = librosa_load(file_path, offset=1, duration=3)

                mfcc = librosa_mfcc(y=y, sr=sr, hop_length=1024, n_mfcc=20)

                x_valid.append(mfcc)
                y_valid.append(genres.index(folder))
            except Exception:
                print("exception on " + filename)

    end = datetime.datetime.now()
    elapsed_time = end - start

    print("data parsing and preparation complete in " + str(elapsed_time))

    x_train = np.asarray(x_train)
    y_train = np.asarray(y_train)
    x_valid = np.asarray(x_valid)
    y_valid = np.asarray(y_valid)

    return x_train, y_train, x_valid, y_valid


def train_model(x_train, y_train, x_valid, y_valid):
    """
    trains the CNN and saves the model file
    """

    # add fourth dimension
    x_train = x_train.reshape(len(x_train), len(x_train[0]), len(x_train[0][0]), 1)
    x_valid = x_valid.reshape(len(x_valid), len(x_valid[0]), len(x_valid[0][0]), 1)

    start = datetime.datetime.now()

    model = keras.models.Sequential([
        keras.layers.Input(shape=(len(x_train[0]), len(x_train[0][0]), 1)),
        keras.layers.BatchNormalization(),
        keras.layers.Conv2D(16, 7, activation="relu", padding="same"),  # CNN layers
        keras.layers.MaxPooling2D(2),
        keras.layers.Conv2D(32, 3, activation="relu", padding="same"),
        keras.layers.Conv2D(32, 3, activation="relu", padding="same"),
        keras.layers.Dropout(0.5),
        keras.layers.MaxPooling2D(2),
        keras.layers.Conv2D(64, 3, activation="relu", padding="same"),
        keras.layers.Conv2D(64, 3, activation="relu", padding="same"),
        keras.layers.MaxPooling2D(2),
        keras.layers.Flatten(),  # ANN layers
        keras.layers.Dense(32, activation="relu"),
        keras.layers.Dropout(0.5),
        keras.layers.Dense(16, activation="relu"),
        keras.layers.Dropout(0.5),
        # use softmax to normalize the probabilities
        # use 8 for 8 categories
        keras.layers.Dense(8, activation="softmax"),
    ])

    end = datetime.datetime.now()
    print("model setup complete in " + str(end - start))

    start = datetime.datetime.now()

    optimizer = tf.keras.optimizers.SGD(
        learning_rate=0.01, momentum=0.0, nesterov=False, name='SGD'
    )

    model.compile(loss="sparse_categorical_crossentropy", optimizer=optimizer, metrics=["accuracy"],)

    end = datetime.datetime.now()
    print("model compile complete " + str(end - start))

    start = datetime.datetime.now()

    model.fit(x_train, y_train, epochs=3, steps_per_epoch=10,
              validation_data=(x_valid, y_valid))

    end = datetime.datetime.now()
    print("model fit complete " + str(end - start))


if __name__ == '__main__':
    x_train, y_train, x_valid, y_valid = get_test_and_validation_data()
    train_model(x_train, y_train, x_valid, y_valid)
