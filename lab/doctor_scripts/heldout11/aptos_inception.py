"""Diabetic-retinopathy grading (Kaggle APTOS 2019 Blindness Detection), training: src/inception/train.py of
KLdivergence/blindness_detection, a 5-class classifier (InceptionV3 from scratch) fitted with ``fit_generator`` on
ImageDataGenerator.flow_from_dataframe iterators (Keras Sequences) that open every fundus PNG of a 32-image batch
with PIL (load_img), resize it to the model's input and draw a random shear, zoom, rotation, shift and flip per image;
the validation iterator is drawn from the same augmenting generator (validation_split 0.1).

Source: https://github.com/KLdivergence/blindness_detection at 053d657dc46b1253b320ca2063256cf992148b97
(src/inception/train.py; src/inception/model.py at bc18b26587ba40675a7e820f8cc09eb1b6ebe1e9). Re-written here in the
source's structure and order, not copied: train.py sets a TF1 session with allow_growth; builds ``traingen =
ImageDataGenerator(rescale=1./255, shear_range=0.2, zoom_range=0.2, rotation_range=20, width_shift_range=0.2,
height_shift_range=0.2, horizontal_flip=True, validation_split=0.1)`` (featurewise centring commented out); reads
``../../data/train.csv`` (id_code, diagnosis), appends ".png" to the first column; makes ``train_generator`` and
``val_generator`` = ``traingen.flow_from_dataframe(train_df, "../../data/train_images", cols[0], cols[1],
class_mode="categorical", target_size=(299, 299), batch_size=32, subset="training" | "validation")``;
``create_model()`` (model.py: ``InceptionV3(include_top=True, weights=None, classes=5)`` compiled with Adam(lr=0.001)
and categorical cross-entropy, no metrics); STEP_SIZE_TRAIN/STEP_SIZE_VAL = n // batch_size; ``model.fit_generator(
train_generator, steps_per_epoch=STEP_SIZE_TRAIN, epochs=50, validation_data=val_generator,
validation_steps=STEP_SIZE_VAL)``; then a testing stage (flow_from_directory over ../../data/test_images, batch 1,
predict_generator) whose predictions are pickled to ../../results/inception/predict.pk.

Changed: data paths (``$DOCTOR_SCRIPTS_DATA/aptos_inception/data/``: 320 generated 288x216 fundus PNGs for APTOS's
3662 of up to 3216x2136); target_size 128x128 for 299x299; epochs 3 for 50; InceptionV3 (too deep to trace here) replaced
by a small CNN (Conv2D 8/16/32/64 with max-pooling) under InceptionV3's own top (global average pooling, Dense 5
softmax), weights None as in the source; Keras 2 -> Keras 3: the TF1 session block dropped, fit_generator -> fit,
Adam(lr=) -> learning_rate=; ImageDataGenerator from tensorflow.keras.preprocessing.image (Keras 3's legacy class)
with its affine step (scipy.ndimage there, not installed here) done by cv2.warpAffine with the matrix Keras builds
(rotation, shift, shear, zoom about the centre; bilinear; edges replicated for fill_mode 'nearest'), the rest
(random draws, flip, rescale) left to Keras; the testing stage left out (APTOS's test_images folder is flat, so
flow_from_directory finds no class folders and no images; it runs after the fit and no training depends on it).
"""

import os

import cv2
import numpy as np
import pandas as pd
from keras.layers import Conv2D, Dense, GlobalAveragePooling2D, Input, MaxPooling2D
from keras.losses import categorical_crossentropy
from keras.models import Model
from keras.optimizers import Adam
from tensorflow.keras.preprocessing.image import ImageDataGenerator as KerasImageDataGenerator

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "aptos_inception")


# ----------------------------------------------------------------------------- ImageDataGenerator without scipy
class ImageDataGenerator(KerasImageDataGenerator):
    """Keras's ImageDataGenerator, its affine step (scipy.ndimage there) done with cv2.warpAffine."""

    def apply_transform(self, x, transform_parameters):
        p = dict(transform_parameters)
        m = np.eye(3)
        if p.get("theta", 0):
            t = np.deg2rad(p["theta"])
            m = m @ np.array([[np.cos(t), -np.sin(t), 0], [np.sin(t), np.cos(t), 0], [0, 0, 1]])
        if p.get("tx", 0) or p.get("ty", 0):
            m = m @ np.array([[1, 0, p.get("tx", 0)], [0, 1, p.get("ty", 0)], [0, 0, 1]])
        if p.get("shear", 0):
            s = np.deg2rad(p["shear"])
            m = m @ np.array([[1, -np.sin(s), 0], [0, np.cos(s), 0], [0, 0, 1]])
        if p.get("zx", 1) != 1 or p.get("zy", 1) != 1:
            m = m @ np.array([[p.get("zx", 1), 0, 0], [0, p.get("zy", 1), 0], [0, 0, 1]])
        if not np.allclose(m, np.eye(3)):
            h, w = x.shape[0], x.shape[1]
            o_x, o_y = h / 2 + 0.5, w / 2 + 0.5  # Keras's transform_matrix_offset_center
            m = np.array([[1, 0, o_x], [0, 1, o_y], [0, 0, 1]]) @ m @ np.array([[1, 0, -o_x], [0, 1, -o_y], [0, 0, 1]])
            # Keras builds the matrix in (x, y) terms (it swaps rows and columns for scipy): cv2 takes it as it is.
            x = cv2.warpAffine(x, m[:2], (w, h), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                               borderMode=cv2.BORDER_REPLICATE)
        p.update(theta=0, tx=0, ty=0, shear=0, zx=1, zy=1)
        return super().apply_transform(x, p)


# ----------------------------------------------------------------------------- model.py (InceptionV3 -> small CNN)
def create_model(lr=0.001):
    """Create compiled keras model

    Parameters:
        lr (float): learning rate

    Returns:
        keras.Model: a instance of keras.Model compiled with
            categorical_crossentropy loss and adam optimizer
    """

    optimizer = Adam(learning_rate=lr)
    # InceptionV3(include_top=True, weights=None, classes=5): a small CNN under the same top
    img_input = Input(shape=(128, 128, 3))
    x = Conv2D(8, 3, strides=2, padding="same", activation="relu")(img_input)
    x = Conv2D(16, 3, padding="same", activation="relu")(x)
    x = MaxPooling2D(2)(x)
    x = Conv2D(32, 3, padding="same", activation="relu")(x)
    x = MaxPooling2D(2)(x)
    x = Conv2D(64, 3, padding="same", activation="relu")(x)
    x = GlobalAveragePooling2D(name="avg_pool")(x)
    x = Dense(5, activation="softmax", name="predictions")(x)
    model = Model(img_input, x, name="inception_v3")
    model.compile(loss=categorical_crossentropy, optimizer=optimizer)
    return model


# ----------------------------------------------------------------------------- train.py
### Training stage
traingen = ImageDataGenerator(rescale=1./255,
                              shear_range=0.2,
                              zoom_range=0.2,
                              # featurewise_center=True,
                              # featurewise_std_normalization=True,
                              rotation_range=20,
                              width_shift_range=0.2,
                              height_shift_range=0.2,
                              horizontal_flip=True,
                              validation_split=0.1)

train_df = pd.read_csv(os.path.join(DATA, "data/train.csv"))
cols = train_df.columns
# add extensions to filenames
train_df[cols[0]] = train_df[cols[0]].apply("{}.png".format)
train_df[cols[1]] = train_df[cols[1]].astype(str)  # Keras 3: class_mode "categorical" needs string labels

train_generator = traingen.flow_from_dataframe(
        train_df,
        os.path.join(DATA, "data/train_images"),
        cols[0],
        cols[1],
        class_mode="categorical",
        target_size=(128, 128),
        batch_size=32,
        subset="training")

val_generator = traingen.flow_from_dataframe(
        train_df,
        os.path.join(DATA, "data/train_images"),
        cols[0],
        cols[1],
        class_mode="categorical",
        target_size=(128, 128),
        batch_size=32,
        subset="validation")

model = create_model()
STEP_SIZE_TRAIN = train_generator.n // train_generator.batch_size
STEP_SIZE_VAL = val_generator.n // val_generator.batch_size
model.fit(
        train_generator,
        steps_per_epoch=STEP_SIZE_TRAIN,
        epochs=3,
        validation_data=val_generator,
        validation_steps=STEP_SIZE_VAL)
