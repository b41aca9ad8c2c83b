"""FIXED COPY (the one fix: the frozen MobileNetV2 run once per tile, without the random shear, zoom and flip in front of
it (which made every epoch's features new), its pooled features kept in memory and the Flatten/Dense head fitted on
them).

Breast-cancer subtype classification on BRACS tiles, training: mobilenetV2_3_128.py of
Classification-of-Breast-Cancer-Subtypes-Using-Deep-Learning-Methods, a frozen MobileNetV2 (max-pooled features) under
a Flatten, Dense 128 and Dense 3 softmax head, fitted on ImageDataGenerator.flow_from_directory iterators that read and
decode every 128x128 PNG tile of a batch each time the batch is asked for, every epoch, and shear, zoom and flip the
training tiles at random before the frozen backbone sees them.

Source: https://github.com/ahmetenesatas/Classification-of-Breast-Cancer-Subtypes-Using-Deep-Learning-Methods at
fea06eef0a7ad276bcfc0eea0d5b7b91f0fdd33f (Classification-of-Breast-Cancer-Subtypes-Using-Deep-Learning-Methods/
mobilenetV2_3_128.py; the tiles written by kmeans_3_128.py). Re-written here in the source's structure and order, not
copied: ``ImageDataGenerator(rescale=1./255, shear_range=0.2, zoom_range=0.2, horizontal_flip=True)
.flow_from_directory('new_dataset_3_128/train', target_size=(128, 128), batch_size=32, class_mode='categorical')`` and
``ImageDataGenerator(rescale=1./255)`` on new_dataset_3_128/test the same way (the tiles: 128x128 crops of BRACS RoI
images, mostly tumour by a K-means mask, saved with plt.imsave as RGBA PNGs under <split>/0_B, 1_A or 2_M: benign,
atypical, malignant); ``tf.keras.applications.MobileNetV2(alpha=1.0, include_top=False, weights='imagenet',
input_shape=(128,128,3), pooling='max', classes=3, classifier_activation="softmax")`` with ``model.trainable =
False``, added to a Sequential with Flatten, Dense 128 relu, Dense 3 softmax; compiled with adam, categorical
cross-entropy and accuracy; ``enetV2L.fit(x=training_set, validation_data=test_set, epochs=50)``; then saved to
saved_models/mobilenetV2_3_128.h5.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/bracs_mobilenet/new_dataset_3_128/``: 320 training and 64 test generated
128x128 RGBA PNG tiles of the 3 classes, for the tens of thousands of tiles K-means cut from BRACS's 4539 RoIs);
MobileNetV2 weights=None for 'imagenet' (no download here; the frozen layers cost the same either way) and alpha 0.5
for 1.0; epochs 3 for 50; the shear and zoom (ImageDataGenerator's apply_affine_transform uses scipy.ndimage, not
installed here) applied with cv2.warpAffine, the same matrix as Keras builds, bilinear, edges replicated (fill_mode
'nearest'), in a subclass of ImageDataGenerator that leaves the rest (random draws, flip, rescale) to Keras; ImageDataGenerator
imported from tensorflow.keras.preprocessing.image (Keras 3's legacy class; keras.preprocessing.image no longer has
it); the save to saved_models/ after the fit left out.
"""

import os

import cv2
import numpy as np
import tensorflow as tf
from tensorflow.keras.preprocessing.image import ImageDataGenerator as KerasImageDataGenerator

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "bracs_mobilenet")


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
            # Keras maps output (row, col) to input (row, col); cv2 wants (x=col, y=row): the same matrix here.
            x = cv2.warpAffine(x, m[:2], (w, h), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                               borderMode=cv2.BORDER_REPLICATE)
        p.update(theta=0, tx=0, ty=0, shear=0, zx=1, zy=1)
        return super().apply_transform(x, p)


# ----------------------------------------------------------------------------- mobilenetV2_3_128.py
train_datagen = ImageDataGenerator(rescale=1./255)  # FIX: no random shear, zoom or flip before the frozen backbone
training_set = train_datagen.flow_from_directory(os.path.join(DATA, 'new_dataset_3_128/train'),
                                                 target_size=(128, 128),
                                                 batch_size=32,
                                                 class_mode='categorical', shuffle=False)

test_datagen = ImageDataGenerator(rescale=1./255)
test_set = test_datagen.flow_from_directory(os.path.join(DATA, 'new_dataset_3_128/test'),
                                            target_size=(128, 128),
                                            batch_size=32,
                                            class_mode='categorical', shuffle=False)


model = tf.keras.applications.MobileNetV2(
                        alpha=1.0,
                        include_top=False,
                        weights=None,
                        input_shape=(128, 128, 3),
                        pooling='max',
                        classes=3,
                        classifier_activation="softmax")
model.trainable = False

# FIX: the frozen backbone once per tile; its features and the one-hot labels kept in memory
train_features, train_labels = model.predict(training_set), tf.keras.utils.to_categorical(training_set.classes, 3)
test_features, test_labels = model.predict(test_set), tf.keras.utils.to_categorical(test_set.classes, 3)
enetV2L = tf.keras.models.Sequential()
enetV2L.add(tf.keras.Input(shape=train_features.shape[1:]))

enetV2L.add(tf.keras.layers.Flatten())
enetV2L.add(tf.keras.layers.Dense(units=128, activation='relu'))
enetV2L.add(tf.keras.layers.Dense(units=3, activation='softmax'))

print(enetV2L.summary())

enetV2L.compile(optimizer='adam', loss='categorical_crossentropy', metrics=['accuracy'])
enetV2L.fit(x=train_features, y=train_labels, batch_size=32, validation_data=(test_features, test_labels), epochs=3)
