"""FIXED COPY (the one fix: the generator draws a whole batch per call, one NumPy call and one
from_generator element per batch instead of per example; the .batch() is dropped).

VGG16 on tf.data.Dataset.from_generator, training script (a Python generator that synthesizes examples).

Source: https://github.com/dmayukh/fakenews/blob/master/dataset_generators_sample.py, kept as written:
generator_fn returning a generator that draws an image and a label with NumPy per example,
tf.data.Dataset.from_generator with output_types/output_shapes, batch(drop_remainder=True), no map, no
prefetch (both commented out in the source), VGG16(weights=None) compiled with
sparse_categorical_crossentropy and model.fit(dataset, epochs=epochs).

Changed: samples 10 -> 3200 and batch_size 5 -> 32 so an epoch lasts seconds, not milliseconds; VGG16 ->
the VGG16 layer pattern with 1/8 of its filters (8..64) so a step runs on 2 CPU cores; epochs 2 -> 3;
``output_types``/``output_shapes`` spelled as ``output_signature`` (the older arguments are deprecated in
TF 2.21, same meaning). The generator reads no files: ``$DOCTOR_SCRIPTS_DATA`` is unused.
"""
# ruff: noqa: B006, B007  (the source's code, kept as written)

import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers

x_shape = (32, 32, 3)
y_shape = ()  # A single item (not array).
classes = 10

# This is tf.data.experimental.AUTOTUNE in older tensorflow.
AUTOTUNE = tf.data.AUTOTUNE


def generator_fn(n_samples):
    """Return a function that takes no arguments and returns a generator."""
    def generator():
        for i in range(n_samples // batch_size):  # the fix: one NumPy call per batch, not per example
            # Synthesize a batch of images and class labels.
            x = np.random.random_sample((batch_size, *x_shape)).astype(np.float32)
            y = np.random.randint(0, classes, size=(batch_size, *y_shape), dtype=np.int32)
            yield x, y
    return generator


def VGG16(weights=None, input_shape=x_shape, classes=classes, width=8):
    inp = keras.Input(input_shape)
    x = inp
    for n, f in ((2, width), (2, 2 * width), (3, 4 * width), (3, 8 * width), (3, 8 * width)):
        for _ in range(n):
            x = layers.Conv2D(f, 3, padding="same", activation="relu")(x)
        x = layers.MaxPooling2D(2)(x)
    x = layers.Flatten()(x)
    x = layers.Dense(64, activation="relu")(x)
    x = layers.Dense(64, activation="relu")(x)
    return keras.Model(inp, layers.Dense(classes, activation="softmax")(x))


# def augment(x, y):
#     return x * tf.random.normal(shape=x_shape), y

samples = 3200
batch_size = 32
epochs = 3

# Create dataset.
gen = generator_fn(n_samples=samples)
dataset = tf.data.Dataset.from_generator(
    generator=gen,
    output_signature=(tf.TensorSpec((batch_size, *x_shape), tf.float32), tf.TensorSpec((batch_size, *y_shape), tf.int32)),
)
# Parallelize the augmentation.
# dataset = dataset.map(
#     augment,
#     num_parallel_calls=AUTOTUNE,
#     # Order does not matter.
#     deterministic=False
# )
# dataset = dataset.batch(batch_size, drop_remainder=True)  (the generator yields whole batches)
# Prefetch some batches.
#dataset = dataset.prefetch(AUTOTUNE)

# Prepare model.
model = VGG16(weights=None, input_shape=x_shape, classes=classes)
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")

# Train. Do not specify batch size because the dataset takes care of that.
model.fit(dataset, epochs=epochs)
