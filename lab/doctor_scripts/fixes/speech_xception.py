"""FIXED COPY (the one fix: the mel filterbank built once and reused: speechpy's lmfe rebuilt it, a Python loop over
40 triangular filters, for every clip of every batch; reading, augmenting and the features of each clip still per batch).

Speech-command recognition (Kaggle TensorFlow Speech Recognition Challenge), training: train.py's train_model of
3v1l91l/speech, an Xception-style CNN on 99x40 log mel filterbank energies fitted on batch_generator_paths, a
thread-safe Python generator that for every batch draws random clips (70 % of the ten command words, 30 % other
words), reads each WAV (``scipy.io.wavfile.read``), pads and standardises it, augments it at random (time shift, mixed
background silence, speed change, gain) and computes its log mel filterbank energies (``speechpy.feature.lmfe``).

Source: https://github.com/3v1l91l/speech at 3e051bf80d1868814b6616ea1c4e11d2c7195ed6 (src/train.py,
src/generator.py, src/lib.py, src/model.py). Re-written here in the source's structure and order, not copied:
get_data lists ../input/train/audio/<word>/*.wav and ../input/train/valid/<word>/*.wav into DataFrames (path, word;
_background_noise_ dropped), takes the 'silence' clips' paths out, one-hot encodes the 30 words with
pd.get_dummies; train_model loads 500 random silence clips with load_wav_by_path (wavfile.read, left zero-padded or
cut to 16000 samples, standardised to zero mean and unit variance, float32), builds get_model(classes=30) (an
Xception entry flow on (99, 40, 1): Conv2D 32 and 64, three residual blocks of SeparableConv2D 128/256/728 with
max-pooling, three middle-flow blocks of 728, global average pooling, Dense softmax; Adam(lr=0.005), categorical
cross-entropy, accuracy) and calls ``model.fit_generator(generator=train_gen, epochs=100, steps_per_epoch=len(y_train)
// BATCH_SIZE // 4, validation_data=valid_gen, validation_steps=len(y_valid) // BATCH_SIZE // 4, callbacks=
get_callbacks('model'), workers=4, use_multiprocessing=False)`` with BATCH_SIZE 128, the callbacks ModelCheckpoint
(best val_acc), EarlyStopping (val_acc, patience 5), ReduceLROnPlateau (val_acc, factor 0.5, patience 1), TensorBoard
and LearningRateTracker (prints the learning rate with decay each epoch); both generators are batch_generator_paths
(augmentation by augment_data, features by log_specgram: ``speechpy.feature.lmfe(audio, 16000, frame_length=0.020,
frame_stride=0.010, num_filters=40, fft_length=256, low_frequency=0, high_frequency=5500)``).

Changed: data paths (``$DOCTOR_SCRIPTS_DATA/speech_xception/input/train/``: 36 training and 5 validation generated
1 s clips of each of the 30 words, shorter clips padded as in the source, 20 silence clips and 2 background-noise
files, for the 64721 clips of the challenge's train folder); BATCH_SIZE 32 for 128 (8 steps an epoch: the 1080 clips
// 32 // 4); epochs 3 for 100; the filters an eighth of the source's (4/8, 16/32/91 for 32/64, 128/256/728); scipy
and speechpy (not installed here) re-written with NumPy: wavfile.read as a 16-bit WAV read by ``wave`` (same int16
samples), lmfe as speechpy 2.x computes it (320-sample frames every 160, no padding, 256-point power spectrum, 40
triangular mel filters from 300 Hz (speechpy takes a low frequency of 0 as 300) to 5500 Hz, log); Keras 2 -> Keras 3:
fit_generator -> fit without workers/use_multiprocessing (Keras 3's fit takes none: the generator runs in the fit's
thread), so the generator's threadsafe_generator decorator (a threadsafe_iter wrapper, which Keras 3's fit rejects:
it takes only a true generator) is dropped, Adam(lr=) -> learning_rate=, the unused ELU import of keras.layers.advanced_activations dropped,
monitor 'val_acc' -> 'val_accuracy', ModelCheckpoint to model.keras in a temporary folder (Keras 3 wants the
extension) for 'model.model', LearningRateTracker prints optimizer.learning_rate (Keras 3 optimizers have no decay);
TensorBoard left out; pd.get_dummies(dtype=np.uint8) (pandas 2 gives bools, the 2018 pandas uint8); main() runs
train_model only (the silence model, validation plots and predictions after it left out); the unused imports
(lightgbm, sklearn, seaborn, tqdm, cProfile) left out.
"""

import functools
import math
import os
import random
import tempfile
import wave
from glob import glob
from pathlib import Path

import numpy as np
import pandas as pd
from keras import layers, losses, optimizers
from keras.callbacks import Callback, EarlyStopping, ModelCheckpoint, ReduceLROnPlateau
from keras.layers import (
    Activation,
    BatchNormalization,
    Conv2D,
    Dense,
    GlobalAveragePooling2D,
    Input,
    MaxPooling2D,
    SeparableConv2D,
)
from keras.models import Model

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "speech_xception")
OUT = os.path.join(tempfile.gettempdir(), "speech_xception_out")


# ----------------------------------------------------------------------------- scipy.io.wavfile, speechpy, in NumPy
class wavfile:
    @staticmethod
    def read(p):
        with wave.open(str(p), "rb") as w:
            return w.getframerate(), np.frombuffer(w.readframes(w.getnframes()), "<i2").copy()


class speechpy:
    class feature:
        @staticmethod
        def lmfe(signal, sampling_frequency, frame_length=0.020, frame_stride=0.01, num_filters=40, fft_length=512,
                 low_frequency=0, high_frequency=None):
            signal = signal.astype(float)
            flen = int(round(sampling_frequency * frame_length))
            fstep = int(round(sampling_frequency * frame_stride))
            numframes = 1 + int(math.floor((len(signal) - flen) / fstep))
            frames = signal[np.arange(flen)[None, :] + fstep * np.arange(numframes)[:, None]]
            power_spectrum = 1.0 / fft_length * np.abs(np.fft.rfft(frames, n=fft_length, axis=-1)) ** 2
            fbank = _filterbanks(num_filters, power_spectrum.shape[1], sampling_frequency, low_frequency,
                                 high_frequency)
            features = power_spectrum @ fbank.T
            features = np.where(features == 0, np.finfo(float).eps, features)
            return np.log(features)


@functools.lru_cache(maxsize=None)
def _filterbanks(num_filter, coefficients, sampling_freq, low_freq=None, high_freq=None):
    high_freq = high_freq or sampling_freq / 2
    low_freq = low_freq or 300
    mels = np.linspace(1127 * np.log(1 + low_freq / 700.), 1127 * np.log(1 + high_freq / 700.), num_filter + 2)
    hertz = 700 * (np.exp(mels / 1127) - 1)
    freq_index = np.floor((coefficients + 1) * hertz / sampling_freq).astype(int)
    filterbank = np.zeros([num_filter, coefficients])
    for i in range(num_filter):
        left, middle, right = int(freq_index[i]), int(freq_index[i + 1]), int(freq_index[i + 2])
        z = np.arange(left, right + 1)
        out = np.zeros(len(z))
        up = (left < z) & (z <= middle)
        out[up] = (z[up] - left) / (middle - left)
        down = (middle <= z) & (z < right)
        out[down] = (right - z[down]) / (right - middle)
        filterbank[i, z] = out
    return filterbank


# ----------------------------------------------------------------------------- lib.py
L = 16000
root_path = os.path.join(DATA, 'input')
train_data_path = os.path.join(root_path, 'train', 'audio')
background_noise_paths = glob(os.path.join(train_data_path, '_background_noise_', '*wav'))
silence_paths = glob(os.path.join(train_data_path, 'silence', '*wav'))


def get_path_label_df(path, pattern='**' + os.sep + '*.wav'):
    datadir = Path(path)
    files = [(str(f), f.parts[-2]) for f in datadir.glob(pattern) if f]
    df = pd.DataFrame(files, columns=['path', 'word'])

    return df


def prepare_data(df):
    df = df.drop(df[df.word.isin(['_background_noise_'])].index)
    df.reset_index(inplace=True)
    return df


def get_specgrams_augment_known(wavs, silences):
    len_paths = len(wavs)
    log_specgrams = [None] * len_paths
    fs = 16000
    for i in range(len(wavs)):
        wav = augment_data(wavs[i], fs, silences)
        log_specgrams[i] = log_specgram(wav, fs)[..., np.newaxis]
    return log_specgrams


def log_specgram(audio, sr=16000):
    logspec = speechpy.feature.lmfe(audio, sampling_frequency=sr, frame_length=0.020, frame_stride=0.010,
                                    num_filters=40, fft_length=256, low_frequency=0, high_frequency=5500)
    return logspec


def label_transform(labels):
    return pd.get_dummies(pd.Series(labels), dtype=np.uint8)


def load_wav_by_path(p):
    _, wav = wavfile.read(p)
    if wav.size < L:
        wav = np.pad(wav, (L - wav.size, 0), mode='constant')
    else:
        wav = wav[0:L]

    mean = np.mean(np.ravel(wav))
    std = np.std(np.ravel(wav))
    if std != 0:
        wav = wav - mean
        wav = wav / std
    wav = np.array(wav, dtype=np.float32)
    return wav


def random_onoff():                # randomly turns on or off
    return bool(random.getrandbits(1))


def augment_data(y, sr, noises, allow_speedandpitch=True, allow_pitch=True,
                 allow_speed=True, allow_dyn=True, allow_noise=True, allow_timeshift=True, tab=""):
    length = y.shape[0]
    y_mod = y

    if random_onoff():
        timeshift_fac = 0.15 * 2 * (np.random.uniform() - 0.5)
        start = int(length * timeshift_fac)
        if (start > 0):
            y_mod = np.pad(y_mod, (start, 0), mode='constant')[0:y_mod.shape[0]]
        else:
            y_mod = np.pad(y_mod, (0, -start), mode='constant')[0:y_mod.shape[0]]

    if (len(noises) > 0) and random_onoff():
        noise = noises[random.randint(0, len(noises) - 1)]
        scale = np.random.uniform(low=0, high=0.2, size=1)
        if np.max(noise) > 0:
            y_mod = np.array((1 - scale) * y_mod + (noise * (np.max(y_mod) / np.max(noise)) * scale), dtype=np.int16)

    if (allow_speedandpitch) and random_onoff():
        length_change = np.random.uniform(low=0.8, high=1.3)
        speed_fac = 1.0 / length_change
        tmp = np.interp(np.arange(0, len(y), speed_fac), np.arange(0, len(y)), y)
        minlen = min(y.shape[0], tmp.shape[0])  # keep same length as original;
        y_mod *= 0  # pad with zeros
        y_mod[0:minlen] = tmp[0:minlen]

    # change dynamic range
    if (allow_dyn) and random_onoff():
        dyn_change = np.random.uniform(low=0.5, high=1.3)  # change amplitude
        y_mod = y_mod * dyn_change

    return y_mod


# ----------------------------------------------------------------------------- generator.py
legal_labels_without_unknown = 'yes no up down left right on off stop go silence'.split()
legal_labels_without_unknown_and_silence = 'yes no up down left right on off stop go'.split()


class LearningRateTracker(Callback):
    def on_epoch_end(self, epoch, logs=None):
        print("Learning rate: {}".format(float(self.model.optimizer.learning_rate)))


def batch_generator_paths(X_paths, y, y_label, silences, batch_size=128):
    while True:
        unknown_proportion = 0.3
        batch_size_unknown = math.ceil(unknown_proportion * batch_size)

        batch_size_known = batch_size - batch_size_unknown
        known_ix = np.random.choice(y_label[np.isin(y_label, legal_labels_without_unknown_and_silence)].index,
                                    size=batch_size_known)
        unknown_ix = np.random.choice(y_label[~np.isin(y_label, legal_labels_without_unknown)].index,
                                      size=batch_size_unknown)
        X = list(map(load_wav_by_path, np.concatenate((X_paths[known_ix], X_paths[unknown_ix]))))

        specgrams = []
        specgrams.extend(get_specgrams_augment_known(X[:len(known_ix)], silences))
        specgrams.extend(get_specgrams_augment_known(X[len(known_ix):], silences))

        res_labels = np.concatenate((y[known_ix], y[unknown_ix]))

        yield np.stack(specgrams), res_labels


# ----------------------------------------------------------------------------- model.py
def get_model(classes=12):
    input_shape = (99, 40, 1)
    input = Input(shape=input_shape)

    x = Conv2D(4, (3, 3), strides=(2, 2), use_bias=False, name='block1_conv1')(input)
    x = BatchNormalization(name='block1_conv1_bn')(x)
    x = Activation('relu', name='block1_conv1_act')(x)
    x = Conv2D(8, (3, 3), use_bias=False, name='block1_conv2')(x)
    x = BatchNormalization(name='block1_conv2_bn')(x)
    x = Activation('relu', name='block1_conv2_act')(x)

    residual = Conv2D(16, (1, 1), strides=(2, 2),
                      padding='same', use_bias=False)(x)
    residual = BatchNormalization()(residual)

    x = SeparableConv2D(16, (3, 3), padding='same', use_bias=False, name='block2_sepconv1')(x)
    x = BatchNormalization(name='block2_sepconv1_bn')(x)
    x = Activation('relu', name='block2_sepconv2_act')(x)
    x = SeparableConv2D(16, (3, 3), padding='same', use_bias=False, name='block2_sepconv2')(x)
    x = BatchNormalization(name='block2_sepconv2_bn')(x)

    x = MaxPooling2D((3, 3), strides=(2, 2), padding='same', name='block2_pool')(x)
    x = layers.add([x, residual])

    residual = Conv2D(32, (1, 1), strides=(2, 2),
                      padding='same', use_bias=False)(x)
    residual = BatchNormalization()(residual)

    x = Activation('relu', name='block3_sepconv1_act')(x)
    x = SeparableConv2D(32, (3, 3), padding='same', use_bias=False, name='block3_sepconv1')(x)
    x = BatchNormalization(name='block3_sepconv1_bn')(x)
    x = Activation('relu', name='block3_sepconv2_act')(x)
    x = SeparableConv2D(32, (3, 3), padding='same', use_bias=False, name='block3_sepconv2')(x)
    x = BatchNormalization(name='block3_sepconv2_bn')(x)

    x = MaxPooling2D((3, 3), strides=(2, 2), padding='same', name='block3_pool')(x)
    x = layers.add([x, residual])

    residual = Conv2D(91, (1, 1), strides=(2, 2),
                      padding='same', use_bias=False)(x)
    residual = BatchNormalization()(residual)

    x = Activation('relu', name='block4_sepconv1_act')(x)
    x = SeparableConv2D(91, (3, 3), padding='same', use_bias=False, name='block4_sepconv1')(x)
    x = BatchNormalization(name='block4_sepconv1_bn')(x)
    x = Activation('relu', name='block4_sepconv2_act')(x)
    x = SeparableConv2D(91, (3, 3), padding='same', use_bias=False, name='block4_sepconv2')(x)
    x = BatchNormalization(name='block4_sepconv2_bn')(x)

    x = MaxPooling2D((3, 3), strides=(2, 2), padding='same', name='block4_pool')(x)
    x = layers.add([x, residual])

    for i in range(3):
        residual = x
        prefix = 'block' + str(i + 5)

        x = Activation('relu', name=prefix + '_sepconv1_act')(x)
        x = SeparableConv2D(91, (3, 3), padding='same', use_bias=False, name=prefix + '_sepconv1')(x)
        x = BatchNormalization(name=prefix + '_sepconv1_bn')(x)
        x = Activation('relu', name=prefix + '_sepconv2_act')(x)
        x = SeparableConv2D(91, (3, 3), padding='same', use_bias=False, name=prefix + '_sepconv2')(x)
        x = BatchNormalization(name=prefix + '_sepconv2_bn')(x)
        x = Activation('relu', name=prefix + '_sepconv3_act')(x)
        x = SeparableConv2D(91, (3, 3), padding='same', use_bias=False, name=prefix + '_sepconv3')(x)
        x = BatchNormalization(name=prefix + '_sepconv3_bn')(x)

        x = layers.add([x, residual])

    x = GlobalAveragePooling2D()(x)
    x = Dense(classes, activation='softmax')(x)

    model = Model(input, x)
    opt = optimizers.Adam(learning_rate=0.005)
    loss = losses.categorical_crossentropy
    if classes == 2:
        loss = losses.binary_crossentropy
    model.compile(optimizer=opt, loss=loss, metrics=['accuracy'])
    return model


# ----------------------------------------------------------------------------- train.py
valid_data_path = os.path.join(root_path, 'train', 'valid')
BATCH_SIZE = 32


def get_train_valid_df():
    train = prepare_data(get_path_label_df(train_data_path))
    valid = prepare_data(get_path_label_df(valid_data_path))
    return train, valid


def get_data():
    train, valid = get_train_valid_df()
    silence_paths = train.path[train.word == 'silence']
    train.drop(train[train.word.isin(['silence'])].index, inplace=True)
    valid.drop(valid[valid.word.isin(['silence'])].index, inplace=True)
    train.reset_index(inplace=True)
    valid.reset_index(inplace=True)

    len_train = len(train.word.values)
    temp = label_transform(np.concatenate((train.word.values, valid.word.values)))
    y_train, y_valid = temp[:len_train], temp[len_train:]

    label_index = y_train.columns.values
    y_train = np.array(y_train.values)
    y_valid = np.array(y_valid.values)

    return train, valid, y_train, y_valid, label_index, silence_paths


def get_callbacks(model_name='model'):
    os.makedirs(OUT, exist_ok=True)
    model_checkpoint = ModelCheckpoint(os.path.join(OUT, model_name + '.keras'), monitor='val_accuracy',
                                       save_best_only=True, save_weights_only=False, verbose=1)
    early_stopping = EarlyStopping(monitor='val_accuracy', patience=5, verbose=1)
    reduce_lr = ReduceLROnPlateau(monitor='val_accuracy', factor=0.5, patience=1, verbose=1)
    lr_tracker = LearningRateTracker()
    return [model_checkpoint, early_stopping, reduce_lr, lr_tracker]


def train_model():
    train, valid, y_train, y_valid, label_index, silence_paths = get_data()

    rand_silence_paths = silence_paths.iloc[np.random.randint(0, len(silence_paths), 500)]
    silences = np.array(list(map(load_wav_by_path, rand_silence_paths)))

    model = get_model(classes=30)
    train_gen = batch_generator_paths(train.path.values, y_train, train.word, silences, batch_size=BATCH_SIZE)
    valid_gen = batch_generator_paths(valid.path.values, y_valid, valid.word, silences, batch_size=BATCH_SIZE)
    model.fit(
        train_gen,
        epochs=3,
        steps_per_epoch=len(y_train) // BATCH_SIZE // 4,
        validation_data=valid_gen,
        validation_steps=len(y_valid) // BATCH_SIZE // 4,
        callbacks=get_callbacks('model'),
        verbose=1
    )


def main():
    train_model()


if __name__ == "__main__":
    main()
