"""FIXED COPY (the one fix: cache() after the deterministic feature maps, so the MFCCs are computed once).

MLPerf Tiny keyword spotting (DS-CNN), training script (tf.data with TensorFlow ops, no cache).

Source: https://github.com/mlcommons/tiny/tree/master/v0.1/training/keyword_spotting (get_dataset.py at
0be7052ea5b429179ad540881ee24083a269ff24; train.py, keras_model.py and kws_util.py of the same folder).
Kept as written: get_preprocess_audio_func (normalise, pad, time shift, STFT, log-mel, MFCC with TensorFlow
ops), convert_dataset and the body of get_training_data (map with num_parallel_calls=AUTOTUNE, then
convert_dataset, then batch; no cache, no prefetch), the DS-CNN of keras_model.py compiled with Adam and
sparse categorical cross-entropy, and train.py's model.fit(ds_train, validation_data=ds_val, epochs=...,
callbacks=...).

Changed: tensorflow_datasets is not installed and nothing can be downloaded: ``tfds.load('speech_commands')``
becomes ``load_split``, the same dicts of int16 audio and int64 label read from generated 16 kHz WAV files
(``$DOCTOR_SCRIPTS_DATA/kws_tiny/{train,validation}/<word>/*.wav``, 10 words) with tf.io.read_file and
tf.audio.decode_wav; no background-noise folder (its augmentation is off, as in the repository when
_background_noise_ is absent); the flags are a Namespace with the repository's defaults (batch 100,
window 30 ms, stride 20 ms, 10 MFCCs) except epochs 36 -> 3 and 10 labels instead of 12; the DS-CNN keeps
its layers with 32 filters instead of 64, AveragePooling2D (24, 5) where keras_model.py has (25, 5), the
metric 'accuracy' for SparseCategoricalAccuracy() (DepthwiseConv2D's kernel_regularizer is depthwise_regularizer
in Keras 3); the callbacks (a learning-rate schedule) kept, plotting left out.
"""
# ruff: noqa: B006, B007  (the source's code, kept as written)

import argparse
import os

import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "kws_tiny")
word_labels = ["down", "go", "left", "no", "off", "on", "right", "stop", "up", "yes"]


def convert_dataset(item):
    """Puts the mnist dataset in the format Keras expects, (features, labels)."""
    audio = item['audio']
    label = item['label']
    return audio, label


def get_preprocess_audio_func(model_settings, is_training=False, background_data=[]):
    def prepare_processing_graph(next_element):
        desired_samples = model_settings['desired_samples']

        wav_decoder = tf.cast(next_element['audio'], tf.float32)
        wav_decoder = wav_decoder/tf.reduce_max(wav_decoder)
        wav_decoder = tf.pad(wav_decoder, [[0, desired_samples-tf.shape(wav_decoder)[-1]]])
        # Allow the audio sample's volume to be adjusted.
        foreground_volume_placeholder_ = tf.constant(1, dtype=tf.float32)

        scaled_foreground = tf.multiply(wav_decoder,
                                        foreground_volume_placeholder_)
        # Shift the sample's start position, and pad any gaps with zeros.
        time_shift_padding_placeholder_ = tf.constant([[2, 2]], tf.int32)
        time_shift_offset_placeholder_ = tf.constant([2], tf.int32)
        padded_foreground = tf.pad(scaled_foreground, time_shift_padding_placeholder_, mode='CONSTANT')
        sliced_foreground = tf.slice(padded_foreground, time_shift_offset_placeholder_, [desired_samples])

        stfts = tf.signal.stft(sliced_foreground, frame_length=model_settings['window_size_samples'],
                               frame_step=model_settings['window_stride_samples'], fft_length=None,
                               window_fn=tf.signal.hann_window
                               )
        spectrograms = tf.abs(stfts)
        num_spectrogram_bins = stfts.shape[-1]
        lower_edge_hertz, upper_edge_hertz, num_mel_bins = 20.0, 4000.0, 40
        linear_to_mel_weight_matrix = tf.signal.linear_to_mel_weight_matrix(
            num_mel_bins, num_spectrogram_bins, model_settings['sample_rate'], lower_edge_hertz, upper_edge_hertz)
        mel_spectrograms = tf.tensordot(spectrograms, linear_to_mel_weight_matrix, 1)
        mel_spectrograms.set_shape(spectrograms.shape[:-1].concatenate(linear_to_mel_weight_matrix.shape[-1:]))
        # Compute a stabilized log to get log-magnitude mel-scale spectrograms.
        log_mel_spectrograms = tf.math.log(mel_spectrograms + 1e-6)
        # Compute MFCCs from log_mel_spectrograms and take the first 13.
        mfccs = tf.signal.mfccs_from_log_mel_spectrograms(log_mel_spectrograms)[..., :model_settings['dct_coefficient_count']]
        mfccs = tf.reshape(mfccs, [model_settings['spectrogram_length'], model_settings['dct_coefficient_count'], 1])
        next_element['audio'] = mfccs
        return next_element

    return prepare_processing_graph


def load_split(split):
    """Replaces tfds.load('speech_commands', split=...): {'audio': int16 [n], 'label': int64}."""
    files, labels = [], []
    for k, word in enumerate(word_labels):
        folder = os.path.join(DATA, split, word)
        for name in sorted(os.listdir(folder)):
            files.append(os.path.join(folder, name))
            labels.append(k)

    def read(path, label):
        audio, _ = tf.audio.decode_wav(tf.io.read_file(path))
        return {'audio': tf.cast(audio[:, 0] * 32768.0, tf.int16), 'label': label}

    ds = tf.data.Dataset.from_tensor_slices((files, tf.constant(labels, tf.int64)))
    return ds.shuffle(len(files), seed=0, reshuffle_each_iteration=False).map(read)


def prepare_model_settings(label_count, sample_rate, clip_duration_ms, window_size_ms, window_stride_ms,
                           dct_coefficient_count, background_frequency):
    desired_samples = int(sample_rate * clip_duration_ms / 1000)
    window_size_samples = int(sample_rate * window_size_ms / 1000)
    window_stride_samples = int(sample_rate * window_stride_ms / 1000)
    length_minus_window = (desired_samples - window_size_samples)
    spectrogram_length = 1 + int(length_minus_window / window_stride_samples)
    return {'desired_samples': desired_samples, 'window_size_samples': window_size_samples,
            'window_stride_samples': window_stride_samples, 'spectrogram_length': spectrogram_length,
            'dct_coefficient_count': dct_coefficient_count, 'fingerprint_size': dct_coefficient_count * spectrogram_length,
            'label_count': label_count, 'sample_rate': sample_rate, 'background_frequency': background_frequency}


def get_training_data(Flags):
    spectrogram_length = int((Flags.clip_duration_ms - Flags.window_size_ms +
                              Flags.window_stride_ms) / Flags.window_stride_ms)
    model_settings = prepare_model_settings(len(word_labels), Flags.sample_rate, Flags.clip_duration_ms,
                                            Flags.window_size_ms, Flags.window_stride_ms,
                                            Flags.dct_coefficient_count, Flags.background_frequency)
    assert model_settings['spectrogram_length'] == spectrogram_length
    background_data = []

    ds_train, ds_val = load_split('train'), load_split('validation')

    # extract spectral features and add background noise
    ds_train = ds_train.map(get_preprocess_audio_func(model_settings, is_training=True,
                                                      background_data=background_data),
                            num_parallel_calls=tf.data.experimental.AUTOTUNE)
    ds_val = ds_val.map(get_preprocess_audio_func(model_settings, is_training=False,
                                                  background_data=background_data),
                        num_parallel_calls=tf.data.experimental.AUTOTUNE)
    # change output from a dictionary to a feature,label tuple
    ds_train = ds_train.map(convert_dataset).cache()
    ds_val = ds_val.map(convert_dataset).cache()

    # Now that we've acquired the preprocessed data, either by processing or loading,
    ds_train = ds_train.batch(Flags.batch_size)
    ds_val = ds_val.batch(Flags.batch_size)

    return ds_train, ds_val, model_settings


def get_model(args, model_settings):
    # keras_model.py, model_architecture == 'ds_cnn'
    input_shape = [model_settings['spectrogram_length'], model_settings['dct_coefficient_count'], 1]
    filters = 32
    weight_decay = 1e-4
    regularizer = keras.regularizers.l2(weight_decay)
    final_pool_size = (int(input_shape[0]/2), int(input_shape[1]/2))

    inputs = keras.Input(shape=input_shape)
    x = inputs
    x = layers.Conv2D(filters, (10, 4), strides=(2, 2), padding='same', kernel_regularizer=regularizer)(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation('relu')(x)
    x = layers.Dropout(rate=0.2)(x)
    for _ in range(4):
        x = layers.DepthwiseConv2D(depth_multiplier=1, kernel_size=(3, 3), padding='same',
                                   depthwise_regularizer=regularizer)(x)
        x = layers.BatchNormalization()(x)
        x = layers.Activation('relu')(x)
        x = layers.Conv2D(filters, (1, 1), padding='same', kernel_regularizer=regularizer)(x)
        x = layers.BatchNormalization()(x)
        x = layers.Activation('relu')(x)
    x = layers.Dropout(rate=0.4)(x)
    x = layers.AveragePooling2D(pool_size=final_pool_size)(x)
    x = layers.Flatten()(x)
    outputs = layers.Dense(model_settings['label_count'], activation='softmax')(x)

    model = keras.Model(inputs=inputs, outputs=outputs)
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=args.learning_rate),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=False),
                  metrics=["accuracy"])
    return model


def get_callbacks(args):
    def step_function_wrapper(batch_size):
        def step_function(epoch, lr):
            if epoch < 12:
                return 0.0005
            elif epoch < 24:
                return 0.0001
            elif epoch < 36:
                return 0.00002
            else:
                return 0.00001
        return step_function
    return [keras.callbacks.LearningRateScheduler(step_function_wrapper(args.batch_size), verbose=1)]


if __name__ == '__main__':
    Flags = argparse.Namespace(batch_size=100, clip_duration_ms=1000, window_size_ms=30.0, window_stride_ms=20.0,
                               dct_coefficient_count=10, sample_rate=16000, background_frequency=0.8,
                               background_volume=0.1, learning_rate=0.00001, epochs=3)

    ds_train, ds_val, model_settings = get_training_data(Flags)
    print("Done getting data")

    model = get_model(args=Flags, model_settings=model_settings)
    callbacks = get_callbacks(args=Flags)
    train_hist = model.fit(ds_train, validation_data=ds_val, epochs=Flags.epochs, callbacks=callbacks)
