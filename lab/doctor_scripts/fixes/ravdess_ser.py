"""FIXED COPY (the one fix: get_dataset(cache=True), the author's own cached path: each clip's py_function librosa
features computed once, in the first epoch, then read from the cache of batches, training and validation alike).

Speech emotion recognition on RAVDESS, training: train.py (with utils.py and SpeechModel.py) of
shreyanshtandon4/ser, a 1-D CNN over a 193-value summary of each clip, fitted on a tf.data pipeline that maps every
clip's path through ``tf.py_function`` into librosa: the WAV loaded and resampled to 22050 Hz, then five librosa
features computed and averaged over time (40 MFCCs, a 128-band mel spectrogram, 12 STFT chroma, 7 spectral-contrast
bands, 6 tonnetz values from a constant-Q chroma), every time the clip is read, every epoch (no cache).

Source: https://github.com/shreyanshtandon4/ser at 12566cb80f034028aca17b731f1de57851dc5b50 (train.py, utils.py,
SpeechModel.py). Re-written here in the source's structure and order, not copied: train.py calls
``get_dataset(training_dir="./training", validation_dir=None, val_split=0.2, batch_size=32, random_state=42)``
(``cache`` left at utils.py's default, False), ``create_model(8)`` and ``model.fit(train_ds, validation_data=val_ds,
callbacks=ESCallback, epochs=15)`` with ``EarlyStopping(patience=2, restore_best_weights=True, verbose=3)``, then
saves the model to ``saved_model/{EPOCHS}_trained_model.h5`` (EPOCHS is never defined: the save raises a NameError
after the fit). utils.py's get_dataset lists the training folder (RAVDESS files named
``modality-channel-emotion-intensity-statement-repetition-actor.wav``; the label is the third field, "01".."08",
mapped to 0..7 through EMOTION_DICT_RAVDESS), joins the paths, splits them with sklearn's
``train_test_split(test_size=0.2, random_state=42)``, builds ``tf.data.Dataset.from_tensor_slices((paths, labels))``
for each split and maps ``tf_wrapper_process_audio_clip`` with ``num_parallel_calls=tf.data.AUTOTUNE``: a
``tf.py_function(process_audio_clip, [file_path, label], [tf.float32, tf.int32])`` whose features get the static
shape [193] and an expand_dims to (193, 1); process_audio_clip calls ``librosa.load(file_path)`` (sr 22050, mono) and
takes the time means of ``librosa.feature.mfcc(n_mfcc=40)``, ``melspectrogram``, ``chroma_stft``,
``spectral_contrast`` and ``tonnetz`` (each computing its own spectrogram; chroma_stft estimates the tuning by
piptrack, tonnetz runs chroma_cqt, a 7-octave constant-Q transform at 36 bins an octave, with its own tuning
estimate), joined by ``tf.concat``. Without cache each split is ``batch(batch_size).prefetch(AUTOTUNE)``.
SpeechModel.getRAVDESS: Input (193, 1), Conv1D 256/5 + BatchNormalization + ReLU, Conv1D 128/5 + ReLU + Dropout 0.1 +
BatchNormalization, MaxPool1D 8, Conv1D 128/5 x3 (BatchNormalization after the third), Dropout 0.2, Conv1D 128/5,
Flatten, Dropout 0.2, Dense 8, BatchNormalization, Softmax; RMSprop(1e-5), SparseCategoricalCrossentropy.

Changed: the training folder is ``$DOCTOR_SCRIPTS_DATA/ravdess_ser/training/`` (120 generated 16-bit mono clips of
2.5-3.5 s at 22050 Hz, 15 of each of the 8 emotions from 10 actors, named as RAVDESS names them, for RAVDESS's 1440
speech clips at 48 kHz; written at 22050 Hz, so librosa.load's resampling has nothing to do); epochs 3 for 15;
librosa 0.10 (not installed here) re-written with NumPy as it
computes these features (load as a 16-bit WAV read to float32; centred zero-padded STFTs with a periodic Hann window;
Slaney mel filters; power_to_db with top_db 80; an orthonormal DCT-II for MFCCs; piptrack/pitch_tuning for the tuning
estimates; librosa's chroma filter bank; spectral_contrast's octave bands and 2 % quantiles; the constant-Q transform
as librosa's multirate recursion, one octave at a time from the top with the signal halved in rate by FFT truncation,
Hann-windowed complex filters at 36 bins an octave, then cq_to_chroma, inf-normalised, and tonnetz's projection);
sklearn's train_test_split as the NumPy permutation it draws (RandomState(42), the first ceil(20 %) to test);
train.py's unused imports (sklearn.utils.validation, tensorflow.python.keras.engine.training) and the final
model.save (a NameError in the source) left out.
"""

import os
import wave

import numpy as np
import tensorflow as tf
from keras import Model
from keras import layers as L

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "ravdess_ser")

_TINY = np.finfo(np.float32).tiny


# ----------------------------------------------------------------------------- librosa 0.10, in NumPy
def _stft(y, n_fft=2048, hop_length=512, window="hann"):
    win = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n_fft) / n_fft) if window == "hann" else np.ones(n_fft)
    y = np.pad(y, n_fft // 2, mode="constant")
    n_frames = 1 + (len(y) - n_fft) // hop_length
    frames = np.lib.stride_tricks.as_strided(y, shape=(n_fft, n_frames), strides=(y.itemsize, hop_length * y.itemsize))
    return np.fft.rfft(win[:, None] * frames, axis=0).astype(np.complex64)


def _fft_frequencies(sr, n_fft):
    return np.fft.rfftfreq(n=n_fft, d=1.0 / sr)


def _hz_to_mel(f):
    f = np.asanyarray(f, dtype=float)
    f_sp = 200.0 / 3
    min_log_hz, min_log_mel, logstep = 1000.0, 1000.0 / f_sp, np.log(6.4) / 27.0
    return np.where(f >= min_log_hz, min_log_mel + np.log(np.maximum(f, 1e-10) / min_log_hz) / logstep, f / f_sp)


def _mel_to_hz(m):
    m = np.asanyarray(m, dtype=float)
    f_sp = 200.0 / 3
    min_log_hz, min_log_mel, logstep = 1000.0, 1000.0 / f_sp, np.log(6.4) / 27.0
    return np.where(m >= min_log_mel, min_log_hz * np.exp(logstep * (m - min_log_mel)), f_sp * m)


def _mel_filters(sr, n_fft, n_mels=128):
    fftfreqs = _fft_frequencies(sr, n_fft)
    mel_f = _mel_to_hz(np.linspace(_hz_to_mel(0.0), _hz_to_mel(sr / 2.0), n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = np.subtract.outer(mel_f, fftfreqs)
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    weights = np.maximum(0, np.minimum(lower, upper))
    weights *= (2.0 / (mel_f[2:n_mels + 2] - mel_f[:n_mels]))[:, None]
    return weights.astype(np.float32)


def _power_to_db(S, amin=1e-10, top_db=80.0):
    log_spec = 10.0 * np.log10(np.maximum(amin, S))
    return np.maximum(log_spec, log_spec.max() - top_db)


def _normalize(S, norm):
    length = np.max(np.abs(S), axis=0) if norm == np.inf else np.sum(np.abs(S), axis=0)
    length = np.where(length < _TINY, 1.0, length)
    return S / length


def _hz_to_octs(f, tuning=0.0, bins_per_octave=12):
    return np.log2(f / ((440.0 * 2.0 ** (tuning / bins_per_octave)) / 16))


def _piptrack(S, sr, n_fft, fmin=150.0, fmax=4000.0, threshold=0.1):
    fft_freqs = _fft_frequencies(sr, n_fft)
    avg = 0.5 * (S[2:] - S[:-2])
    shift = 2 * S[1:-1] - S[2:] - S[:-2]
    shift = avg / (shift + (np.abs(shift) < _TINY))
    avg = np.pad(avg, ((1, 1), (0, 0)))
    shift = np.pad(shift, ((1, 1), (0, 0)))
    dskew = 0.5 * avg * shift
    freq_mask = ((fmin <= fft_freqs) & (fft_freqs < fmax))[:, None]
    x = S * (S > threshold * np.max(S, axis=0))
    x_pad = np.pad(x, ((1, 1), (0, 0)), mode="edge")
    idx = np.nonzero(freq_mask & (x > x_pad[:-2]) & (x >= x_pad[2:]))
    pitches, mags = np.zeros_like(S), np.zeros_like(S)
    pitches[idx] = (idx[0] + shift[idx]) * float(sr) / n_fft
    mags[idx] = S[idx] + dskew[idx]
    return pitches, mags


def _estimate_tuning(S, sr, n_fft, bins_per_octave=12, resolution=0.01):
    pitch, mag = _piptrack(S, sr, n_fft)
    pitch_mask = pitch > 0
    threshold = np.median(mag[pitch_mask]) if pitch_mask.any() else 0.0
    frequencies = pitch[(mag >= threshold) & pitch_mask]
    frequencies = frequencies[frequencies > 0]
    if not np.any(frequencies):
        return 0.0
    residual = np.mod(bins_per_octave * _hz_to_octs(frequencies, bins_per_octave=bins_per_octave), 1.0)
    residual[residual >= 0.5] -= 1.0
    bins = np.linspace(-0.5, 0.5, int(np.ceil(1.0 / resolution)) + 1)
    counts, tuning = np.histogram(residual, bins)
    return tuning[np.argmax(counts)]


def _chroma_filters(sr, n_fft, tuning, n_chroma=12):
    frequencies = np.linspace(0, sr, n_fft, endpoint=False)[1:]
    frqbins = n_chroma * _hz_to_octs(frequencies, tuning=tuning, bins_per_octave=n_chroma)
    frqbins = np.concatenate(([frqbins[0] - 1.5 * n_chroma], frqbins))
    binwidthbins = np.concatenate((np.maximum(frqbins[1:] - frqbins[:-1], 1.0), [1]))
    D = np.subtract.outer(frqbins, np.arange(0, n_chroma, dtype="d")).T
    n_chroma2 = np.round(float(n_chroma) / 2)
    D = np.remainder(D + n_chroma2 + 10 * n_chroma, n_chroma) - n_chroma2
    wts = np.exp(-0.5 * (2 * D / np.tile(binwidthbins, (n_chroma, 1))) ** 2)
    wts = wts / np.maximum(np.sqrt(np.sum(wts ** 2, axis=0)), _TINY)
    wts *= np.tile(np.exp(-0.5 * (((frqbins / n_chroma - 5.0) / 2.0) ** 2)), (n_chroma, 1))
    wts = np.roll(wts, -3 * (n_chroma // 12), axis=0)
    return np.ascontiguousarray(wts[:, :int(1 + n_fft / 2)]).astype(np.float32)


def _downsample2(y):
    # resample to half the rate (librosa.resample with scale=True): an FFT truncation, times sqrt(2)
    n = len(y)
    Y = np.fft.rfft(y)
    m = n // 2
    return (np.fft.irfft(Y[:m // 2 + 1], n=m) * (m / n) * np.sqrt(2.0)).astype(np.float32)


def _cqt(y, sr, hop_length=512, fmin=32.70319566257483, n_bins=252, bins_per_octave=36, tuning=0.0):
    fmin = fmin * 2.0 ** (tuning / bins_per_octave)
    freqs = fmin * 2.0 ** (np.arange(n_bins) / bins_per_octave)
    alpha = 2.0 ** (1.0 / bins_per_octave) - 1
    lengths = (1.0 / alpha) * sr / freqs
    n_octaves = int(np.ceil(n_bins / bins_per_octave))
    responses, my_y, my_sr, my_hop = [], y, float(sr), hop_length
    for i in range(n_octaves):
        sl = slice(max(0, n_bins - bins_per_octave * (i + 1)), n_bins - bins_per_octave * i)
        f_oct = freqs[sl]
        l_oct = (1.0 / alpha) * my_sr / f_oct
        n_fft = int(2.0 ** np.ceil(np.log2(l_oct.max())))
        basis = np.zeros((len(f_oct), n_fft), dtype=np.complex64)
        for k, (f, ilen) in enumerate(zip(f_oct, l_oct)):
            t = np.arange(-ilen // 2, ilen // 2, dtype=float)
            sig = np.exp(1j * 2 * np.pi * f * t / my_sr)
            sig = sig * (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(len(t)) / len(t)))
            sig /= np.sum(np.abs(sig))
            start = (n_fft - len(sig)) // 2
            basis[k, start:start + len(sig)] = sig
        fft_basis = np.fft.fft(basis, n=n_fft, axis=1)[:, :n_fft // 2 + 1] * (l_oct[:, None] / n_fft)
        D = _stft(my_y, n_fft=n_fft, hop_length=my_hop, window="ones")
        responses.append(fft_basis @ D)
        if i < n_octaves - 1:
            my_y, my_sr, my_hop = _downsample2(my_y), my_sr / 2.0, my_hop // 2
    n_frames = min(r.shape[1] for r in responses)
    C = np.concatenate([r[:, :n_frames] for r in responses[::-1]], axis=0)
    return C / np.sqrt(lengths)[:, None]


def _cq_to_chroma(n_input, bins_per_octave=36, n_chroma=12):
    n_merge = float(bins_per_octave) / n_chroma
    cq_to_ch = np.repeat(np.eye(n_chroma), int(n_merge), axis=1)
    cq_to_ch = np.roll(cq_to_ch, -int(n_merge // 2), axis=1)
    n_octaves = np.ceil(float(n_input) / bins_per_octave)
    return np.tile(cq_to_ch, int(n_octaves))[:, :n_input]  # fmin C1: midi 24, roll 0


class librosa:
    @staticmethod
    def load(path, sr=22050, mono=True):
        with wave.open(path if isinstance(path, str) else path.decode(), "rb") as f:
            native_sr = f.getframerate()
            y = np.frombuffer(f.readframes(f.getnframes()), "<i2").astype(np.float32) / 32768.0
        assert native_sr == sr  # written at 22050 Hz: librosa.load does not resample
        return y, sr

    class feature:
        @staticmethod
        def melspectrogram(y, sr=22050, n_fft=2048, hop_length=512, n_mels=128):
            S = np.abs(_stft(y, n_fft, hop_length)) ** 2
            return _mel_filters(sr, n_fft, n_mels) @ S

        @staticmethod
        def mfcc(y, sr=22050, n_mfcc=20):
            S = _power_to_db(librosa.feature.melspectrogram(y=y, sr=sr))
            n = S.shape[0]
            dct = np.cos(np.pi / n * (np.arange(n) + 0.5)[None, :] * np.arange(n)[:, None]) * np.sqrt(2.0 / n)
            dct[0] *= np.sqrt(0.5)
            return (dct @ S)[:n_mfcc].astype(np.float32)

        @staticmethod
        def chroma_stft(y, sr=22050, n_fft=2048, hop_length=512):
            S = np.abs(_stft(y, n_fft, hop_length)) ** 2
            tuning = _estimate_tuning(S, sr, n_fft)
            return _normalize(_chroma_filters(sr, n_fft, tuning) @ S, np.inf)

        @staticmethod
        def spectral_contrast(y, sr=22050, n_fft=2048, hop_length=512, fmin=200.0, n_bands=6, quantile=0.02):
            S = np.abs(_stft(y, n_fft, hop_length))
            freq = _fft_frequencies(sr, n_fft)
            octa = np.zeros(n_bands + 2)
            octa[1:] = fmin * (2.0 ** np.arange(0, n_bands + 1))
            valley = np.zeros((n_bands + 1, S.shape[1]), dtype=S.dtype)
            peak = np.zeros_like(valley)
            for k, (f_low, f_high) in enumerate(zip(octa[:-1], octa[1:])):
                current_band = np.logical_and(freq >= f_low, freq <= f_high)
                idx = np.flatnonzero(current_band)
                if k > 0:
                    current_band[idx[0] - 1] = True
                if k == n_bands:
                    current_band[idx[-1] + 1:] = True
                sub_band = S[current_band]
                if k < n_bands:
                    sub_band = sub_band[:-1]
                idx = int(np.maximum(np.rint(quantile * np.sum(current_band)), 1))
                sortedr = np.sort(sub_band, axis=0)
                valley[k] = np.mean(sortedr[:idx], axis=0)
                peak[k] = np.mean(sortedr[-idx:], axis=0)
            return _power_to_db(peak) - _power_to_db(valley)

        @staticmethod
        def chroma_cqt(y, sr=22050, hop_length=512, bins_per_octave=36, n_octaves=7):
            tuning = _estimate_tuning(np.abs(_stft(y, 2048, hop_length)), sr, 2048, bins_per_octave=bins_per_octave)
            C = np.abs(_cqt(y, sr, hop_length, n_bins=n_octaves * bins_per_octave, bins_per_octave=bins_per_octave,
                            tuning=tuning))
            return _normalize(_cq_to_chroma(C.shape[0], bins_per_octave) @ C, np.inf)

        @staticmethod
        def tonnetz(y, sr=22050):
            chroma = librosa.feature.chroma_cqt(y=y, sr=sr)
            dim_map = np.linspace(0, 12, num=12, endpoint=False)
            scale = np.asarray([7.0 / 6, 7.0 / 6, 3.0 / 2, 3.0 / 2, 2.0 / 3, 2.0 / 3])
            V = scale[:, None] * dim_map[None, :]
            V[::2] -= 0.5
            R = np.array([1, 1, 1, 1, 0.5, 0.5])
            phi = R[:, None] * np.cos(np.pi * V)
            return phi @ _normalize(chroma, 1)


def train_test_split(*arrays, test_size=0.25, random_state=None):
    # sklearn's ShuffleSplit draw: RandomState(random_state).permutation, the first ceil(test_size * n) to test
    n = len(arrays[0])
    n_test = int(np.ceil(test_size * n))
    permutation = np.random.RandomState(random_state).permutation(n)
    test, train = permutation[:n_test], permutation[n_test:]
    out = []
    for a in arrays:
        out += [[a[i] for i in train], [a[i] for i in test]]
    return out


# ----------------------------------------------------------------------------- SpeechModel.py
class SpeechModel:
    def __init__(self, num_output_classes) -> None:
        self.num_output_classes = num_output_classes

    def getRAVDESS(self) -> Model:
        input_layer = L.Input(shape=(193, 1))

        cnn1 = L.Conv1D(256, (5))(input_layer)
        batch_norm1 = L.BatchNormalization()(cnn1)
        relu1 = L.ReLU()(batch_norm1)

        cnn2 = L.Conv1D(128, (5))(relu1)
        relu2 = L.ReLU()(cnn2)
        dropout1 = L.Dropout(0.1)(relu2)
        batch_norm2 = L.BatchNormalization()(dropout1)

        max_pool1 = L.MaxPool1D(8)(batch_norm2)

        conv3 = L.Conv1D(128, (5))(max_pool1)
        relu3 = L.ReLU()(conv3)
        conv4 = L.Conv1D(128, (5))(relu3)
        relu4 = L.ReLU()(conv4)
        conv5 = L.Conv1D(128, (5))(relu4)
        batch_norm4 = L.BatchNormalization()(conv5)
        relu5 = L.ReLU()(batch_norm4)
        dropout2 = L.Dropout(0.2)(relu5)

        conv6 = L.Conv1D(128, (5))(dropout2)
        flatten = L.Flatten()(conv6)
        dropout3 = L.Dropout(0.2)(flatten)

        output_logits = L.Dense(self.num_output_classes)(dropout3)
        batch_norm5 = L.BatchNormalization()(output_logits)
        softmax = L.Softmax()(batch_norm5)
        model = Model(inputs=[input_layer], outputs=[softmax])
        optimizer = tf.keras.optimizers.RMSprop(1e-5)
        loss = tf.keras.losses.SparseCategoricalCrossentropy()
        model.compile(optimizer=optimizer, loss=loss)

        return model


# ----------------------------------------------------------------------------- utils.py
EMOTION_DICT_EMODB = {
    "W": "anger",
    "L": "boredom",
    "E": "disgust",
    "A": "fear",
    "F": "happiness",
    "T": "sadness",
    "N": "Neutral",
}

EMOTION_DICT_RAVDESS = {
    "01": "neutral",
    "02": "calm",
    "03": "happy",
    "04": "sad",
    "05": "angry",
    "06": "fearful",
    "07": "disgust",
    "08": "surprised",
}


def process_audio_clip(file_path, label):
    file_path = file_path.numpy()
    audio, sr = librosa.load(file_path)
    mfcc = np.mean(librosa.feature.mfcc(y=audio, sr=sr, n_mfcc=40).T, axis=0)
    mel = np.mean(librosa.feature.melspectrogram(y=audio, sr=sr).T, axis=0)
    chromagram = np.mean(librosa.feature.chroma_stft(y=audio, sr=sr).T, axis=0)
    spectral = np.mean(librosa.feature.spectral_contrast(y=audio, sr=sr).T, axis=0)
    tonnetz = np.mean(librosa.feature.tonnetz(y=audio, sr=sr).T, axis=0)
    extracted_features = tf.concat([mfcc, mel, chromagram, spectral, tonnetz], axis=0)
    return extracted_features, label


def get_dataset(
    training_dir="./training",
    label_dict=EMOTION_DICT_RAVDESS,
    validation_dir=None,
    val_split=0.2,
    batch_size=128,
    random_state=42,
    cache=False,
):

    def decompose_label(file_path: str):
        return label_to_int[file_path.split("-")[2]]

    def tf_wrapper_process_audio_clip(file_path, label):
        extracted_features, label = tf.py_function(
            process_audio_clip, [file_path, label], [tf.float32, tf.int32]
        )
        extracted_features.set_shape([193])
        label.set_shape([])
        extracted_features = tf.expand_dims(extracted_features, -1)
        return extracted_features, label

    file_path_list = os.listdir(training_dir)
    label_to_int = dict({(key, i) for i, key in enumerate(label_dict.keys())})
    labels = [decompose_label(file_path) for file_path in file_path_list]

    if validation_dir is None:
        if val_split > 0:
            file_path_list = [
                os.path.join(training_dir, path) for path in file_path_list
            ]
            train_paths, val_paths, train_labels, val_labels = train_test_split(
                file_path_list, labels, test_size=val_split, random_state=random_state
            )
    else:
        train_paths = file_path_list
        train_labels = file_path_list
        val_paths = os.listdir(validation_dir)
        val_labels = [decompose_label(file_path) for file_path in val_paths]
        val_paths = [os.path.join(training_dir, path) for path in val_paths]

    train_ds = tf.data.Dataset.from_tensor_slices((train_paths, train_labels))
    val_ds = tf.data.Dataset.from_tensor_slices((val_paths, val_labels))

    train_ds = train_ds.map(
        tf_wrapper_process_audio_clip, num_parallel_calls=tf.data.AUTOTUNE
    )
    val_ds = val_ds.map(
        tf_wrapper_process_audio_clip, num_parallel_calls=tf.data.AUTOTUNE
    )

    if cache:
        train_ds = train_ds.batch(batch_size).cache().prefetch(tf.data.AUTOTUNE)
        val_ds = val_ds.batch(batch_size).cache().prefetch(tf.data.AUTOTUNE)
    else:
        train_ds = train_ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)
        val_ds = val_ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)
    return train_ds, val_ds


def create_model(num_output_classes):
    speechModel = SpeechModel(num_output_classes)
    model = speechModel.getRAVDESS()
    return model


# ----------------------------------------------------------------------------- train.py
train_dir = os.path.join(DATA, "training")

val_dir = None

RANDOM_STATE = 42

val_split = 0.2

model_type = "ravdess"

NUM_LABELS = 8


train_ds, val_ds = get_dataset(
    training_dir=train_dir,
    validation_dir=val_dir,
    val_split=val_split,
    batch_size=32,
    random_state=RANDOM_STATE,
    cache=True,  # FIX: the features of each clip computed once (the author's cached path), not every epoch
)

model = create_model(NUM_LABELS)

ESCallback = tf.keras.callbacks.EarlyStopping(
    patience=2, restore_best_weights=True, verbose=3
)
model.fit(
    train_ds,
    validation_data=val_ds,
    callbacks=ESCallback,
    epochs=3,
)
