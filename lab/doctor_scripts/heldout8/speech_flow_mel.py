"""Speech-command recognition (Kaggle TensorFlow Speech Recognition Challenge), training: main.py of
chrisakroyd/kaggle-speech-recognition, a VGG-style CNN (CNNModel, the author's best submission) on 40x101 log mel
spectrograms, fitted on AudioDataGenerator.flow, a Python generator that for every batch draws random clips, loads
each WAV with librosa.load, trims or pads it to one second, augments it at random (amplitude scaling, a time shift,
background noise mixed in with probability 0.8) and computes its log mel spectrogram
(``librosa.feature.melspectrogram``); validation runs on flow_in_mem, whose features are computed once before the fit.

Source: https://github.com/chrisakroyd/kaggle-speech-recognition at 64ed0f0e1afd72939ddb61be7e9862a334707f4e (main.py,
src/audio_data_generator.py, src/load_data.py, src/preprocessing/feature_representations.py,
src/preprocessing/preprocessing.py, src/models/general_CNN.py). Re-written here in the source's structure and order,
not copied: main.py sets a TF1 session with allow_growth, calls load_data('./input/train/audio/',
val_path='./input/train/validation_list.txt') (every .wav under the folder into a DataFrame of path, word and
"<word>/<file>" hash path; _background_noise_ relabelled 'silence', words other than the ten commands 'unknown';
labels one-hot by sklearn's LabelBinarizer; clips listed in validation_list.txt to validation; with CONTROL_BALANCE,
10 % silence (drawn from the noise files) and 10 % unknown clips added to each split, np.random.seed(59185)), builds
CNNModel().create_model(audio_preprocessor.get_data_shape(x_train[0])) (BatchNormalization, Conv2D 64/64, 128/128,
256x3, 512x3 of 2x2 with max-pooling and Dropout 0.2, GlobalMaxPool2D, Dense 1024/512/256 with BatchNormalization and
Dropout 0.5, Dense 12 softmax; Adam, categorical cross-entropy, accuracy; BATCH_SIZE 64, EPOCHS 50), the callbacks
TensorBoard, ModelCheckpoint('./best_model.hdf5', monitor='val_loss') and EarlyStopping(val_loss, patience 7) (a
ReduceLROnPlateau is built and not passed), and calls ``model.fit_generator(generator=audio_preprocessor.flow(x_train,
y_train, batch_size=64), epochs=50, steps_per_epoch=ceil(len(x_train) / 64), validation_data=
audio_preprocessor.flow_in_mem(x_val, y_val, batch_size=64, train=False), validation_steps=ceil(len(x_val) / 64),
callbacks=[tensorboard, checkpoint, early_stop])``; then (WRITE_RESULTS) loads the checkpoint and writes a submission
for the test folder. AudioDataGenerator('log_mel_spectrogram') loads the background noises once in its constructor;
its preprocess loads the clip (``librosa.load(wav, sr=16000, mono=True)``), trims/pads it and, in training, scales,
shifts and mixes in a random slice of a background noise; the feature is ``librosa.feature.melspectrogram(audio,
sr=16000, n_mels=40, hop_length=160, n_fft=480, fmin=20, fmax=4000)`` with the log taken where positive.

Changed: data paths (``$DOCTOR_SCRIPTS_DATA/speech_flow_mel/input/train/``: 36 generated clips of each of the ten
command words and 14 of each of 8 other words, the six noise files 30 s long, for the 64721 clips and six one-minute
noises of the challenge's train folder; about a tenth in validation_list.txt); epochs 3 for 50; the CNN's filters and
Dense widths an eighth of the source's (8..64 for 64..512, 128/64/32 for 1024/512/256); librosa 0.6 (not installed
here) re-written with NumPy as it worked: librosa.load as audioread's raw WAV reader (1024-frame blocks,
each converted by buf_to_float to float32 in [-1, 1), joined; no resampling: the clips are 16 kHz), melspectrogram
as librosa 0.6 computes it (centred reflect-padded STFT with a periodic Hann window, power 2, Slaney mel filters
with area normalisation built on each call); sklearn's LabelBinarizer as a NumPy one-hot of the sorted words;
``label != SILENCE_LABEL`` on a one-hot label row evaluated as NumPy 1.13 did (a scalar True with a FutureWarning; NumPy
2 compares elementwise and the ``if`` would raise), so silence clips are trimmed, scaled, shifted and mixed like words,
as in the source; Keras 2 -> Keras 3: the TF1 session block dropped, fit_generator -> fit,
ReduceLROnPlateau(epsilon=) -> min_delta=, TensorBoard left out, the checkpoint to best_model.keras in a temporary
folder (Keras 3 saves whole models only to .keras or .h5); WRITE_RESULTS (the test-set submission after the fit) off; what the
log-mel run never calls left out (the other feature functions and their scipy imports, time_strech, pitch_scaling,
flow_test, get_test_data, results.py, the other generator_method branches) and the functions' docstrings shortened away.
"""

import os
import tempfile
import wave
from math import ceil
from pathlib import Path

import numpy as np
import pandas as pd
from keras.callbacks import EarlyStopping, ModelCheckpoint, ReduceLROnPlateau
from keras.layers import BatchNormalization, Conv2D, Dense, Dropout, GlobalMaxPool2D, MaxPooling2D
from keras.models import Sequential, load_model  # noqa: F401
from keras.optimizers import Adam

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "speech_flow_mel")
OUT = os.path.join(tempfile.gettempdir(), "speech_flow_mel_out")


# ----------------------------------------------------------------------------- librosa 0.6 and sklearn, in NumPy
class librosa:
    @staticmethod
    def load(path, sr=22050, mono=True):
        # audioread's RawAudioFile: 1024-frame blocks of 16-bit PCM; librosa.util.buf_to_float on each, then joined
        y = []
        with wave.open(str(path), "rb") as input_file:
            native_sr = input_file.getframerate()
            while True:
                frame = input_file.readframes(1024)
                if not frame:
                    break
                y.append((1.0 / 32768) * np.frombuffer(frame, "<i2").astype(np.float32))
        y = np.concatenate(y) if y else np.empty(0, dtype=np.float32)
        assert native_sr == sr  # no resampling needed here: the clips are written at 16 kHz
        return y, native_sr

    class feature:
        @staticmethod
        def melspectrogram(y, sr=22050, n_fft=2048, hop_length=512, power=2.0, **kwargs):
            S = np.abs(_stft(y, n_fft=n_fft, hop_length=hop_length)) ** power
            mel_basis = _mel(sr, n_fft, **kwargs)
            return np.dot(mel_basis, S)


def _stft(y, n_fft, hop_length):
    fft_window = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n_fft) / n_fft)).reshape((-1, 1))  # periodic hann
    y = np.pad(y, int(n_fft // 2), mode="reflect")
    n_frames = 1 + (len(y) - n_fft) // hop_length
    y_frames = np.lib.stride_tricks.as_strided(y, shape=(n_fft, n_frames), strides=(y.itemsize, hop_length * y.itemsize))
    return np.fft.rfft(fft_window * y_frames, axis=0).astype(np.complex64)


def _hz_to_mel(f):
    f = np.asanyarray(f, dtype=float)
    f_sp = 200.0 / 3
    mels = f / f_sp
    min_log_hz, min_log_mel, logstep = 1000.0, 1000.0 / f_sp, np.log(6.4) / 27.0
    return np.where(f >= min_log_hz, min_log_mel + np.log(np.maximum(f, 1e-10) / min_log_hz) / logstep, mels)


def _mel_to_hz(mels):
    mels = np.asanyarray(mels, dtype=float)
    f_sp = 200.0 / 3
    freqs = f_sp * mels
    min_log_hz, min_log_mel, logstep = 1000.0, 1000.0 / f_sp, np.log(6.4) / 27.0
    return np.where(mels >= min_log_mel, min_log_hz * np.exp(logstep * (mels - min_log_mel)), freqs)


def _mel(sr, n_fft, n_mels=128, fmin=0.0, fmax=None):
    if fmax is None:
        fmax = float(sr) / 2
    weights = np.zeros((n_mels, int(1 + n_fft // 2)))
    fftfreqs = np.linspace(0, float(sr) / 2, int(1 + n_fft // 2), endpoint=True)
    mel_f = _mel_to_hz(np.linspace(_hz_to_mel(fmin), _hz_to_mel(fmax), n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = np.subtract.outer(mel_f, fftfreqs)
    for i in range(n_mels):
        lower = -ramps[i] / fdiff[i]
        upper = ramps[i + 2] / fdiff[i + 1]
        weights[i] = np.maximum(0, np.minimum(lower, upper))
    enorm = 2.0 / (mel_f[2:n_mels + 2] - mel_f[:n_mels])
    weights *= enorm[:, np.newaxis]
    return weights


class LabelBinarizer:
    def fit(self, y):
        self.classes_ = np.unique(np.asarray(y))
        return self

    def transform(self, y):
        return (np.asarray(y)[:, None] == self.classes_[None, :]).astype(int)


def _differs(label, word):
    # NumPy 1.13: an int array compared with a str gave a scalar True (elementwise comparison failed)
    return True if isinstance(label, np.ndarray) else label != word


# ----------------------------------------------------------------------------- src/load_data.py
# Train words are the words we want to keep.
TRAIN_WORDS = ['yes', 'no', 'up', 'down', 'left', 'right', 'on', 'off', 'stop', 'go']
# These words are used for data relabelling.
BACKGROUND_NOISE = '_background_noise_'
SILENCE_LABEL = 'silence'
UNKNOWN_LABEL = 'unknown'
# Same Seed = Same Distribution.
RANDOM_SEED = 59185
CONTROL_BALANCE = True
silence_percentage = 10
unknown_percentage = 10


def get_data(path):
    datadir = Path(path)
    files = [(str(f), f.parts[-2], '/'.join(str(i) for i in f.parts[-2:])) for f in datadir.glob('**/*.wav') if f]
    df = pd.DataFrame(files, columns=['path', 'word', 'hash_path'])

    return df


def get_background_noise(path):
    datadir = Path(path)
    files = [str(f) for f in datadir.glob('**/*.wav') if f]
    return files


def prepare_data(df):
    words = df.word.unique().tolist()
    silence = [BACKGROUND_NOISE]
    unknown = [w for w in words if w not in silence + TRAIN_WORDS]

    # there are only 6 silence files. Mark them as unknown too.
    df.loc[df.word.isin(silence), 'word'] = SILENCE_LABEL
    df.loc[df.word.isin(unknown), 'word'] = UNKNOWN_LABEL

    return df


def load_data(path, val_path, control_balance=CONTROL_BALANCE):
    data_set = prepare_data(get_data(path))
    x_train, x_val, y_train, y_val = [], [], [], []
    silence_x, silence_y, unknown_x, unknown_y = [], [], [], []
    unknown_val, unknown_val_y = [], []

    train_word_set = set(TRAIN_WORDS)

    label_binarizer = LabelBinarizer().fit(data_set.word)

    with open(val_path) as fin:
        validation_files = set(fin.read().splitlines())

    for i in range(len(data_set)):
        data_item = data_set.iloc[i]
        label = label_binarizer.transform([data_item.word])[0]

        if data_item.hash_path in validation_files:
            if data_item.word == UNKNOWN_LABEL and CONTROL_BALANCE:
                unknown_val.append(data_item.path)
                unknown_val_y.append(label)
            else:
                x_val.append(data_item.path)
                y_val.append(label)
        elif data_item.word in train_word_set:
            x_train.append(data_item.path)
            y_train.append(label)
        elif data_item.word == SILENCE_LABEL and CONTROL_BALANCE:
            silence_x.append(data_item.path)
            silence_y.append(label)
        elif data_item.word == UNKNOWN_LABEL and CONTROL_BALANCE:
            unknown_x.append(data_item.path)
            unknown_y.append(label)
        else:
            x_train.append(data_item.path)
            y_train.append(label)

    if control_balance:
        set_size = len(x_train)
        silence_size = int(ceil(set_size * silence_percentage / 100))
        unknown_size = int(ceil(set_size * unknown_percentage / 100))
        val_set_size = len(x_val)
        val_silence_size = int(ceil(val_set_size * silence_percentage / 100))
        val_unknown_size = int(ceil(val_set_size * unknown_percentage / 100))

        np.random.seed(RANDOM_SEED)
        for _ in range(silence_size):
            index = np.random.randint(0, len(silence_x))
            x_train.append(silence_x[index])
            y_train.append(silence_y[index])

        for _ in range(val_silence_size):
            index = np.random.randint(0, len(silence_x))
            x_val.append(silence_x[index])
            y_val.append(silence_y[index])

        unknown_indexes = np.random.randint(0, len(unknown_x), unknown_size)
        unknown_indexes_val = np.random.randint(0, len(unknown_val), val_unknown_size)

        rand_unknown_x = np.array(unknown_x)[unknown_indexes].tolist()
        rand_unknown_y = np.array(unknown_y)[unknown_indexes].tolist()

        rand_unknown_x_val = np.array(unknown_val)[unknown_indexes_val].tolist()
        rand_unknown_y_val = np.array(unknown_val_y)[unknown_indexes_val].tolist()

        x_train.extend(rand_unknown_x)
        y_train.extend(rand_unknown_y)
        x_val.extend(rand_unknown_x_val)
        y_val.extend(rand_unknown_y_val)

    return (np.array(x_train), np.array(y_train)), (np.array(x_val), np.array(y_val)), label_binarizer


# ----------------------------------------------------------------------------- src/preprocessing/
SAMPLE_RATE = 16000
TARGET_DURATION = 16000


def log_mel_spectrogram(audio, sample_rate=SAMPLE_RATE, n_mels=40, n_fft=480, normalize=False):
    mel_spec = librosa.feature.melspectrogram(audio, sr=sample_rate, n_mels=n_mels, hop_length=160, n_fft=n_fft, fmin=20, fmax=4000)
    mel_spec[mel_spec > 0] = np.log(mel_spec[mel_spec > 0])
    if normalize:
        mel_spec -= (np.mean(mel_spec, axis=0) + 1e-8)

    return mel_spec.reshape(mel_spec.shape[0], mel_spec.shape[1], 1)


def shift_audio(audio, ms_shift=100):
    ms = 16
    time_shift_dist = int(np.random.uniform(-(ms_shift * ms), (ms_shift * ms)))
    audio = np.roll(audio, time_shift_dist)
    return audio


def get_silence_slice(audio):
    silence_start_idx = np.random.randint(audio.shape[0] - TARGET_DURATION)
    silence_slice = audio[silence_start_idx: silence_start_idx + TARGET_DURATION]
    return silence_slice


def add_background_noises(audio, background_wav, volume_range=0.1):
    bg_audio = background_wav
    bg_audio_start_idx = np.random.randint(bg_audio.shape[0] - TARGET_DURATION)
    bg_audio_slice = bg_audio[bg_audio_start_idx: bg_audio_start_idx + 16000] * np.random.uniform(0, volume_range)
    return audio + bg_audio_slice


def amplitude_scaling(audio, multiplier=0.2):
    return audio * np.random.uniform(1.0 - multiplier, 1.0 + multiplier)


def trim_pad_audio(audio):
    duration = len(audio)
    if duration < TARGET_DURATION:
        audio = np.pad(audio, (TARGET_DURATION - audio.size, 0), mode='constant')
    elif duration > TARGET_DURATION:
        audio = audio[0:TARGET_DURATION]
    return audio


# ----------------------------------------------------------------------------- src/audio_data_generator.py
background_noise_path = os.path.join(DATA, 'input/train/audio/_background_noise_')
background_noise_mixing_probability = 0.8


class AudioDataGenerator(object):
    def __init__(self, generator_method='log_mel_spectrogram'):
        self.generator_method = generator_method
        self.background_noises = get_background_noise(background_noise_path)
        self.background_noises = [librosa.load(bg_wav, sr=SAMPLE_RATE)[0] for bg_wav in self.background_noises]
        if generator_method == 'log_mel_spectrogram':
            self.feature_func = log_mel_spectrogram
        else:
            print('INVALID DATA GENERATOR SPECIFIED')

    def get_data_shape(self, wav_path):
        spec = self.feature_func(self.preprocess(wav_path, train=False))
        return spec.shape

    def preprocess(self, wav, label=None, train=True):
        audio = librosa.load(wav, sr=SAMPLE_RATE, mono=True)[0]

        # Perform some pre-processing steps.
        if train:
            if _differs(label, SILENCE_LABEL):
                # Audio padding/chopping to standardise the length of samples.
                audio = trim_pad_audio(audio)

                # Adjust the volume of the recording (Amplitude scaling)
                audio = amplitude_scaling(audio)
                # Time shift start/end of audio of between -100ms and 100ms.
                audio = shift_audio(audio)
                # Mix in background noise
                if np.random.uniform(0.0, 1.0) < background_noise_mixing_probability:
                    background_noise_file = self.background_noises[np.random.randint(len(self.background_noises))]
                    audio = add_background_noises(audio, background_noise_file)
            else:
                audio = get_silence_slice(audio)

        audio = trim_pad_audio(audio)

        # Small check to make sure I didn't mess up.
        assert len(audio) == TARGET_DURATION

        return audio

    def flow(self, input_x, labels, batch_size=32, train=True):
        while True:
            idx = np.random.randint(0, input_x.shape[0], batch_size)
            im = input_x[idx]
            label = labels[idx]
            specgram = [self.feature_func(self.preprocess(im[i], label[i], train=train)) for i in range(len(im))]

            yield np.concatenate([specgram]), label

    def flow_in_mem(self, input_x, labels, batch_size=32, train=True):
        input_preprocessed = np.array([self.feature_func(
            self.preprocess(input_x[i], labels[i], train=train)
        ) for i in range(len(input_x))])

        while True:
            idx = np.random.randint(0, input_x.shape[0], batch_size)
            label = labels[idx]

            yield np.concatenate([input_preprocessed[idx]]), label


# ----------------------------------------------------------------------------- src/models/general_CNN.py
BATCH_SIZE = 64
EPOCHS = 3
LEARN_RATE = 0.0001
NUM_CLASSES = 12


class CNNModel:
    def __init__(self, num_clases=12):
        self.BATCH_SIZE = BATCH_SIZE
        self.EPOCHS = EPOCHS
        self.LEARN_RATE = LEARN_RATE
        self.num_classes = num_clases
        self.checkpoint_path = os.path.join(OUT, 'best_model.keras')

    def create_model(self, shape):
        model = Sequential()

        model.add(BatchNormalization(input_shape=shape))
        model.add(Conv2D(8, (2, 2), activation='relu', padding='same'))
        model.add(Conv2D(8, (2, 2), activation='relu', padding='same'))
        model.add(MaxPooling2D(2))
        model.add(Dropout(0.2))

        model.add(Conv2D(16, (2, 2), activation='relu', padding='same'))
        model.add(Conv2D(16, (2, 2), activation='relu', padding='same'))
        model.add(MaxPooling2D(2))
        model.add(Dropout(0.2))

        model.add(Conv2D(32, (2, 2), activation='relu', padding='same'))
        model.add(Conv2D(32, (2, 2), activation='relu', padding='same'))
        model.add(Conv2D(32, (2, 2), activation='relu', padding='same'))
        model.add(MaxPooling2D(2))
        model.add(Dropout(0.2))

        model.add(Conv2D(64, (2, 2), activation='relu', padding='same'))
        model.add(Conv2D(64, (2, 2), activation='relu', padding='same'))
        model.add(Conv2D(64, (2, 2), activation='relu', padding='same'))
        model.add(MaxPooling2D(2))
        model.add(Dropout(0.2))

        model.add(GlobalMaxPool2D())

        model.add(BatchNormalization())
        model.add(Dense(128, activation='relu'))
        model.add(Dropout(0.5))
        model.add(BatchNormalization())
        model.add(Dense(64, activation='relu'))
        model.add(Dropout(0.5))
        model.add(BatchNormalization())
        model.add(Dense(32, activation='relu'))
        model.add(Dropout(0.5))
        model.add(BatchNormalization())
        model.add(Dense(self.num_classes, activation='softmax'))

        model.summary()

        model.compile(loss='categorical_crossentropy', optimizer=Adam(), metrics=['accuracy'])

        return model


# ----------------------------------------------------------------------------- main.py
TRAIN = True
WRITE_RESULTS = False
# File paths to data
TRAIN_PATH = os.path.join(DATA, 'input/train/audio/')
VAL_FILE_PATH = os.path.join(DATA, 'input/train/validation_list.txt')
# What feature representation we use.
FEATURE_REP = 'log_mel_spectrogram'

(x_train, y_train), (x_val, y_val), label_binarizer = load_data(path=TRAIN_PATH, val_path=VAL_FILE_PATH)

model_instance = CNNModel()

audio_preprocessor = AudioDataGenerator(generator_method=FEATURE_REP)

if TRAIN:
    os.makedirs(OUT, exist_ok=True)
    model = model_instance.create_model(audio_preprocessor.get_data_shape(x_train[0]))

    checkpoint = ModelCheckpoint(model_instance.checkpoint_path, monitor='val_loss')

    early_stop = EarlyStopping(monitor='val_loss',
                               patience=7,
                               verbose=1,
                               min_delta=0.00001)

    reduce_lr = ReduceLROnPlateau(monitor='val_loss', factor=0.1,
                                  patience=2,
                                  verbose=1,
                                  min_delta=0.0001,
                                  mode='min', min_lr=0.0001)

    train_gen = audio_preprocessor.flow(x_train, y_train, batch_size=model_instance.BATCH_SIZE)
    valid_gen = audio_preprocessor.flow_in_mem(x_val, y_val, batch_size=model_instance.BATCH_SIZE, train=False)

    model.fit(
        train_gen,
        epochs=model_instance.EPOCHS,
        steps_per_epoch=ceil(x_train.shape[0] / model_instance.BATCH_SIZE),
        validation_data=valid_gen,
        validation_steps=ceil(x_val.shape[0] / model_instance.BATCH_SIZE),
        callbacks=[checkpoint, early_stop]
    )
