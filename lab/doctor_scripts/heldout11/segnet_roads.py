"""SegNet road segmentation, training: train.py of JeffOnGithub/SegNet (a fork of ykamikawa's tf-keras-SegNet), a
SegNet with max-pooling indices (MaxPoolingWithArgmax2D / MaxUnpooling2D) fitted with fit_generator on
data_generator, a Python generator that for every batch draws batch_size random file names and, for each, reads the
image (cv2.imread, BGR -> RGB) and its mask map (cv2.imread), crops both at a random position (or resizes them),
flips them at random (one of four orientations), with probability 0.25 blurs the image with a random 3x3 motion
kernel (cv2.filter2D), with probability 0.25 adds salt-and-pepper noise in a Python loop over every pixel, and
converts the mask's first channel to one-hot labels in a Python loop over every pixel (to_categorical_labels).

Source: https://github.com/JeffOnGithub/SegNet at 7a745e33ff67e311a350e76f6f5c32683a510fad (train.py, generator.py,
configuration.py, SegNet.py, keras_MaxPoolingLayers.py). Re-written here in the source's structure and order, not
copied: train.py lists each of the train and val image folders into a one-column DataFrame (pd.DataFrame(listdir)),
builds data_generator(img_dir, mask_dir, list, batch_size 5, [256, 256], n_labels 2, crop True, flip True,
motion_blur 0.25, sp_noise 0.25) for training and the same for validation, create_segnet((256, 256, 3), 2, kernel 3,
pool (2, 2), 'softmax') (13 encoder and 13 decoder 3x3 convolutions of 64..512 filters with BatchNormalization and
ReLU, five max-pools with argmax and five unpoolings by scatter_nd, a 1x1 convolution to n_labels, BatchNormalization,
Reshape to (H*W, n_labels), softmax), compiles it with categorical_crossentropy, 'adadelta' and accuracy, and calls
``segnet.fit_generator(train_gen, steps_per_epoch=100, epochs=10, validation_data=val_gen, validation_steps=20)``,
then saves the weights. All its defaults come from configuration.py through argparse.

Changed: data paths (``$DOCTOR_SCRIPTS_DATA/segnet_roads/dataset/{train,val}/{images,maps}/``: 200 / 40 generated
176x144 road scenes and 0/1 road maps as PNG, for the author's dataset); input_shape 64x64 for 256x256 (crops of
the 176x144 scenes); the SegNet's filters an eighth of the source's (8..64 for 64..512); epochs 3 for 10,
train_steps 30 for 100 and val_steps 6 for 20; Keras 2 -> Keras 3: keras.layers.core/convolutional/normalization
imports from keras.layers, Convolution2D as Conv2D, fit_generator -> fit, K.tf.nn / K.tf.scatter_nd / K.cast as tf.nn /
tf.scatter_nd / keras.ops.cast (K.tf.variable_scope dropped), the layers' compute_output_shape kept; 'adadelta' keeps its name (Keras
3's Adadelta defaults to learning_rate 0.001, Keras 2's to lr 1.0); the weights saved to a temporary folder as
SegNet-3.weights.h5 (Keras 3 needs the suffix); train.py imports 'segnet' where the file is SegNet.py (it ran on a
case-insensitive file system): the modules are inlined here.
"""

import argparse
import os
import tempfile
from os import listdir
from random import randint, random, uniform

import cv2
import numpy as np
import pandas as pd
import tensorflow as tf
from keras import backend as K
from keras import ops
from keras.layers import Activation, BatchNormalization, Conv2D, Input, Layer, Reshape
from keras.models import Model

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "segnet_roads")
OUT = os.path.join(tempfile.gettempdir(), "segnet_roads_out")


# ----------------------------------------------------------------------------- configuration.py
"""Configuration information for SegNet"""
CONFIG = dict()

################### Dataset

CONFIG['dataset'] = dict()

#Dataset train
CONFIG['dataset']['train'] = dict()
CONFIG['dataset']['train']['images_dir'] = os.path.join(DATA, "dataset/train/images/")
CONFIG['dataset']['train']['masks_dir'] = os.path.join(DATA, "dataset/train/maps/")

#Dataset val
CONFIG['dataset']['val'] = dict()
CONFIG['dataset']['val']['images_dir'] = os.path.join(DATA, "dataset/val/images/")
CONFIG['dataset']['val']['masks_dir'] = os.path.join(DATA, "dataset/val/maps/")

#Dataset properties
CONFIG['dataset']['n_labels'] = 2

################### Training and eval

#Training
CONFIG['training'] = dict()
CONFIG['training']['batch_size'] = 5
CONFIG['training']['n_epochs'] = 3
CONFIG['training']['train_steps'] = 30
CONFIG['training']['val_steps'] = 6
CONFIG['training']['crop'] = True
CONFIG['training']['flip'] = True
CONFIG['training']['motion_blur'] = 0.25
CONFIG['training']['sp_noise'] = 0.25

################### Segnet properties

CONFIG['segnet'] = dict()
CONFIG['segnet']['input_shape'] = (64, 64, 3)
CONFIG['segnet']['kernel'] = 3
CONFIG['segnet']['pool_size'] = (2, 2)
CONFIG['segnet']['output_mode'] = "softmax"
CONFIG['segnet']['loss'] = "categorical_crossentropy"
CONFIG['segnet']['optimizer'] = "adadelta"


# ----------------------------------------------------------------------------- generator.py
"""Generator module for Segnet"""

def data_generator(img_dir, mask_dir, lists, batch_size, dims, n_labels, crop, flip, motion_blur, sp_noise):
    """Continous generator"""
    while True:
        yield single_batch_generator(img_dir,
                                     mask_dir,
                                     lists,
                                     batch_size,
                                     dims,
                                     n_labels,
                                     crop,
                                     flip,
                                     motion_blur,
                                     sp_noise)

def single_batch_generator(img_dir, mask_dir, lists, batch_size, dims, n_labels, crop, flip, motion_blur=0, sp_noise=0, empty_mask=False):
    """Generate one batch of data"""
    ix = np.random.choice(np.arange(len(lists)), batch_size)
    imgs = []
    labels = []
    for i in ix:

        # images
        original_img = cv2.imread(img_dir + lists.iloc[i, 0])
        # switch colors to RGB
        original_img = cv2.cvtColor(original_img, cv2.COLOR_BGR2RGB)
        # masks
        original_mask = cv2.imread(mask_dir + lists.iloc[i, 0])

        # Geometric transformations to fit the network
        transformed_img, transformed_mask = transform_data(original_img, original_mask, dims, crop, flip)

        # Data augmentations
        if uniform(0, 1) < motion_blur:
            transformed_img = motion_blur_image(transformed_img)

        if uniform(0, 1) < sp_noise:
            transformed_img = sp_noise_image(transformed_img)

        # Convert mask to labels
        array_mask = to_categorical_labels(transformed_mask[:, :, 0], dims, n_labels, empty_mask)

        # Append image and mask to main lists
        imgs.append(transformed_img)
        labels.append(array_mask)

    imgs = np.array(imgs)
    labels = np.array(labels)
    return imgs, labels

def to_categorical_labels(labels, dims, n_labels, empty_mask):
    """Works like to_categorical, but allow to returns empty masks"""
    x = np.zeros([dims[0], dims[1], n_labels])
    if not empty_mask:
        for i in range(dims[0]):
            for j in range(dims[1]):
                x[i, j, labels[i][j]] = 1
        x = x.reshape(dims[0] * dims[1], n_labels)
    return x

def transform_data(original_img, original_mask, dims, crop, flip):
    """Geometric transformations of images and mask"""
    # Random crop or resize, openCV starts with height, not width
    if crop:
        random_x = randint(0, original_img.shape[1] - dims[0])
        random_y = randint(0, original_img.shape[0] - dims[1])
        transformed_img = original_img[random_y:random_y + dims[1], random_x:random_x + dims[0]]
        transformed_mask = original_mask[random_y:random_y + dims[1], random_x:random_x + dims[0]]
    else:
        transformed_img = cv2.resize(original_img, (dims[0], dims[1]))
        transformed_mask = cv2.resize(original_mask, (dims[0], dims[1]))

    #Flip randomly images and masks
    if flip:
        orientation = randint(0, 4)
        if orientation == 0: #horizontal
            transformed_img = cv2.flip(transformed_img, 0)
            transformed_mask = cv2.flip(transformed_mask, 0)
        elif orientation == 1: #vertical
            transformed_img = cv2.flip(transformed_img, 1)
            transformed_mask = cv2.flip(transformed_mask, 1)
        elif orientation == 2: #horizontal and vertical
            transformed_img = cv2.flip(transformed_img, -1)
            transformed_mask = cv2.flip(transformed_mask, -1)
        elif orientation == 3: #none
            pass
    return transformed_img, transformed_mask

def motion_blur_image(image):
    """Degrade image quality - motion blur"""
    # Motion blur
    # generating the kernel
    orientation = randint(0, 4)
    kernel_motion_blur = np.zeros((3, 3))
    if orientation == 0: #horizontal
        kernel_motion_blur = np.array([[0, 0, 0],
                                       [1, 1, 1],
                                       [0, 0, 0]])
    elif orientation == 1: #vertical
        kernel_motion_blur = np.array([[0, 1, 0],
                                       [0, 1, 0],
                                       [0, 1, 0]])
    elif orientation == 2: #diagonal 1
        kernel_motion_blur = np.array([[1, 0, 0],
                                       [0, 1, 0],
                                       [0, 0, 1]])
    elif orientation == 3: #diagonal 2
        kernel_motion_blur = np.array([[0, 0, 1],
                                       [0, 1, 0],
                                       [1, 0, 0]])

    kernel_motion_blur = kernel_motion_blur / 3

    # applying the kernel to the input image
    return cv2.filter2D(image, -1, kernel_motion_blur)

def sp_noise_image(image, prob=0.01):
    '''
    Add salt and pepper noise to image
    prob: Probability of the noise
    '''
    output = np.zeros(image.shape, np.uint8)
    thres = 1 - prob
    for i in range(image.shape[0]):
        for j in range(image.shape[1]):
            rdn = random()
            if rdn < prob:
                output[i][j] = 0
            elif rdn > thres:
                output[i][j] = 255
            else:
                output[i][j] = image[i][j]
    return output


# ----------------------------------------------------------------------------- keras_MaxPoolingLayers.py
class MaxPoolingWithArgmax2D(Layer):
    def __init__(self, pool_size=(2, 2), strides=(2, 2), padding='same', **kwargs):
        super(MaxPoolingWithArgmax2D, self).__init__(**kwargs)
        self.padding = padding
        self.pool_size = pool_size
        self.strides = strides

    def call(self, inputs, **kwargs):
        padding = self.padding
        pool_size = self.pool_size
        strides = self.strides
        if K.backend() == 'tensorflow':
            ksize = [1, pool_size[0], pool_size[1], 1]
            padding = padding.upper()
            strides = [1, strides[0], strides[1], 1]
            output, argmax = tf.nn.max_pool_with_argmax(inputs, ksize=ksize, strides=strides, padding=padding)
        else:
            errmsg = '{} backend is not supported for layer {}'.format(K.backend(), type(self).__name__)
            raise NotImplementedError(errmsg)
        argmax = ops.cast(argmax, K.floatx())
        return [output, argmax]

    def compute_output_shape(self, input_shape):
        ratio = (1, 2, 2, 1)
        output_shape = [dim // ratio[idx] if dim is not None else None for idx, dim in enumerate(input_shape)]
        output_shape = tuple(output_shape)
        return [output_shape, output_shape]

    def compute_mask(self, inputs, mask=None):
        return 2 * [None]


class MaxUnpooling2D(Layer):
    def __init__(self, size=(2, 2), **kwargs):
        super(MaxUnpooling2D, self).__init__(**kwargs)
        self.size = size

    def call(self, inputs, output_shape=None):
        updates, mask = inputs[0], inputs[1]
        mask = ops.cast(mask, 'int32')
        input_shape = tf.shape(updates, out_type='int32')
        #  calculation new shape
        if output_shape is None:
            output_shape = (input_shape[0], input_shape[1] * self.size[0], input_shape[2] * self.size[1], input_shape[3])
        self.output_shape1 = output_shape

        # calculation indices for batch, height, width and feature maps
        one_like_mask = tf.ones_like(mask, dtype='int32')
        batch_shape = tf.concat([[input_shape[0]], [1], [1], [1]], axis=0)
        batch_range = tf.reshape(tf.range(output_shape[0], dtype='int32'), shape=batch_shape)
        b = one_like_mask * batch_range
        y = mask // (output_shape[2] * output_shape[3])
        x = (mask // output_shape[3]) % output_shape[2]
        feature_range = tf.range(output_shape[3], dtype='int32')
        f = one_like_mask * feature_range

        # transpose indices & reshape update values to one dimension
        updates_size = tf.size(updates)
        indices = tf.transpose(tf.reshape(tf.stack([b, y, x, f]), [4, updates_size]))
        values = tf.reshape(updates, [updates_size])
        ret = tf.scatter_nd(indices, values, output_shape)
        return ret

    def compute_output_shape(self, input_shape):
        mask_shape = input_shape[1]
        return mask_shape[0], mask_shape[1] * self.size[0], mask_shape[2] * self.size[1], mask_shape[3]


# ----------------------------------------------------------------------------- SegNet.py
"""Build the Segnet model"""

def create_segnet(input_shape, n_labels, kernel=3, pool_size=(2, 2), output_mode="softmax"):
    """Create a segnet model and returns it"""
    # encoder
    inputs = Input(shape=input_shape)

    conv_1 = Conv2D(8, (kernel, kernel), padding="same")(inputs)
    conv_1 = BatchNormalization()(conv_1)
    conv_1 = Activation("relu")(conv_1)
    conv_2 = Conv2D(8, (kernel, kernel), padding="same")(conv_1)
    conv_2 = BatchNormalization()(conv_2)
    conv_2 = Activation("relu")(conv_2)

    pool_1, mask_1 = MaxPoolingWithArgmax2D(pool_size)(conv_2)

    conv_3 = Conv2D(16, (kernel, kernel), padding="same")(pool_1)
    conv_3 = BatchNormalization()(conv_3)
    conv_3 = Activation("relu")(conv_3)
    conv_4 = Conv2D(16, (kernel, kernel), padding="same")(conv_3)
    conv_4 = BatchNormalization()(conv_4)
    conv_4 = Activation("relu")(conv_4)

    pool_2, mask_2 = MaxPoolingWithArgmax2D(pool_size)(conv_4)

    conv_5 = Conv2D(32, (kernel, kernel), padding="same")(pool_2)
    conv_5 = BatchNormalization()(conv_5)
    conv_5 = Activation("relu")(conv_5)
    conv_6 = Conv2D(32, (kernel, kernel), padding="same")(conv_5)
    conv_6 = BatchNormalization()(conv_6)
    conv_6 = Activation("relu")(conv_6)
    conv_7 = Conv2D(32, (kernel, kernel), padding="same")(conv_6)
    conv_7 = BatchNormalization()(conv_7)
    conv_7 = Activation("relu")(conv_7)

    pool_3, mask_3 = MaxPoolingWithArgmax2D(pool_size)(conv_7)

    conv_8 = Conv2D(64, (kernel, kernel), padding="same")(pool_3)
    conv_8 = BatchNormalization()(conv_8)
    conv_8 = Activation("relu")(conv_8)
    conv_9 = Conv2D(64, (kernel, kernel), padding="same")(conv_8)
    conv_9 = BatchNormalization()(conv_9)
    conv_9 = Activation("relu")(conv_9)
    conv_10 = Conv2D(64, (kernel, kernel), padding="same")(conv_9)
    conv_10 = BatchNormalization()(conv_10)
    conv_10 = Activation("relu")(conv_10)

    pool_4, mask_4 = MaxPoolingWithArgmax2D(pool_size)(conv_10)

    conv_11 = Conv2D(64, (kernel, kernel), padding="same")(pool_4)
    conv_11 = BatchNormalization()(conv_11)
    conv_11 = Activation("relu")(conv_11)
    conv_12 = Conv2D(64, (kernel, kernel), padding="same")(conv_11)
    conv_12 = BatchNormalization()(conv_12)
    conv_12 = Activation("relu")(conv_12)
    conv_13 = Conv2D(64, (kernel, kernel), padding="same")(conv_12)
    conv_13 = BatchNormalization()(conv_13)
    conv_13 = Activation("relu")(conv_13)

    pool_5, mask_5 = MaxPoolingWithArgmax2D(pool_size)(conv_13)

    # decoder

    unpool_1 = MaxUnpooling2D(pool_size)([pool_5, mask_5])

    conv_14 = Conv2D(64, (kernel, kernel), padding="same")(unpool_1)
    conv_14 = BatchNormalization()(conv_14)
    conv_14 = Activation("relu")(conv_14)
    conv_15 = Conv2D(64, (kernel, kernel), padding="same")(conv_14)
    conv_15 = BatchNormalization()(conv_15)
    conv_15 = Activation("relu")(conv_15)
    conv_16 = Conv2D(64, (kernel, kernel), padding="same")(conv_15)
    conv_16 = BatchNormalization()(conv_16)
    conv_16 = Activation("relu")(conv_16)

    unpool_2 = MaxUnpooling2D(pool_size)([conv_16, mask_4])

    conv_17 = Conv2D(64, (kernel, kernel), padding="same")(unpool_2)
    conv_17 = BatchNormalization()(conv_17)
    conv_17 = Activation("relu")(conv_17)
    conv_18 = Conv2D(64, (kernel, kernel), padding="same")(conv_17)
    conv_18 = BatchNormalization()(conv_18)
    conv_18 = Activation("relu")(conv_18)
    conv_19 = Conv2D(32, (kernel, kernel), padding="same")(conv_18)
    conv_19 = BatchNormalization()(conv_19)
    conv_19 = Activation("relu")(conv_19)

    unpool_3 = MaxUnpooling2D(pool_size)([conv_19, mask_3])

    conv_20 = Conv2D(32, (kernel, kernel), padding="same")(unpool_3)
    conv_20 = BatchNormalization()(conv_20)
    conv_20 = Activation("relu")(conv_20)
    conv_21 = Conv2D(32, (kernel, kernel), padding="same")(conv_20)
    conv_21 = BatchNormalization()(conv_21)
    conv_21 = Activation("relu")(conv_21)
    conv_22 = Conv2D(16, (kernel, kernel), padding="same")(conv_21)
    conv_22 = BatchNormalization()(conv_22)
    conv_22 = Activation("relu")(conv_22)

    unpool_4 = MaxUnpooling2D(pool_size)([conv_22, mask_2])

    conv_23 = Conv2D(16, (kernel, kernel), padding="same")(unpool_4)
    conv_23 = BatchNormalization()(conv_23)
    conv_23 = Activation("relu")(conv_23)
    conv_24 = Conv2D(8, (kernel, kernel), padding="same")(conv_23)
    conv_24 = BatchNormalization()(conv_24)
    conv_24 = Activation("relu")(conv_24)

    unpool_5 = MaxUnpooling2D(pool_size)([conv_24, mask_1])

    conv_25 = Conv2D(8, (kernel, kernel), padding="same")(unpool_5)
    conv_25 = BatchNormalization()(conv_25)
    conv_25 = Activation("relu")(conv_25)

    conv_26 = Conv2D(n_labels, (1, 1), padding="valid")(conv_25)
    conv_26 = BatchNormalization()(conv_26)
    conv_26 = Reshape((input_shape[0] * input_shape[1], n_labels))(conv_26)

    outputs = Activation(output_mode)(conv_26)

    segnet = Model(inputs=inputs, outputs=outputs, name="SegNet")

    return segnet


# ----------------------------------------------------------------------------- train.py
"""Train the Segnet model"""

def main(args):
    """Training"""
    # set the necessary list
    train_list = pd.DataFrame(listdir(args.trainimg_dir))
    val_list = pd.DataFrame(listdir(args.valimg_dir))

    # set the necessary directories
    trainimg_dir = args.trainimg_dir
    trainmsk_dir = args.trainmsk_dir
    valimg_dir = args.valimg_dir
    valmsk_dir = args.valmsk_dir

    # Training generator
    train_gen = data_generator(trainimg_dir,
                               trainmsk_dir,
                               train_list,
                               args.batch_size,
                               [args.input_shape[0], args.input_shape[1]],
                               args.n_labels,
                               args.crop,
                               args.flip,
                               args.motion_blur,
                               args.sp_noise)

    # Validation generator
    val_gen = data_generator(valimg_dir,
                             valmsk_dir,
                             val_list,
                             args.batch_size,
                             [args.input_shape[0], args.input_shape[1]],
                             args.n_labels,
                             args.crop,
                             args.flip,
                             args.motion_blur,
                             args.sp_noise)

    segnet = create_segnet(args.input_shape, args.n_labels, args.kernel, args.pool_size, args.output_mode)
    print("SegNet created")
    #print(segnet.summary())

    # Load weights if specified in args
    if args.weights:
        segnet.load_weights(args.weights)

    segnet.compile(loss=args.loss,
                   optimizer=args.optimizer,
                   metrics=["accuracy"])
    segnet.fit(train_gen,
               steps_per_epoch=args.epoch_steps,
               epochs=args.n_epochs,
               validation_data=val_gen,
               validation_steps=args.val_steps)

    os.makedirs(os.path.join(OUT, "weights"), exist_ok=True)
    segnet.save_weights(os.path.join(OUT, "weights", "SegNet-"+str(args.n_epochs)+".weights.h5"))
    print("Weights saved")

    #json_string = segnet.to_json()
    #open("./model/SegNet.json", "w").write(json_string)
    #print("Model saved")


if __name__ == "__main__":
    # command line argments
    parser = argparse.ArgumentParser(description="SegNet dataset")
    parser.add_argument("--weights",
                        default=None,
                        help="starting weights path")
    parser.add_argument("--trainimg_dir",
                        default=CONFIG['dataset']['train']['images_dir'],
                        help="train image dir path")
    parser.add_argument("--trainmsk_dir",
                        default=CONFIG['dataset']['train']['masks_dir'],
                        help="train mask dir path")
    parser.add_argument("--valimg_dir",
                        default=CONFIG['dataset']['val']['images_dir'],
                        help="val image dir path")
    parser.add_argument("--valmsk_dir",
                        default=CONFIG['dataset']['val']['masks_dir'],
                        help="val mask dir path")
    parser.add_argument("--batch_size",
                        default=CONFIG['training']['batch_size'],
                        type=int,
                        help="batch size")
    parser.add_argument("--n_epochs",
                        default=CONFIG['training']['n_epochs'],
                        type=int,
                        help="number of epoch")
    parser.add_argument("--epoch_steps",
                        default=CONFIG['training']['train_steps'],
                        type=int,
                        help="number of epoch step")
    parser.add_argument("--val_steps",
                        default=CONFIG['training']['val_steps'],
                        type=int,
                        help="number of validation step")
    parser.add_argument("--n_labels",
                        default=CONFIG['dataset']['n_labels'],
                        type=int,
                        help="Number of label")
    parser.add_argument("--crop",
                        default=CONFIG['training']['crop'],
                        help="Crop to input shape, otherwise resize")
    parser.add_argument("--flip",
                        default=CONFIG['training']['flip'],
                        help="Random flip of training images")
    parser.add_argument("--sp_noise",
                        default=CONFIG['training']['sp_noise'],
                        help="Fraction of images with added noise")
    parser.add_argument("--motion_blur",
                        default=CONFIG['training']['motion_blur'],
                        help="Fraction of images with added blur")
    parser.add_argument("--input_shape",
                        default=CONFIG['segnet']['input_shape'],
                        help="Input images shape")
    parser.add_argument("--kernel",
                        default=CONFIG['segnet']['kernel'],
                        type=int,
                        help="Kernel size")
    parser.add_argument("--pool_size",
                        default=CONFIG['segnet']['pool_size'],
                        help="pooling and unpooling size")
    parser.add_argument("--output_mode",
                        default=CONFIG['segnet']['output_mode'],
                        type=str,
                        help="output activation")
    parser.add_argument("--loss",
                        default=CONFIG['segnet']['loss'],
                        type=str,
                        help="loss function")
    parser.add_argument("--optimizer",
                        default=CONFIG['segnet']['optimizer'],
                        type=str,
                        help="optimizer")
    args = parser.parse_args()
    main(args)
