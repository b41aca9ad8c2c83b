"""Semantic segmentation of CARLA camera frames, training: Deep_Learning/Self_driving_car/Perception/
Image_Segmentation_UNet/main.py of OmarRAbdelkafi/Machine_Learning (with the modules it imports), a U-Net of 23
classes fitted on a tf.data pipeline built from file paths: ``from_tensor_slices`` of the RGB and mask paths, a
serial map that reads and decodes both PNGs (the mask reduced to its class channel), a second serial map that
resizes both to 96x128, then ``cache()``, ``shuffle(500)`` and ``batch(32)`` (no prefetch, no num_parallel_calls).

Source: https://github.com/OmarRAbdelkafi/Machine_Learning at 152e88e291d76d8ed4b50b55792deb18026e9dff
(Deep_Learning/Self_driving_car/Perception/Image_Segmentation_UNet/: main.py, which imports EDA/EDA_process.py,
Pre_processing/Pre_P.py, DeepLearningModels/Convolutional_models.py, DeepLearningModels/UNET/Unet_V0.py and
prediction.py). Re-written here in the source's structure and order, not copied: main.py prints the GPUs and CPUs,
sets img_height 96, img_width 128, num_channels 3; EDA_process.load_data lists ./dataA/CameraRGB/ and
./dataA/CameraSeg/ with os.listdir (CARLA's dataA: 1000 600x800 RGB PNG frames and their semantic masks, the class
id in the red channel) into path lists; check_images shows frame 1 and its mask with imageio and matplotlib;
split_data_img_mask builds ``tf.data.Dataset.list_files(..., shuffle=False)`` of both lists (unused) and
``tf.data.Dataset.from_tensor_slices((tf.constant(image_list), tf.constant(mask_list)))``; Pre_P.process_path reads
each frame (``tf.io.read_file``, ``tf.image.decode_png(channels=3)``, ``convert_image_dtype(tf.float32)``) and its
mask (``decode_png(channels=3)``, ``tf.math.reduce_max(axis=-1, keepdims=True)``), Pre_P.preprocess resizes both to
(96, 128) with method='nearest', and Pre_Processing_execution maps them in turn (``dataset.map(process_path)``, then
``.map(preprocess)``, both serial); Show_dataset takes one example of each dataset, prints its mask shape and shows
it; Convolutional_models.Set_unet_model_V0 builds Unet_V0.unet_model_V0((96, 128, 3)) (n_filters 32, n_classes 23:
four conv blocks of two 3x3 he_normal relu convolutions with 2x2 max pooling, dropout 0.3 in the fourth and the
fifth, a bottleneck block without pooling, four upsampling blocks of a strided 3x3 Conv2DTranspose, concatenation
with the skip and two 3x3 convolutions, a 3x3 convolution and a 1x1 convolution to 23 logits), compiled with adam,
SparseCategoricalCrossentropy(from_logits=True) and accuracy, and prints its summary; Fit_unet_model_V0 (EPOCHS 1,
BUFFER_SIZE 500, BATCH_SIZE 32) calls ``processed_image_ds.batch(BATCH_SIZE)`` (result unused), builds
``train_dataset = processed_image_ds.cache().shuffle(BUFFER_SIZE).batch(BATCH_SIZE)``, prints its element_spec,
fits ``unet.fit(train_dataset, epochs=EPOCHS)`` and plots the accuracy history; prediction.show_predictions predicts
the first three batches of train_dataset and shows the first image, mask and predicted mask of each.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/carla_unet/dataA/CameraRGB/`` and ``CameraSeg/``: 320 generated 150x200
RGB street frames and their class masks for 1000 at 600x800); U-Net n_filters 4 for 32 (every block's filters
divided by 8); epochs 3 for 1; the modules inlined where main.py imports them (the same order); the matplotlib and imageio
figures left out (check_images and the display calls; Show_dataset's and show_predictions' loops kept);
Unet_V0's unused ``summary`` helper (Keras 2's layer.output_shape) left out.
"""

# coding:utf-8

import os

import numpy as np  # noqa: F401 (the source's, unused)
import tensorflow as tf

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "carla_unet")

print("Num GPUs Available: ", len(tf.config.list_physical_devices('GPU')))
print("Num CPUs Available: ", len(tf.config.list_physical_devices('CPU')))


# ----------------------------------------------------------------------------- EDA/EDA_process.py
os.environ['TF_CPP_MIN_LOG_LEVEL'] = '2'


def load_data():
    path = DATA
    image_path = os.path.join(path, './dataA/CameraRGB/')
    mask_path = os.path.join(path, './dataA/CameraSeg/')
    image_list = os.listdir(image_path)
    mask_list = os.listdir(mask_path)
    image_list = [image_path+i for i in image_list]
    mask_list = [mask_path+i for i in mask_list]

    return image_list, mask_list


def split_data_img_mask(image_list, mask_list):
    image_list_ds = tf.data.Dataset.list_files(image_list, shuffle=False)  # noqa: F841 (the source's, unused)
    mask_list_ds = tf.data.Dataset.list_files(mask_list, shuffle=False)  # noqa: F841 (the source's, unused)
    image_filenames = tf.constant(image_list)
    masks_filenames = tf.constant(mask_list)
    dataset = tf.data.Dataset.from_tensor_slices((image_filenames, masks_filenames))
    return dataset


def Show_dataset(image_ds, processed_image_ds):
    for image, mask in image_ds.take(1):
        sample_image, sample_mask = image, mask  # noqa: F841 (the source displays them)
        print(mask.shape)

    for image, mask in processed_image_ds.take(1):
        sample_image, sample_mask = image, mask  # noqa: F841 (the source displays them)
        print(mask.shape)


# ----------------------------------------------------------------------------- main.py: 2. EDA
# origin images (600x800x3)
# set image dimensions to train
img_height = 96
img_width = 128
num_channels = 3

image_list, mask_list = load_data()
dataset = split_data_img_mask(image_list, mask_list)


# ----------------------------------------------------------------------------- Pre_processing/Pre_P.py
def process_path(image_path, mask_path):
    img = tf.io.read_file(image_path)
    img = tf.image.decode_png(img, channels=3)
    img = tf.image.convert_image_dtype(img, tf.float32)

    mask = tf.io.read_file(mask_path)
    mask = tf.image.decode_png(mask, channels=3)
    mask = tf.math.reduce_max(mask, axis=-1, keepdims=True)
    return img, mask


def preprocess(image, mask):
    input_image = tf.image.resize(image, (96, 128), method='nearest')
    input_mask = tf.image.resize(mask, (96, 128), method='nearest')

    return input_image, input_mask


def Pre_Processing_execution(dataset):
    image_ds = dataset.map(process_path)
    processed_image_ds = image_ds.map(preprocess)

    return image_ds, processed_image_ds


# ----------------------------------------------------------------------------- main.py: 3. Pre-processing
image_ds, processed_image_ds = Pre_Processing_execution(dataset)
Show_dataset(image_ds, processed_image_ds)


# ----------------------------------------------------------------------------- DeepLearningModels/UNET/Unet_V0.py
from tensorflow.keras.layers import (
    Conv2D,  # noqa: E402
    Conv2DTranspose,  # noqa: E402
    Dropout,  # noqa: E402
    Input,  # noqa: E402
    MaxPooling2D,  # noqa: E402
    concatenate,  # noqa: E402
)


def conv_block(inputs=None, n_filters=32, dropout_prob=0, max_pooling=True):
    conv = Conv2D(filters = n_filters,
                  kernel_size = 3,
                  activation='relu',
                  padding='same',
                  kernel_initializer='he_normal')(inputs)
    conv = Conv2D(filters = n_filters,
                  kernel_size = 3,
                  activation='relu',
                  padding='same',
                  kernel_initializer='he_normal')(conv)

    if dropout_prob > 0:
        conv = Dropout(dropout_prob)(conv)

    if max_pooling:
        next_layer = MaxPooling2D(pool_size=(2, 2))(conv)
    else:
        next_layer = conv

    skip_connection = conv

    return next_layer, skip_connection


def upsampling_block(expansive_input, contractive_input, n_filters=32):
    up = Conv2DTranspose(
                 filters = n_filters,
                 kernel_size = 3,
                 strides=(2,2),
                 padding='same')(expansive_input)

    merge = concatenate([up, contractive_input], axis=3)
    conv = Conv2D(filters = n_filters,
                 kernel_size = 3,
                 activation='relu',
                 padding='same',
                 kernel_initializer='he_normal')(merge)
    conv = Conv2D(filters = n_filters,
                 kernel_size = 3,
                 activation='relu',
                 padding='same',
                 kernel_initializer='he_normal')(conv)
    return conv


def unet_model_V0(input_size=(96, 128, 3), n_filters=4, n_classes=23):
    inputs = Input(input_size)

    # Contracting Path (encoding)
    cblock1 = conv_block(inputs, n_filters)
    cblock2 = conv_block(cblock1[0], n_filters *2)
    cblock3 = conv_block(cblock2[0], n_filters *4)
    cblock4 = conv_block(cblock3[0], n_filters * 8, 0.3)
    cblock5 = conv_block(cblock4[0], n_filters * 16, 0.3, max_pooling=False)

    # Expanding Path (decoding)
    ublock6 = upsampling_block(cblock5[0], cblock4[1],  n_filters *8)
    ublock7 = upsampling_block(ublock6, cblock3[1],  n_filters *4)
    ublock8 = upsampling_block(ublock7, cblock2[1],  n_filters *2)
    ublock9 = upsampling_block(ublock8, cblock1[1],  n_filters)

    conv9 = Conv2D(n_filters,
                 3,
                 activation='relu',
                 padding='same',
                 kernel_initializer='he_normal')(ublock9)

    conv10 = Conv2D(n_classes, 1, padding='same')(conv9)

    model = tf.keras.Model(inputs=inputs, outputs=conv10)

    return model


# ----------------------------------------------------------------------------- DeepLearningModels/Convolutional_models.py
def Set_unet_model_V0(img_height, img_width, num_channels):
    unet = unet_model_V0((img_height, img_width, num_channels))

    unet.compile(optimizer='adam',
                loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                metrics=['accuracy'])

    unet.summary()

    return unet


def Fit_unet_model_V0(unet, processed_image_ds):
    #train model
    EPOCHS = 3
    VAL_SUBSPLITS = 5  # noqa: F841 (the source's, unused)
    BUFFER_SIZE = 500
    BATCH_SIZE = 32

    processed_image_ds.batch(BATCH_SIZE)
    train_dataset = processed_image_ds.cache().shuffle(BUFFER_SIZE).batch(BATCH_SIZE)
    print(processed_image_ds.element_spec)

    model_history = unet.fit(train_dataset, epochs=EPOCHS)  # noqa: F841 (the source plots its accuracy)

    return unet, train_dataset


# ----------------------------------------------------------------------------- prediction.py
def show_predictions(unet, dataset, num):
    """
    Displays the first image of each of the num batches
    """
    if dataset:
        for image, mask in dataset.take(num):  # noqa: B007 (the source displays the mask)
            pred_mask = unet.predict(image)  # noqa: F841 (the source displays it)


# ----------------------------------------------------------------------------- main.py: 4. - 6.
unet = Set_unet_model_V0(img_height, img_width, num_channels)

unet, train_dataset = Fit_unet_model_V0(unet, processed_image_ds)

show_predictions(unet, train_dataset, 3)
