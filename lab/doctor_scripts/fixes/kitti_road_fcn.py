"""FIXED COPY (the one fix: each frame and its ground truth read, resized and turned into masks once, kept in
memory; the shuffle and the draw of the batch still every batch).

Road segmentation for a self-driving golf cart, training: road_segmentation/train.py, model.py, utils.py and
configs.py of self-driving-golf-cart, a small U-Net ("fcn_model", 8 to 128 filters, two sigmoid channels) fitted on
``gen_batch_function``, a plain Python generator that every batch shuffles the KITTI road frames' paths, takes the
first two, reads each frame and its ground-truth PNG, resizes both to the network's size and turns the ground truth's
colours into a background / road pair of masks.

Source: https://github.com/sigmaai/self-driving-golf-cart at 3afdad4961d8235b55563c3dfb35610b96a628f8
(road_segmentation/train.py, model.py, utils.py, configs.py). Re-written here in the source's structure and order,
not copied: train.py builds ``m.fcn_model()``, loads a trained checkpoint (./segmentation-fcn-3.h5), makes
``utils.gen_batch_function(os.path.join(configs.data_path, 'data_road/training'), (configs.img_height,
configs.img_width), 2)`` (configs: 480x640), draws one batch with ``next`` (for plots left commented out), fits
``model.fit_generator(train_generator, steps_per_epoch=1000, epochs=2, verbose=1)`` and saves
./segmentation-fcn-4.h5 (test_results False: no plots); fcn_model is Input(480, 640, 3) (a Lambda x / 127.5 - 1 is
made and never applied), two 3x3 relu Convolution2D per level with 8, 16, 32, 64, 128 filters and 2x2 max pooling,
then UpSampling2D merged (concat) with the matching level and two convolutions of 64, 32, 16, 8, a 1x1 Convolution2D
of 2 sigmoid, compiled with Adam(lr=1e-4), binary cross-entropy and binary_accuracy; gen_batch_function globs
image_2/*.png, maps each gt_image_2/*_road_*.png to its frame by the name without ``_road_``, and loops forever:
``random.shuffle(image_paths)``, for the first batch_size paths scipy.misc.imread of the frame and its ground truth,
scipy.misc.imresize of both to image_shape, the background mask ``np.all(gt_image == [255, 0, 0], axis=2)`` and
its inverse stacked as two channels, and yields the arrays of both.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/kitti_road_fcn/data_road/training``: 24 generated 375x1242 frames and
ground truths for KITTI road's 289); image_shape 96x128 for configs' 480x640 (a fifth of it; the model's Input
the same); steps_per_epoch 20 for 1000, epochs 3 for 2; ``model.load_weights("./segmentation-fcn-3.h5")`` dropped (a
trained checkpoint not in the repository: the model starts from its initialisation); scipy.misc (gone from SciPy)
re-written with PIL as it worked: imread -> ``np.array(Image.open(path))``, imresize(arr, (h, w)) -> PIL bilinear
resize to (w, h) of the uint8 array; Keras 1/2 names ported to Keras 3 (Convolution2D -> Conv2D, merge(mode='concat',
concat_axis=3) -> concatenate(axis=3), Model(input=, output=) -> inputs=/outputs=, Adam(lr=) -> learning_rate=,
fit_generator -> fit); the model saved under the temporary folder as .keras.
"""

import os
import random
import re
import tempfile
from glob import glob

import numpy as np
from keras.layers import Conv2D, Input, Lambda, MaxPooling2D, UpSampling2D, concatenate
from keras.metrics import binary_accuracy
from keras.models import Model
from keras.optimizers import Adam
from PIL import Image

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "kitti_road_fcn")


# ----------------------------------------------------------------------------- configs.py
data_path = DATA + "/"
batch_size = 12
img_height = 96
img_width = 128
learning_rate = 1e-4


# ----------------------------------------------------------------------------- scipy.misc (imread, imresize)
def imread(path):
    return np.array(Image.open(path))


def imresize(arr, size):
    return np.array(Image.fromarray(arr).resize((size[1], size[0]), Image.BILINEAR))


# ----------------------------------------------------------------------------- utils.py
def gen_batch_function(data_folder, image_shape, batch_size):
    """
    Generate function to create batches of training data
    :param data_folder: Path to folder that contains all the datasets
    :param image_shape: Tuple - Shape of image
    :return:
    """

    image_paths = glob(os.path.join(data_folder, 'image_2', '*.png'))
    label_paths = {
        re.sub(r'_(lane|road)_', '_', os.path.basename(path)): path
        for path in glob(
            os.path.join(data_folder, 'gt_image_2', '*_road_*.png')
        )
    }

    background_color = np.array([255, 0, 0])
    sideroad_color = np.array([0, 0, 0])  # noqa: F841 (the source's, unused)
    road_color = np.array([255, 0, 255])  # noqa: F841 (the source's, unused)
    decoded = {}  # the fix: path -> (resized frame, masks)

    while 1:

        random.shuffle(image_paths)

        images = []
        gt_images = []

        for image_file in image_paths[0: batch_size]:

            if image_file in decoded:
                image, gt_image = decoded[image_file]
            else:
                gt_image_file = label_paths[os.path.basename(image_file)]

                image = imread(image_file)
                gt_image = imread(gt_image_file)

                image = imresize(image, image_shape)
                gt_image = imresize(gt_image, image_shape)
                gt_bg = np.all(gt_image == background_color, axis=2)
                gt_bg = gt_bg.reshape(*gt_bg.shape, 1)
                gt_image = np.concatenate((gt_bg, np.invert(gt_bg)), axis=2)
                decoded[image_file] = image, gt_image

            images.append(image)
            gt_images.append(gt_image)

        yield np.array(images), np.array(gt_images)


# ----------------------------------------------------------------------------- model.py
img_rows = img_height
img_cols = img_width


def fcn_model():

    inputs = Input((img_rows, img_cols, 3))
    inputs_norm = Lambda(lambda x: x / 127.5 - 1.)  # noqa: F841 (the source's, unused)

    conv1 = Conv2D(8, (3, 3), activation="relu", padding="same")(inputs)
    conv1 = Conv2D(8, (3, 3), activation="relu", padding="same")(conv1)
    pool1 = MaxPooling2D(pool_size=(2, 2))(conv1)

    conv2 = Conv2D(16, (3, 3), activation='relu', padding='same')(pool1)
    conv2 = Conv2D(16, (3, 3), activation='relu', padding='same')(conv2)
    pool2 = MaxPooling2D(pool_size=(2, 2))(conv2)

    conv3 = Conv2D(32, (3, 3), activation='relu', padding='same')(pool2)
    conv3 = Conv2D(32, (3, 3), activation='relu', padding='same')(conv3)
    pool3 = MaxPooling2D(pool_size=(2, 2))(conv3)

    conv4 = Conv2D(64, (3, 3), activation='relu', padding='same')(pool3)
    conv4 = Conv2D(64, (3, 3), activation='relu', padding='same')(conv4)
    pool4 = MaxPooling2D(pool_size=(2, 2))(conv4)

    conv5 = Conv2D(128, (3, 3), activation='relu', padding='same')(pool4)
    conv5 = Conv2D(128, (3, 3), activation='relu', padding='same')(conv5)

    up6 = concatenate([UpSampling2D(size=(2, 2))(conv5), conv4], axis=3)
    conv6 = Conv2D(64, (3, 3), activation='relu', padding='same')(up6)
    conv6 = Conv2D(64, (3, 3), activation='relu', padding='same')(conv6)

    up7 = concatenate([UpSampling2D(size=(2, 2))(conv6), conv3], axis=3)
    conv7 = Conv2D(32, (3, 3), activation='relu', padding='same')(up7)
    conv7 = Conv2D(32, (3, 3), activation='relu', padding='same')(conv7)

    up8 = concatenate([UpSampling2D(size=(2, 2))(conv7), conv2], axis=3)
    conv8 = Conv2D(16, (3, 3), activation='relu', padding='same')(up8)
    conv8 = Conv2D(16, (3, 3), activation='relu', padding='same')(conv8)

    up9 = concatenate([UpSampling2D(size=(2, 2))(conv8), conv1], axis=3)
    conv9 = Conv2D(8, (3, 3), activation='relu', padding='same')(up9)
    conv9 = Conv2D(8, (3, 3), activation='relu', padding='same')(conv9)

    conv10 = Conv2D(2, (1, 1), activation='sigmoid')(conv9)

    model = Model(inputs=inputs, outputs=conv10)
    model.compile(optimizer=Adam(learning_rate=1e-4), loss="binary_crossentropy", metrics=[binary_accuracy])

    return model


# ----------------------------------------------------------------------------- train.py
test_results = False
steps_per_epoch = 20
epochs = 3
nb_classes = 2

model = fcn_model()
print(model.summary())
train_generator = gen_batch_function(os.path.join(data_path, 'data_road/training'),
                                     (img_height, img_width), 2)

images, targets = next(train_generator)

model.fit(train_generator, steps_per_epoch=steps_per_epoch, epochs=epochs, verbose=1)

model.save(os.path.join(tempfile.gettempdir(), 'segmentation-fcn-4.keras'))
