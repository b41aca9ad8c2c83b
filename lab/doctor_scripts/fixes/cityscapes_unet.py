"""FIXED COPY (the one fix: cache() after the deterministic map, each scene and mask read, decoded and resized once).

Semantic segmentation for a self-driving car, training: UNET.py of CS331.M22.KHCL-SematicSegmentation_ForSelfDrivingCar,
a U-Net fitted on a tf.data pipeline that reads and decodes each PNG scene and its mask (``tf.io.read_file``,
``tf.image.decode_png``, ``tf.image.resize``) in a parallel map, batched, with no cache and no prefetch.

Source: https://github.com/iamthedh7/CS331.M22.KHCL-SematicSegmentation_ForSelfDrivingCar at
039d3099a080c59200e43e47f0ab5b33aa5eba5c (UNET.py; _function/func_data_generator.py, func_load_data.py,
func_read_image.py and UNET_model.py). Re-written here in the source's structure and order, not copied: the train list
is the scenes of leftImg8bit/train/<city>/ and of its four lighting-augmented copies (train_light_1, train_light_2,
train_night_1, train_night_2), each sorted, with mask/train's masks repeated for each copy; data_generator is
``from_tensor_slices((images, masks)).map(load_data, num_parallel_calls=AUTOTUNE).batch(batch_size,
drop_remainder=True)``, batch 4 for training and 2 for validation; read_image decodes a PNG (3 channels, resized
bilinear and divided by 255; a mask 1 channel, resized nearest); UNET is five levels of two Conv2D 3x3 + BatchNorm
(32..512 filters) with Dropout 0.5 at the bottom and UpSampling2D + Conv2D 2x2 + Concatenate on the way up, a sigmoid
1x1 Conv2D of 6 classes; compiled with Adam(0.001) and SparseCategoricalCrossentropy(from_logits=True), fitted
``model.fit(train_dataset, epochs=20, validation_data=val_dataset)``.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/cityscapes_unet``: 24 generated 128x256 scenes x 5 lighting copies, 18
validation scenes, for the Cityscapes frames), its ``'\\'``-joined Windows paths joined with ``os.path.join``;
IMAGE_SIZE 64 for 256 (SHAPE (64, 64, 3)); the U-Net's filters a quarter of the source's (8..128 for 32..512);
epochs 3 for 20; the repeated blocks of UNET_model.py and the repeated folder loops of UNET.py written once each as
helpers (conv_block, up_block, scenes: the same layers, the same lists); ``model.save`` and the matplotlib plots after the fit left out (not part of the fit).
"""

import os

import tensorflow as tf
from tensorflow import keras
from tensorflow.keras.layers import BatchNormalization, Concatenate, Conv2D, Dropout, Input, MaxPooling2D, UpSampling2D
from tensorflow.keras.models import Model

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "cityscapes_unet")

# ----------------------------------------------------------------------------- _function/func_read_image.py
IMAGE_SIZE = 64


def read_image(image_path, mask=False):
    image = tf.io.read_file(image_path)
    if mask:
        image = tf.image.decode_png(image, channels=1)
        image.set_shape([None, None, 1])
        image = tf.image.resize(images=image, size=[IMAGE_SIZE, IMAGE_SIZE], method='nearest')
        image = tf.cast(image, dtype=tf.float32)
    else:
        image = tf.image.decode_png(image, channels=3)
        image.set_shape([None, None, 3])
        image = tf.image.resize(images=image, size=[IMAGE_SIZE, IMAGE_SIZE])
        image = image / 255
        image = tf.cast(image, dtype=tf.float32)
    return image


# ----------------------------------------------------------------------------- _function/func_load_data.py
def load_data(image_list, mask_list):
    img = read_image(image_list)
    mask = read_image(mask_list, mask=True)
    return img, mask


# ----------------------------------------------------------------------------- _function/func_data_generator.py
def data_generator(image_list, mask_list, batch_size):
    dataset = tf.data.Dataset.from_tensor_slices((image_list, mask_list))
    dataset = dataset.map(load_data, num_parallel_calls=tf.data.AUTOTUNE)
    dataset = dataset.cache()  # the fix: each pair read, decoded and resized once
    dataset = dataset.batch(batch_size, drop_remainder=True)
    return dataset


# ----------------------------------------------------------------------------- _function/UNET_model.py
def conv_block(x, filters):
    x = Conv2D(filters=filters, kernel_size=3, strides=1, padding='same', activation='relu',
               kernel_initializer='he_normal')(x)
    x = BatchNormalization()(x)
    x = Conv2D(filters=filters, kernel_size=3, strides=1, padding='same', activation='relu',
               kernel_initializer='he_normal')(x)
    return BatchNormalization()(x)


def up_block(x, skip, filters):
    up = Conv2D(filters, 2, padding='same', activation='relu', kernel_initializer='he_normal')(
        UpSampling2D(size=(2, 2))(x))
    x = Concatenate()([skip, up])
    x = Conv2D(filters, 3, padding='same', activation='relu', kernel_initializer='he_normal')(x)
    x = BatchNormalization()(x)
    x = Conv2D(filters, 3, padding='same', activation='relu', kernel_initializer='he_normal')(x)
    return BatchNormalization()(x)


def UNET(num_classes, shape):
    """ ENCODE_BLOCK """
    INPUT = Input(shape)
    conv_1_down = conv_block(INPUT, 8)
    conv_2_down = conv_block(MaxPooling2D(pool_size=2)(conv_1_down), 16)
    conv_3_down = conv_block(MaxPooling2D(pool_size=2)(conv_2_down), 32)
    conv_4_down = conv_block(MaxPooling2D(pool_size=2)(conv_3_down), 64)
    conv_5_down = conv_block(MaxPooling2D(pool_size=2)(conv_4_down), 128)
    drop = Dropout(0.5)(conv_5_down)

    """ DECODE_BLOCK """
    conv_4_up = up_block(drop, conv_4_down, 64)
    conv_3_up = up_block(conv_4_up, conv_3_down, 32)
    conv_2_up = up_block(conv_3_up, conv_2_down, 16)
    conv_1_up = up_block(conv_2_up, conv_1_down, 8)
    conv_1_up = Conv2D(8, 3, padding='same', activation='relu', kernel_initializer='he_normal')(conv_1_up)
    OUTPUT = Conv2D(num_classes, (1, 1), activation='sigmoid')(conv_1_up)
    return Model(inputs=INPUT, outputs=OUTPUT)


# ----------------------------------------------------------------------------- UNET.py
def scenes(split):
    out = []
    for i in sorted(os.listdir(os.path.join(DATA, 'leftImg8bit', split))):
        folder_path = os.path.join(DATA, 'leftImg8bit', split, i)
        for j in sorted(os.listdir(folder_path)):
            out.append(os.path.join(folder_path, j))
    return out


if __name__ == "__main__":
    train_images_0 = scenes('train')
    train_images_light_1 = scenes('train_light_1')
    train_images_light_2 = scenes('train_light_2')
    train_images_night_1 = scenes('train_night_1')
    train_images_night_2 = scenes('train_night_2')

    train_masks_0 = [os.path.join(DATA, 'mask', 'train', i) for i in sorted(os.listdir(os.path.join(DATA, 'mask', 'train')))]
    train_mask_light_1 = train_masks_0.copy()
    train_mask_light_2 = train_masks_0.copy()
    train_mask_night_1 = train_masks_0.copy()
    train_mask_night_2 = train_masks_0.copy()

    val_images = scenes('val')
    val_masks = [os.path.join(DATA, 'mask', 'val', i) for i in sorted(os.listdir(os.path.join(DATA, 'mask', 'val')))]

    train_images = train_images_0 + train_images_light_1 + train_images_light_2 + train_images_night_1 + train_images_night_2
    train_masks = train_masks_0 + train_mask_light_1 + train_mask_light_2 + train_mask_night_1 + train_mask_night_2

    train_dataset = data_generator(train_images, train_masks, batch_size=4)
    val_dataset = data_generator(val_images, val_masks, batch_size=2)

    print("Train Dataset:", train_dataset)
    print("Val Dataset:", val_dataset)

    CLASSES = 6
    SHAPE = (64, 64, 3)

    model = UNET(num_classes=CLASSES, shape=SHAPE)

    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    callback = tf.keras.callbacks.EarlyStopping(monitor='val_loss', patience=5, restore_best_weights=True)

    model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.001), loss=loss)

    history = model.fit(train_dataset, epochs=3, validation_data=val_dataset, verbose=1)
