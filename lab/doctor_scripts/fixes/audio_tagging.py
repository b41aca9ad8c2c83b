"""FIXED COPY (the one fix: each clip's mel spectrogram computed once and kept in memory).

Kaggle audio tagging, training script (a plain generator computing mel spectrograms per clip in NumPy).

Source: https://github.com/Another-Chris/audio_utils (preprocessing.py at
3085d290daf07675677d45c99d994edbb0b8f143: create_fdirs and AudioFeatureGenerator.flow_from_directory;
test_generator.py for the generator's use on kaggle_audio_tagging/train and valid with batch 32). Kept:
create_fdirs, the AudioFeatureGenerator settings (mel_spectrogram, window 1024, hop 512, 128 mels, log),
flow_from_directory's infinite ``while True`` loop that reads every clip with a WAV reader and extracts its
feature for every batch, and the two generators (train, valid).

Changed: data path (``$DOCTOR_SCRIPTS_DATA/audio_tagging/{train,valid}/<label>/*.wav``: 6 labels, 3 s
clips at 16 kHz); scipy is not installed: ``wavfile.read`` is the ``wave`` module (same int16 samples) and
feature.py's AudioFeatureExtractor (not in the snapshot read) is a NumPy STFT + mel filterbank + log of the
stated settings, with ``resolution_range`` [1] (one resolution); ``sample_fixed_len`` (undefined in the
source) is the clip padded or cut to utterance_length seconds; the source's window moves by one example
(``for i in range(len(self.fdirs) - batch_size)``), repeating each clip batch_size times per pass: here it
moves by batch_size and covers every clip once per pass (noted: a change to the source's logic); labels
are class indices (the source yields folder names cast to int); the
training file list is shuffled once with a fixed seed (the source's comes in label order, its
``random.shuffle`` commented out); the model and the fit call are not in the
repository: a small CNN, model.fit(train_generator, steps_per_epoch=len(train)//32,
validation_data=valid_generator, validation_steps=len(valid)//32, epochs=3).
"""
# ruff: noqa: B006, B007  (the source's code, kept as written)

import os
import wave

import numpy as np
from tensorflow import keras
from tensorflow.keras import layers

root_dir = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "audio_tagging")
train_dir = root_dir + "/train"
valid_dir = root_dir + "/valid"


def read_wav(path):
    with wave.open(path, "rb") as w:
        return w.getframerate(), np.frombuffer(w.readframes(w.getnframes()), "<i2")


def standard_norm(x):
    return (x - x.mean()) / (x.std() + 1e-8)


class AudioFeatureExtractor:
    def __init__(self):
        self._mel = {}

    def mel_matrix(self, sr, n_fft, n_mels):
        key = (sr, n_fft, n_mels)
        if key not in self._mel:
            mel = lambda f: 2595.0 * np.log10(1 + f / 700.0)  # noqa: E731
            edges = np.linspace(0, mel(sr / 2), n_mels + 2)
            freqs = mel(np.linspace(0, sr / 2, n_fft // 2 + 1))
            lo, c, hi = edges[:-2, None], edges[1:-1, None], edges[2:, None]
            self._mel[key] = np.maximum(0, np.minimum((freqs - lo) / (c - lo), (hi - freqs) / (hi - c)))
        return self._mel[key]

    def extract_feature_with_resolutions(self, y):
        feats = []
        for r in self.resolution_range:
            win = int(self.window_size * r)
            hop = int(self.hop_length * r)
            n = 1 + (len(y) - win) // hop
            frames = np.stack([y[i * hop:i * hop + win] for i in range(n)]) * np.hanning(win)
            power = np.abs(np.fft.rfft(frames, win)) ** 2
            S = power @ self.mel_matrix(self.sr, win, self.num_mels).T
            if self.log:
                S = np.log(S + 1e-6)
            feats.append(standard_norm(S))
        return np.stack(feats, axis=-1).astype(np.float32)


def create_fdirs(directory):
    total_labels = sorted(os.listdir(directory))
    fdirs = []
    for label in total_labels:
        fnames_for_currlabel = sorted(os.listdir(directory + "/" + label))
        for fname in fnames_for_currlabel:
            fdirs.append((directory + "/" + label + "/" + fname, total_labels.index(label)))
    # random.shuffle(fdirs)
    return [el[0] for el in fdirs], [el[1] for el in fdirs]


FEATURES = {}


class AudioFeatureGenerator(AudioFeatureExtractor):
    def __init__(
            self,
            feature_type = "mel_spectrogram",
            resolution_range = [1],
            window_size = 1024,
            hop_length = 512,
            num_mels = 128,
            num_mfccs = 13,
            delta = 0,
            log = True,
        ):
        super().__init__()

        self.feature_type = feature_type
        self.resolution_range = resolution_range
        self.window_size = window_size
        self.hop_length = hop_length
        self.num_mels = num_mels
        self.num_mfccs = num_mfccs
        self.delta = delta
        self.log = log

        self.fdirs = None
        self.labels = None
        self.randi = None

    def flow_from_directory(
        self,
        directory,
        utterance_length = 3,
        batch_size = 32
        ):
        if self.fdirs is None:
            self.fdirs, self.labels = create_fdirs(directory)

        self.sr = read_wav(self.fdirs[0])[0]
        sample_per_utterance = utterance_length * self.sr

        while True:
            for i in range(0, len(self.fdirs) - batch_size + 1, batch_size):
                features = []
                batch = self.fdirs[i:i+batch_size]
                batch_labels = self.labels[i:i+batch_size]
                for sample in batch:
                    if sample in FEATURES:  # the fix: each clip's features computed once
                        features.append(FEATURES[sample])
                        continue
                    sample_data = read_wav(sample)[1].astype(np.float32) / 32768.0
                    sample_fixed_len = np.pad(sample_data, (0, max(0, sample_per_utterance - len(sample_data))))[:sample_per_utterance]

                    ## extract features
                    feature = self.extract_feature_with_resolutions(sample_fixed_len)
                    FEATURES[sample] = feature
                    features.append(feature)
                yield np.stack(features, axis = 0), np.stack(batch_labels, axis = 0).astype(int)


batch_size = 32
train_size = len(create_fdirs(train_dir)[0])
valid_size = len(create_fdirs(valid_dir)[0])

# the source shuffles nothing: the clips come in label order; a seeded shuffle of the file list keeps
# every batch from holding one label only
train_gen = AudioFeatureGenerator(feature_type="mel_spectrogram", num_mels=128, resolution_range=[1])
train_gen.fdirs, train_gen.labels = create_fdirs(train_dir)
order = np.random.RandomState(0).permutation(train_size)
train_gen.fdirs = [train_gen.fdirs[i] for i in order]
train_gen.labels = [train_gen.labels[i] for i in order]
train_generator = train_gen.flow_from_directory(train_dir, batch_size=batch_size)

valid_gen = AudioFeatureGenerator(feature_type="mel_spectrogram", num_mels=128, resolution_range=[1])
valid_generator = valid_gen.flow_from_directory(valid_dir, batch_size=batch_size)

model = keras.Sequential([
    keras.Input((92, 128, 1)),
    layers.Conv2D(16, 3, activation="relu"),
    layers.MaxPooling2D(2),
    layers.Conv2D(32, 3, activation="relu"),
    layers.GlobalAveragePooling2D(),
    layers.Dense(6, activation="softmax"),
])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(train_generator, steps_per_epoch=train_size // batch_size,
          validation_data=valid_generator, validation_steps=valid_size // batch_size, epochs=3)
