"""FIXED COPY (the one fix: each clip is np.load-ed once and kept in memory).

Speech command recognition with an attention RNN, training: Speech_Recog_Demo of SpeechCmdRecognition, the
AttRNN model (a mel spectrogram computed inside the model, convolutions, two bidirectional LSTMs, dot-product
attention) fitted over SpeechGen, a keras Sequence that ``np.load``s each clip's .npy waveform for every batch.

Source: https://github.com/douglas125/SpeechCmdRecognition at 1bbac0da4374590eb1517af01b77052be5407722
(SpeechModels.py, audioUtils.py; SpeechGenerator.py at 67602080a03e; the training cells of Speech_Recog_Demo.ipynb).
Re-written here in the source's structure and order, not copied: SpeechGen(list_IDs, labels, batch_size=32,
dim=16000, shuffle=True) has floor(n / batch_size) batches, shuffles its indexes in on_epoch_end and, in
__data_generation, fills X (batch, 16000) and y one clip at a time with ``np.load(ID)[:, 0]`` (a clip longer than
dim cut at a random place, a shorter one placed at a random offset) and ``self.labels[ID]``;
audioUtils.normalized_mel_spectrogram is a ``tf.signal.stft`` (1024, hop 128, hann), an 80-bin mel matrix
(40-8000 Hz), log and normalisation by the clip's mean and std; AttRNNSpeechModel is that spectrogram as a frozen
sub-model, Conv2D 10 (5x1) + BN, Conv2D 1 (5x1) + BN, squeeze, two Bidirectional LSTM(64, return_sequences), the
last step's Dense(128) as the query of a dot-product attention over the sequence, Dense 64 relu, Dense 32, Dense
nCategs softmax; the notebook compiles it with adam, sparse categorical cross-entropy and accuracy, and fits
``model.fit(trainGen, validation_data=valGen, epochs=60, use_multiprocessing=False, workers=4, verbose=2,
callbacks=[earlystopper, checkpointer, lrate])`` (EarlyStopping on the validation accuracy, a best-only
ModelCheckpoint, a step-decay LearningRateScheduler).

Changed: data path (``$DOCTOR_SCRIPTS_DATA/speech_attrnn/train``: 10 words x 60 generated 1-second clips as the
.npy files WAV2Numpy writes, 480 training and 120 validation clips named by validation_list.txt, for
SpeechDownloader.PrepareGoogleSpeechCmd's download of the 35-word set and its file lists); nCategs 10 for 36;
epochs 3 for 60; ``workers=4, use_multiprocessing=False``
moved from fit to SpeechGen's ``super().__init__(workers=4, use_multiprocessing=False)`` (Keras 3 takes them on the
PyDataset, not on fit); the checkpoint as ``model-attRNN.keras`` under a temporary folder (Keras 3 wants the
suffix); normalized_mel_spectrogram applied in a Lambda layer, and the graph's ``tf.expand_dims`` and
``K.squeeze`` as ``keras.ops`` calls in Lambda layers (a Keras 3 functional model takes no raw TF op); the spectrogram plots, the
evaluation, the attention plots and the export after the fit left out (not part of the fit).
"""

import math
import os
import tempfile

import numpy as np
import tensorflow as tf
import tensorflow.keras
from tensorflow.keras import layers as L
from tensorflow.keras import ops
from tensorflow.keras.callbacks import EarlyStopping, LearningRateScheduler, ModelCheckpoint
from tensorflow.keras.models import Model

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "speech_attrnn", "train")


# ----------------------------------------------------------------------------- SpeechGenerator.py
class SpeechGen(tensorflow.keras.utils.Sequence):
    """
    'Generates data for Keras'

    list_IDs - list of files that this generator should load
    labels - dictionary of corresponding (integer) category
    to each file in list_IDs
    """
    def __init__(self, list_IDs, labels, batch_size=32,
                 dim=16000, shuffle=True, **kwargs):
        'Initialization'
        super().__init__(**kwargs)
        self.dim = dim
        self.batch_size = batch_size
        self.labels = labels
        self.list_IDs = list_IDs
        self.shuffle = shuffle
        self.loaded = {}
        self.on_epoch_end()

    def __len__(self):
        'Denotes the number of batches per epoch'
        return int(np.floor(len(self.list_IDs) / self.batch_size))

    def __getitem__(self, index):
        'Generate one batch of data'
        # Generate indexes of the batch
        indexes = self.indexes[index*self.batch_size:(index+1)*self.batch_size]

        # Find list of IDs
        list_IDs_temp = [self.list_IDs[k] for k in indexes]

        # Generate data
        X, y = self.__data_generation(list_IDs_temp)

        return X, y

    def on_epoch_end(self):
        'Updates indexes after each epoch'
        self.indexes = np.arange(len(self.list_IDs))
        if self.shuffle:
            np.random.shuffle(self.indexes)

    def __data_generation(self, list_IDs_temp):
        'Generates data containing batch_size samples'
        X = np.empty((self.batch_size, self.dim))
        y = np.empty((self.batch_size), dtype=int)

        # Generate data
        for i, ID in enumerate(list_IDs_temp):

            # load data from file, saved as numpy array on disk
            if ID not in self.loaded:  # the fix: each clip loaded once, kept in memory
                self.loaded[ID] = np.load(ID)[:, 0]
            curX = self.loaded[ID]

            # curX could be bigger or smaller than self.dim
            if curX.shape[0] == self.dim:
                X[i] = curX
            elif curX.shape[0] > self.dim:  # bigger
                # we can choose any position in curX-self.dim
                randPos = np.random.randint(curX.shape[0]-self.dim)
                X[i] = curX[randPos:randPos+self.dim]
            else:  # smaller
                randPos = np.random.randint(self.dim-curX.shape[0])
                X[i, randPos:randPos + curX.shape[0]] = curX

            # Store class
            y[i] = self.labels[ID]

        return X, y


# ----------------------------------------------------------------------------- audioUtils.py
def spectrogram_fn(input_signal, nfft, window, stride, name=None):
    return tf.math.abs(
        tf.signal.stft(
            input_signal,
            frame_length=window,
            frame_step=stride,
            fft_length=nfft,
            window_fn=tf.signal.hann_window,
            pad_end=True,
        )
    )


def normalized_mel_spectrogram(x, sr=16000, n_mel_bins=80):
    spec_stride = 128
    spec_len = 1024

    spectrogram = spectrogram_fn(
        x, nfft=spec_len, window=spec_len, stride=spec_stride
    )

    num_spectrogram_bins = spec_len // 2 + 1  # spectrogram.shape[-1]
    lower_edge_hertz, upper_edge_hertz = 40.0, 8000.0
    num_mel_bins = n_mel_bins
    linear_to_mel_weight_matrix = tf.signal.linear_to_mel_weight_matrix(
      num_mel_bins, num_spectrogram_bins, sr, lower_edge_hertz,
      upper_edge_hertz)
    mel_spectrograms = tf.tensordot(spectrogram, linear_to_mel_weight_matrix, 1)
    mel_spectrograms.set_shape(spectrogram.shape[:-1].concatenate(linear_to_mel_weight_matrix.shape[-1:]))

    # Compute a stabilized log to get log-magnitude mel-scale spectrograms.
    log_mel_spectrograms = tf.math.log(mel_spectrograms + 1e-6)
    avg = tf.math.reduce_mean(log_mel_spectrograms)
    std = tf.math.reduce_std(log_mel_spectrograms)

    return (log_mel_spectrograms - avg) / std


# ----------------------------------------------------------------------------- SpeechModels.py
def get_melspec_model(iLen=None):
    inp = L.Input((iLen,), name='input')
    mel_spec = L.Lambda(normalized_mel_spectrogram)(inp)
    melspecModel = Model(inputs=inp, outputs=mel_spec, name='normalized_spectrogram_model')
    return melspecModel


def AttRNNSpeechModel(nCategories, samplingrate=16000,
                      inputLength=16000, rnn_func=L.LSTM):
    # simple LSTM
    inputs = L.Input((inputLength,), name='input')

    m = get_melspec_model(iLen=inputLength)
    m.trainable = False

    x = m(inputs)
    x = L.Lambda(lambda q: ops.expand_dims(q, axis=-1), name='mel_stft')(x)

    x = L.Conv2D(10, (5, 1), activation='relu', padding='same')(x)
    x = L.BatchNormalization()(x)
    x = L.Conv2D(1, (5, 1), activation='relu', padding='same')(x)
    x = L.BatchNormalization()(x)

    x = L.Lambda(lambda q: ops.squeeze(q, -1), name='squeeze_last_dim')(x)

    x = L.Bidirectional(rnn_func(64, return_sequences=True)
                        )(x)  # [b_s, seq_len, vec_dim]
    x = L.Bidirectional(rnn_func(64, return_sequences=True)
                        )(x)  # [b_s, seq_len, vec_dim]

    xFirst = L.Lambda(lambda q: q[:, -1])(x)  # [b_s, vec_dim]
    query = L.Dense(128)(xFirst)

    # dot product attention
    attScores = L.Dot(axes=[1, 2])([query, x])
    attScores = L.Softmax(name='attSoftmax')(attScores)  # [b_s, seq_len]

    # rescale sequence
    attVector = L.Dot(axes=[1, 1])([attScores, x])  # [b_s, vec_dim]

    x = L.Dense(64, activation='relu')(attVector)
    x = L.Dense(32)(x)

    output = L.Dense(nCategories, activation='softmax', name='output')(x)

    model = Model(inputs=[inputs], outputs=[output])

    return model


# ----------------------------------------------------------------------------- Speech_Recog_Demo.ipynb
def step_decay(epoch):
    initial_lrate = 0.001
    drop = 0.4
    epochs_drop = 15.0
    lrate = initial_lrate * math.pow(drop,
            math.floor((1+epoch)/epochs_drop))

    if (lrate < 4e-5):
        lrate = 4e-5

    print('Changing learning rate to {}'.format(lrate))
    return lrate


if __name__ == "__main__":
    # the dataset's lists, as SpeechDownloader.PrepareGoogleSpeechCmd makes them
    words = sorted(os.listdir(DATA))
    words = [w for w in words if os.path.isdir(os.path.join(DATA, w))]
    with open(os.path.join(DATA, "validation_list.txt")) as f:
        val_names = set(line.strip() + ".npy" for line in f if line.strip())
    gscInfo = {"train": {"files": [], "labels": {}}, "val": {"files": [], "labels": {}}}
    for k, w in enumerate(words):
        for name in sorted(os.listdir(os.path.join(DATA, w))):
            part = "val" if f"{w}/{name}" in val_names else "train"
            gscInfo[part]["files"].append(os.path.join(DATA, w, name))
            gscInfo[part]["labels"][os.path.join(DATA, w, name)] = k
    nCategs = len(words)

    sr = 16000  # we know this one for google audios
    iLen = 16000
    trainGen = SpeechGen(gscInfo['train']['files'], gscInfo['train']['labels'], shuffle=True,
                         workers=4, use_multiprocessing=False)
    # handle the fact that number of samples in validation may not be multiple of batch_size with shuffle=True
    valGen = SpeechGen(gscInfo['val']['files'], gscInfo['val']['labels'], shuffle=True,
                       workers=4, use_multiprocessing=False)

    model = AttRNNSpeechModel(nCategs, samplingrate=sr, inputLength=None)

    model.compile(optimizer='adam', loss=['sparse_categorical_crossentropy'], metrics=['sparse_categorical_accuracy'])
    model.summary()

    lrate = LearningRateScheduler(step_decay)

    earlystopper = EarlyStopping(monitor='val_sparse_categorical_accuracy', patience=10,
                                 verbose=1, restore_best_weights=True)
    checkpointer = ModelCheckpoint(os.path.join(tempfile.gettempdir(), 'model-attRNN.keras'),
                                   monitor='val_sparse_categorical_accuracy', verbose=1, save_best_only=True)

    results = model.fit(trainGen, validation_data=valGen, epochs=3, verbose=2,
                        callbacks=[earlystopper, checkpointer, lrate])
