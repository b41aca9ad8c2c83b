"""FIXED COPY (the one fix: cache() after the deterministic numpy_function map, each JPEG read and decoded
once; the shuffle, the take/skip split and the rest unchanged).

Ocular disease (ODIR-5K) fundus classifier, training: model.py of Diploma-project, a small CNN (four Conv2D +
MaxPooling blocks, Dense 128, Dense 8 softmax) with a class-weighted categorical cross-entropy, fitted on a tf.data
pipeline whose map opens and decodes each 128x128 JPEG with cv2 through ``tf.numpy_function`` (serial map, no cache),
then ``shuffle(6393)`` (the whole set) and ``take``/``skip`` for the 70/15/15 split, so each pass over the training
or the validation split refills the shuffle buffer with every image of the set, decoded again.

Source: https://github.com/Tumbler-3/Diploma-project at 1f366560662af50fcfc3da4e26a6813c07d6d6a0 (model.py; its
inputs written by data_preprocess.py and "image preprocessing.py"). Re-written here in the source's structure and
order, not copied: df_proc.csv read with pandas and its target column with ast.literal_eval; load_image is
``cv2.imread(f"Training Images/{filename}", cv2.IMREAD_COLOR)`` then ``tf.cast(img, tf.float32) / 255.0``, called by
load_data through ``tf.numpy_function(load_image, [x, y], [tf.float32, tf.float32])`` with set_shape [128, 128, 3] and
[8]; ``dataset.map(load_data)``, ``dataset.shuffle(6393)``, take 70% / skip, take 15% / skip, each ``.batch(32)
.prefetch(AUTOTUNE)``; the Sequential model Input(128, 128, 3), Conv2D 128, 64, 32, 16 (3x3, relu) each followed by
MaxPooling2D, Flatten, Dense 128 relu, Dense 8 softmax; sklearn's compute_class_weight("balanced") over the argmax
classes weights the cross-entropy (weights_compile); compile(adam, weights_compile, accuracy);
``model.fit(train_dataset, epochs=29, batch_size=32, validation_data=val_dataset)``; then model.save("ODM.keras"), the
history CSV, loss/accuracy plots, a per-batch predict over val_dataset for a confusion matrix and a plot of misses.

Changed: data paths (``$DOCTOR_SCRIPTS_DATA/odir_fundus/``: df_proc.csv and "Training Images/", 640 generated
128x128 fundus JPEGs of the 8 classes for 6393); shuffle size 640 for 6393 (the source's count of its rows: the
whole set, as there); Conv2D filters an eighth of the source's (16, 8, 4, 2 for 128, 64, 32, 16); epochs 3 for 29;
compute_class_weight("balanced") re-written in NumPy (no sklearn here; the same n / (k * bincount) formula); the
model.save, history CSV, plots, confusion matrix and misses (after the fit) left out, and with them the unused
imports (matplotlib, seaborn, sklearn.metrics, keras.saving).
"""

import ast
import os

import cv2
import numpy as np
import pandas as pd

os.environ['TF_ENABLE_ONEDNN_OPTS'] = '0'
import tensorflow as tf
from keras import layers, losses, models

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "odir_fundus")


def compute_class_weight(class_weight, classes, y):
    # sklearn.utils.class_weight.compute_class_weight("balanced", ...): n_samples / (n_classes * bincount(y))
    counts = np.array([np.sum(y == c) for c in classes], dtype=np.float64)
    return len(y) / (len(classes) * counts)


df = pd.read_csv(os.path.join(DATA, "df_proc.csv"), encoding="utf-8")
df["target"] = df["target"].apply(ast.literal_eval)
class_names = ["Normal", "Diabetes", "Glaucoma", "Cataract", "Age related Macular Degeneration",
               "Hypertension", "Pathological Myopia", "Other diseases/abnormalities"]


def load_image(filename, target):
    img = cv2.imread(os.path.join(DATA, "Training Images", filename.decode('utf-8')), cv2.IMREAD_COLOR)
    img = tf.cast(img, tf.float32) / 255.0
    return img, np.array(target, dtype=np.float32)


image_paths = df["filename"].values
image_paths_tensor = tf.constant(image_paths, dtype=tf.string)


targets = np.array(df["target"].tolist())
targets_tensor = tf.constant(targets, dtype=tf.float32)


dataset = tf.data.Dataset.from_tensor_slices(
    (image_paths_tensor, targets_tensor))


def load_data(x, y):
    img, label = tf.numpy_function(load_image, [x, y], [tf.float32, tf.float32])
    img.set_shape([128, 128, 3])
    label.set_shape([8])
    return img, label


size = 640
dataset = dataset.map(load_data).cache()  # the fix: each image read and decoded once
dataset = dataset.shuffle(size)

train_dataset = dataset.take(int(0.7 * len(image_paths_tensor)))
val_test_dataset = dataset.skip(int(0.7 * len(image_paths_tensor)))

val_dataset = val_test_dataset.take(int(0.15 * len(image_paths_tensor)))
test_dataset = val_test_dataset.skip(int(0.15 * len(image_paths_tensor)))

train_dataset = train_dataset.batch(32).prefetch(tf.data.AUTOTUNE)
val_dataset = val_dataset.batch(32).prefetch(tf.data.AUTOTUNE)
test_dataset = test_dataset.batch(32).prefetch(tf.data.AUTOTUNE)


model = models.Sequential()
model.add(layers.Input(shape=(128, 128, 3)))
model.add(layers.Conv2D(filters=16, kernel_size=(
    3, 3), strides=1, activation='relu'))
model.add(layers.MaxPooling2D())

model.add(layers.Conv2D(filters=8, kernel_size=(
    3, 3), strides=1, activation='relu'))
model.add(layers.MaxPooling2D())

model.add(layers.Conv2D(filters=4, kernel_size=(
    3, 3), strides=1, activation='relu'))
model.add(layers.MaxPooling2D())

model.add(layers.Conv2D(filters=2, kernel_size=(
    3, 3), strides=1, activation='relu'))
model.add(layers.MaxPooling2D())

model.add(layers.Flatten())
model.add(layers.Dense(128, activation='relu'))
model.add(layers.Dense(8, activation='softmax'))


weights = compute_class_weight(class_weight="balanced", classes=np.unique(
    np.argmax(targets, axis=1)), y=np.argmax(targets, axis=1))
weights_tensor = tf.constant(weights, dtype=tf.float32)


def weights_compile(y_true, y_pred):
    weights = tf.reduce_sum(weights_tensor * y_true, axis=1)
    loss = losses.categorical_crossentropy(y_true, y_pred)
    return loss * weights


model.compile(optimizer='adam', loss=weights_compile, metrics=['accuracy'])


hist = model.fit(train_dataset, epochs=3, batch_size=32, validation_data=val_dataset)
