"""BraTS 2020 3D U-Net, training script (a plain Python generator np.load-ing whole volumes).

Source: https://github.com/MrImmortal9696/Brain-MRI-Segmentation- (train_model.py and custom_datagen.py at
37a50f535b5e741260de8964874f26c1e6fa769e; simple_3d_unet.py at b0f059713cc6cf987018051ac6c4d308224114ad),
itself from bnsreenu's python_for_microscopists BraTS 2020 tutorial. Kept as written: load_img and the
infinite imageLoader generator (custom_datagen.py), the train/val generators, steps_per_epoch =
len(train_img_list)//batch_size, the total loss (weighted dice + 1 * categorical focal), the metrics
['accuracy', IoU], the Adam(0.0001) optimizer and the model.fit call with validation_data and
validation_steps.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/brats_3d``: 48 train and 8 val generated volumes of 32^3 x 3
channels instead of 128^3 crops); segmentation_models_3D is not installed: its DiceLoss(class_weights),
CategoricalFocalLoss and IOUScore(threshold=0.5) become plain functions of the same formulas
(``dice_loss_plus_1focal_loss``, ``iou_score``; the plain-function case); simple_unet_model shrunk to
4 levels of filters 4..32 on 32^3 inputs (5 levels, 16..256, on 128^3); epochs 100 -> 3; the matplotlib previews, the class
weight survey (its DataFrame.append no longer exists in pandas 2+) and everything after the fit (saving,
reloading, predictions and plots) left out. os.listdir's order is kept (images and masks pair by name).
"""
# ruff: noqa: B006, B007  (the source's code, kept as written)

import os

import keras
import numpy as np
from keras import ops
from keras.layers import Conv3D, Conv3DTranspose, Dropout, Input, MaxPooling3D, concatenate
from keras.models import Model

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "brats_3d") + "/"


# --------------------------------------------------------------------------- custom_datagen.py
def load_img(img_dir, img_list):
    images=[]
    for i, image_name in enumerate(img_list):
        if (image_name.split('.')[1] == 'npy'):

            image = np.load(img_dir+image_name)

            images.append(image)
    images = np.array(images)

    return(images)


def imageLoader(img_dir, img_list, mask_dir, mask_list, batch_size):

    L = len(img_list)

    #keras needs the generator infinite, so we will use while true
    while True:

        batch_start = 0
        batch_end = batch_size

        while batch_start < L:
            limit = min(batch_end, L)

            X = load_img(img_dir, img_list[batch_start:limit])
            Y = load_img(mask_dir, mask_list[batch_start:limit])

            yield (X,Y) #a tuple with two numpy arrays with batch_size samples

            batch_start += batch_size
            batch_end += batch_size


# --------------------------------------------------------------------------- simple_3d_unet.py (shrunk)
kernel_initializer = 'he_uniform'


def simple_unet_model(IMG_HEIGHT, IMG_WIDTH, IMG_DEPTH, IMG_CHANNELS, num_classes):
    inputs = Input((IMG_HEIGHT, IMG_WIDTH, IMG_DEPTH, IMG_CHANNELS))
    s = inputs

    c1 = Conv3D(4, (3, 3, 3), activation='relu', kernel_initializer=kernel_initializer, padding='same')(s)
    c1 = Dropout(0.1)(c1)
    c1 = Conv3D(4, (3, 3, 3), activation='relu', kernel_initializer=kernel_initializer, padding='same')(c1)
    p1 = MaxPooling3D((2, 2, 2))(c1)

    c2 = Conv3D(8, (3, 3, 3), activation='relu', kernel_initializer=kernel_initializer, padding='same')(p1)
    c2 = Dropout(0.1)(c2)
    c2 = Conv3D(8, (3, 3, 3), activation='relu', kernel_initializer=kernel_initializer, padding='same')(c2)
    p2 = MaxPooling3D((2, 2, 2))(c2)

    c3 = Conv3D(16, (3, 3, 3), activation='relu', kernel_initializer=kernel_initializer, padding='same')(p2)
    c3 = Dropout(0.2)(c3)
    c3 = Conv3D(16, (3, 3, 3), activation='relu', kernel_initializer=kernel_initializer, padding='same')(c3)
    p3 = MaxPooling3D((2, 2, 2))(c3)

    c4 = Conv3D(32, (3, 3, 3), activation='relu', kernel_initializer=kernel_initializer, padding='same')(p3)
    c4 = Dropout(0.2)(c4)
    c4 = Conv3D(32, (3, 3, 3), activation='relu', kernel_initializer=kernel_initializer, padding='same')(c4)

    u5 = Conv3DTranspose(16, (2, 2, 2), strides=(2, 2, 2), padding='same')(c4)
    u5 = concatenate([u5, c3])
    c5 = Conv3D(16, (3, 3, 3), activation='relu', kernel_initializer=kernel_initializer, padding='same')(u5)

    u6 = Conv3DTranspose(8, (2, 2, 2), strides=(2, 2, 2), padding='same')(c5)
    u6 = concatenate([u6, c2])
    c6 = Conv3D(8, (3, 3, 3), activation='relu', kernel_initializer=kernel_initializer, padding='same')(u6)

    u7 = Conv3DTranspose(4, (2, 2, 2), strides=(2, 2, 2), padding='same')(c6)
    u7 = concatenate([u7, c1])
    c7 = Conv3D(4, (3, 3, 3), activation='relu', kernel_initializer=kernel_initializer, padding='same')(u7)

    outputs = Conv3D(num_classes, (1, 1, 1), activation='softmax')(c7)

    model = Model(inputs=[inputs], outputs=[outputs])
    return model


# --------------------------------------------------------------------------- train_model.py
train_img_dir = DATA + "train/images/"
train_mask_dir = DATA + "train/masks/"

val_img_dir = DATA + "val/images/"
val_mask_dir = DATA + "val/masks/"

train_img_list=os.listdir(train_img_dir)
train_mask_list = [n.replace("image_", "mask_") for n in train_img_list]

val_img_list=os.listdir(val_img_dir)
val_mask_list = [n.replace("image_", "mask_") for n in val_img_list]

batch_size = 2

train_img_datagen = imageLoader(train_img_dir, train_img_list,
                                train_mask_dir, train_mask_list, batch_size)

val_img_datagen = imageLoader(val_img_dir, val_img_list,
                                val_mask_dir, val_mask_list, batch_size)

#Define loss, metrics and optimizer to be used for training
wt0, wt1, wt2, wt3 = 0.25,0.25,0.25,0.25
class_weights = np.array([wt0, wt1, wt2, wt3], np.float32)


def dice_loss_plus_1focal_loss(gt, pr):
    # sm.losses.DiceLoss(class_weights) + 1 * sm.losses.CategoricalFocalLoss(), written out
    gt = ops.cast(gt, pr.dtype)
    axes = [0, 1, 2, 3]
    tp = ops.sum(gt * pr, axis=axes)
    fp = ops.sum(pr, axis=axes) - tp
    fn = ops.sum(gt, axis=axes) - tp
    score = (2 * tp + 1e-5) / (2 * tp + fn + fp + 1e-5)
    dice = 1 - ops.mean(score * class_weights)
    pr_c = ops.clip(pr, 1e-7, 1 - 1e-7)
    focal = ops.mean(ops.sum(-gt * 0.25 * ops.power(1 - pr_c, 2.0) * ops.log(pr_c), axis=-1))
    return dice + 1 * focal


def iou_score(gt, pr):
    # sm.metrics.IOUScore(threshold=0.5)
    gt = ops.cast(gt, pr.dtype)
    pr = ops.cast(pr > 0.5, pr.dtype)
    axes = [0, 1, 2, 3]
    intersection = ops.sum(gt * pr, axis=axes)
    union = ops.sum(gt + pr, axis=axes) - intersection
    return ops.mean((intersection + 1e-5) / (union + 1e-5))


total_loss = dice_loss_plus_1focal_loss

metrics = ['accuracy', iou_score]

LR = 0.0001
optim = keras.optimizers.Adam(LR)

steps_per_epoch = len(train_img_list)//batch_size
val_steps_per_epoch = len(val_img_list)//batch_size

model = simple_unet_model(IMG_HEIGHT=32,
                          IMG_WIDTH=32,
                          IMG_DEPTH=32,
                          IMG_CHANNELS=3,
                          num_classes=4)

model.compile(optimizer = optim, loss=total_loss, metrics=metrics)
print(model.input_shape)
print(model.output_shape)

history=model.fit(train_img_datagen,
          steps_per_epoch=steps_per_epoch,
          epochs=3,
          verbose=1,
          validation_data=val_img_datagen,
          validation_steps=val_steps_per_epoch,
          )
