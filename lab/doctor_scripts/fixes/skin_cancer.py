"""FIXED COPY (the one fix: the frozen backbone computed once per image, its features cached and the Dense head
trained on them).

Skin cancer detection (benign against malignant), training: SkinCancerDetectionTensorFlow_PythonCodeTutorial.ipynb of
SKIN.CANCER.DETECTION, a frozen pretrained InceptionV3 feature vector with a Dense head, fitted on a tf.data pipeline
that reads and decodes each JPEG (``tf.io.read_file``, ``decode_jpeg``, ``resize``) in a serial map, then caches it to
a file, shuffles, repeats, batches and prefetches; validation on a pipeline built the same way.

Source: https://github.com/askysrsh/SKIN.CANCER.DETECTION at 9ea6844dbc48979564f6cdabd339421a3d85ffdd (the notebook's
code cells, also split into Dataset.py, dataload.py, preprocessdata.py, training.py and "model building.py").
Re-written here in the notebook's structure and order, not copied: generate_csv lists data/<split>/<class>/* into a
DataFrame of (filepath, label) (nevus and seborrheic keratosis 0, melanoma 1) and writes <split>.csv; the CSVs are
read back with pandas and sliced with ``from_tensor_slices``; process_path reads the file, decode_img decodes the JPEG
(3 channels), ``convert_image_dtype`` to float and resizes to 299x299, mapped with no parallelism;
prepare_for_training is ``cache("train-cached-data")`` (a file), ``shuffle(1000)``, ``repeat()``, ``batch(64)``,
``prefetch(AUTOTUNE)``; the model is ``Sequential([hub.KerasLayer(inception_v3 feature_vector/4, trainable=False),
Dense(1, sigmoid)])`` built for [None, 299, 299, 3], compiled with rmsprop and binary cross-entropy, fitted with
``steps_per_epoch=n_training_samples // batch_size``, ``validation_steps=n_validation_samples // batch_size``,
``epochs=100`` and TensorBoard and ModelCheckpoint callbacks.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/skin_cancer``: 768 training and 129 validation generated 160x160 JPEG
lesions for the ISIC zips, so download_and_extract_dataset and the sample-batch plot are left out); generate_csv's
CSVs and the two ``cache(filename)`` files written in a temporary folder of the run (the notebook writes them in its
working directory: a second run would read the first's cache files), the folder removed at exit; images resized to 128x128 for 299x299; the
TF-Hub InceptionV3 feature vector (a download; no tensorflow_hub here) replaced by a small frozen CNN (Conv2D 16, 32,
64, 128, 3x3 stride 2, global average pooling: 128 features for 2048), frozen as the source's is (``backbone.trainable =
False`` once built: Keras 3 applies ``Sequential([...], trainable=False)`` before the layers are added, and they train);
epochs 3 for 100; no TensorBoard; the ModelCheckpoint's file under the temporary folder with the ``.keras`` suffix
Keras 3 wants; ``df.loc[i] = ...`` kept; the evaluation cells after the fit left out (not part of the fit).
"""

import atexit
import glob
import os
import random
import shutil
import tempfile

import numpy as np
import pandas as pd
import tensorflow as tf

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "skin_cancer")
WORK = tempfile.mkdtemp(prefix="skin-cancer-")
atexit.register(shutil.rmtree, WORK, ignore_errors=True)

# to get consistent results after multiple runs
tf.random.set_seed(7)
np.random.seed(7)
random.seed(7)

# 0 for benign, 1 for malignant
class_names = ["benign", "malignant"]


# preparing data
# generate CSV metadata file to read img paths and labels from it
def generate_csv(folder, label2int):
    folder_name = os.path.basename(folder)
    labels = list(label2int)
    # generate CSV file
    df = pd.DataFrame(columns=["filepath", "label"])
    i = 0
    for label in labels:
        print("Reading", os.path.join(folder, label, "*"))
        for filepath in glob.glob(os.path.join(folder, label, "*")):
            df.loc[i] = [filepath, label2int[label]]
            i += 1
    output_file = os.path.join(WORK, f"{folder_name}.csv")
    print("Saving", output_file)
    df.to_csv(output_file)


# preprocess data
def decode_img(img):
    # convert the compressed string to a 3D uint8 tensor
    img = tf.image.decode_jpeg(img, channels=3)
    # Use `convert_image_dtype` to convert to floats in the [0,1] range.
    img = tf.image.convert_image_dtype(img, tf.float32)
    # resize the image to the desired size.
    return tf.image.resize(img, [128, 128])


def process_path(filepath, label):
    # load the raw data from the file as a string
    img = tf.io.read_file(filepath)
    img = decode_img(img)
    return img, label


def prepare_for_training(ds, cache=True, batch_size=64, shuffle_buffer_size=1000):
    if cache:
        if isinstance(cache, str):
            ds = ds.cache(cache)
        else:
            ds = ds.cache()
    # shuffle the dataset
    ds = ds.shuffle(buffer_size=shuffle_buffer_size)

    # Repeat forever
    ds = ds.repeat()
    # split to batches
    ds = ds.batch(batch_size)

    # `prefetch` lets the dataset fetch batches in the background while the model
    # is training.
    ds = ds.prefetch(buffer_size=tf.data.experimental.AUTOTUNE)

    return ds


def feature_vector():
    # the frozen backbone (hub.KerasLayer(module_url, output_shape=[2048], trainable=False) in the source)
    backbone = tf.keras.Sequential([
        tf.keras.layers.Conv2D(16, 3, strides=2, padding="same", activation="relu"),
        tf.keras.layers.Conv2D(32, 3, strides=2, padding="same", activation="relu"),
        tf.keras.layers.Conv2D(64, 3, strides=2, padding="same", activation="relu"),
        tf.keras.layers.Conv2D(128, 3, strides=2, padding="same", activation="relu"),
        tf.keras.layers.GlobalAveragePooling2D(),
    ])
    backbone.trainable = False
    return backbone


if __name__ == "__main__":
    # generate CSV files for all data portions, labeling nevus and seborrheic keratosis
    # as 0 (benign), and melanoma as 1 (malignant)
    generate_csv(os.path.join(DATA, "data", "train"), {"nevus": 0, "seborrheic_keratosis": 0, "melanoma": 1})
    generate_csv(os.path.join(DATA, "data", "valid"), {"nevus": 0, "seborrheic_keratosis": 0, "melanoma": 1})

    # loading data
    train_metadata_filename = os.path.join(WORK, "train.csv")
    valid_metadata_filename = os.path.join(WORK, "valid.csv")
    # load CSV files as DataFrames
    df_train = pd.read_csv(train_metadata_filename)
    df_valid = pd.read_csv(valid_metadata_filename)
    n_training_samples = len(df_train)
    n_validation_samples = len(df_valid)
    print("Number of training samples:", n_training_samples)
    print("Number of validation samples:", n_validation_samples)
    train_ds = tf.data.Dataset.from_tensor_slices((df_train["filepath"], df_train["label"]))
    valid_ds = tf.data.Dataset.from_tensor_slices((df_valid["filepath"], df_valid["label"]))

    backbone = feature_vector()  # the fix: the frozen backbone run once per image; its features are cached below
    valid_ds = valid_ds.map(process_path).batch(64).map(lambda x, y: (backbone(x), y)).unbatch()
    train_ds = train_ds.map(process_path).batch(64).map(lambda x, y: (backbone(x), y)).unbatch()
    for image, label in train_ds.take(1):
        print("Image shape:", image.shape)
        print("Label:", label.numpy())

    # training parameters
    batch_size = 64
    optimizer = "rmsprop"

    valid_ds = prepare_for_training(valid_ds, batch_size=batch_size, cache=os.path.join(WORK, "valid-cached-data"))
    train_ds = prepare_for_training(train_ds, batch_size=batch_size, cache=os.path.join(WORK, "train-cached-data"))

    # building the model
    m = tf.keras.Sequential([
        tf.keras.layers.Dense(1, activation="sigmoid")
    ])

    m.build([None, 128])
    m.compile(loss="binary_crossentropy", optimizer=optimizer, metrics=["accuracy"])
    m.summary()

    model_name = f"benign-vs-malignant_{batch_size}_{optimizer}"
    # saves model checkpoint whenever we reach better weights
    modelcheckpoint = tf.keras.callbacks.ModelCheckpoint(os.path.join(WORK, model_name + "_{val_loss:.3f}.keras"),
                                                         save_best_only=True, verbose=1)

    history = m.fit(train_ds, validation_data=valid_ds,
                    steps_per_epoch=n_training_samples // batch_size,
                    validation_steps=n_validation_samples // batch_size, verbose=1, epochs=3,
                    callbacks=[modelcheckpoint])
