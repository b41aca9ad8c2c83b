"""FIXED COPY (the one fix: cache() the decoded datasets, each JPEG read, decoded and resized once; the order of the
first epoch's batches then repeats).

AlexNet on an ImageNet-style folder, training: main.py and alexnet.py of alexnet_weights_evolution, an AlexNet (random
flip, rotation and zoom layers in the model) fitted on ``image_dataset_from_directory`` (each JPEG read, decoded and
resized by Keras's tf.data pipeline every epoch, no cache), with ``.prefetch(2)``, and validated on the same folder's
validation split read the same way.

Source: https://github.com/jroose/alexnet_weights_evolution at ab4ad041a9078b39e6141a1ce242b411167819e0 (main.py,
alexnet.py). Re-written here in the source's structure and order, not copied: the train, validation and test folders
are sys.argv[1..3] (only the first is read); BATCH_SIZE 256; Train_ds and Valid_ds are
``image_dataset_from_directory(traindir, image_size=(227, 227), seed=10, labels="inferred", label_mode="int",
validation_split=0.2, subset='training' / 'validation', batch_size=BATCH_SIZE)``; create_alexnet is Input(227, 227, 3),
RandomFlip, RandomRotation([0, 1]), RandomZoom((-0.1, 0.1)), Conv2D 96 11x11 stride 4 valid, MaxPooling 3/2, Conv2D
256 5x5, MaxPooling 3/2, Conv2D 384, 384, 256 3x3, MaxPooling 3/2, Flatten, Dense 4096 + Dropout 0.5, Dense 4096, Dense
1000 softmax (he_normal kernels, biases 'ones'), compiled with Adam(1e-4), SparseCategoricalCrossentropy, accuracy and
mse; fitted ``model.fit(Train_ds.prefetch(2), validation_data=Valid_ds.prefetch(2), epochs=300, callbacks=[tb])``.

Changed: the folders are ``$DOCTOR_SCRIPTS_DATA/alexnet_dataset/train`` (4 classes of 160 generated 128x128 JPEGs, for
ImageNet) for sys.argv; image size 96x96 for 227x227 (Input (96, 96, 3)); the AlexNet's filters an eighth of the
source's (12, 32, 48, 48, 32 for 96, 256, 384, 384, 256) and its Dense layers 256 for 4096; BATCH_SIZE 32 for 256 (the
source's comment: "try smaller sizes 32, 64"); epochs 3 for 300; the TensorBoard callback (histogram_freq=1) and
plot_model (needs pydot and graphviz) left out; the 'mse' metric left out (Keras 2 broadcast the (batch,)
integer labels against the (batch, 1000) softmax, Keras 3 raises Incompatible shapes); create_alexnet written in this file (alexnet.py's function, the same
layers); its unused imports left out.
"""

import os
import random
import sys

from tensorflow.keras.initializers import he_normal
from tensorflow.keras.layers import (
    Activation,
    Conv2D,
    Dense,
    Dropout,
    Flatten,
    Input,
    MaxPooling2D,
    RandomFlip,
    RandomRotation,
    RandomZoom,
)
from tensorflow.keras.losses import SparseCategoricalCrossentropy
from tensorflow.keras.models import Model
from tensorflow.keras.optimizers import Adam
from tensorflow.keras.utils import image_dataset_from_directory

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "alexnet_dataset")
IMAGE_SIZE = 96


# ----------------------------------------------------------------------------- alexnet.py
def create_alexnet():
    # input layer: size (224, 224, 3)
    X = Input(shape=(IMAGE_SIZE, IMAGE_SIZE, 3))
    inputs = X

    # data augmentation, random flips and random rotation
    X = RandomFlip()(X)
    X = RandomRotation([0, 1])(X)
    X = RandomZoom((-0.1, 0.1))(X)

    X = Conv2D(filters=12, kernel_size=(11, 11), strides=(4, 4), padding='valid', kernel_initializer=he_normal(),
               bias_initializer='ones')(X)
    X = Activation('relu')(X)
    X = MaxPooling2D((3, 3), strides=(2, 2))(X)

    X = Conv2D(filters=32, kernel_size=(5, 5), strides=(1, 1), padding='same', kernel_initializer=he_normal(),
               bias_initializer='ones')(X)
    X = Activation('relu')(X)
    X = MaxPooling2D((3, 3), strides=(2, 2))(X)

    X = Conv2D(filters=48, kernel_size=(3, 3), strides=(1, 1), padding='same', kernel_initializer=he_normal(),
               bias_initializer='ones')(X)
    X = Activation('relu')(X)

    X = Conv2D(filters=48, kernel_size=(3, 3), strides=(1, 1), padding='same', kernel_initializer=he_normal(),
               bias_initializer='ones')(X)
    X = Activation('relu')(X)

    X = Conv2D(filters=32, kernel_size=(3, 3), strides=(1, 1), padding='same', kernel_initializer=he_normal(),
               bias_initializer='ones')(X)
    X = Activation('relu')(X)

    X = MaxPooling2D((3, 3), strides=(2, 2))(X)
    X = Flatten()(X)

    # Three fully connected layers, first two with 4096 neurons and Dropout
    X = Dense(256, activation='relu', kernel_initializer=he_normal(), bias_initializer='ones')(X)
    X = Dropout(0.5)(X)
    X = Dense(256, activation='relu', kernel_initializer=he_normal(), bias_initializer='ones')(X)
    X = Dense(1000, activation='softmax', kernel_initializer=he_normal())(X)

    model = Model(inputs=inputs, outputs=X, name="alexnet")
    model.compile(optimizer=Adam(learning_rate=1e-4), loss=SparseCategoricalCrossentropy(),
                  metrics=['accuracy'])

    return model


# ----------------------------------------------------------------------------- main.py
if __name__ == '__main__':
    random.seed(1)
    # getting command line args
    traindir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(DATA, "train")

    BATCH_SIZE = 32  # baseline BATCH_SIZE is 256, try smaller sizes 32, 64
    image_width = IMAGE_SIZE
    image_height = IMAGE_SIZE

    model = create_alexnet()
    Train_ds = image_dataset_from_directory(traindir, image_size=(image_height, image_width), seed=10,
                                            labels="inferred", label_mode="int", validation_split=0.2,
                                            subset='training', batch_size=BATCH_SIZE)
    Valid_ds = image_dataset_from_directory(traindir, image_size=(image_height, image_width), seed=10,
                                            labels="inferred", label_mode="int", validation_split=0.2,
                                            subset='validation', batch_size=BATCH_SIZE)

    Train_ds, Valid_ds = Train_ds.cache(), Valid_ds.cache()  # the fix: each image read, decoded and resized once
    model.fit(Train_ds.prefetch(2), validation_data=Valid_ds.prefetch(2), epochs=3)
