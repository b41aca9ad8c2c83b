"""Coffee bean classification, training: src/train.py -> CoffeeNet.load_datasets, create_model and train:
TFRecords parsed and augmented by tf.data maps, repeated, shuffled and batched, fitted with
steps_per_epoch, a repeated validation set and TensorBoard and checkpoint callbacks.

Source: https://github.com/wbmagalhaes/coffee-classification (src/train.py and src/utils/CoffeeNet.py at
6914d35467fd2aae5b7a7d3d4646cd161728cde7, src/utils/tfrecords.py at 05aaa6faa4cebc3116424aad521661e3d1610c40,
src/utils/augmentation.py at 7eec280af4595d4fb08385af0398541a8d0ff224). Re-written here in the source's
structure and order, not copied: read_tfrecord parses each example (raw uint8 bytes -> float image / 255,
one-hot label) in a map with num_parallel_calls=AUTOTUNE; load_datasets applies zoom (a random choice of
5 centred crop_and_resize boxes, half the time), rotate (rot90 by a random k), flip (random left-right and
up-down) and clip01 as maps with num_parallel_calls=4; counts the steps by iterating each dataset once;
then ``repeat().shuffle(buffer_size=10000).batch(batch_size)`` for both the training and the validation
set (no prefetch); create_model is BatchNormalization then num_layers blocks of Conv2D 3x3 (he_normal, l2,
constant bias) / LeakyReLU / BatchNormalization / MaxPooling (filters doubling), a 3x3 Conv2D to the
classes, LeakyReLU, GlobalAveragePooling2D ('logits') and a softmax ('classes'); compiled with Adam and
CategoricalCrossentropy(from_logits=True, label_smoothing) on 'logits' with CategoricalAccuracy; train
fits with steps_per_epoch, validation_data, validation_freq=1, validation_steps and the callbacks
(ModelCheckpoint every 10 epochs and TensorBoard with histogram_freq=1).

Changed: data paths (``$DOCTOR_SCRIPTS_DATA/coffee_classification/{train,valid}.tfrecord``: 4200 and 700
generated 64x64 beans in the source's record format, 7 classes); filters 8 for 64 (5 blocks: 8..128) so a
step runs on 2 CPU cores; batch size 64 and epochs 3 (command-line arguments in the source); the argument
parser -> the same values as constants; ``Adam(lr=)`` -> ``Adam(learning_rate=)``; ``LeakyReLU(alpha=)`` ->
``LeakyReLU(negative_slope=)``; ModelCheckpoint(period=10) -> ``save_freq=10 * train_steps`` (Keras 3 has
no period); the loss and metric dicts keyed by 'logits' -> lists [for logits, None] (Keras 3 matches a dict
to the labels' structure, and the labels here are one tensor); the TensorBoard callback left out (tensorboard is not installed here; it raises at the first epoch
end); checkpoints and model.json under a temporary folder.
"""

import json
import math
import os
import tempfile

import numpy as np
import tensorflow as tf

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "coffee_classification")
OUT = os.path.join(tempfile.gettempdir(), "coffee_classification_out")
label_names = ["normal", "ardido", "brocado", "marinheiro", "preto", "quebrado", "verde"]


# ----------------------------------------------------------------------------- utils/tfrecords.py
def read_tfrecord(filenames, im_size=64):
    raw_dataset = tf.data.TFRecordDataset(filenames)
    feature_description = {"image": tf.io.FixedLenFeature([], tf.string),
                           "label": tf.io.FixedLenFeature([], tf.int64)}

    def parser(example_proto):
        features = tf.io.parse_single_example(example_proto, feature_description)
        raw_image = tf.io.decode_raw(features["image"], tf.uint8)
        label = tf.cast(features["label"], tf.int64)
        image = tf.cast(raw_image, tf.float32) / 255.
        image = tf.reshape(image, [im_size, im_size, 3])
        return image, tf.one_hot(label, len(label_names))

    return raw_dataset.map(parser, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


# ----------------------------------------------------------------------------- utils/augmentation.py
def zoom(dataset, im_size=64):
    def apply(x, y):
        scales = list(np.arange(0.8, 1.0, 0.05))
        boxes = np.zeros((len(scales), 4))
        for i, scale in enumerate(scales):
            x1 = y1 = 0.5 - (0.5 * scale)
            x2 = y2 = 0.5 + (0.5 * scale)
            boxes[i] = [x1, y1, x2, y2]

        def random_crop(img):
            crops = tf.image.crop_and_resize([img], boxes=boxes, box_indices=np.zeros(len(scales)),
                                             crop_size=(im_size, im_size))
            return crops[tf.random.uniform(shape=[], minval=0, maxval=len(scales), dtype=tf.int32)]

        choice = tf.random.uniform(shape=[], minval=0., maxval=1., dtype=tf.float32)
        x = tf.cond(choice < 0.5, lambda: x, lambda: random_crop(x))
        return x, y

    return dataset.map(apply, num_parallel_calls=4)


def rotate(dataset):
    def apply(x, y):
        return tf.image.rot90(x, tf.random.uniform(shape=[], minval=0, maxval=4, dtype=tf.int32)), y

    return dataset.map(apply, num_parallel_calls=4)


def flip(dataset):
    def apply(x, y):
        x = tf.image.random_flip_left_right(x)
        return tf.image.random_flip_up_down(x), y

    return dataset.map(apply, num_parallel_calls=4)


def clip01(dataset):
    def apply(x, y):
        return tf.clip_by_value(x, 0, 1), y

    return dataset.map(apply, num_parallel_calls=4)


# ----------------------------------------------------------------------------- utils/CoffeeNet.py
def load_datasets(train_filenames, valid_filenames, batch_size):
    train_ds = read_tfrecord(filenames=train_filenames)
    valid_ds = read_tfrecord(filenames=valid_filenames)
    train_ds = zoom(train_ds)
    train_ds = rotate(train_ds)
    train_ds = flip(train_ds)
    train_ds = clip01(train_ds)
    train_steps = steps(train_ds, batch_size)
    valid_steps = steps(valid_ds, batch_size)
    train_ds = train_ds.repeat().shuffle(buffer_size=10000).batch(batch_size)
    valid_ds = valid_ds.repeat().shuffle(buffer_size=10000).batch(batch_size)
    return train_ds, valid_ds, train_steps, valid_steps


def conv2d_block(x, filters, kernel_initializer, kernel_regularizer, bias_initializer, leaky_relu_alpha):
    x = tf.keras.layers.Conv2D(filters=filters, kernel_size=(3, 3), kernel_initializer=kernel_initializer,
                               kernel_regularizer=kernel_regularizer, bias_initializer=bias_initializer,
                               padding="same")(x)
    x = tf.keras.layers.LeakyReLU(negative_slope=leaky_relu_alpha)(x)
    x = tf.keras.layers.BatchNormalization()(x)
    return tf.keras.layers.MaxPooling2D((2, 2))(x)


def create_model(model_name, train_steps, input_shape=(64, 64, 3), num_layers=5, filters=64,
                 kernel_initializer="he_normal", l2=0.01, bias_value=0.1, leaky_relu_alpha=0.02,
                 output_activation="softmax", lr=1e-4, label_smoothing=0.2):
    image_input = tf.keras.Input(shape=input_shape, name="img_input", dtype=tf.float32)
    x = tf.keras.layers.BatchNormalization()(image_input)
    for _ in range(num_layers):
        x = conv2d_block(x, filters, kernel_initializer, tf.keras.regularizers.l2(l2),
                         tf.keras.initializers.Constant(value=bias_value), leaky_relu_alpha)
        filters *= 2
    x = tf.keras.layers.Conv2D(filters=len(label_names), kernel_size=(3, 3), kernel_initializer=kernel_initializer,
                               kernel_regularizer=tf.keras.regularizers.l2(l2),
                               bias_initializer=tf.keras.initializers.Constant(value=bias_value), padding="same")(x)
    x = tf.keras.layers.LeakyReLU(negative_slope=leaky_relu_alpha)(x)
    logits = tf.keras.layers.GlobalAveragePooling2D(name="logits")(x)
    classes = tf.keras.layers.Activation(output_activation, name="classes")(logits)
    model = tf.keras.Model(inputs=[image_input], outputs=[logits, classes])
    model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=lr),
                  loss=[tf.keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=label_smoothing),
                        None],
                  metrics=[[tf.keras.metrics.CategoricalAccuracy()], None])
    model.summary()
    savedir = os.path.join(OUT, "models", model_name)
    os.makedirs(savedir, exist_ok=True)
    with open(savedir + "/model.json", "w") as f:
        json.dump(model.to_json(), f)
    model.save_weights(savedir + "/epoch-0000.weights.h5")
    checkpoint_cb = tf.keras.callbacks.ModelCheckpoint(savedir + "/epoch-{epoch:04d}.weights.h5",
                                                       save_weights_only=True, verbose=1,
                                                       save_freq=10 * train_steps)
    return model, [checkpoint_cb]


def steps(ds, batch_size):
    n = len([0 for data in ds])
    return math.ceil(n / batch_size)


def train(model, train_ds, valid_ds, train_steps, valid_steps, epochs=60, batch_size=64, callbacks=None):
    return model.fit(train_ds, steps_per_epoch=train_steps, epochs=epochs, verbose=1, validation_data=valid_ds,
                     validation_freq=1, validation_steps=valid_steps, callbacks=callbacks)


# ----------------------------------------------------------------------------- src/train.py
def main():
    batchsize, epochs = 64, 3
    train_ds, valid_ds, train_steps, valid_steps = load_datasets(
        [os.path.join(DATA, "train.tfrecord")], [os.path.join(DATA, "valid.tfrecord")], batchsize)
    model, cbs = create_model(model_name="coffeenet", train_steps=train_steps, input_shape=(64, 64, 3),
                              num_layers=5, filters=8, kernel_initializer="he_normal", l2=0.01, bias_value=0.1,
                              leaky_relu_alpha=0.02, output_activation="softmax", lr=1e-4, label_smoothing=0.2)
    train(model, train_ds, valid_ds, train_steps, valid_steps, epochs=epochs, callbacks=cbs)


if __name__ == "__main__":
    main()
