"""Keyword spotting on the 35 words of Speech Commands v0.02, training: notebooks/03_CNN_bo_fc.ipynb of
danieleninni/small-footprint-keyword-spotting (sections 1, 2 and 4.0-4.1: the best model after the Bayesian
optimisation), a CNN (custom_cnn_simple) on 99x40 log Mel-filterbank energies, fitted on the tf.data pipeline of
utils/preprocessing_utils.py's create_dataset: file names and classes from_tensor_slices, a numpy_function map
(num_parallel_calls=os.cpu_count()) reading each WAV with scipy's wavfile.read and padding/trimming it to 16000 samples,
cache to a file, a whole-set shuffle, repeat, then (training) a numpy_function map mixing in a random crop of a random
background noise, and a numpy_function map computing the log Mel-filterbank energies with python_speech_features'
logfbank, both serial; batch 32, prefetch(1) (validation: the features computed before its file cache).

Source: https://github.com/danieleninni/small-footprint-keyword-spotting at 8bbe267c2e671a158930592a2cbc95fef14a58e5
(notebooks/03_CNN_bo_fc.ipynb, utils/preprocessing_utils.py). Re-written here in the source's structure and order, not
copied: the notebook lists the command folders of data/full_speech_commands (tf.io.gfile.listdir, the lists, licence,
archive and _background_noise_ masked out, sorted), reads training_list.txt, validation_list.txt and testing_list.txt
("label/file" rows) into DataFrames with a 'class' column (the word's index), loads the six background noises with
preprocessing_utils.load_data into noise_dict, and builds train_dataset (create_dataset(reference_df_train, is_train=
True, cache_file='train_cache', shuffle=True, apply_background_noise=True, noise_dict=noise_dict, noise_reduction=0.5,
features=2, batch_size=32)), val_dataset and test_dataset (is_train=False, cache files 'val_cache' / 'test_cache', no
noise; the test set unshuffled). create_dataset maps tf.numpy_function(load_and_preprocess_data) over (file, class,
data path) with num_parallel_calls=os.cpu_count(); for training it caches to the file, shuffles with buffer_size=len(df)
and repeats, then maps tf.numpy_function(background_noise, [data, -1, -1, noise_reduction, *noise_list]) (the six
noises as tensors, passed to every call; the map is added when ``apply_background_noise and np.random.uniform() < 0.8``,
drawn once when the pipeline is built) and tf.numpy_function(get_logfbank) (framing at 25 ms / 10 ms, 512-point FFT,
40 mel filters from 300 Hz, log, transposed), both without num_parallel_calls; for validation and test the feature map
comes first, then cache, shuffle and repeat; then batch(32) and prefetch(buffer_size=1), steps ceil(len(df) / 32).
Section 4.0 builds custom_cnn_simple((99, 40), 48, 32, 8, 3, 2, 0.3, 128, 64, 5, 5, 3, 1, 0.3, 0.2, 0.01) (Reshape to
99x40x1, BatchNormalization, two Conv2D 8x3 blocks of 48 and 32 filters with BatchNormalization, ReLU, 2x2 max-pooling
and Dropout 0.3, two Conv2D 5x5 blocks of 128 and 64 with (3,1) and (1,1) pooling in time and Dropout 0.3, Flatten,
Dropout 0.2, Dense 256 with BatchNormalization and ReLU, Dense 35 softmax), compiled again with Adam and sparse
categorical cross-entropy; 4.1 fits it 30 epochs (``model.fit(train_dataset, epochs=30, steps_per_epoch=train_steps,
validation_data=val_dataset, validation_steps=val_steps, callbacks=[EarlyStopping(val_loss, patience 5),
ModelCheckpoint('trained_models/custom_cnn_simple.h5', save_best_only), ReduceLROnPlateau(val_loss, patience 3)])``).

Changed: data path (``$DOCTOR_SCRIPTS_DATA/kws_logfbank/data/full_speech_commands``: 26 generated clips of each of the
35 words, 910 for 105829, about a tenth in each of the validation and testing lists, six 20 s noise files); the cache
files 'train_cache' / 'val_cache' / 'test_cache' in a fresh temporary folder (as on the notebook's first run, and as
its training_and_testing removes them first); epochs 3 for 30; the CNN's filters and its Dense width a quarter of the source's (12/8/32/16 for
48/32/128/64, Dense 64 for 256); np.random.seed(0) before the pipelines are built, so the
once-drawn ``np.random.uniform() < 0.8`` keeps the noise map (as it does four times in five); scipy.io.wavfile.read
as a wave-module reader of the 16-bit PCM clips (int16 arrays, as wavfile returns them), python_speech_features'
logfbank re-written with NumPy as it works (pre-emphasis 0.97, zero-padded frames, power spectrum / NFFT, its
triangular mel filterbank built on each call, floored at eps, log); the Colab cells (pip, wget, get_file download,
requests for training_list.txt, GPU check), the prints and DataFrame displays, visualkeras, the Bayesian optimisation
(section 3, 30 fits of 20 epochs under gp_minimize), the plots and the evaluation after the fit left out; what the
features=2 run never calls (get_mfcc, get_spectrogram, get_dwt and the pywt import, random_time_shift) left out;
Keras 3: the checkpoint to custom_cnn_simple.keras in a temporary folder, and the feature map's numpy_function output
given its (40, 99) shape by tf.ensure_shape inside the same map function (Keras 2's Sequential took the unknown-rank
tensor; Keras 3's raises on it). As in the source, get_logfbank returns the features transposed (40 x 99) and the
model's Reshape takes them as 99 x 40 (a reshape, not a transpose).
"""

import os
import pathlib
import tempfile
import wave

import numpy as np
import pandas as pd
import tensorflow as tf

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "kws_logfbank")
OUT = tempfile.mkdtemp(prefix="kws_logfbank_")


# ----------------------------------------------------------------------------- scipy and python_speech_features
class wavfile:
    @staticmethod
    def read(filename):
        with wave.open(str(filename), "rb") as w:
            rate = w.getframerate()
            data = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
        return rate, data


def _hz2mel(hz):
    return 2595 * np.log10(1 + hz / 700.)


def _mel2hz(mel):
    return 700 * (10 ** (mel / 2595.0) - 1)


def _get_filterbanks(nfilt=20, nfft=512, samplerate=16000, lowfreq=0, highfreq=None):
    highfreq = highfreq or samplerate / 2
    lowmel = _hz2mel(lowfreq)
    highmel = _hz2mel(highfreq)
    melpoints = np.linspace(lowmel, highmel, nfilt + 2)
    bin = np.floor((nfft + 1) * _mel2hz(melpoints) / samplerate)
    fbank = np.zeros([nfilt, nfft // 2 + 1])
    for j in range(0, nfilt):
        for i in range(int(bin[j]), int(bin[j + 1])):
            fbank[j, i] = (i - bin[j]) / (bin[j + 1] - bin[j])
        for i in range(int(bin[j + 1]), int(bin[j + 2])):
            fbank[j, i] = (bin[j + 2] - i) / (bin[j + 2] - bin[j + 1])
    return fbank


def _framesig(sig, frame_len, frame_step):
    slen = len(sig)
    frame_len = int(round(frame_len))
    frame_step = int(round(frame_step))
    if slen <= frame_len:
        numframes = 1
    else:
        numframes = 1 + int(np.ceil((1.0 * slen - frame_len) / frame_step))
    padlen = int((numframes - 1) * frame_step + frame_len)
    padsignal = np.concatenate((sig, np.zeros((padlen - slen,))))
    indices = np.tile(np.arange(0, frame_len), (numframes, 1)) + np.tile(
        np.arange(0, numframes * frame_step, frame_step), (frame_len, 1)).T
    frames = padsignal[indices.astype(np.int32, copy=False)]
    win = np.tile(np.ones((frame_len,)), (numframes, 1))
    return frames * win


def logfbank(signal, samplerate=16000, winlen=0.025, winstep=0.01, nfilt=26, nfft=512, lowfreq=0, highfreq=None,
             preemph=0.97):
    highfreq = highfreq or samplerate / 2
    signal = np.append(signal[0], signal[1:] - preemph * signal[:-1])
    frames = _framesig(signal, winlen * samplerate, winstep * samplerate)
    pspec = 1.0 / nfft * np.square(np.absolute(np.fft.rfft(frames, nfft)))
    fb = _get_filterbanks(nfilt, nfft, samplerate, lowfreq, highfreq)
    feat = np.dot(pspec, fb.T)
    feat = np.where(feat == 0, np.finfo(float).eps, feat)
    return np.log(feat)


# ----------------------------------------------------------------------------- utils/preprocessing_utils.py
commands = [
    'backward', 'bed', 'bird', 'cat', 'dog', 'down', 'eight', 'five', 'follow', 'forward', 'four', 'go', 'happy',
    'house', 'learn', 'left', 'marvin', 'nine', 'no', 'off', 'on', 'one', 'right', 'seven', 'sheila', 'six', 'stop',
    'three', 'tree', 'two', 'up', 'visual', 'wow', 'yes', 'zero'
]

label_to_class = {commands[i]: i for i in range(len(commands))}
class_to_label = {i: commands[i] for i in range(len(commands))}

data_path = os.path.join(DATA, 'data/full_speech_commands')


def load_data(file_name, file_label, data_path_=data_path):

    if isinstance(file_name, bytes):
        file_name = file_name.decode()
    if isinstance(file_label, bytes):
        file_label = file_label.decode()
    if isinstance(data_path_, bytes):
        data_path_ = data_path_.decode()

    if not isinstance(file_label, str):
        file_label = class_to_label[file_label]

    file_path = data_path_ + '/' + file_label + '/' + file_name
    _, data = wavfile.read(file_path)

    return data.squeeze()


def padding_trimming(data, output_sequence_length=16000):

    data_shape = data.shape[0]

    # trimming
    if data_shape > output_sequence_length:
        data = data[:output_sequence_length]

    # padding
    elif data_shape < output_sequence_length:
        tot_pad = output_sequence_length - data_shape
        pad_before = int(np.ceil(tot_pad / 2))
        pad_after = int(np.floor(tot_pad / 2))
        data = np.pad(data, pad_width=(pad_before, pad_after), mode='mean')

    return data


def background_noise(data, noise_dict, select_noise=None, noise_reduction=0.5, *args):

    # noise selection
    if (select_noise is None) or (select_noise == -1):
        select_noise = np.random.choice(np.arange(1, 7))  # random selection
    noise_data = args[select_noise - 1] if (noise_dict == -1) else noise_dict[str(select_noise)]

    # random cropping
    target_size = data.shape[0]
    noise_size = noise_data.shape[0]
    from_ = np.random.randint(0, int(noise_size - target_size))
    to_ = from_ + target_size
    noise_data = noise_data[from_:to_]

    # add noise to input audio
    data_with_noise = data + (1 - noise_reduction) * noise_data

    return data_with_noise.astype(np.float32)


def get_logfbank(
                signal,              # audio signal from which to compute features (N*1 array)
                samplerate=16000,    # samplerate of the signal we are working with
                winlen=25,           # length of the analysis window (milliseconds)
                winstep=10,          # step between successive windows (milliseconds)
                nfilt=40,            # number of filters in the filterbank
                nfft=512,            # FFT size
                lowfreq=300,         # lowest band edge of mel filters (Hz)
                highfreq=None,       # highest band edge of mel filters (Hz)
                ):

    if highfreq is None:
        highfreq = samplerate / 2

    # Extract log Mel-filterbank energy features
    logfbank_feat = logfbank(
                            signal,
                            samplerate,
                            winlen / 1000,
                            winstep / 1000,
                            nfilt,
                            nfft,
                            lowfreq,
                            highfreq,
                            )
    logfbank_feat = logfbank_feat.T

    return logfbank_feat.astype(np.float32)


def load_and_preprocess_data(file_name, file_label, data_path_=data_path):

    # load data
    data = load_data(file_name, file_label, data_path_=data_path_)

    # padding/trimming
    data = padding_trimming(data)

    # TensorFlow takes as input 32-bit floating point data
    return data.astype(np.float32)


def create_dataset(df, is_train=True, data_path_=data_path, cache_file=None, shuffle=True, apply_random_shift=False,
                   apply_background_noise=False, noise_dict=None, noise_reduction=0.5, features=1, batch_size=32):

    # Convert DataFrame to lists
    file_names = df['file'].tolist()
    file_labels = df['class'].tolist()

    # Create a Dataset object
    dataset = tf.data.Dataset.from_tensor_slices((file_names, file_labels))

    # Map the "load_and_preprocess_data" function
    dataset = dataset.map(lambda file_name, file_label: (tf.numpy_function(load_and_preprocess_data, [file_name, file_label, data_path_], tf.float32), file_label), num_parallel_calls=os.cpu_count())

    if is_train:

        # Cache
        if cache_file:
            dataset = dataset.cache(filename=cache_file)

        # Shuffle
        if shuffle:
            dataset = dataset.shuffle(buffer_size=len(df))

        # Repeat the dataset indefinitely
        dataset = dataset.repeat()

    # Map the "background_noise" function
    if apply_background_noise and np.random.uniform() < 0.8:
        noise_list = [tf.convert_to_tensor(noise, dtype=tf.float32) for noise in noise_dict.values()]
        dataset = dataset.map(lambda data, label: (tf.numpy_function(background_noise, [data, -1, -1, noise_reduction, *noise_list], tf.float32), label))

    # Extract features
    if features == 2:
        dataset = dataset.map(lambda data, label: (tf.ensure_shape(tf.numpy_function(get_logfbank, [data], tf.float32), (40, 99)), label))

    if not is_train:

        # Cache
        if cache_file:
            dataset = dataset.cache(filename=cache_file)

        # Shuffle
        if shuffle:
            dataset = dataset.shuffle(buffer_size=len(df))

        # Repeat the dataset indefinitely
        dataset = dataset.repeat()

    # Batch
    dataset = dataset.batch(batch_size=batch_size)

    # Prefetch
    dataset = dataset.prefetch(buffer_size=1)

    # Steps
    steps = int(np.ceil(len(df) / batch_size))

    return dataset, steps


# ----------------------------------------------------------------------------- notebooks/03_CNN_bo_fc.ipynb
np.random.seed(0)

# 1 - Data loading
DATASET_PATH_full = os.path.join(DATA, 'data/full_speech_commands')
data_dir_full = pathlib.Path(DATASET_PATH_full)
data_dir = data_dir_full
data_path = DATASET_PATH_full
print('Working with the full dataset!')

# 1.1 - Dataset organization
commands = np.array(tf.io.gfile.listdir(str(data_dir)))
mask = (
    np.array(commands != 'README.md') &
    np.array(commands != 'LICENSE') &
    np.array(commands != '.DS_Store') &
    np.array(commands != 'training_list.txt') &
    np.array(commands != 'validation_list.txt') &
    np.array(commands != 'testing_list.txt') &
    np.array(commands != 'full_speech_commands.zip') &
    np.array(commands != '_background_noise_')
)
commands = sorted(commands[mask])
print('Commands:', commands)
print('\nNumber of commands: %i' % len(commands))

# 1.3 - Training, testing and validation sets
training_list_path = data_path + "/training_list.txt"

reference_df_val = pd.read_csv(data_path + "/validation_list.txt", sep="/", header=None, names=['label', 'file'])
reference_df_test = pd.read_csv(data_path + "/testing_list.txt", sep="/", header=None, names=['label', 'file'])

# all audio files
all_files = {}
for command in commands:
    all_files[command] = os.listdir(data_path + '/' + command)

num_files = 0
for x_ in all_files.values():
    num_files += len(x_)

print('There are %i audio files in the dataset' % num_files)

reference_df_train = pd.read_csv(data_path + "/training_list.txt", sep="/", header=None, names=['label', 'file'])

label_to_class = {commands[i]: i for i in range(len(commands))}
class_to_label = {i: commands[i] for i in range(len(commands))}

reference_df_train['class'] = reference_df_train['label'].map(label_to_class)
reference_df_val['class'] = reference_df_val['label'].map(label_to_class)
reference_df_test['class'] = reference_df_test['label'].map(label_to_class)

# 1.4 Noise loading
noise_path = '_background_noise_'

# load all noises
noise_1 = load_data('doing_the_dishes.wav', noise_path)
noise_2 = load_data('dude_miaowing.wav', noise_path)
noise_3 = load_data('exercise_bike.wav', noise_path)
noise_4 = load_data('pink_noise.wav', noise_path)
noise_5 = load_data('running_tap.wav', noise_path)
noise_6 = load_data('white_noise.wav', noise_path)

noise_dict = {
    '1': noise_1,
    '2': noise_2,
    '3': noise_3,
    '4': noise_4,
    '5': noise_5,
    '6': noise_6
}

# 2.3 - Dataset initialization
apply_bn = True
noise_red = 0.5
features_to_extract = 2  # for log Mel-filterbank energy features
batch_size = 32

train_dataset, train_steps = create_dataset(
    reference_df_train,
    is_train=True,
    cache_file=os.path.join(OUT, 'train_cache'),
    shuffle=True,
    apply_background_noise=apply_bn,
    noise_dict=noise_dict,
    noise_reduction=noise_red,
    features=features_to_extract,
    batch_size=batch_size
)

val_dataset, val_steps = create_dataset(
    reference_df_val,
    is_train=False,
    cache_file=os.path.join(OUT, 'val_cache'),
    shuffle=True,
    apply_background_noise=False,
    features=features_to_extract,
    batch_size=batch_size
)

# important! shuffle=False
test_dataset, test_steps = create_dataset(
    reference_df_test,
    is_train=False,
    cache_file=os.path.join(OUT, 'test_cache'),
    shuffle=False,
    apply_background_noise=False,
    features=features_to_extract,
    batch_size=batch_size
)

# 3.1 - Model definition
features_to_input = {  # input shapes
    1: (99, 39),     # MFCC features with delta
    2: (99, 40),     # log Mel-filterbank energy features
    3: (98, 257),    # spectrogram
    4: (49, 39),     # Discrete Wavelet Transform + MFCC features
    5: (99, 13)      # MFCC features no delta
}

input_shape = features_to_input[features_to_extract]


def custom_cnn_simple(
    input_shape,
    nf_sp_1, nf_sp_2, nk_sp_l, nk_sp_r, mp_sp, dp_sp,
    nf_tp_1, nf_tp_2, nk_tp_l, nk_tp_r, mp_tp_1, mp_tp_2, dp_tp,
    dp_fc, lr
):
    '''
      4 cnn blocks, 2x pooling, 2x pooling in time
    '''

    model = tf.keras.models.Sequential(name='custom_cnn')

    model.add(tf.keras.layers.Reshape(input_shape=input_shape, target_shape=(input_shape[0], input_shape[1], 1)))
    model.add(tf.keras.layers.BatchNormalization())

    filters_pool = [nf_sp_1, nf_sp_2]

    for num_filters in filters_pool:

        model.add(tf.keras.layers.Conv2D(num_filters, kernel_size=(nk_sp_l, nk_sp_r), padding='same'))
        model.add(tf.keras.layers.BatchNormalization())
        model.add(tf.keras.layers.Activation('relu'))

        model.add(tf.keras.layers.MaxPooling2D(pool_size=(mp_sp, mp_sp)))
        model.add(tf.keras.layers.Dropout(dp_sp))

    filters_pool_in_time = [nf_tp_1, nf_tp_2]

    for p, num_filters in zip([mp_tp_1, mp_tp_2], filters_pool_in_time):

        model.add(tf.keras.layers.Conv2D(num_filters, kernel_size=(nk_tp_l, nk_tp_r), padding='same'))
        model.add(tf.keras.layers.BatchNormalization())
        model.add(tf.keras.layers.Activation('relu'))

        model.add(tf.keras.layers.MaxPooling2D(pool_size=(p, 1)))
        model.add(tf.keras.layers.Dropout(dp_tp))

    model.add(tf.keras.layers.Flatten())
    model.add(tf.keras.layers.Dropout(dp_fc))
    model.add(tf.keras.layers.Dense(64))
    model.add(tf.keras.layers.BatchNormalization())
    model.add(tf.keras.layers.Activation('relu'))
    model.add(tf.keras.layers.Dense(35, activation='softmax'))

    model.compile(loss='sparse_categorical_crossentropy',
                  optimizer=tf.keras.optimizers.Adam(learning_rate=lr),
                  metrics=["sparse_categorical_accuracy"])

    return model


model_name = 'custom_cnn_simple'

# 4.0 - Best model import
bo_params_redefined = [12, 8, 8, 3, 2, 0.3, 32, 16, 5, 5, 3, 1, 0.3, 0.2, 0.01]

model = custom_cnn_simple(input_shape, *bo_params_redefined)
model_name = 'custom_cnn_simple'

model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["sparse_categorical_accuracy"])
model.summary()

# 4.1 - Model training
import time  # noqa: E402

start_time = time.time()

num_epochs = 3

early_stop_callback = tf.keras.callbacks.EarlyStopping(monitor='val_loss', patience=5)

reduce_LR = tf.keras.callbacks.ReduceLROnPlateau(monitor='val_loss', patience=3, verbose=1)

model_checkpoint = tf.keras.callbacks.ModelCheckpoint(os.path.join(OUT, f'{model_name}.keras'), monitor='val_loss',
                                                      save_best_only=True)

history = model.fit(
                train_dataset,
                epochs=num_epochs,
                steps_per_epoch=train_steps,
                validation_data=val_dataset,
                validation_steps=val_steps,
                callbacks=[early_stop_callback, model_checkpoint, reduce_LR],
                verbose=1
                )

print("\n--- Training time: %s seconds ---" % (time.time() - start_time))
