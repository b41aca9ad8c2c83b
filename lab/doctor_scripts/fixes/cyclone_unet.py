"""FIXED COPY (the one fix: cache() after from_generator, before batch: every HDF5 row read and its genesis
matrix transposed once, in the first epoch, then served from memory).

Tropical-cyclone landfall emulator (EMPIRIC_TC), training: Machine Learning/train.py of EMPIRIC2/EMPIRIC_TC, the
authors' modified U-Net (unet.py) mapping the six monthly STORM genesis matrices of the South Pacific basin to a
twice-as-fine grid of average landfalls for each of the 12 months, fitted on a tf.data.Dataset.from_generator over a
Python generator class (dataset.py's hdf5_generator) that walks every HDF5 file of the data folder and yields one
example at a time: a row of the file's train_genesis and train_output datasets each (h5py reads one row per
iteration), the genesis matrix transposed by an eager ``tf.transpose`` per example; batched by 32, no cache, no prefetch.

Source: https://github.com/EMPIRIC2/EMPIRIC_TC at 5ad39fd067f83081beb76b91090774b28264b8da (Machine Learning/train.py,
which imports Machine Learning/dataset.py and Machine Learning/unet.py; the files' layout from
Training Data Generation/GenerateTrainingData.py). Re-written here in the source's structure and order (dataset.py,
then unet.py, then train.py), not copied. GenerateTrainingData.py writes each run to
``Data/train/AllData_<time.time()>.hdf5`` with float32 contiguous datasets (h5py defaults) train_genesis
(N, 6, lat, lon), train_movement (N, 11, 13), train_output (N, 2*lat, 2*lon, 12) and the same for test, one sample
written at a time. dataset.py: ``hdf5_generator(file_paths, test=False)`` is a callable whose ``__call__`` opens each
file in turn with ``h5py.File(file_path, 'r')`` and, for ``genesis, output in zip(file[dataset + "_genesis"],
file[dataset + "_output"])``, yields ``tf.transpose(genesis, [1, 2, 0]), output`` while ``np.count_nonzero(genesis)
!= 0`` (a row never generated ends the file); ``get_dataset(folder_path, batch_size=32, genesis_size, output_size,
test)`` globs ``*.hdf5``, prints the paths, builds ``tf.data.Dataset.from_generator(hdf5_generator(file_paths,
test=test), output_types=(tf.float32, tf.float32), output_shapes=(genesis_size, output_size))`` and returns
``dataset.batch(batch_size)``. unet.py: UNet(input_size, output_channels=12): Conv2D 64 (3x3, LeakyReLU), three
downsample blocks (Conv2D -> BatchNormalization -> Dropout 0.5 -> Conv2D -> BatchNormalization -> MaxPooling2D, no
bias, LeakyReLU) of 64/128/256 filters keeping skips, a Dense 256 bottleneck, four upsample blocks (nearest
UpSampling2D -> Conv2D -> BatchNormalization -> Dropout 0.5 -> ReLU) of 256/128/64/32 filters, each of the first
three cropped (Cropping2D) to its skip and concatenated with it, a 1x1 Conv2D of 12 channels with a Softmax; the
output is twice the input's size. train.py: genesis (55, 105, 6), output (110, 210, 12);
``keras.backend.clear_session()``, ``train_unet('../Training Data Generation/Data/train/')``: the training and the
test dataset from get_dataset (the test one with ``test=True``), UNet(genesis_size_default), Adam(1e-3), MSE loss,
MSE and MAE metrics, ``model.fit(x=train_data, epochs=1, verbose=2)``, ``model.evaluate(x=test_data)``,
``model.save('models/unet.keras')``.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/cyclone_unet/Training Data Generation/Data/train/``: two generated
AllData_<time>.hdf5 files of 160 training and 16 test samples each, genesis 6x14x26 and output 28x52x12 for the
basin's 6x55x105 and 110x210x12, so genesis_size_default (14, 26, 6) and output_size_default (28, 52, 12)); the
U-Net's filters a quarter of the source's (16, 16/32/64 down, Dense 64, 64/32/16/8 up for 64, 64/128/256, 256,
256/128/64/32); epochs 3 for 1; the model saved to unet.keras in a temporary folder for models/unet.keras.
"""

import glob
import os
import tempfile

import h5py
import keras
import numpy as np
import tensorflow as tf
from keras import Model, Sequential, activations  # noqa: F401
from keras.layers import (  # noqa: F401
    BatchNormalization,
    Conv2D,
    Cropping2D,
    Dense,
    Dropout,
    Input,
    LeakyReLU,
    MaxPooling2D,
    ReLU,
    Softmax,
    UpSampling2D,
    ZeroPadding2D,
    concatenate,
)

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "cyclone_unet")
OUT = os.path.join(tempfile.gettempdir(), "cyclone_unet_out")


# ---- dataset.py ----

class hdf5_generator:
    def __init__(self, file_paths, test=False):

        self.file_paths = file_paths
        self.dataset = "train"
        if test: self.dataset = "test"  # noqa: E701

    def __call__(self):

        for file_path in self.file_paths:
            with h5py.File(file_path, 'r') as file:
                for genesis, output in zip(file[self.dataset + "_genesis"], file[self.dataset + "_output"]):
                    if np.count_nonzero(genesis) != 0:  # data has been made

                        yield tf.transpose(genesis, [1, 2, 0]), output

                    else:  # this sample was never generated
                        break


def get_dataset(folder_path, batch_size=32, genesis_size=None, output_size=None, test=False):

    file_paths = glob.glob(os.path.join(folder_path, "*.hdf5"))
    print(file_paths)
    dataset = tf.data.Dataset.from_generator(
        hdf5_generator(file_paths, test=test),
        output_types=(tf.float32, tf.float32),
        output_shapes=(genesis_size, output_size)
    ).cache()  # FIX: each example read from HDF5 and transposed once, kept in memory

    batched_dataset = dataset.batch(batch_size)

    return batched_dataset


# ---- unet.py ----
# Here we define our own modified UNet: (link paper)

def upsample_block(filters, up_sample_size, kernel_size, dropout=False):

    # Upsample using nearest neighbors -> conv2d -> batchnorm -> dropout -> Relu

    result = Sequential()

    result.add(UpSampling2D(size=up_sample_size, interpolation="nearest"))
    result.add(Conv2D(filters=filters, kernel_size=kernel_size, padding='same', use_bias=False))

    result.add(BatchNormalization())

    if dropout:
        result.add(Dropout(0.5))

    result.add(ReLU())

    return result


def downsample_block(filters, size, dropout=False):

    # Downsample using conv2d -> Batchnorm -> Max Pool -> leakyReLU

    result = Sequential()
    result.add(
        Conv2D(filters, size, padding='same', use_bias=False, activation=LeakyReLU()))

    result.add(BatchNormalization())

    if dropout:
        result.add(Dropout(0.5))

    result.add(
        Conv2D(filters, size, padding='same', use_bias=False, activation=LeakyReLU()))

    result.add(BatchNormalization())

    result.add(MaxPooling2D((2, 2), padding='same'))

    return result


def bottleneck():
    # we add a fully connected layer to try to capture non-local spatial interactions

    result = Sequential()
    result.add(Dense(64, activation=LeakyReLU()))  # 256 in the source

    return result


def UNet(input_size, output_channels=12):

    input = Input(input_size)

    skips = []

    x = Conv2D(16, (3, 3), activation=LeakyReLU(), padding='same')(input)  # 64 in the source

    down_filters = [16, 32, 64]  # [64, 128, 256] in the source
    for filters in down_filters:

        skips.append(x)
        x = downsample_block(filters, (3, 3), dropout=True)(x)

    x = bottleneck()(x)

    # outputs are twice as big as inputs
    up_filters = [64, 32, 16, 8]  # [256, 128, 64, 32] in the source
    for i, filters in enumerate(up_filters):

        x = upsample_block(filters, (2, 2), (3, 3), dropout=True)(x)

        if i < len(down_filters):
            skip = skips[len(down_filters) - i - 1]
            b, h, w, c = skip.shape
            b, h1, w1, c = x.shape
            diffY = h1 - h
            diffX = w1 - w

            # padded_skip = ZeroPadding2D(padding=()(skip)
            cropped_x = Cropping2D(cropping=((diffY // 2, diffY - diffY // 2), (diffX // 2, diffX - diffX // 2)))(x)
            x = concatenate([cropped_x, skip])

    output = Conv2D(output_channels, (1, 1), activation=Softmax())(x)

    model = Model(inputs=[input], outputs=[output])

    return model


# ---- train.py ----

genesis_size_default = (14, 26, 6)  # (55, 105, 6) in the source
movement_size_default = (11, 13)
output_size_default = (28, 52, 12)  # (110, 210, 12) in the source


def train_unet(data_folder, genesis_size=genesis_size_default, output_size=output_size_default):

    train_data = get_dataset(data_folder, genesis_size=genesis_size, output_size=output_size)
    print(train_data)
    test_data = get_dataset(data_folder, genesis_size=genesis_size, output_size=output_size, test=True)
    model = UNet(genesis_size_default)

    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate=1e-3),
        loss=keras.losses.MeanSquaredError(reduction="sum_over_batch_size", name="mean_squared_error"),
        metrics=[keras.metrics.MeanSquaredError(), keras.metrics.MeanAbsoluteError()]
    )

    model.fit(
        x=train_data,
        epochs=3,  # 1 in the source
        verbose=2,
    )

    model.evaluate(
        x=test_data,
    )

    os.makedirs(OUT, exist_ok=True)
    model.save(os.path.join(OUT, 'unet.keras'))  # 'models/unet.keras' in the source


keras.backend.clear_session()
train_unet(os.path.join(DATA, 'Training Data Generation', 'Data', 'train'))
