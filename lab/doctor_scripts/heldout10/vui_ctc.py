"""Speech recognition with CTC (Udacity AIND-VUI capstone, LibriSpeech), training: train_utils.py of
CalebEverett/AIND-VUI-Capstone, the author's final acoustic model (a Conv1D over the time axis, two bidirectional
GRUs with BatchNormalization, two TimeDistributed Dense layers, a softmax over 29 characters) under a CTC loss built
in a Lambda layer, fitted with fit_generator on AudioGenerator.next_train, a Python generator that for every batch
reads each clip's WAV file (soundfile), computes its log power spectrogram with NumPy (a strided Hann-windowed FFT),
normalizes it and pads the batch to its longest clip; validation runs on next_valid, built the same way.

Source: https://github.com/CalebEverett/AIND-VUI-Capstone at 88943ecdc12a625fc8eb86fddc3a2128519fde3b (train_utils.py,
data_generator.py, utils.py, char_map.py, sample_models.py, vui_notebook.ipynb cells 38 and 40). Re-written here in the
source's structure and order, not copied: the notebook builds ``model_end = final_model(input_dim=161, filters=200,
kernel_size=11, conv_stride=2, conv_border_mode='valid', units=200)`` (Conv1D 200 of 11, stride 2, valid, relu;
BatchNormalization; twice Bidirectional(GRU(200, activation='relu', return_sequences=True, implementation=2)) and
BatchNormalization; TimeDistributed(Dense(200)), TimeDistributed(Dense(29)), softmax; ``output_length`` the conv's
output length) and calls ``train_model(input_to_softmax=model_end, pickle_path='model_end.pickle',
save_model_path='model_end.h5', spectrogram=True)``. train_model builds ``AudioGenerator(minibatch_size=100,
spectrogram=True, mfcc_dim=13, max_duration=10.0, sort_by_duration=False)``, loads train_corpus.json (LibriSpeech
dev-clean) and valid_corpus.json (test-clean), JSON lines of key (the WAV path), duration and text, clips over
max_duration skipped; load_train_data also calls fit_train, which featurizes 100 random training clips once for the
features' mean and std; steps_per_epoch = train clips // 100, validation_steps = valid clips // 100; add_ctc_loss wraps
the model with three more Inputs (the_labels, input_length, label_length), a Lambda of output_length and a Lambda
'ctc' of ``K.ctc_batch_cost``; compiled with the dummy loss ``{'ctc': lambda y_true, y_pred: y_pred}`` and
``SGD(lr=0.01, decay=1e-6, momentum=0.9, nesterov=True, clipnorm=5)``; ``model.fit_generator(generator=
audio_gen.next_train(), steps_per_epoch=steps_per_epoch, epochs=20, validation_data=audio_gen.next_valid(),
validation_steps=validation_steps, callbacks=[ModelCheckpoint('results/model_end.h5')], verbose=1)``, then pickles the
history. get_batch featurizes (spectrogram_from_file: soundfile read to float32, 20 ms Hann windows every 10 ms, the
bins up to max_freq 8000 Hz, log, transposed to time x 161) and normalizes the batch's 100 clips, pads them into a
float64 array of the longest clip, the texts into int sequences padded with 28; next_train walks the list in order,
a batch at a time, and reshuffles it (np.random.permutation) after a pass.

Changed: data paths (``$DOCTOR_SCRIPTS_DATA/vui_ctc/``: train_corpus.json and valid_corpus.json over 500 and 150
generated 1-3 s 16 kHz WAVs in LibriSpeech's dev-clean/test-clean speaker/chapter folders, for dev-clean's 2703
and test-clean's 2620 utterances of up to 35 s; the JSON keys relative, joined to the data folder when loaded);
epochs 3 for 20; the Conv1D filters, GRU units and first Dense an eighth of the source's (25 for 200); soundfile (not
installed here) re-written with the wave module as it read 16-bit PCM (float32, divided by 32768); Keras 2 -> Keras
3: fit_generator -> fit, ``SGD(lr=, decay=)`` -> learning_rate=InverseTimeDecay(0.01, 1, 1e-6) (Keras 2's decay per
iteration), K.ctc_batch_cost from tf.keras.backend (Keras 3's legacy backend), the checkpoint to model_end.keras and
the history pickle in a temporary folder (Keras 3 saves whole models only to .keras or .h5; a Lambda holding a
lambda does not save to .h5); the two TimeDistributed(Dense) layers as plain Dense layers on the 3-D sequence (the
same per-step matrix product; Keras 3.15's TimeDistributed maps over the batch size, not the time steps, when the time
axis is unknown, and fails), the CTC model's single output given as a dict {'ctc': ...} (Keras 3 matches the
generator's target dict and the loss dict to the output names only then); the MFCC branch of featurize (python_speech_features, spectrogram=False), the test
partition, the plotting and prediction helpers, which this run never calls, left out.
"""

import _pickle as pickle
import json
import os
import random
import tempfile
import wave

import numpy as np
import tensorflow as tf
from keras.callbacks import ModelCheckpoint
from keras.layers import GRU, Activation, BatchNormalization, Bidirectional, Conv1D, Dense, Input, Lambda
from keras.models import Model
from keras.optimizers import SGD
from keras.optimizers.schedules import InverseTimeDecay
from numpy.lib.stride_tricks import as_strided

K = tf.keras.backend

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "vui_ctc")
OUT = os.path.join(tempfile.gettempdir(), "vui_ctc_out")


# ----------------------------------------------------------------------------- soundfile, with the wave module
class soundfile:
    class SoundFile:
        def __init__(self, filename):
            self._w = wave.open(filename, "rb")
            self.samplerate = self._w.getframerate()

        def read(self, dtype='float32'):
            pcm = np.frombuffer(self._w.readframes(self._w.getnframes()), "<i2")
            return (pcm / 32768.0).astype(dtype)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self._w.close()


# ----------------------------------------------------------------------------- char_map.py
char_map_str = """
' 0
<SPACE> 1
a 2
b 3
c 4
d 5
e 6
f 7
g 8
h 9
i 10
j 11
k 12
l 13
m 14
n 15
o 16
p 17
q 18
r 19
s 20
t 21
u 22
v 23
w 24
x 25
y 26
z 27
"""
# the "blank" character is mapped to 28

char_map = {}
index_map = {}
for line in char_map_str.strip().split('\n'):
    ch, index = line.split()
    char_map[ch] = int(index)
    index_map[int(index)+1] = ch
index_map[2] = ' '


# ----------------------------------------------------------------------------- utils.py
def calc_feat_dim(window, max_freq):
    return int(0.001 * window * max_freq) + 1


def spectrogram(samples, fft_length=256, sample_rate=2, hop_length=128):
    assert not np.iscomplexobj(samples), "Must not pass in complex numbers"

    window = np.hanning(fft_length)[:, None]
    window_norm = np.sum(window**2)

    # The scaling below follows the convention of
    # matplotlib.mlab.specgram which is the same as
    # matlabs specgram.
    scale = window_norm * sample_rate

    trunc = (len(samples) - fft_length) % hop_length
    x = samples[:len(samples) - trunc]

    # "stride trick" reshape to include overlap
    nshape = (fft_length, (len(x) - fft_length) // hop_length + 1)
    nstrides = (x.strides[0], x.strides[0] * hop_length)
    x = as_strided(x, shape=nshape, strides=nstrides)

    # window stride sanity check
    assert np.all(x[:, 1] == samples[hop_length:(hop_length + fft_length)])

    # broadcast window, compute fft over columns and square mod
    x = np.fft.rfft(x * window, axis=0)
    x = np.absolute(x)**2

    # scale, 2.0 for everything except dc and fft_length/2
    x[1:-1, :] *= (2.0 / scale)
    x[(0, -1), :] /= scale

    freqs = float(sample_rate) / fft_length * np.arange(x.shape[0])

    return x, freqs


def spectrogram_from_file(filename, step=10, window=20, max_freq=None,
                          eps=1e-14):
    with soundfile.SoundFile(filename) as sound_file:
        audio = sound_file.read(dtype='float32')
        sample_rate = sound_file.samplerate
        if audio.ndim >= 2:
            audio = np.mean(audio, 1)
        if max_freq is None:
            max_freq = sample_rate / 2
        if max_freq > sample_rate / 2:
            raise ValueError("max_freq must not be greater than half of "
                             " sample rate")
        if step > window:
            raise ValueError("step size must not be greater than window size")
        hop_length = int(0.001 * step * sample_rate)
        fft_length = int(0.001 * window * sample_rate)
        pxx, freqs = spectrogram(
            audio, fft_length=fft_length, sample_rate=sample_rate,
            hop_length=hop_length)
        ind = np.where(freqs <= max_freq)[0][-1] + 1
    return np.transpose(np.log(pxx[:ind, :] + eps))


def text_to_int_sequence(text):
    """ Convert text to an integer sequence """
    int_sequence = []
    for c in text:
        if c == ' ':
            ch = char_map['<SPACE>']
        else:
            ch = char_map[c]
        int_sequence.append(ch)
    return int_sequence


# ----------------------------------------------------------------------------- data_generator.py
RNG_SEED = 123


class AudioGenerator():
    def __init__(self, step=10, window=20, max_freq=8000, mfcc_dim=13,
        minibatch_size=20, desc_file=None, spectrogram=True, max_duration=10.0,
        sort_by_duration=False):
        self.feat_dim = calc_feat_dim(window, max_freq)
        self.mfcc_dim = mfcc_dim
        self.feats_mean = np.zeros((self.feat_dim,))
        self.feats_std = np.ones((self.feat_dim,))
        self.rng = random.Random(RNG_SEED)
        if desc_file is not None:
            self.load_metadata_from_desc_file(desc_file)
        self.step = step
        self.window = window
        self.max_freq = max_freq
        self.cur_train_index = 0
        self.cur_valid_index = 0
        self.cur_test_index = 0
        self.max_duration=max_duration
        self.minibatch_size = int(minibatch_size)
        self.spectrogram = spectrogram
        self.sort_by_duration = sort_by_duration

    def get_batch(self, partition):
        """ Obtain a batch of train, validation, or test data
        """
        if partition == 'train':
            audio_paths = self.train_audio_paths
            cur_index = self.cur_train_index
            texts = self.train_texts
        elif partition == 'valid':
            audio_paths = self.valid_audio_paths
            cur_index = self.cur_valid_index
            texts = self.valid_texts
        else:
            raise Exception("Invalid partition. "
                "Must be train/validation")

        features = [self.normalize(self.featurize(a)) for a in
            audio_paths[cur_index:cur_index+self.minibatch_size]]

        # calculate necessary sizes
        max_length = max([features[i].shape[0]
            for i in range(0, self.minibatch_size)])
        max_string_length = max([len(texts[cur_index+i])
            for i in range(0, self.minibatch_size)])

        # initialize the arrays
        X_data = np.zeros([self.minibatch_size, max_length,
            self.feat_dim*self.spectrogram + self.mfcc_dim*(not self.spectrogram)])
        labels = np.ones([self.minibatch_size, max_string_length]) * 28
        input_length = np.zeros([self.minibatch_size, 1])
        label_length = np.zeros([self.minibatch_size, 1])

        for i in range(0, self.minibatch_size):
            # calculate X_data & input_length
            feat = features[i]
            input_length[i] = feat.shape[0]
            X_data[i, :feat.shape[0], :] = feat

            # calculate labels & label_length
            label = np.array(text_to_int_sequence(texts[cur_index+i]))
            labels[i, :len(label)] = label
            label_length[i] = len(label)

        # return the arrays
        outputs = {'ctc': np.zeros([self.minibatch_size])}
        inputs = {'the_input': X_data,
                  'the_labels': labels,
                  'input_length': input_length,
                  'label_length': label_length
                 }
        return (inputs, outputs)

    def shuffle_data_by_partition(self, partition):
        """ Shuffle the training or validation data
        """
        if partition == 'train':
            self.train_audio_paths, self.train_durations, self.train_texts = shuffle_data(
                self.train_audio_paths, self.train_durations, self.train_texts)
        elif partition == 'valid':
            self.valid_audio_paths, self.valid_durations, self.valid_texts = shuffle_data(
                self.valid_audio_paths, self.valid_durations, self.valid_texts)
        else:
            raise Exception("Invalid partition. "
                "Must be train/validation")

    def sort_data_by_duration(self, partition):
        """ Sort the training or validation sets by (increasing) duration
        """
        if partition == 'train':
            self.train_audio_paths, self.train_durations, self.train_texts = sort_data(
                self.train_audio_paths, self.train_durations, self.train_texts)
        elif partition == 'valid':
            self.valid_audio_paths, self.valid_durations, self.valid_texts = sort_data(
                self.valid_audio_paths, self.valid_durations, self.valid_texts)
        else:
            raise Exception("Invalid partition. "
                "Must be train/validation")

    def next_train(self):
        """ Obtain a batch of training data
        """
        while True:
            ret = self.get_batch('train')
            self.cur_train_index += self.minibatch_size
            if self.cur_train_index >= len(self.train_texts) - self.minibatch_size:
                self.cur_train_index = 0
                self.shuffle_data_by_partition('train')
            yield ret

    def next_valid(self):
        """ Obtain a batch of validation data
        """
        while True:
            ret = self.get_batch('valid')
            self.cur_valid_index += self.minibatch_size
            if self.cur_valid_index >= len(self.valid_texts) - self.minibatch_size:
                self.cur_valid_index = 0
                self.shuffle_data_by_partition('valid')
            yield ret

    def load_train_data(self, desc_file='train_corpus.json'):
        self.load_metadata_from_desc_file(desc_file, 'train')
        self.fit_train()
        if self.sort_by_duration:
            self.sort_data_by_duration('train')

    def load_validation_data(self, desc_file='valid_corpus.json'):
        self.load_metadata_from_desc_file(desc_file, 'validation')
        if self.sort_by_duration:
            self.sort_data_by_duration('valid')

    def load_metadata_from_desc_file(self, desc_file, partition):
        audio_paths, durations, texts = [], [], []
        with open(desc_file) as json_line_file:
            for line_num, json_line in enumerate(json_line_file):
                try:
                    spec = json.loads(json_line)
                    if float(spec['duration']) > self.max_duration:
                        continue
                    audio_paths.append(os.path.join(DATA, spec['key']))
                    durations.append(float(spec['duration']))
                    texts.append(spec['text'])
                except Exception:
                    # Change to (KeyError, ValueError) or
                    # (KeyError,json.decoder.JSONDecodeError), depending on
                    # json module version
                    print('Error reading line #{}: {}'
                                .format(line_num, json_line))
        if partition == 'train':
            self.train_audio_paths = audio_paths
            self.train_durations = durations
            self.train_texts = texts
        elif partition == 'validation':
            self.valid_audio_paths = audio_paths
            self.valid_durations = durations
            self.valid_texts = texts
        else:
            raise Exception("Invalid partition to load metadata. "
             "Must be train/validation/test")

    def fit_train(self, k_samples=100):
        """ Estimate the mean and std of the features from the training set
        Params:
            k_samples (int): Use this number of samples for estimation
        """
        k_samples = min(k_samples, len(self.train_audio_paths))
        samples = self.rng.sample(self.train_audio_paths, k_samples)
        feats = [self.featurize(s) for s in samples]
        feats = np.vstack(feats)
        self.feats_mean = np.mean(feats, axis=0)
        self.feats_std = np.std(feats, axis=0)

    def featurize(self, audio_clip):
        """ For a given audio clip, calculate the corresponding feature
        Params:
            audio_clip (str): Path to the audio clip
        """
        return spectrogram_from_file(
            audio_clip, step=self.step, window=self.window,
            max_freq=self.max_freq)

    def normalize(self, feature, eps=1e-14):
        """ Center a feature using the mean and std
        Params:
            feature (numpy.ndarray): Feature to normalize
        """
        return (feature - self.feats_mean) / (self.feats_std + eps)


def shuffle_data(audio_paths, durations, texts):
    p = np.random.permutation(len(audio_paths))
    audio_paths = [audio_paths[i] for i in p]
    durations = [durations[i] for i in p]
    texts = [texts[i] for i in p]
    return audio_paths, durations, texts


def sort_data(audio_paths, durations, texts):
    p = np.argsort(durations).tolist()
    audio_paths = [audio_paths[i] for i in p]
    durations = [durations[i] for i in p]
    texts = [texts[i] for i in p]
    return audio_paths, durations, texts


# ----------------------------------------------------------------------------- sample_models.py
def cnn_output_length(input_length, filter_size, border_mode, stride,
                       dilation=1):
    if input_length is None:
        return None
    assert border_mode in {'same', 'valid'}
    dilated_filter_size = filter_size + (filter_size - 1) * (dilation - 1)
    if border_mode == 'same':
        output_length = input_length
    elif border_mode == 'valid':
        output_length = input_length - dilated_filter_size + 1
    return (output_length + stride - 1) // stride


def final_model(input_dim, filters, kernel_size, conv_stride,
    conv_border_mode, units, output_dim=29):

    input_data = Input(name='the_input', shape=(None, input_dim))

    x = Conv1D(filters, kernel_size,
                     strides=conv_stride,
                     padding=conv_border_mode,
                     activation='relu',
                     name='conv1d')(input_data)
    x = BatchNormalization(name='bn_conv')(x)

    for i in range(2):
        x = Bidirectional(GRU(units, activation='relu',
                return_sequences=True, implementation=2), name=f'bi_rnn_{i+1}')(x)
        x = BatchNormalization(name=f'bn_bi_rnn_{i+1}')(x)

    x = Dense(25, name='td_dense_1')(x)  # TimeDistributed(Dense(200)) in the source: see Changed
    x = Dense(output_dim, name='td_dense_2')(x)
    y_pred = Activation('softmax', name='softmax')(x)

    model = Model(inputs=input_data, outputs=y_pred)
    model.output_length = lambda x: cnn_output_length(
        x, kernel_size, conv_border_mode, conv_stride)

    print(model.summary())

    return model


# ----------------------------------------------------------------------------- train_utils.py
def ctc_lambda_func(args):
    y_pred, labels, input_length, label_length = args
    return K.ctc_batch_cost(labels, y_pred, input_length, label_length)


def add_ctc_loss(input_to_softmax):
    the_labels = Input(name='the_labels', shape=(None,), dtype='float32')
    input_lengths = Input(name='input_length', shape=(1,), dtype='int64')
    label_lengths = Input(name='label_length', shape=(1,), dtype='int64')
    output_lengths = Lambda(input_to_softmax.output_length)(input_lengths)
    # CTC loss is implemented in a lambda layer
    loss_out = Lambda(ctc_lambda_func, output_shape=(1,), name='ctc')(
        [input_to_softmax.output, the_labels, output_lengths, label_lengths])
    model = Model(
        inputs=[input_to_softmax.input, the_labels, input_lengths, label_lengths],
        outputs={'ctc': loss_out})
    return model


def train_model(input_to_softmax,
                pickle_path,
                save_model_path,
                train_json='train_corpus.json',
                valid_json='valid_corpus.json',
                minibatch_size=100,
                spectrogram=True,
                mfcc_dim=13,
                optimizer=SGD(learning_rate=InverseTimeDecay(0.01, 1, 1e-6), momentum=0.9, nesterov=True, clipnorm=5),  # noqa: B008
                epochs=3,
                verbose=1,
                sort_by_duration=False,
                max_duration=10.0):

    # create a class instance for obtaining batches of data
    audio_gen = AudioGenerator(minibatch_size=minibatch_size,
        spectrogram=spectrogram, mfcc_dim=mfcc_dim, max_duration=max_duration,
        sort_by_duration=sort_by_duration)
    # add the training data to the generator
    audio_gen.load_train_data(os.path.join(DATA, train_json))
    audio_gen.load_validation_data(os.path.join(DATA, valid_json))
    # calculate steps_per_epoch
    num_train_examples=len(audio_gen.train_audio_paths)
    steps_per_epoch = num_train_examples//minibatch_size
    # calculate validation_steps
    num_valid_samples = len(audio_gen.valid_audio_paths)
    validation_steps = num_valid_samples//minibatch_size

    # add CTC loss to the NN specified in input_to_softmax
    model = add_ctc_loss(input_to_softmax)

    # CTC loss is implemented elsewhere, so use a dummy lambda function for the loss
    model.compile(loss={'ctc': lambda y_true, y_pred: y_pred}, optimizer=optimizer)

    # make results/ directory, if necessary
    if not os.path.exists(OUT):
        os.makedirs(OUT)

    # add checkpointer
    checkpointer = ModelCheckpoint(filepath=os.path.join(OUT, save_model_path), verbose=0)

    # train the model
    hist = model.fit(audio_gen.next_train(), steps_per_epoch=steps_per_epoch,
        epochs=epochs, validation_data=audio_gen.next_valid(), validation_steps=validation_steps,
        callbacks=[checkpointer], verbose=verbose)

    # save model loss
    with open(os.path.join(OUT, pickle_path), 'wb') as f:
        pickle.dump(hist.history, f)


# ----------------------------------------------------------------------------- vui_notebook.ipynb, cells 38 and 40
if __name__ == "__main__":
    # specify the model
    model_end = final_model(input_dim=161, # change to 13 if you would like to use MFCC features
                            filters=25,
                            kernel_size=11,
                            conv_stride=2,
                            conv_border_mode='valid',
                            units=25)

    train_model(input_to_softmax=model_end,
                pickle_path='model_end.pickle',
                save_model_path='model_end.keras',
                spectrogram=True) # change to False if you would like to use MFCC features
