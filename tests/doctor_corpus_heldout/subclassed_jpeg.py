"""The TensorFlow guide "Customizing what happens in fit()": a subclassed ``keras.Model`` with its own
``train_step`` (gradient tape, loss, optimizer), trained on a folder of JPEG photos read, decoded and
resized in a parallel map, batched and prefetched. The files are small (a few kB each); decoding them is
the cost, not reading them. Planted: no ``cache()`` although the decoded, resized images fit in memory,
so every epoch decodes every JPEG again (the fix: ``cache()`` after the map)."""

from __future__ import annotations

from pathlib import Path

from doctor_corpus._common import CLASSES, done, mark, pattern_images

SOURCE = ("TensorFlow guide 'Customizing what happens in fit()' (subclassed Model, custom train_step) on a "
          "JPEG folder: https://www.tensorflow.org/guide/keras/customizing_what_happens_in_fit")
DOMAIN = "multi-input or subclassed"
PLANTED = ("no_cache",)
TOLERATED: tuple = ()
VERDICT = "input-bound"
EXACT = True

NAME = "subclassed_jpeg"
N, SIZE, OUT, BATCH = 512, 256, 64, 32


def make_data(folder) -> None:
    if done(folder, NAME, n=N, size=SIZE):
        return
    from PIL import Image

    for start in range(0, N, 64):  # in chunks: the float noise of 512 images would take 800 MB at once
        images, labels = pattern_images(64, SIZE, seed=90 + start)
        for j, (img, _) in enumerate(zip(images, labels)):
            i = start + j
            path = Path(folder) / NAME / f"class_{i % CLASSES}" / f"photo_{i:05d}.jpg"
            path.parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(img).save(path, quality=75)
    mark(folder, NAME, n=N, size=SIZE)


def _pipeline(folder, *, cache: bool):
    import tensorflow as tf

    files = sorted(str(p) for p in (Path(folder) / NAME).glob("class_*/*.jpg"))
    labels = [int(Path(f).parent.name.split("_")[1]) for f in files]

    def load(path, label):
        img = tf.io.decode_jpeg(tf.io.read_file(path), channels=3)
        return tf.image.resize(img, [OUT, OUT]) / 255.0, label

    ds = tf.data.Dataset.from_tensor_slices((files, labels)).map(load, num_parallel_calls=tf.data.AUTOTUNE)
    if cache:
        ds = ds.cache()
    return ds.batch(BATCH).prefetch(tf.data.AUTOTUNE)


def slow(folder):
    return _pipeline(folder, cache=False)


def fixed(folder, code=None):
    return _pipeline(folder, cache=True)


def model():
    import keras
    import tensorflow as tf

    class CustomModel(keras.Model):
        """The guide's model: ``train_step`` written out."""

        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.conv = keras.layers.Conv2D(8, 3, strides=2, activation="relu")
            self.pool = keras.layers.GlobalAveragePooling2D()
            self.head = keras.layers.Dense(CLASSES)
            self.loss_tracker = keras.metrics.Mean(name="loss")

        def call(self, x, training=False):
            return self.head(self.pool(self.conv(x)))

        def train_step(self, data):
            x, y = data
            with tf.GradientTape() as tape:
                y_pred = self(x, training=True)
                loss = self.compute_loss(y=y, y_pred=y_pred)
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply(grads, self.trainable_variables)
            self.loss_tracker.update_state(loss)
            return {"loss": self.loss_tracker.result()}

        @property
        def metrics(self):
            return [self.loss_tracker]

    keras.utils.set_random_seed(0)
    m = CustomModel()
    m.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    m(keras.ops.zeros((1, OUT, OUT, 3)))  # built
    return m
