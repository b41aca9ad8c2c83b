"""image-segmentation-keras (keras_segmentation), training: train() over image_segmentation_generator, a
plain Python generator reading each image and annotation with OpenCV for every batch.

Source: https://github.com/divamgupta/image-segmentation-keras (keras_segmentation/train.py at
02ebd1ef1c4aca61a4fd69b55d7764702220f9a9 and keras_segmentation/data_utils/data_loader.py at
184d7d66ac0c39e6f2ddf4940dde57847b6a148a; unet_mini in keras_segmentation/models/unet.py). Kept as written:
get_pairs_from_paths, get_image_array ("sub_mean"), get_segmentation_array (a loop over the classes),
image_segmentation_generator (shuffle once, itertools.cycle, cv2.imread of each pair per batch), and
train(): compile with categorical_crossentropy / adadelta / accuracy, verify_segmentation_dataset, then one
fit call of one epoch per epoch (``for ep in range(epochs)``) with steps_per_epoch, validation_data=val_gen
and the hard-coded validation_steps=200 (200 batches of val_batch_size 2: with a small validation set the
cycle evaluates each example many times per epoch: the source's logic, kept).

Changed: data path (``$DOCTOR_SCRIPTS_DATA/keras_segmentation``: dataset1's layout, 60 train and 20
validation 240x180 PNGs (half of dataset1's 480x360) with class-index annotations, 5 classes); ``fit_generator(train_gen,
steps_per_epoch, ...)`` -> ``fit(train_gen, steps_per_epoch=steps_per_epoch, ...)`` (Keras 3; positionally
the second argument would be y); channels_last; augmentation, other_inputs, checkpoints and the
model_from_name registry left out (not used by this call); unet_mini's layers kept at 1/2 width on
64x96 inputs (360x480 in the README's example); steps_per_epoch = train pairs // batch_size (the default
512 cycles the small set); epochs 3; six.string_types -> str.
"""

import itertools
import os
import random

import cv2
import numpy as np
from tensorflow import keras
from tensorflow.keras import layers

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "keras_segmentation")
IMAGE_ORDERING = 'channels_last'
DATA_LOADER_SEED = 0
random.seed(DATA_LOADER_SEED)


class DataLoaderError(Exception):
    pass


def get_pairs_from_paths(images_path, segs_path, ignore_non_matching=False):
    ACCEPTABLE_IMAGE_FORMATS = [".jpg", ".jpeg", ".png", ".bmp"]
    ACCEPTABLE_SEGMENTATION_FORMATS = [".png", ".bmp"]

    image_files = []
    segmentation_files = {}

    for dir_entry in os.listdir(images_path):
        if os.path.isfile(os.path.join(images_path, dir_entry)) and \
                os.path.splitext(dir_entry)[1] in ACCEPTABLE_IMAGE_FORMATS:
            file_name, file_extension = os.path.splitext(dir_entry)
            image_files.append((file_name, file_extension,
                                os.path.join(images_path, dir_entry)))

    for dir_entry in os.listdir(segs_path):
        if os.path.isfile(os.path.join(segs_path, dir_entry)) and \
           os.path.splitext(dir_entry)[1] in ACCEPTABLE_SEGMENTATION_FORMATS:
            file_name, file_extension = os.path.splitext(dir_entry)
            full_dir_entry = os.path.join(segs_path, dir_entry)
            if file_name in segmentation_files:
                raise DataLoaderError("Segmentation file with filename {0}"
                                      " already exists and is ambiguous to"
                                      " resolve with path {1}."
                                      " Please remove or rename the latter."
                                      .format(file_name, full_dir_entry))

            segmentation_files[file_name] = (file_extension, full_dir_entry)

    return_value = []
    # Match the images and segmentations
    for image_file, _, image_full_path in image_files:
        if image_file in segmentation_files:
            return_value.append((image_full_path,
                                 segmentation_files[image_file][1]))
        elif ignore_non_matching:
            continue
        else:
            # Error out
            raise DataLoaderError("No corresponding segmentation "
                                  "found for image {0}."
                                  .format(image_full_path))

    return return_value


def get_image_array(image_input,
                    width, height,
                    imgNorm="sub_mean", ordering='channels_first'):
    """ Load image array from input """

    if type(image_input) is np.ndarray:
        # It is already an array, use it as it is
        img = image_input
    elif isinstance(image_input, str):
        if not os.path.isfile(image_input):
            raise DataLoaderError("get_image_array: path {0} doesn't exist"
                                  .format(image_input))
        img = cv2.imread(image_input, 1)
    else:
        raise DataLoaderError("get_image_array: Can't process input type {0}"
                              .format(str(type(image_input))))

    if imgNorm == "sub_and_divide":
        img = np.float32(cv2.resize(img, (width, height))) / 127.5 - 1
    elif imgNorm == "sub_mean":
        img = cv2.resize(img, (width, height))
        img = img.astype(np.float32)
        img[:, :, 0] -= 103.939
        img[:, :, 1] -= 116.779
        img[:, :, 2] -= 123.68
        img = img[:, :, ::-1]
    elif imgNorm == "divide":
        img = cv2.resize(img, (width, height))
        img = img.astype(np.float32)
        img = img/255.0

    if ordering == 'channels_first':
        img = np.rollaxis(img, 2, 0)
    return img


def get_segmentation_array(image_input, nClasses,
                           width, height, no_reshape=False):
    """ Load segmentation array from input """

    seg_labels = np.zeros((height, width, nClasses))

    if type(image_input) is np.ndarray:
        # It is already an array, use it as it is
        img = image_input
    elif isinstance(image_input, str):
        if not os.path.isfile(image_input):
            raise DataLoaderError("get_segmentation_array: "
                                  "path {0} doesn't exist".format(image_input))
        img = cv2.imread(image_input, 1)
    else:
        raise DataLoaderError("get_segmentation_array: "
                              "Can't process input type {0}"
                              .format(str(type(image_input))))

    img = cv2.resize(img, (width, height), interpolation=cv2.INTER_NEAREST)
    img = img[:, :, 0]

    for c in range(nClasses):
        seg_labels[:, :, c] = (img == c).astype(int)

    if not no_reshape:
        seg_labels = np.reshape(seg_labels, (width*height, nClasses))

    return seg_labels


def verify_segmentation_dataset(images_path, segs_path,
                                n_classes, show_all_errors=False):
    try:
        img_seg_pairs = get_pairs_from_paths(images_path, segs_path)
        if not len(img_seg_pairs):
            print("Couldn't load any data from images_path: "
                  "{0} and segmentations path: {1}"
                  .format(images_path, segs_path))
            return False

        return_value = True
        for im_fn, seg_fn in img_seg_pairs:
            img = cv2.imread(im_fn)
            seg = cv2.imread(seg_fn)
            # Check dimensions match
            if not img.shape == seg.shape:
                return_value = False
                print("The size of image {0} and its segmentation {1} "
                      "doesn't match (possibly the files are corrupt)."
                      .format(im_fn, seg_fn))
                if not show_all_errors:
                    break
            else:
                max_pixel_value = np.max(seg[:, :, 0])
                if max_pixel_value >= n_classes:
                    return_value = False
                    print("The pixel values of the segmentation image {0} "
                          "violating range [0, {1}]. "
                          "Found maximum pixel value {2}"
                          .format(seg_fn, str(n_classes - 1), max_pixel_value))
                    if not show_all_errors:
                        break
        if return_value:
            print("Dataset verified! ")
        else:
            print("Dataset not verified!")
        return return_value
    except DataLoaderError as e:
        print("Found error during data loading\n{0}".format(str(e)))
        return False


def image_segmentation_generator(images_path, segs_path, batch_size,
                                 n_classes, input_height, input_width,
                                 output_height, output_width):

    img_seg_pairs = get_pairs_from_paths(images_path, segs_path)
    random.shuffle(img_seg_pairs)
    zipped = itertools.cycle(img_seg_pairs)

    while True:
        X = []
        Y = []
        for _ in range(batch_size):
            im, seg = next(zipped)

            im = cv2.imread(im, 1)
            seg = cv2.imread(seg, 1)

            X.append(get_image_array(im, input_width,
                                     input_height, ordering=IMAGE_ORDERING))

            Y.append(get_segmentation_array(
                seg, n_classes, output_width, output_height))

        yield np.array(X), np.array(Y)


def unet_mini(n_classes, input_height=96, input_width=128):
    img_input = layers.Input(shape=(input_height, input_width, 3))

    conv1 = layers.Conv2D(16, (3, 3), activation='relu', padding='same')(img_input)
    conv1 = layers.Dropout(0.2)(conv1)
    conv1 = layers.Conv2D(16, (3, 3), activation='relu', padding='same')(conv1)
    pool1 = layers.MaxPooling2D((2, 2))(conv1)

    conv2 = layers.Conv2D(32, (3, 3), activation='relu', padding='same')(pool1)
    conv2 = layers.Dropout(0.2)(conv2)
    conv2 = layers.Conv2D(32, (3, 3), activation='relu', padding='same')(conv2)
    pool2 = layers.MaxPooling2D((2, 2))(conv2)

    conv3 = layers.Conv2D(64, (3, 3), activation='relu', padding='same')(pool2)
    conv3 = layers.Dropout(0.2)(conv3)
    conv3 = layers.Conv2D(64, (3, 3), activation='relu', padding='same')(conv3)

    up1 = layers.concatenate([layers.UpSampling2D((2, 2))(conv3), conv2], axis=-1)
    conv4 = layers.Conv2D(32, (3, 3), activation='relu', padding='same')(up1)
    conv4 = layers.Dropout(0.2)(conv4)
    conv4 = layers.Conv2D(32, (3, 3), activation='relu', padding='same')(conv4)

    up2 = layers.concatenate([layers.UpSampling2D((2, 2))(conv4), conv1], axis=-1)
    conv5 = layers.Conv2D(16, (3, 3), activation='relu', padding='same')(up2)
    conv5 = layers.Dropout(0.2)(conv5)
    conv5 = layers.Conv2D(16, (3, 3), activation='relu', padding='same')(conv5)

    o = layers.Conv2D(n_classes, (1, 1), padding='same')(conv5)
    o = layers.Reshape((input_height * input_width, n_classes))(o)
    o = layers.Activation('softmax')(o)
    model = keras.Model(img_input, o)
    model.n_classes = n_classes
    model.input_height, model.input_width = input_height, input_width
    model.output_height, model.output_width = input_height, input_width
    return model


def train(model,
          train_images,
          train_annotations,
          input_height=None,
          input_width=None,
          n_classes=None,
          verify_dataset=True,
          checkpoints_path=None,
          epochs=5,
          batch_size=2,
          validate=False,
          val_images=None,
          val_annotations=None,
          val_batch_size=2,
          auto_resume_checkpoint=False,
          load_weights=None,
          steps_per_epoch=512,
          optimizer_name='adadelta'
          ):

    n_classes = model.n_classes
    input_height = model.input_height
    input_width = model.input_width
    output_height = model.output_height
    output_width = model.output_width

    if validate:
        assert not (val_images is None)
        assert not (val_annotations is None)

    if not optimizer_name is None:
        model.compile(loss='categorical_crossentropy',
                      optimizer=optimizer_name,
                      metrics=['accuracy'])

    if verify_dataset:
        print("Verifying train dataset")
        verify_segmentation_dataset(train_images, train_annotations, n_classes)
        if validate:
            print("Verifying val dataset")
            verify_segmentation_dataset(val_images, val_annotations, n_classes)

    train_gen = image_segmentation_generator(train_images, train_annotations, batch_size, n_classes,
                                             input_height, input_width, output_height, output_width)

    if validate:
        val_gen = image_segmentation_generator(val_images, val_annotations, val_batch_size, n_classes,
                                               input_height, input_width, output_height, output_width)

    if not validate:
        for ep in range(epochs):
            print("Starting Epoch ", ep)
            model.fit(train_gen, steps_per_epoch=steps_per_epoch, epochs=1)
            print("Finished Epoch", ep)
    else:
        for ep in range(epochs):
            print("Starting Epoch ", ep)
            model.fit(train_gen, steps_per_epoch=steps_per_epoch, validation_data=val_gen, validation_steps=200,
                      epochs=1)
            print("Finished Epoch", ep)


if __name__ == "__main__":
    model = unet_mini(n_classes=5, input_height=64, input_width=96)
    train_images = os.path.join(DATA, "images_prepped_train/")
    n_train = len(os.listdir(train_images))
    train(model=model,
          train_images=train_images,
          train_annotations=os.path.join(DATA, "annotations_prepped_train/"),
          validate=True,
          val_images=os.path.join(DATA, "images_prepped_test/"),
          val_annotations=os.path.join(DATA, "annotations_prepped_test/"),
          epochs=3, batch_size=2, steps_per_epoch=n_train // 2)
