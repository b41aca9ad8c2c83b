"""FIXED COPY (the one fix: cache() after the deterministic py_function parse, so each record is parsed once).

Trigger-word detection, training: src/train.py of multrigger-word, a Conv1D + GRU sequence model fitted on a
tf.data pipeline that reads TFRecords and parses each record with two ``tf.py_function`` calls.

Source: https://github.com/tdjaballah/multrigger-word at 32f1e351693dbaced1fb33e0486bfd7e39a17a08 (src/train.py,
src/make_model.py; the settings of src/settings.py, the metrics of src/utils.py). Re-written here in the source's
structure and order, not copied: _extract_feature parses a serialized record with
``tf.train.Example.FromString(record.numpy())`` and returns one feature's float_list; parser reshapes the
``tf.py_function`` of it for 'X' to (TX, FX) and, with a second py_function parsing the same record again, 'Y' to
(TY, N_CLASSES); dataset_input_fn is ``TFRecordDataset(filenames).map(parser).batch(batch_size).prefetch(5)
.repeat(num_epochs)`` (the shuffle commented out in the source); main globs the processed folder's .tfrecord
files, builds seq_model (Conv1D 196 filters, kernel KERNEL_SIZE 15, stride STRIDE 4, BatchNormalization, relu,
Dropout 0.8, two GRU(128, return_sequences) each with Dropout 0.8 and BatchNormalization, a TimeDistributed
Dense(N_CLASSES, sigmoid)), compiles it with categorical cross-entropy, Adam and accuracy, f1_m, precision_m,
recall_m, and fits it with n_steps_per_epoch steps per epoch, a CSVLogger and a ModelCheckpoint of the weights.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/trigger_word/data/processed``: 3 generated TFRecords of 100 examples for
the repository's generated dev set); SAMPLE_DURATION_MS 1100 for 5000 (TX 188 for 860, TY 44; FX 257 kept), so a record
holds 48k floats, not 221k; N_CLASSES 2 (MULTRIGGER_MODE False, as the source sets it) without counting the raw
positives folder; the Conv1D 48 filters for 196 and the GRUs 32 units for 128 (a step runs on 2 CPU cores);
main(n_epochs=3, n_steps_per_epoch=60, batch_size=32) for (100, 1000, 64); ``tf.keras.optimizers.Adam(lr=0.0001,
beta_1=0.9, beta_2=0.999, decay=0.01)`` -> ``learning_rate=0.0001`` and the betas (Keras 3 has no ``lr`` or
``decay``); f1_m, precision_m, recall_m written with ``keras.ops`` for the Keras 2 backend ``K.`` calls;
``ModelCheckpoint(..., save_weights_only=True, period=5)`` -> a ``.weights.h5`` path and ``save_freq="epoch"``
(Keras 3 has no ``period``); the log and checkpoint files under a temporary folder; ``model.fit(
training_set.make_one_shot_iterator(), ...)`` -> ``model.fit(training_set, ...)`` (TF2 has no one-shot
iterators); no dotenv.
"""

import glob
import logging
import os
import tempfile

import keras
import tensorflow as tf
from keras import ops

# ----------------------------------------------------------------------------- src/settings.py
PROCESSED_DATA_DIR = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "trigger_word",
                                  "data", "processed")
LOG_DIR = os.path.join(tempfile.gettempdir(), "trigger_word_logs")
TRAIN_LOG_FILE = os.path.join(LOG_DIR, "training.log")
CHECKPOINT_FILES = os.path.join(LOG_DIR, "checkpoints", "cp-{epoch:04d}.weights.h5")

N_SAMPLES_IN_TFRECORD = 100
SAMPLE_DURATION_MS = 1100
LABEL_DURATION = 25
KERNEL_SIZE = 15
STRIDE = 4
FRAME_RATE = 44100
NFFT = 512
FX = int(NFFT / 2) + 1
TX = int(FRAME_RATE * (SAMPLE_DURATION_MS / 1000) / NFFT) * 2
TY = round((TX - KERNEL_SIZE) / STRIDE) + 1
MULTRIGGER_MODE = False
N_CLASSES = 2


# ----------------------------------------------------------------------------- src/utils.py
def recall_m(y_true, y_pred):
    true_positives = ops.sum(ops.round(ops.clip(y_true * y_pred, 0, 1)))
    possible_positives = ops.sum(ops.round(ops.clip(y_true, 0, 1)))
    recall = true_positives / (possible_positives + keras.config.epsilon())
    return recall


def precision_m(y_true, y_pred):
    true_positives = ops.sum(ops.round(ops.clip(y_true * y_pred, 0, 1)))
    predicted_positives = ops.sum(ops.round(ops.clip(y_pred, 0, 1)))
    precision = true_positives / (predicted_positives + keras.config.epsilon())
    return precision


def f1_m(y_true, y_pred):
    precision = precision_m(y_true, y_pred)
    recall = recall_m(y_true, y_pred)
    return 2 * ((precision * recall) / (precision + recall + keras.config.epsilon()))


# ----------------------------------------------------------------------------- src/make_model.py
def seq_model(input_shape, n_classes, kernel_size, stride):
    X_input = tf.keras.layers.Input(shape=input_shape)

    X = tf.keras.layers.Conv1D(48, kernel_size=kernel_size, strides=stride)(X_input)
    X = tf.keras.layers.BatchNormalization()(X)
    X = tf.keras.layers.Activation("relu")(X)
    X = tf.keras.layers.Dropout(0.8)(X)

    X = tf.keras.layers.GRU(units=32, return_sequences=True)(X)
    X = tf.keras.layers.Dropout(0.8)(X)
    X = tf.keras.layers.BatchNormalization()(X)

    X = tf.keras.layers.GRU(units=32, return_sequences=True)(X)
    X = tf.keras.layers.Dropout(0.8)(X)
    X = tf.keras.layers.BatchNormalization()(X)
    X = tf.keras.layers.Dropout(0.8)(X)

    X = tf.keras.layers.TimeDistributed(tf.keras.layers.Dense(n_classes, activation="sigmoid"))(X)

    model = tf.keras.models.Model(inputs=X_input, outputs=X)

    return model


# ----------------------------------------------------------------------------- src/train.py
def _extract_feature(record, feature):
    example = tf.train.Example.FromString(record.numpy())
    return example.features.feature[feature].float_list.value


# Load tf record dataset
def parser(record):
    X = tf.reshape(
        tf.py_function(
            lambda r: _extract_feature(r, "X"),
            (record,),
            tf.float32
        ), [TX, FX]
    )

    Y = tf.reshape(
        tf.py_function(
            lambda r: _extract_feature(r, "Y"),
            (record,),
            tf.float32
        ), [TY, N_CLASSES]
    )

    return X, Y


def dataset_input_fn(filenames, batch_size, num_epochs=None):
    dataset = tf.data.TFRecordDataset(filenames)
    dataset = dataset.map(parser)
    dataset = dataset.cache()  # the fix: each record parsed once
    # dataset = dataset.shuffle(buffer_size=N_SAMPLES)
    dataset = dataset.batch(batch_size)
    dataset = dataset.prefetch(5)
    dataset = dataset.repeat(num_epochs)

    return dataset


def main(n_epochs=3, n_steps_per_epoch=60, batch_size=32):

    tfrecord_files = glob.glob("{}/*.tfrecord".format(PROCESSED_DATA_DIR))

    training_set = dataset_input_fn(tfrecord_files, batch_size, None)

    model = seq_model(input_shape=(TX, FX),
                      n_classes=N_CLASSES,
                      kernel_size=KERNEL_SIZE,
                      stride=STRIDE)

    opt = tf.keras.optimizers.Adam(learning_rate=0.0001, beta_1=0.9, beta_2=0.999)

    model.compile(loss="categorical_crossentropy", optimizer=opt, metrics=["accuracy", f1_m, precision_m, recall_m])

    csv_logger = tf.keras.callbacks.CSVLogger(TRAIN_LOG_FILE)

    cp_callback = tf.keras.callbacks.ModelCheckpoint(CHECKPOINT_FILES,
                                                     verbose=1,
                                                     save_weights_only=True,
                                                     save_freq="epoch")

    model.fit(training_set,
              steps_per_epoch=n_steps_per_epoch,
              epochs=n_epochs,
              callbacks=[csv_logger, cp_callback],
              verbose=1
              )


if __name__ == "__main__":
    log_fmt = "%(asctime)s - %(name)s - %(levelname)s - %(message)s"
    logging.basicConfig(level=logging.INFO, format=log_fmt)
    os.makedirs(os.path.dirname(CHECKPOINT_FILES), exist_ok=True)
    main()
