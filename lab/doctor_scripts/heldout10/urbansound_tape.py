"""UrbanSound8K sound classification, training: train.py (with reader.py) of yeyupiaoling/AudioClassification-Tensorflow,
a small CNN (two 5x5 convolutions, max-pooling, BatchNormalization, Dense 128) trained by a hand-written
``tf.GradientTape`` loop, run eagerly (no ``tf.function``), over a tf.data TFRecord pipeline of mel spectrograms:
``TFRecordDataset`` -> ``map(_parse_data_function)`` (serial) -> ``shuffle(1000)`` -> ``repeat(num_epochs)`` ->
``batch(32)`` -> ``prefetch(AUTOTUNE)``; every step converts the batch to NumPy and back, and every 200 batches the
test TFRecord is parsed and run through the model and the whole model is saved.

Source: https://github.com/yeyupiaoling/AudioClassification-Tensorflow at ab60bef91592fe920d826a6fa104697be5b80213
(train.py, reader.py; the record format from create_data.py). Re-written here in the source's structure and order, not
copied: create_data.py lists UrbanSound8K's clips of at least 3 s (every 100th to test_list.txt), loads 2.97 s of each
with librosa at 22050 Hz and writes ``librosa.feature.melspectrogram`` (128 mels x 128 frames, power) flattened as a
float_list 'data' of 16384 values with an int64 'label' into dataset/train.tfrecord and dataset/test.tfrecord;
reader.py parses a record with ``tf.io.parse_single_example`` ('data': FixedLenFeature([16384], tf.float32), 'label':
FixedLenFeature([], tf.int64)); ``train_reader_tfrecord(data_path, num_epochs)`` is ``TFRecordDataset(data_path)
.map(_parse_data_function).shuffle(buffer_size=1000).repeat(count=num_epochs).batch(batch_size=32)
.prefetch(buffer_size=tf.data.experimental.AUTOTUNE)`` and ``test_reader_tfrecord(data_path)`` is
``TFRecordDataset(data_path).map(_parse_data_function).batch(batch_size=32)``; train.py sets class_dim 10 and EPOCHS
500, builds ``tf.keras.models.Sequential([Conv2D(20, 5, relu, input_shape=(128, 128, 1)), Conv2D(50, 5, relu),
MaxPool2D(2, 2), BatchNormalization(), Flatten(), Dense(128, relu), Dense(class_dim, softmax)])`` and
``Adam(learning_rate=1e-3)``, then for each ``batch_id, data`` of the training dataset: ``sounds =
data['data'].numpy().reshape((-1, 128, 128, 1))``, under a GradientTape ``predictions = model(sounds)``, the mean
sparse categorical cross-entropy and the accuracy (``np.sum(acc.numpy()) / len(acc.numpy())``), ``tape.gradient`` and
``optimizer.apply_gradients``; every 20 batches a print; every 200 batches (not the first) a pass over the test
dataset (the same reshape, ``model(test_sounds)``, loss and accuracy per batch), a print of the means and
``model.save(filepath='models/cnn.h5')``.

Changed: data paths (``$DOCTOR_SCRIPTS_DATA/urbansound_tape/dataset/train.tfrecord`` and ``test.tfrecord``: 640 and
64 generated records for UrbanSound8K's ~7200 and ~70); mel spectrograms of 64 mels x 64 frames (4096 values a
record, the parse length and every reshape with it) for 128 x 128; the convolutions' filters halved (10 and 25 for 20
and 50); EPOCHS 3 for 500 (the repeat count with it: 60 steps of 32); the test pass every 18 batches for 200 (about
0.9 of a pass, as 200 is of the source's ~225 batches a pass); the model saved to cnn.h5 in a temporary folder.
"""

import os
import tempfile

import numpy as np
import tensorflow as tf

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "urbansound_tape")
OUT = os.path.join(tempfile.gettempdir(), "urbansound_tape_out")
N_MELS, N_FRAMES = 64, 64  # the source's 128 x 128


# ----------------------------------------------------------------------------- reader.py
def _parse_data_function(example):
    data_feature_description = {
        'data': tf.io.FixedLenFeature([N_MELS * N_FRAMES], tf.float32),
        'label': tf.io.FixedLenFeature([], tf.int64),
    }
    return tf.io.parse_single_example(example, data_feature_description)


def train_reader_tfrecord(data_path, num_epochs):
    raw_dataset = tf.data.TFRecordDataset(data_path)
    train_dataset = raw_dataset.map(_parse_data_function)
    train_dataset = train_dataset.shuffle(buffer_size=1000) \
        .repeat(count=num_epochs) \
        .batch(batch_size=32) \
        .prefetch(buffer_size=tf.data.experimental.AUTOTUNE)
    return train_dataset


def test_reader_tfrecord(data_path):
    raw_dataset = tf.data.TFRecordDataset(data_path)
    test_dataset = raw_dataset.map(_parse_data_function)
    test_dataset = test_dataset.batch(batch_size=32)
    return test_dataset


# ----------------------------------------------------------------------------- train.py
class_dim = 10
EPOCHS = 3

model = tf.keras.models.Sequential([
    tf.keras.layers.Conv2D(filters=10, kernel_size=5, activation=tf.nn.relu, input_shape=(N_MELS, N_FRAMES, 1)),
    tf.keras.layers.Conv2D(filters=25, kernel_size=5, activation=tf.nn.relu),
    tf.keras.layers.MaxPool2D(pool_size=2, strides=2),
    tf.keras.layers.BatchNormalization(),
    tf.keras.layers.Flatten(),
    tf.keras.layers.Dense(units=128, activation=tf.nn.relu),
    tf.keras.layers.Dense(units=class_dim, activation=tf.nn.softmax)
])

model.summary()


# 定义优化方法
optimizer = tf.keras.optimizers.Adam(learning_rate=1e-3)

train_dataset = train_reader_tfrecord(os.path.join(DATA, 'dataset/train.tfrecord'), EPOCHS)
test_dataset = test_reader_tfrecord(os.path.join(DATA, 'dataset/test.tfrecord'))

for batch_id, data in enumerate(train_dataset):
    sounds = data['data'].numpy().reshape((-1, N_MELS, N_FRAMES, 1))
    labels = data['label']
    # 执行训练
    with tf.GradientTape() as tape:
        predictions = model(sounds)
        # 获取损失值
        train_loss = tf.keras.losses.sparse_categorical_crossentropy(labels, predictions)
        train_loss = tf.reduce_mean(train_loss)
        # 获取准确率
        train_accuracy = tf.keras.metrics.sparse_categorical_accuracy(labels, predictions)
        train_accuracy = np.sum(train_accuracy.numpy()) / len(train_accuracy.numpy())

    # 更新梯度
    gradients = tape.gradient(train_loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))

    if batch_id % 20 == 0:
        print("Batch %d, Loss %f, Accuracy %f" % (batch_id, train_loss.numpy(), train_accuracy))

    if batch_id % 18 == 0 and batch_id != 0:
        test_losses = list()
        test_accuracies = list()
        for d in test_dataset:
            test_sounds = d['data'].numpy().reshape((-1, N_MELS, N_FRAMES, 1))
            test_labels = d['label']

            test_result = model(test_sounds)
            # 获取损失值
            test_loss = tf.keras.losses.sparse_categorical_crossentropy(test_labels, test_result)
            test_loss = tf.reduce_mean(test_loss)
            test_losses.append(test_loss)
            # 获取准确率
            test_accuracy = tf.keras.metrics.sparse_categorical_accuracy(test_labels, test_result)
            test_accuracy = np.sum(test_accuracy.numpy()) / len(test_accuracy.numpy())
            test_accuracies.append(test_accuracy)

        print('=================================================')
        print("Test, Loss %f, Accuracy %f" % (
            sum(test_losses) / len(test_losses), sum(test_accuracies) / len(test_accuracies)))
        print('=================================================')

        # 保存模型
        os.makedirs(OUT, exist_ok=True)
        model.save(filepath=os.path.join(OUT, 'cnn.h5'))
