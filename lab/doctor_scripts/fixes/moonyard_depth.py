"""FIXED COPY (the one fix: cache() after each from_generator, before batch: every example's reads and deterministic
transforms done once, in the first epoch, then served from memory; training and validation datasets both).

Monocular depth estimation for lunar rovers, training: train_model.py of alexispascual/monocular-depth-mapping,
a U-Net (DepthEstimationModel, the keras.io depth-estimation network with its own train_step and an SSIM + L1 +
edge-smoothness loss) fitted on MoonYardDataset's tf.data.Dataset.from_generator pipelines, whose Python generator
reads, for every example of every epoch, a ZED camera's left frame and a horizon mask with cv2.imread and the depth
map with np.load, masks out the sky, min-max normalises and resizes the frame (tf.image.resize called eagerly inside
the generator) and clips, logs and resizes the depth map, one example at a time, then batch(4).prefetch(AUTOTUNE);
the validation dataset is built from the same train_generator (the source's own slip), so each epoch reads and
transforms every training example twice.

Source: https://github.com/alexispascual/monocular-depth-mapping at fb4613d7b8558d63213b0ec741a1213ea1cb12f0
(train_model.py, datasets/moonyard.py, datasets/base_dataset.py, models/unet.py, config/training_config.yaml,
utils/tools.py). Re-written here in the source's structure and order, not copied: train_model.py seeds TF
(tf.random.set_seed(123)), clears the session, loads training_config.yaml through tools.load_config (dataset
root './data/moon_yard', masks './data/horizons', image 768x1024x3, depth 1 channel, batch_size 4,
train_test_split 0.75; learning rate 1e-5, epochs 50, pretrain False, checkpoints
'./checkpoints/moon_yard/moon_yard_model-{epoch:02d}.ckpt'), builds Adam(1e-5, amsgrad=False) and
DepthEstimationModel(height=768, width=1024) (DownscaleBlocks of 16/32/64/128 filters: two 3x3 Conv2D with
BatchNormalization and LeakyReLU(0.2), a residual add and 2x2 max-pooling; a BottleNeckBlock of 256; UpscaleBlocks of
128/64/32/16 with UpSampling2D and a skip concatenation; a 1x1 ReLU Conv2D of 1; its train_step/test_step use
calculate_loss: 0.85 SSIM (max_val=width, filter_size 7) + 0.1 L1 + 0.9 edge-weighted depth smoothness, and a Mean
"loss" metric), compiles it with a SparseCategoricalCrossentropy its train_step never uses (pretraining on DIODE
skipped: pretrain False), builds MoonYardDataset(**dataset_parameters) (every sub-folder of root_folder found by
os.walk, shuffled once by sklearn.utils.shuffle with no random_state, so the split differs from run to run, the
first 75 % for training) and prepare()s it, makes a
ModelCheckpoint(save_weights_only=True), restores the latest checkpoint if tf.train.latest_checkpoint finds one, calls
``model.fit(dataset.train_dataset, epochs=epochs, initial_epoch=checkpoint_epoch,
validation_data=dataset.test_dataset, callbacks=[checkpoint_callback])``, saves the model and dumps the config next
to it. MoonYardDataset.train_generator, for each training folder: cv2.imread of zed_image_left_<name>.jpg and of
horizons/horizon_<name>.jpg, np.load of depth_map_<name>.npy; image_transforms (mask resized to the frame,
``np.where(mask == 255, image, (0, 0, 0))``, min-max normalised, ``tf.image.resize`` to 768x1024,
convert_image_dtype float32) and mask_depth_map (mask resized and made grey, NaNs zeroed, the sky set to max_depth
20, clipped to [0.2, 20], logged where valid, masked where invalid, clipped to [0.1, log 20], resized to 1024x768,
a channel axis added); generate_train_dataset and generate_test_dataset are both
``tf.data.Dataset.from_generator(self.train_generator, output_types=(tf.float32, tf.float32),
output_shapes=(...)).batch(batch_size).prefetch(tf.data.AUTOTUNE)``.

Changed: data paths (``$DOCTOR_SCRIPTS_DATA/moonyard_depth/data/``: 100 generated 180x320 captures, frame JPEG,
float32 depth .npy (+inf, the ZED's TOO_FAR, above the horizon; no NaN occlusions, which the source's
uninitialised np.log output can turn into NaN targets) and a 3-channel horizon-mask JPEG each, for the ZED's frames,
720x1280 assumed: the repository does not say); image_height x
image_width 48x64 for 768x1024; the U-Net's filters a quarter of the source's (4..64 for 16..256); epochs 3 for 50; the YAML config
and tools.load_config inlined as a dict (load_config reads sys.argv); the DIODE pretraining branch (pretrain False in
the config) and its import left out; sklearn.utils.shuffle (not installed here) re-written in NumPy as it works on
a list with no random_state (a permutation from NumPy's global RandomState); utils.tools/view_depth and
moonyard.py's __main__ check (figures) left out, as are
the generate_*_dataset docstrings and commented-out code and BaseDataset's properties the script never reads; Keras 2 -> Keras 3: the weights checkpoint to
moon_yard_model-{epoch:02d}.weights.h5 in a temporary folder (Keras 3 saves weights only to .weights.h5); the final
model.save and the config dump next to it left out (Keras 3 cannot serialise the subclassed model: no get_config).
"""

import math
import os
import tempfile

import cv2
import numpy as np
import tensorflow as tf
from tensorflow.keras import layers
from tqdm import tqdm

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "moonyard_depth")
OUT = os.path.join(tempfile.gettempdir(), "moonyard_depth_out")

tf.random.set_seed(123)


# ----------------------------------------------------------------------------- sklearn.utils.shuffle, in NumPy
def shuffle(a):
    # sklearn's resample(replace=False) with random_state=None: NumPy's global RandomState shuffles the indices
    indices = np.arange(len(a))
    np.random.mtrand._rand.shuffle(indices)
    return [a[i] for i in indices]


# ----------------------------------------------------------------------------- datasets/base_dataset.py
class BaseDataset(object):
    """Default Superclass for Dataset classes"""

    def __init__(self):
        super(BaseDataset, self).__init__()

    def prepare(self):
        raise NotImplementedError('A dataset prepare method must be implemented!')

    @property
    def train_dataset(self):
        raise NotImplementedError('train_dataset property must be overwritten!')

    @property
    def test_dataset(self):
        raise NotImplementedError('test_dataset property must be overwritten!')


# ----------------------------------------------------------------------------- datasets/moonyard.py
class MoonYardDataset(BaseDataset):

    """Train and testing dataset for the MoonYard Depth maps
    """

    def __init__(self,
                 root_folder: str,
                 masks_folder: str,
                 image_height: int,
                 image_width: int,
                 image_channels: int,
                 depth_channels: int,
                 batch_size: int,
                 train_test_split: float
                 ):
        super(BaseDataset, self).__init__()

        self.root_folder = root_folder
        self.masks_folder = masks_folder
        self.image_height = image_height
        self.image_width = image_width
        self.depth_channels = depth_channels

        self._image_channels = image_channels
        self._batch_size = batch_size

        self.min_depth = 0.2
        self.max_depth = 20

        self.folder_names = []

        tqdm.write("Generating file list...")
        for _, dirs, _ in os.walk(root_folder):
            for directory in dirs:
                self.folder_names.append(directory)

        tqdm.write("Done!")
        tqdm.write(f"{len(self.folder_names)} files found.")

        self.folder_names = shuffle(self.folder_names)

        train_split = math.floor(train_test_split * len(self.folder_names))
        self.train_folders = self.folder_names[:train_split]
        self.test_folders = self.folder_names[train_split:]

        tqdm.write(f"{len(self.train_folders)} training files...")
        tqdm.write(f"{len(self.test_folders)} testing files...")

    def train_generator(self):

        for dirname in self.train_folders:
            image_path = os.path.join(self.root_folder, dirname, f'zed_image_left_{dirname}.jpg')
            depth_file_path = os.path.join(self.root_folder, dirname, f'depth_map_{dirname}.npy')

            mask_file = os.path.join(self.masks_folder, f'horizon_{dirname}.jpg')

            image = cv2.imread(image_path)
            mask = cv2.imread(mask_file)
            depth = np.load(depth_file_path)

            image = self.image_transforms(image, mask)
            depth = self.mask_depth_map(depth, mask)

            yield image, depth

    def test_generator(self):

        for dirname in self.test_folders:
            image_path = os.path.join(self.root_folder, dirname, f'zed_image_left_{dirname}.jpg')
            depth_file_path = os.path.join(self.root_folder, dirname, f'depth_map_{dirname}.npy')

            mask_file = os.path.join(self.masks_folder, f'horizon_{dirname}.jpg')

            image = cv2.imread(image_path)
            mask = cv2.imread(mask_file)
            depth = np.load(depth_file_path)

            image = self.image_transforms(image, mask)
            depth = self.mask_depth_map(depth, mask)

            yield image, depth

    def generate_train_dataset(self):
        return tf.data.Dataset.from_generator(self.train_generator,
                                              output_types=(tf.float32, tf.float32),
                                              output_shapes=((self.image_height, self.image_width, self.image_channels),
                                                             (self.image_height, self.image_width, self.depth_channels))
                                              ).cache().batch(self._batch_size).prefetch(tf.data.AUTOTUNE)  # FIX: cache()

    def generate_test_dataset(self):
        return tf.data.Dataset.from_generator(self.train_generator,
                                              output_types=(tf.float32, tf.float32),
                                              output_shapes=((self.image_height, self.image_width, self.image_channels),
                                                             (self.image_height, self.image_width, self.depth_channels))
                                              ).cache().batch(self._batch_size).prefetch(tf.data.AUTOTUNE)  # FIX: cache()

    def mask_depth_map(self, _depth_map, _mask):
        mask = cv2.resize(_mask, (_depth_map.shape[1], _depth_map.shape[0]))
        mask = cv2.cvtColor(mask, cv2.COLOR_BGR2GRAY)

        mask = mask == 255

        invalid_mask = np.isnan(_depth_map)

        depth_map = np.nan_to_num(_depth_map)
        depth_map = np.where(mask, depth_map, self.max_depth)
        depth_map = np.clip(depth_map, self.min_depth, self.max_depth)
        depth_map = np.log(depth_map, where=~invalid_mask)

        depth_map = np.ma.masked_where(invalid_mask, depth_map)

        depth_map = np.clip(depth_map, 0.1, np.log(self.max_depth))
        depth_map = cv2.resize(depth_map, (self.image_width, self.image_height))

        depth_map = np.expand_dims(depth_map, axis=2)

        return depth_map

    def prepare(self):
        self._train_dataset = self.generate_train_dataset()
        self._test_dataset = self.generate_test_dataset()

    def image_transforms(self, image, mask):
        mask = cv2.resize(mask, (image.shape[1], image.shape[0]))

        mask = mask == 255

        image = np.where(mask, image, (0, 0, 0))
        image = (image - np.min(image)) / (np.max(image) - np.min(image))
        image = tf.image.resize(image, (self.image_height, self.image_width))
        image = tf.image.convert_image_dtype(image, tf.float32)

        return image

    @property
    def train_dataset(self):
        return self._train_dataset

    @property
    def test_dataset(self):
        return self._test_dataset

    @property
    def image_channels(self):
        return self._image_channels


# ----------------------------------------------------------------------------- models/unet.py
class DepthEstimationModel(tf.keras.Model):
    def __init__(self, width, height):
        super().__init__()
        self.ssim_loss_weight = 0.85
        self.l1_loss_weight = 0.1
        self.edge_loss_weight = 0.9
        self.loss_metric = tf.keras.metrics.Mean(name="loss")
        self.width = width
        self.height = height
        f = [4, 8, 16, 32, 64]
        self.downscale_blocks = [
            DownscaleBlock(f[0]),
            DownscaleBlock(f[1]),
            DownscaleBlock(f[2]),
            DownscaleBlock(f[3]),
        ]
        self.bottle_neck_block = BottleNeckBlock(f[4])
        self.upscale_blocks = [
            UpscaleBlock(f[3]),
            UpscaleBlock(f[2]),
            UpscaleBlock(f[1]),
            UpscaleBlock(f[0]),
        ]
        self.conv_layer = layers.Conv2D(1, (1, 1), padding="same", activation="relu")

    def calculate_loss(self, target, pred):
        # Edges
        dy_true, dx_true = tf.image.image_gradients(target)
        dy_pred, dx_pred = tf.image.image_gradients(pred)
        weights_x = tf.exp(tf.reduce_mean(tf.abs(dx_true)))
        weights_y = tf.exp(tf.reduce_mean(tf.abs(dy_true)))

        # Depth smoothness
        smoothness_x = dx_pred * weights_x
        smoothness_y = dy_pred * weights_y

        depth_smoothness_loss = tf.reduce_mean(abs(smoothness_x)) + tf.reduce_mean(
            abs(smoothness_y)
        )

        # Structural similarity (SSIM) index
        ssim_loss = tf.reduce_mean(
            1
            - tf.image.ssim(
                target, pred, max_val=self.width, filter_size=7, k1=0.01 ** 2, k2=0.03 ** 2
            )
        )
        # Point-wise depth
        l1_loss = tf.reduce_mean(tf.abs(target - pred))

        loss = (
            (self.ssim_loss_weight * ssim_loss)
            + (self.l1_loss_weight * l1_loss)
            + (self.edge_loss_weight * depth_smoothness_loss)
        )

        return loss

    @property
    def metrics(self):
        return [self.loss_metric]

    def train_step(self, batch_data):
        input, target = batch_data
        with tf.GradientTape() as tape:
            pred = self(input, training=True)
            loss = self.calculate_loss(target, pred)

        gradients = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(gradients, self.trainable_variables))
        self.loss_metric.update_state(loss)
        return {
            "loss": self.loss_metric.result(),
        }

    def test_step(self, batch_data):
        input, target = batch_data

        pred = self(input, training=False)
        loss = self.calculate_loss(target, pred)

        self.loss_metric.update_state(loss)
        return {
            "loss": self.loss_metric.result(),
        }

    def call(self, x):
        c1, p1 = self.downscale_blocks[0](x)
        c2, p2 = self.downscale_blocks[1](p1)
        c3, p3 = self.downscale_blocks[2](p2)
        c4, p4 = self.downscale_blocks[3](p3)

        bn = self.bottle_neck_block(p4)

        u1 = self.upscale_blocks[0](bn, c4)
        u2 = self.upscale_blocks[1](u1, c3)
        u3 = self.upscale_blocks[2](u2, c2)
        u4 = self.upscale_blocks[3](u3, c1)

        return self.conv_layer(u4)


class DownscaleBlock(layers.Layer):
    def __init__(
        self, filters, kernel_size=(3, 3), padding="same", strides=1, **kwargs
    ):
        super().__init__(**kwargs)
        self.convA = layers.Conv2D(filters, kernel_size, strides, padding)
        self.convB = layers.Conv2D(filters, kernel_size, strides, padding)
        self.reluA = layers.LeakyReLU(alpha=0.2)
        self.reluB = layers.LeakyReLU(alpha=0.2)
        self.bn2a = tf.keras.layers.BatchNormalization()
        self.bn2b = tf.keras.layers.BatchNormalization()

        self.pool = layers.MaxPool2D((2, 2), (2, 2))

    def call(self, input_tensor):
        d = self.convA(input_tensor)
        x = self.bn2a(d)
        x = self.reluA(x)

        x = self.convB(x)
        x = self.bn2b(x)
        x = self.reluB(x)

        x += d
        p = self.pool(x)
        return x, p


class UpscaleBlock(layers.Layer):
    def __init__(
        self, filters, kernel_size=(3, 3), padding="same", strides=1, **kwargs
    ):
        super().__init__(**kwargs)
        self.us = layers.UpSampling2D((2, 2))
        self.convA = layers.Conv2D(filters, kernel_size, strides, padding)
        self.convB = layers.Conv2D(filters, kernel_size, strides, padding)
        self.reluA = layers.LeakyReLU(alpha=0.2)
        self.reluB = layers.LeakyReLU(alpha=0.2)
        self.bn2a = tf.keras.layers.BatchNormalization()
        self.bn2b = tf.keras.layers.BatchNormalization()
        self.conc = layers.Concatenate()

    def call(self, x, skip):
        x = self.us(x)
        concat = self.conc([x, skip])
        x = self.convA(concat)
        x = self.bn2a(x)
        x = self.reluA(x)

        x = self.convB(x)
        x = self.bn2b(x)
        x = self.reluB(x)

        return x


class BottleNeckBlock(layers.Layer):
    def __init__(
        self, filters, kernel_size=(3, 3), padding="same", strides=1, **kwargs
    ):
        super().__init__(**kwargs)
        self.convA = layers.Conv2D(filters, kernel_size, strides, padding)
        self.convB = layers.Conv2D(filters, kernel_size, strides, padding)
        self.reluA = layers.LeakyReLU(alpha=0.2)
        self.reluB = layers.LeakyReLU(alpha=0.2)

    def call(self, x):
        x = self.convA(x)
        x = self.reluA(x)
        x = self.convB(x)
        x = self.reluB(x)
        return x


# ----------------------------------------------------------------------------- train_model.py
def main():
    tf.keras.backend.clear_session()

    # config/training_config.yaml, as tools.load_config('./config/training_config.yaml') returns it
    config = {
        'dataset_parameters': {
            'root_folder': os.path.join(DATA, 'data', 'moon_yard'),
            'masks_folder': os.path.join(DATA, 'data', 'horizons'),
            'image_height': 48,
            'image_width': 64,
            'image_channels': 3,
            'depth_channels': 1,
            'batch_size': 4,
            'train_test_split': 0.75,
        },
        'experiment_parameters': {
            'learning_rate': 0.00001,
            'epochs': 3,
            'saved_model_dir': os.path.join(OUT, 'saved_models', 'moon_yard_model'),
            'checkpoint_file': os.path.join(OUT, 'checkpoints', 'moon_yard', 'moon_yard_model-{epoch:02d}.weights.h5'),
            'pretrain': False,
        },
    }

    dataset_parameters = config['dataset_parameters']
    experiment_parameters = config['experiment_parameters']

    learning_rate = experiment_parameters['learning_rate']
    epochs = experiment_parameters['epochs']
    moonyard_checkpoint_file = experiment_parameters['checkpoint_file']
    moonyard_checkpoint_dir = os.path.dirname(moonyard_checkpoint_file)

    image_width = dataset_parameters['image_width']
    image_height = dataset_parameters['image_height']

    # Define optimizer
    optimizer = tf.keras.optimizers.Adam(learning_rate=learning_rate,
                                         amsgrad=False)

    # Define model
    model = DepthEstimationModel(height=image_height, width=image_width)

    # Define the loss function
    cross_entropy = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")

    # Compile the model
    model.compile(optimizer, loss=cross_entropy)

    dataset = MoonYardDataset(**dataset_parameters)
    dataset.prepare()

    checkpoint_callback = tf.keras.callbacks.ModelCheckpoint(filepath=moonyard_checkpoint_file,
                                                             save_weights_only=True,
                                                             verbose=1)

    if tf.train.latest_checkpoint(moonyard_checkpoint_dir) is not None:
        print("Loading model from checkpoint...")
        model.load_weights(tf.train.latest_checkpoint(moonyard_checkpoint_dir))
        checkpoint_epoch = str(tf.train.latest_checkpoint(moonyard_checkpoint_dir))
        checkpoint_epoch = int(checkpoint_epoch.split("-")[1].split(".")[0])
        print(f"Found checkpoint trained for {checkpoint_epoch} epochs!")
    else:
        print("Found no checkpoints! Starting from scratch...")
        checkpoint_epoch = 0

    model.fit(dataset.train_dataset,
              epochs=epochs,
              initial_epoch=checkpoint_epoch,
              validation_data=dataset.test_dataset,
              callbacks=[checkpoint_callback])

    return experiment_parameters['saved_model_dir']


if __name__ == '__main__':
    main()
