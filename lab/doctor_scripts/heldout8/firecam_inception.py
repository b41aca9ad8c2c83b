"""Wildfire smoke classifier, training: train/train_classifier_keras.py of firecam (Open Climate Tech / Fuego), an
InceptionV3 trained from scratch (weights=None, two classes) on camera crops of smoke and non-smoke, read from
TFRecord shards by a tf.data pipeline: ``TFRecordDataset`` -> ``map(_parse_function)`` (serial: no
num_parallel_calls) -> ``repeat`` -> ``shuffle(batch_size * 5)`` -> ``batch``, no cache and no prefetch; the parse
function decodes each record's JPEG with ``tf.image.decode_image``, resizes it when it is not already square at the
network's size, one-hots the label and scales the pixels to [-1, 1], for every example of every epoch (the
validation set too, 100 batches of it each epoch).

Source: https://github.com/fuego-dev/firecam at ce30ee30c5753b55aacf86947d7bb058d4ca34a6
(train/train_classifier_keras.py; the record format from train/prepare_trainset.py). Re-written here in the source's
structure and order, not copied: main reads inputDir and outputDir with the project's collect_args, batch_size 32,
max_epochs 1000, steps_per_epoch 250, overshoot_epochs 15, val_steps 100 (a workaround for TF 2.0, its comment
says); globs inputDir + 'firecam_train_*.tfrecord' and 'firecam_validation_*.tfrecord' (prepare_trainset.py writes
shards of up to 9000 crops as tf.train.Examples with image/encoded (the JPEG file's bytes), image/format b'jpg',
image/class/label (0 nonSmoke, 1 smoke: the sorted folder names), image/height and image/width); the training set
is ``TFRecordDataset(train_filenames).map(_parse_function).repeat(max_epochs * steps_per_epoch).shuffle(batch_size
* 5).batch(batch_size)``, the validation set ``TFRecordDataset(val_filenames).map(_parse_function).repeat()
.batch(batch_size)``; _parse_function parses the five features with tf.io.parse_single_example, decode_image(...,
channels=3), and where height or width is not 299 resizes the reshaped image to 299x299 and casts it back to uint8,
reshapes to [299, 299, 3], one_hot(label, depth=2) and ``(tf.cast(image, tf.float32) - 128) / 128.0``; the model is
``keras.applications.inception_v3.InceptionV3(weights=None, include_top=True, input_tensor=None, classes=2)``
compiled with Adam(learning_rate=0.001, beta_1=0.9, beta_2=0.999, amsgrad=False), BinaryCrossentropy and accuracy,
fitted with EarlyStopping(val_loss, patience=overshoot_epochs) and ModelCheckpoint(outputDir + 'best_model',
val_loss, save_best_only=True), ``validation_steps=val_steps, steps_per_epoch=steps_per_epoch``.

Changed: inputDir is ``$DOCTOR_SCRIPTS_DATA/firecam_inception/`` (one training shard of 720 and one validation shard
of 80 generated hillside camera crops, most of them 96x96 JPEGs and some rectangular, for the source's shards of
thousands of 299-pixel crops); outputDir a temporary folder; collect_args/goog_helper (the project's argument
helpers, with Google Drive options) replaced by those two paths; the network's size 96 for 299 (the parse
function's resize and reshape with it); keras.applications.InceptionV3 re-written here as it is built (the same
stem, mixed0 to mixed10 blocks, conv + BatchNormalization(scale=False) + relu units, average pooling and a softmax
Dense) with every convolution's filters an eighth of the source's (no weights in either); max_epochs 3 for 1000
(the repeat count with it), steps_per_epoch 30 for 250, val_steps 8 for 100; the checkpoint's name
'best_model.keras' (Keras 3 wants the suffix).
"""

import glob
import os
import tempfile

import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "firecam_inception")
IMG = 96  # the source's 299


# ----------------------------------------------------------------------------- keras.applications.InceptionV3 (filters / 8)
def conv2d_bn(x, filters, num_row, num_col, padding="same", strides=(1, 1), name=None):
    x = layers.Conv2D(filters, (num_row, num_col), strides=strides, padding=padding, use_bias=False)(x)
    x = layers.BatchNormalization(axis=3, scale=False)(x)
    x = layers.Activation("relu", name=name)(x)
    return x


def InceptionV3(weights=None, include_top=True, input_tensor=None, classes=1000):
    img_input = layers.Input(shape=(IMG, IMG, 3))
    channel_axis = 3

    x = conv2d_bn(img_input, 4, 3, 3, strides=(2, 2), padding="valid")
    x = conv2d_bn(x, 4, 3, 3, padding="valid")
    x = conv2d_bn(x, 8, 3, 3)
    x = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)

    x = conv2d_bn(x, 10, 1, 1, padding="valid")
    x = conv2d_bn(x, 24, 3, 3, padding="valid")
    x = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)

    # mixed 0: 35 x 35 x 256
    branch1x1 = conv2d_bn(x, 8, 1, 1)

    branch5x5 = conv2d_bn(x, 6, 1, 1)
    branch5x5 = conv2d_bn(branch5x5, 8, 5, 5)

    branch3x3dbl = conv2d_bn(x, 8, 1, 1)
    branch3x3dbl = conv2d_bn(branch3x3dbl, 12, 3, 3)
    branch3x3dbl = conv2d_bn(branch3x3dbl, 12, 3, 3)

    branch_pool = layers.AveragePooling2D(
        (3, 3), strides=(1, 1), padding="same"
    )(x)
    branch_pool = conv2d_bn(branch_pool, 4, 1, 1)
    x = layers.concatenate(
        [branch1x1, branch5x5, branch3x3dbl, branch_pool],
        axis=channel_axis,
        name="mixed0",
    )

    # mixed 1: 35 x 35 x 288
    branch1x1 = conv2d_bn(x, 8, 1, 1)

    branch5x5 = conv2d_bn(x, 6, 1, 1)
    branch5x5 = conv2d_bn(branch5x5, 8, 5, 5)

    branch3x3dbl = conv2d_bn(x, 8, 1, 1)
    branch3x3dbl = conv2d_bn(branch3x3dbl, 12, 3, 3)
    branch3x3dbl = conv2d_bn(branch3x3dbl, 12, 3, 3)

    branch_pool = layers.AveragePooling2D(
        (3, 3), strides=(1, 1), padding="same"
    )(x)
    branch_pool = conv2d_bn(branch_pool, 8, 1, 1)
    x = layers.concatenate(
        [branch1x1, branch5x5, branch3x3dbl, branch_pool],
        axis=channel_axis,
        name="mixed1",
    )

    # mixed 2: 35 x 35 x 288
    branch1x1 = conv2d_bn(x, 8, 1, 1)

    branch5x5 = conv2d_bn(x, 6, 1, 1)
    branch5x5 = conv2d_bn(branch5x5, 8, 5, 5)

    branch3x3dbl = conv2d_bn(x, 8, 1, 1)
    branch3x3dbl = conv2d_bn(branch3x3dbl, 12, 3, 3)
    branch3x3dbl = conv2d_bn(branch3x3dbl, 12, 3, 3)

    branch_pool = layers.AveragePooling2D(
        (3, 3), strides=(1, 1), padding="same"
    )(x)
    branch_pool = conv2d_bn(branch_pool, 8, 1, 1)
    x = layers.concatenate(
        [branch1x1, branch5x5, branch3x3dbl, branch_pool],
        axis=channel_axis,
        name="mixed2",
    )

    # mixed 3: 17 x 17 x 768
    branch3x3 = conv2d_bn(x, 48, 3, 3, strides=(2, 2), padding="valid")

    branch3x3dbl = conv2d_bn(x, 8, 1, 1)
    branch3x3dbl = conv2d_bn(branch3x3dbl, 12, 3, 3)
    branch3x3dbl = conv2d_bn(branch3x3dbl, 12, 3, 3, strides=(2, 2), padding="valid"
    )

    branch_pool = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
    x = layers.concatenate(
        [branch3x3, branch3x3dbl, branch_pool], axis=channel_axis, name="mixed3"
    )

    # mixed 4: 17 x 17 x 768
    branch1x1 = conv2d_bn(x, 24, 1, 1)

    branch7x7 = conv2d_bn(x, 16, 1, 1)
    branch7x7 = conv2d_bn(branch7x7, 16, 1, 7)
    branch7x7 = conv2d_bn(branch7x7, 24, 7, 1)

    branch7x7dbl = conv2d_bn(x, 16, 1, 1)
    branch7x7dbl = conv2d_bn(branch7x7dbl, 16, 7, 1)
    branch7x7dbl = conv2d_bn(branch7x7dbl, 16, 1, 7)
    branch7x7dbl = conv2d_bn(branch7x7dbl, 16, 7, 1)
    branch7x7dbl = conv2d_bn(branch7x7dbl, 24, 1, 7)

    branch_pool = layers.AveragePooling2D(
        (3, 3), strides=(1, 1), padding="same"
    )(x)
    branch_pool = conv2d_bn(branch_pool, 24, 1, 1)
    x = layers.concatenate(
        [branch1x1, branch7x7, branch7x7dbl, branch_pool],
        axis=channel_axis,
        name="mixed4",
    )

    # mixed 5, 6: 17 x 17 x 768
    for i in range(2):
        branch1x1 = conv2d_bn(x, 24, 1, 1)

        branch7x7 = conv2d_bn(x, 20, 1, 1)
        branch7x7 = conv2d_bn(branch7x7, 20, 1, 7)
        branch7x7 = conv2d_bn(branch7x7, 24, 7, 1)

        branch7x7dbl = conv2d_bn(x, 20, 1, 1)
        branch7x7dbl = conv2d_bn(branch7x7dbl, 20, 7, 1)
        branch7x7dbl = conv2d_bn(branch7x7dbl, 20, 1, 7)
        branch7x7dbl = conv2d_bn(branch7x7dbl, 20, 7, 1)
        branch7x7dbl = conv2d_bn(branch7x7dbl, 24, 1, 7)

        branch_pool = layers.AveragePooling2D(
            (3, 3), strides=(1, 1), padding="same"
        )(x)
        branch_pool = conv2d_bn(branch_pool, 24, 1, 1)
        x = layers.concatenate(
            [branch1x1, branch7x7, branch7x7dbl, branch_pool],
            axis=channel_axis,
            name="mixed{0}".format(5 + i),
        )

    # mixed 7: 17 x 17 x 768
    branch1x1 = conv2d_bn(x, 24, 1, 1)

    branch7x7 = conv2d_bn(x, 24, 1, 1)
    branch7x7 = conv2d_bn(branch7x7, 24, 1, 7)
    branch7x7 = conv2d_bn(branch7x7, 24, 7, 1)

    branch7x7dbl = conv2d_bn(x, 24, 1, 1)
    branch7x7dbl = conv2d_bn(branch7x7dbl, 24, 7, 1)
    branch7x7dbl = conv2d_bn(branch7x7dbl, 24, 1, 7)
    branch7x7dbl = conv2d_bn(branch7x7dbl, 24, 7, 1)
    branch7x7dbl = conv2d_bn(branch7x7dbl, 24, 1, 7)

    branch_pool = layers.AveragePooling2D(
        (3, 3), strides=(1, 1), padding="same"
    )(x)
    branch_pool = conv2d_bn(branch_pool, 24, 1, 1)
    x = layers.concatenate(
        [branch1x1, branch7x7, branch7x7dbl, branch_pool],
        axis=channel_axis,
        name="mixed7",
    )

    # mixed 8: 8 x 8 x 1280
    branch3x3 = conv2d_bn(x, 24, 1, 1)
    branch3x3 = conv2d_bn(branch3x3, 40, 3, 3, strides=(2, 2), padding="valid")

    branch7x7x3 = conv2d_bn(x, 24, 1, 1)
    branch7x7x3 = conv2d_bn(branch7x7x3, 24, 1, 7)
    branch7x7x3 = conv2d_bn(branch7x7x3, 24, 7, 1)
    branch7x7x3 = conv2d_bn(branch7x7x3, 24, 3, 3, strides=(2, 2), padding="valid"
    )

    branch_pool = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
    x = layers.concatenate(
        [branch3x3, branch7x7x3, branch_pool], axis=channel_axis, name="mixed8"
    )

    # mixed 9: 8 x 8 x 2048
    for i in range(2):
        branch1x1 = conv2d_bn(x, 40, 1, 1)

        branch3x3 = conv2d_bn(x, 48, 1, 1)
        branch3x3_1 = conv2d_bn(branch3x3, 48, 1, 3)
        branch3x3_2 = conv2d_bn(branch3x3, 48, 3, 1)
        branch3x3 = layers.concatenate(
            [branch3x3_1, branch3x3_2],
            axis=channel_axis,
            name=f"mixed9_{i}",
        )

        branch3x3dbl = conv2d_bn(x, 56, 1, 1)
        branch3x3dbl = conv2d_bn(branch3x3dbl, 48, 3, 3)
        branch3x3dbl_1 = conv2d_bn(branch3x3dbl, 48, 1, 3)
        branch3x3dbl_2 = conv2d_bn(branch3x3dbl, 48, 3, 1)
        branch3x3dbl = layers.concatenate(
            [branch3x3dbl_1, branch3x3dbl_2], axis=channel_axis
        )

        branch_pool = layers.AveragePooling2D(
            (3, 3), strides=(1, 1), padding="same"
        )(x)
        branch_pool = conv2d_bn(branch_pool, 24, 1, 1)
        x = layers.concatenate(
            [branch1x1, branch3x3, branch3x3dbl, branch_pool],
            axis=channel_axis,
            name=f"mixed{9 + i}",
        )

    x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
    x = layers.Dense(classes, activation="softmax", name="predictions")(x)
    return keras.Model(img_input, x, name="inception_v3")


# ----------------------------------------------------------------------------- train_classifier_keras.py
def _parse_function(example_proto):
    """
    Function for converting TFRecordDataset to uncompressed image pixels + labels
    :return:
    """
    feature_description = {
    'image/class/label': tf.io.FixedLenFeature([], tf.int64, default_value=0),
    'image/encoded': tf.io.FixedLenFeature([], tf.string, default_value=''),
    'image/format': tf.io.FixedLenFeature([], tf.string, default_value=''),
    'image/height': tf.io.FixedLenFeature([], tf.int64, default_value=0),
    'image/width': tf.io.FixedLenFeature([], tf.int64, default_value=0),
    }

    # Parse the input `tf.Example` proto using the dictionary above.
    example = tf.io.parse_single_example(example_proto, feature_description)
    image = tf.image.decode_image(example['image/encoded'], channels=3)

    #Resizing images in training set because they are apprently rectangular much fo the time
    if example['image/height'] != IMG or example['image/width'] != IMG:
        image = tf.image.resize(tf.reshape(image, [example['image/height'], example['image/width'], 3]), [IMG, IMG])
        image = tf.cast(image, tf.uint8)

    image = tf.reshape(image, [IMG, IMG, 3]) #weird workaround because decode image doesnt get shape
    label = tf.one_hot(example['image/class/label'], depth=2)

    image = (tf.cast(image, tf.float32) - 128) / 128.0
    return [image, label]


def main():
    class args:  # collect_args.collectArgs(reqArgs, ...): -i inputDir, -o outputDir
        inputDir = DATA + '/'
        outputDir = tempfile.mkdtemp(prefix='firecam_') + '/'

    batch_size = 32
    max_epochs = 3
    steps_per_epoch=30
    overshoot_epochs=15 #number of epochs over which validation loss hasnt decreased to stop training at
    val_steps = 8 #only needed for now because of a bug in tf2.0, which should be fixed in next version
    #TODO: either set this to # of validation examples /batch size (i.e. figure out num validation examples)
    #or upgrade to TF2.1 when its ready and automatically go thorugh the whole set

    train_filenames = glob.glob(args.inputDir + 'firecam_train_*.tfrecord')
    val_filenames = glob.glob(args.inputDir + 'firecam_validation_*.tfrecord')

    raw_dataset_train = tf.data.TFRecordDataset(train_filenames)
    raw_dataset_val = tf.data.TFRecordDataset(val_filenames)

    dataset_train = raw_dataset_train.map(_parse_function).repeat(max_epochs * steps_per_epoch).shuffle(batch_size * 5).batch(batch_size)
    dataset_val = raw_dataset_val.map(_parse_function).repeat().batch(batch_size)

    inception = InceptionV3(weights=None, include_top=True, input_tensor=None,
                            classes=2)
    optimizer = tf.keras.optimizers.Adam(learning_rate=0.001, beta_1=0.9, beta_2=0.999, amsgrad=False)
    inception.compile(optimizer=optimizer, loss=tf.keras.losses.BinaryCrossentropy(), metrics=['accuracy'])

    callbacks = [keras.callbacks.EarlyStopping(monitor='val_loss', patience=overshoot_epochs),
                 keras.callbacks.ModelCheckpoint(filepath=args.outputDir + 'best_model.keras',
                                                 monitor='val_loss', save_best_only=True)]

    inception.fit(dataset_train, validation_data=dataset_val, epochs=max_epochs, validation_steps=val_steps, steps_per_epoch=steps_per_epoch, callbacks=callbacks)


if __name__ == "__main__":
    main()
