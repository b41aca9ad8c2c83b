"""Keypoint regression on camera frames, training: train.py of zodiac000/tk, a small CNN fitted on a tf.data
pipeline that reads and decodes each full-size JPEG, translates it and resizes it in one (serial) map, with
the first images, through the same map, as the validation set.

Source: https://github.com/zodiac000/tk at 6c48c01b132fac8d13de5a4e5b520c8fcbee1d11 (train.py, dataset.py,
model.py). Re-written here in the source's structure and order, not copied: get_data_list reads saved_dict.csv
(path, x, y; no header) with pandas; get_ds builds ``from_tensor_slices((paths, x, y))``, maps
load_and_preprocess_from_path_label (tf.io.read_file, decode_jpeg with one channel, to float / 255, translate by
a random offset drawn with NumPy in translate(), resize to 224x224; the label the keypoint minus the offset over
the frame's width and height), then ``skip(1000).shuffle(image_count - 1000).repeat(epochs).batch(batch_size)
.prefetch(AUTOTUNE)`` for training and ``take(1000).batch(batch_size).prefetch(AUTOTUNE)`` for validation;
create_model is Conv2D 32 / 64 / 64 (3x3, relu, max pooling after the first two), Flatten, Dense 64 relu,
Dense 2 sigmoid, compiled with adam / mse / accuracy; train.py fits ``model.fit(ds_train, epochs=epochs,
validation_data=ds_test, callbacks=[TensorBoard, ModelCheckpoint(save_best_only, val_loss)])`` with epochs 5 and
batch_size 4. (translate() draws its offset with np.random while the map function is traced, so every image
gets the same offset, as in the source.)

Changed: data path (``$DOCTOR_SCRIPTS_DATA/tk_keypoint``: 224 generated 640x512 grayscale JPEGs, half the
source's 1280x1024, and saved_dict.csv with paths relative to that folder, joined to it when read); width and
height 640 / 512 for 1280 / 1024 and shape 112 for 224 (the frames and the network input at half size); skip and
take 32 for 1000 (224 frames, not thousands); epochs 3 for 5; TF1 APIs for TF 2.21: ``tf.contrib.image.translate``
-> the same projective transform by ``tf.raw_ops.ImageProjectiveTransformV3`` (BILINEAR), ``tf.to_float`` ->
``tf.cast(..., tf.float32)``; the model's first layer takes an ``Input`` (Keras 3); TensorBoard left out, the
checkpoint under a temporary folder as ``.keras`` (Keras 3).
"""

import os
import tempfile

import numpy as np
import pandas as pd
import tensorflow as tf
from tensorflow.keras import layers, models

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "tk_keypoint")

# ----------------------------------------------------------------------------- dataset.py
shape = 112
width = 640.0
height = 512.0


def translate(image):
    translations = np.random.rand(2) * [width - shape, height - shape]
    translations = [int(value) for value in translations]

    transform = tf.constant([[1, 0, -translations[0], 0, 1, -translations[1], 0, 0]], tf.float32)
    translated = tf.raw_ops.ImageProjectiveTransformV3(
        images=image[None], transforms=transform, output_shape=tf.shape(image)[:2], fill_value=0.0,
        interpolation="BILINEAR")[0]
    return translated, translations


def load_and_preprocess_image(path):
    image = tf.io.read_file(path)
    image = tf.image.decode_jpeg(image, channels=1)
    # image = tf.image.random_brightness(image, 0.05)
    # image = tf.image.random_contrast(image, 0.7, 1.3)
    # image = tf.image.resize(image, [shape, shape])
    image = tf.cast(image, tf.float32)
    image /= 255.0  # normalize to [0,1] range
    return image


def load_and_preprocess_from_path_label(path, x, y):
    image = load_and_preprocess_image(path)
    image, translations = translate(image)
    image = tf.image.resize(image, [shape, shape])
    return image, tf.stack([tf.cast(x - translations[0], tf.float32) / width,
                            tf.cast(y - translations[1], tf.float32) / height])


def get_ds(dict_loc, epochs, batch_size):
    all_image_paths, all_x, all_y = get_data_list(dict_loc)
    AUTOTUNE = tf.data.experimental.AUTOTUNE
    image_count = len(all_image_paths)
    print("image_count: {}".format(image_count))
    image_label_ds = tf.data.Dataset.from_tensor_slices((all_image_paths, all_x, all_y))

    image_label_ds = image_label_ds.map(load_and_preprocess_from_path_label)

    ds_train = image_label_ds.skip(32).shuffle(buffer_size=image_count - 32) \
                             .repeat(epochs) \
                             .batch(batch_size) \
                             .prefetch(buffer_size=AUTOTUNE)

    ds_test = image_label_ds.take(32) \
                            .batch(batch_size) \
                            .prefetch(buffer_size=AUTOTUNE)
    return ds_train, ds_test


def get_data_list(dict_loc):
    data = pd.read_csv(dict_loc, names=["path", "x", "y"])
    all_image_paths = [os.path.join(DATA, p) for p in data.path.tolist()]
    all_x = data.x.tolist()
    all_y = data.y.tolist()

    return all_image_paths, all_x, all_y


# ----------------------------------------------------------------------------- model.py
def create_model():
    model = models.Sequential()
    model.add(layers.Input((shape, shape, 1)))
    model.add(layers.Conv2D(32, (3, 3)))
    model.add(layers.Activation("relu"))
    model.add(layers.MaxPooling2D((2, 2)))

    model.add(layers.Conv2D(64, (3, 3)))
    model.add(layers.Activation("relu"))
    model.add(layers.MaxPooling2D((2, 2)))

    model.add(layers.Conv2D(64, (3, 3)))
    model.add(layers.Activation("relu"))

    model.add(layers.Flatten())
    model.add(layers.Dense(64, activation="relu"))
    model.add(layers.Dense(2, activation="sigmoid"))

    model.compile(optimizer="adam",
                  loss="mse",
                  metrics=["accuracy"])

    return model


# ----------------------------------------------------------------------------- train.py
dict_loc = os.path.join(DATA, "saved_dict.csv")
epochs = 3
batch_size = 4

model = create_model()
model.summary()

ds_train, ds_test = get_ds(dict_loc, epochs, batch_size)

callbacks = [
    tf.keras.callbacks.ModelCheckpoint(
        filepath=os.path.join(tempfile.gettempdir(), "tk_check_points", "mymodel_{epoch}.keras"),
        save_best_only=True,
        monitor="val_loss",
        verbose=1)
]
model.fit(ds_train, epochs=epochs, validation_data=ds_test, callbacks=callbacks)
