"""FIXED COPY (the one fix: each clip's MFCC fingerprint computed once and kept in memory (deterministic with time_shift 0 and no background noise)).

Streaming keyword spotting, training loop (a custom loop: AudioProcessor.get_data + train_on_batch).

Source: https://github.com/google-research/google-research/blob/master/kws_streaming/train/train.py
(at 0c1bbe5fc971a1de1a427debc814e66ab4f1e7fa; AudioProcessor in kws_streaming/data/input_data.py).
Kept as written: the ``train(flags)`` loop: learning-rate schedule from how_many_training_steps /
learning_rate ('linear'), ``for training_step in range(start_step, training_steps_max + 1)``, the offset
from pick_deterministically, ``audio_processor.get_data(...)`` for each training batch, ``model.train_on_batch``,
the validation pass every eval_step_interval steps with ``get_data(..., 'validation', ...)`` and
``model.test_on_batch``, the best-accuracy bookkeeping, compile with SparseCategoricalCrossentropy(from_logits=True).

Changed: the TF1 session, summaries, tensorflow_addons' NovoGrad and the saving of weights and flags are left
out (Keras 3 / TF 2 has no tf.Session; tfa is not installed); ``AudioProcessor`` here reads the generated
WAV files (``$DOCTOR_SCRIPTS_DATA/kws_streaming/{train,validation}/<word>/*.wav``) with the ``wave`` module
and computes the log-mel MFCC fingerprint per example in NumPy (the original runs a TF1 graph per batch in
``sess.run``; same work per example, recomputed at every step); time_shift_ms=0 and background_frequency=0
(real flags of the script: with them the fingerprints are deterministic); pick_deterministically=1 so each
example is seen once per pass; how_many_training_steps = 3 passes over the training set, eval_step_interval =
one pass; the model is a small CNN in place of models.MODELS[flags.model_name]; set_value(model.optimizer.lr)
-> model.optimizer.learning_rate.assign (Keras 3).
"""

import argparse
import os
import wave

import numpy as np
import tensorflow as tf
from absl import logging

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "kws_streaming")
WORDS = ["down", "go", "left", "no", "off", "on", "right", "stop", "up", "yes"]


def _mel_matrix(n_mels, n_fft, sr, fmin=20.0, fmax=7600.0):
    mel = lambda f: 1127.0 * np.log1p(f / 700.0)  # noqa: E731
    edges = np.linspace(mel(fmin), mel(fmax), n_mels + 2)
    freqs = mel(np.linspace(0, sr / 2, n_fft // 2 + 1))
    lower, center, upper = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    return np.maximum(0, np.minimum((freqs - lower) / (center - lower), (upper - freqs) / (upper - center))).T


class AudioProcessor:
    """Reads WAVs and computes MFCC fingerprints for a batch on each get_data call."""

    def __init__(self, flags):
        self.data_index = {'training': [], 'validation': []}
        self.words_list = WORDS
        for mode, folder in (('training', 'train'), ('validation', 'validation')):
            for k, word in enumerate(WORDS):
                d = os.path.join(flags.data_dir, folder, word)
                for name in sorted(os.listdir(d)):
                    self.data_index[mode].append({'label': k, 'file': os.path.join(d, name)})
            np.random.RandomState(59185).shuffle(self.data_index[mode])
        self.desired_samples = int(flags.sample_rate * flags.clip_duration_ms / 1000)
        self.window = int(flags.sample_rate * flags.window_size_ms / 1000)
        self.stride = int(flags.sample_rate * flags.window_stride_ms / 1000)
        self.n_fft = 512
        self.mel = _mel_matrix(flags.mel_num_bins, self.n_fft, flags.sample_rate)
        n = flags.mel_num_bins
        self.dct = np.cos(np.pi / n * (np.arange(n)[:, None] + 0.5) * np.arange(flags.dct_num_features)[None, :])
        self.hann = np.hanning(self.window + 1)[:-1]
        self.fingerprints = {}

    def set_size(self, mode):
        return len(self.data_index[mode])

    def _fingerprint(self, path):
        if path not in self.fingerprints:  # the fix: each clip's fingerprint computed once
            self.fingerprints[path] = self._compute(path)
        return self.fingerprints[path]

    def _compute(self, path):
        with wave.open(path, 'rb') as w:
            x = np.frombuffer(w.readframes(w.getnframes()), '<i2').astype(np.float32) / 32768.0
        x = np.pad(x, (0, max(0, self.desired_samples - len(x))))[:self.desired_samples]
        n = 1 + (len(x) - self.window) // self.stride
        frames = np.stack([x[i * self.stride:i * self.stride + self.window] for i in range(n)]) * self.hann
        power = np.abs(np.fft.rfft(frames, self.n_fft)) ** 2
        return np.log(power @ self.mel + 1e-6) @ self.dct

    def get_data(self, how_many, offset, flags, background_frequency, background_volume_range,
                 time_shift, mode, resample_offset=0.0, volume_augmentation_offset=0.0, sess=None):
        candidates = self.data_index[mode]
        if how_many == -1:
            sample_count = len(candidates)
        else:
            sample_count = max(0, min(how_many, len(candidates) - offset))
        data, labels = [], []
        pick_deterministically = (mode != 'training') or flags.pick_deterministically
        for i in range(offset, offset + sample_count):
            if pick_deterministically:
                sample_index = i
            else:
                sample_index = np.random.randint(len(candidates))
            sample = candidates[sample_index]
            data.append(self._fingerprint(sample['file']))
            labels.append(sample['label'])
        return np.stack(data).astype(np.float32), np.array(labels)


def build_model(flags):
    L = tf.keras.layers
    inp = L.Input((49, flags.dct_num_features))
    x = L.Reshape((49, flags.dct_num_features, 1))(inp)
    x = L.Conv2D(16, (3, 3), activation='relu')(x)
    x = L.MaxPooling2D((2, 1))(x)
    x = L.Conv2D(16, (3, 3), activation='relu')(x)
    x = L.Flatten()(x)
    x = L.Dense(64, activation='relu')(x)
    return tf.keras.Model(inp, L.Dense(len(WORDS))(x))


def train(flags):
    """Model training."""

    flags.training = True
    audio_processor = AudioProcessor(flags)

    time_shift_samples = int((flags.time_shift_ms * flags.sample_rate) / 1000)

    training_steps_list = list(map(int, flags.how_many_training_steps.split(',')))
    learning_rates_list = list(map(float, flags.learning_rate.split(',')))
    if len(training_steps_list) != len(learning_rates_list):
        raise Exception(
            '--how_many_training_steps and --learning_rate must be equal length '
            'lists, but are %d and %d long instead' % (len(training_steps_list),
                                                       len(learning_rates_list)))
    model = build_model(flags)

    loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    optimizer = tf.keras.optimizers.Adam(epsilon=flags.optimizer_epsilon)
    model.compile(optimizer=optimizer, loss=loss, metrics=['accuracy'])

    start_step = 1
    logging.info('Training from step: %d ', start_step)
    best_accuracy = 0.0

    training_steps_max = np.sum(training_steps_list)

    # Training loop.
    for training_step in range(start_step, training_steps_max + 1):
        offset = ((training_step - 1) * flags.batch_size % audio_processor.set_size('training')
                  if flags.pick_deterministically else 0)
        # Pull the audio samples we'll use for training.
        train_fingerprints, train_ground_truth = audio_processor.get_data(
            flags.batch_size, offset, flags, flags.background_frequency,
            flags.background_volume, time_shift_samples, 'training',
            flags.resample, flags.volume_resample, None)

        # Figure out what the current learning rate is.
        training_steps_sum = 0
        for i in range(len(training_steps_list)):
            training_steps_sum += training_steps_list[i]
            if training_step <= training_steps_sum:
                learning_rate_value = learning_rates_list[i]
                break

        model.optimizer.learning_rate.assign(learning_rate_value)
        result = model.train_on_batch(train_fingerprints, train_ground_truth)

        logging.info(
            'Step #%d: rate %f, accuracy %.2f%%, cross entropy %f',
            *(training_step, learning_rate_value, result[1] * 100, result[0]))

        is_last_step = (training_step == training_steps_max)
        if (training_step % flags.eval_step_interval) == 0 or is_last_step:
            set_size = audio_processor.set_size('validation')
            set_size = int(set_size / flags.batch_size) * flags.batch_size
            total_accuracy = 0.0
            count = 0.0
            for i in range(0, set_size, flags.batch_size):
                validation_fingerprints, validation_ground_truth = (
                    audio_processor.get_data(flags.batch_size, i, flags, 0.0, 0.0, 0,
                                             'validation', 0.0, 0.0, None))

                result = model.test_on_batch(validation_fingerprints,
                                             validation_ground_truth)
                total_accuracy += result[1]
                count = count + 1.0

            total_accuracy = total_accuracy / count
            logging.info('Step %d: Validation accuracy = %.2f%% (N=%d)',
                         *(training_step, total_accuracy * 100, set_size))
            if total_accuracy >= best_accuracy:
                best_accuracy = total_accuracy
            logging.info('So far the best validation accuracy is %.2f%%',
                         (best_accuracy * 100))
    return best_accuracy


if __name__ == '__main__':
    logging.set_verbosity(logging.INFO)
    steps_per_pass = 1500 // 50  # 1500 training clips, batch 50
    flags = argparse.Namespace(
        data_dir=DATA, sample_rate=16000, clip_duration_ms=1000, window_size_ms=30.0,
        window_stride_ms=20.0, mel_num_bins=40, dct_num_features=10, batch_size=50,
        how_many_training_steps=f"{2 * steps_per_pass},{steps_per_pass}", learning_rate="0.001,0.0001",
        eval_step_interval=steps_per_pass, optimizer_epsilon=1e-08, time_shift_ms=0.0,
        background_frequency=0.0, background_volume=0.0, resample=0.0, volume_resample=0.0,
        pick_deterministically=1, lr_schedule='linear')
    train(flags)
