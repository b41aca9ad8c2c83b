"""Kashmiri spoken-word recognition, training: LSTM_Model.py of Kashmir-ASR, an LSTM fitted on Train_gen, a plain Python
generator that walks the clip folder for ever and, per clip, loads and resamples it (``librosa.load``), trims its
silence (``librosa.effects.trim``), computes its MFCCs (``python_speech_features.mfcc``) and one-hot label, and pads
each batch (``pad_sequences``).

Source: https://github.com/kamrandar/Kashmir-ASR at 605561c4a3fda35cbae66cb7bb29c540a9384564 (LSTM_Model.py,
Train_data_generator.py). Re-written here in the source's structure and order, not copied: Train_gen(batchsz=64)
loops ``while True`` over ``os.walk('Audio Synthesis')``; a file's label is its name up to the first '.'; per file
``librosa.load`` (resampled to 22050 Hz), ``librosa.effects.trim(y, top_db=35, frame_length=2048, hop_length=512)``,
``mfcc(audio)`` (13 coefficients, 25 ms windows every 10 ms at the default 16000 Hz rate), a one-hot vector of 1000,
and ``pad_sequences(Xtrain, 3001)`` of the batch so far; every 64 files it yields the batch and starts a new one;
the model is LSTM(1000) on (3001, 13), Dense(1000, linear), Dense(1000, softmax), compiled with mse, adam and
accuracy, fitted ``model.fit_generator(Train_gen(), steps_per_epoch=656, epochs=1)``.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/kashmir_asr/Audio Synthesis``: 384 generated 1 s clips of 24 words, for
the Windows path 'Audio Synthesis\\' joined with '\\'); librosa and python_speech_features (not installed here)
re-written with NumPy: load as a 16-bit WAV read by ``wave`` and resampled to 22050 Hz by linear interpolation (librosa
uses soxr), trim as librosa computes it (frame RMS, centred, in dB below the loudest frame, the first and last frame
above -35 dB), mfcc as python_speech_features computes it (pre-emphasis 0.97, 400-sample frames every 160, 512-point
power spectrum, 26 mel filters, log, DCT-II ortho, 13 kept, lifter 22, log energy as the first); pad_sequences from
keras.utils; pad length 150 for 3001 (1 s clips); LSTM(32) for LSTM(1000); steps_per_epoch 6 (the 384 clips once) for
656; epochs 3 for 1; ``fit_generator`` -> ``fit`` (Keras 3 has none); the evaluate on Test_gen (``step=18``, a
keyword Keras rejects, on a test folder) left out (not part of the fit).
"""

import os
import wave

import numpy as np
from keras.layers import LSTM, Dense
from keras.models import Sequential
from keras.utils import pad_sequences

os.environ['TF_CPP_MIN_LOG_LEVEL'] = '2'

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "kashmir_asr")


# ----------------------------------------------------------------------------- librosa (load, effects.trim), in NumPy
def librosa_load(path, sr=22050):
    with wave.open(path, "rb") as w:
        sr_orig = w.getframerate()
        y = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768.0
    n = int(np.ceil(len(y) * sr / sr_orig))
    return np.interp(np.arange(n) * sr_orig / sr, np.arange(len(y)), y).astype(np.float32), sr


def librosa_trim(y, top_db=35, frame_length=2048, hop_length=512, ref=np.max):
    padded = np.pad(y, frame_length // 2)
    frames = np.lib.stride_tricks.sliding_window_view(padded, frame_length)[::hop_length]
    power = np.mean(frames ** 2, axis=1)
    db = 10 * np.log10(np.maximum(power, 1e-10)) - 10 * np.log10(np.maximum(ref(power), 1e-10))
    nonzero = np.flatnonzero(db > -top_db)
    if nonzero.size == 0:
        return y[:0], np.array([0, 0])
    start = int(nonzero[0] * hop_length)
    end = min(len(y), int((nonzero[-1] + 1) * hop_length))
    return y[start:end], np.array([start, end])


# ----------------------------------------------------------------------------- python_speech_features.mfcc, in NumPy
def _mel(hz):
    return 2595 * np.log10(1 + hz / 700.0)


def _filterbank(nfilt=26, nfft=512, samplerate=16000):
    mels = np.linspace(_mel(0), _mel(samplerate / 2), nfilt + 2)
    bins = np.floor((nfft + 1) * (700 * (10 ** (mels / 2595.0) - 1)) / samplerate).astype(int)
    fbank = np.zeros((nfilt, nfft // 2 + 1))
    for j in range(nfilt):
        for i in range(bins[j], bins[j + 1]):
            fbank[j, i] = (i - bins[j]) / (bins[j + 1] - bins[j])
        for i in range(bins[j + 1], bins[j + 2]):
            fbank[j, i] = (bins[j + 2] - i) / (bins[j + 2] - bins[j + 1])
    return fbank


def mfcc(signal, samplerate=16000, winlen=0.025, winstep=0.01, numcep=13, nfilt=26, nfft=512, preemph=0.97,
         ceplifter=22):
    signal = np.append(signal[0], signal[1:] - preemph * signal[:-1])
    flen, fstep = int(round(winlen * samplerate)), int(round(winstep * samplerate))
    nframes = 1 if len(signal) <= flen else 1 + int(np.ceil((len(signal) - flen) / fstep))
    padded = np.concatenate([signal, np.zeros((nframes - 1) * fstep + flen - len(signal))])
    frames = padded[np.arange(flen)[None, :] + fstep * np.arange(nframes)[:, None]]
    pspec = np.abs(np.fft.rfft(frames, nfft)) ** 2 / nfft
    energy = np.sum(pspec, 1)
    energy = np.where(energy == 0, np.finfo(float).eps, energy)
    feat = pspec @ _filterbank(nfilt, nfft, samplerate).T
    feat = np.log(np.where(feat == 0, np.finfo(float).eps, feat))
    k = np.arange(nfilt)
    dct = np.sqrt(2.0 / nfilt) * np.cos(np.pi * np.arange(numcep)[:, None] * (2 * k[None, :] + 1) / (2 * nfilt))
    dct[0] /= np.sqrt(2)
    feat = feat @ dct.T
    feat *= 1 + (ceplifter / 2.0) * np.sin(np.pi * np.arange(numcep) / ceplifter)
    feat[:, 0] = np.log(energy)
    return feat


# ----------------------------------------------------------------------------- Train_data_generator.py
# Training Generator
def Train_gen(batchsz=64):
    while True:
        PATH = os.path.join(DATA, 'Audio Synthesis')

        batchcount = 0
        Xtrain = []
        Ytrain = []

        for root, dirs, files in os.walk(PATH):  # noqa: B007

            for name in files:
                label, _, _ = name.partition('.')

                y, sr = librosa_load(os.path.join(root, name))
                audio, _ = librosa_trim(y, top_db=35, frame_length=2048, hop_length=512, ref=np.max)

                mfcc_features = mfcc(audio)
                Xtrain.append(mfcc_features)

                a = np.zeros(1000)
                arr = np.zeros_like(a, dtype=int)
                arr[int(label) - 1] = 1

                Ytrain.append(arr)
                Y_train = np.array(Ytrain)
                X_train = pad_sequences(Xtrain, 150)
                batchcount += 1
                if batchcount >= batchsz:
                    yield (X_train, Y_train)
                    batchcount = 0
                    Xtrain = []
                    Ytrain = []


# ----------------------------------------------------------------------------- LSTM_Model.py
if __name__ == "__main__":
    verbose, no_of_epochs, batch_size = 1, 3, 64
    n_timesteps, n_features, n_outputs = 150, 13, 1000
    inputshape = (n_timesteps, n_features)
    model = Sequential()

    model.add(LSTM(32, input_shape=inputshape, return_sequences=False))
    model.add(Dense(1000, kernel_initializer='normal', activation='linear'))
    model.add(Dense(n_outputs, activation='softmax'))
    model.compile(loss='mse', optimizer='adam', metrics=['accuracy'])
    model.fit(Train_gen(), steps_per_epoch=6, epochs=no_of_epochs, verbose=verbose)
    print(model.summary())
