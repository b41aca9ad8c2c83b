"""keras-io "Simple MNIST convnet": the arrays in memory, sliced into batches, under the example's
convnet widened (64 filters, one more convolution) so that its step costs far more than slicing a batch
on 2 cores (with the example's own widths, tf.data's threads took a measurable share of the step's
CPU here, and the replayed batch came out near the 1.1x threshold). Nothing planted: the right answer is
compute-bound with no input finding."""

from __future__ import annotations

from doctor_corpus._common import pattern_images

SOURCE = ("keras-io 'Simple MNIST convnet' (in-memory arrays, Conv2D model): "
          "https://keras.io/examples/vision/mnist_convnet/")
PLANTED: tuple = ()
VERDICT = "compute-bound"
EXACT = True

NAME = "compute_bound"
N, SIZE, BATCH = 512, 28, 64


def make_data(folder) -> None:
    """Nothing on disk: the arrays are generated in memory (the example loads MNIST into memory)."""


def _arrays():
    images, labels = pattern_images(N, SIZE, seed=11, channels=1)
    return images.astype("float32") / 255, labels


def slow(folder):
    import tensorflow as tf

    x, y = _arrays()
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH).prefetch(tf.data.AUTOTUNE)


def fixed(folder, code=None):
    return slow(folder)


def model():
    import keras

    keras.utils.set_random_seed(0)
    m = keras.Sequential([keras.Input((SIZE, SIZE, 1)),
                          keras.layers.Conv2D(64, 3, activation="relu"), keras.layers.Conv2D(64, 3, activation="relu"),
                          keras.layers.MaxPooling2D(2),
                          keras.layers.Conv2D(64, 3, activation="relu"), keras.layers.MaxPooling2D(2),
                          keras.layers.Flatten(), keras.layers.Dropout(0.5), keras.layers.Dense(4)])
    m.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m
