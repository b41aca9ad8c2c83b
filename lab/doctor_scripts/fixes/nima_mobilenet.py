"""FIXED COPY (the one fix: each photo read, decoded and resized once, kept in memory; the random crop, flip and
preprocess_input still run per batch of every epoch).

NIMA (neural image assessment) on AVA photos, training: src/trainer/train.py of idealo/image-quality-assessment
(with the handlers and utils it imports), a MobileNet with a Dropout and a 10-way softmax head fitted with the earth
mover's distance on the photos' normalised score votes, first with the MobileNet frozen, then all of it, on
``TrainDataGenerator``, a tf.keras.utils.Sequence whose ``__getitem__`` opens, decodes and resizes every JPEG of the
batch with keras's load_img (PIL), takes a random crop and a random horizontal flip and applies MobileNet's
preprocess_input, every batch of every epoch; validation on ``TestDataGenerator`` the same way without the crop and
flip. The author's aesthetic CPU config loads data with one thread worker (``num_workers_data_load: 1``,
``multiprocessing_data_load: false``).

Source: https://github.com/idealo/image-quality-assessment at dceaf7c2d218bc6e80b21d6e147e3b56a21b7f31
(src/trainer/train.py, which imports src/handlers/data_generator.py, model_builder.py, samples_loader.py,
config_loader.py and src/utils/utils.py, losses.py; the config models/MobileNet/config_aesthetic_cpu.json).
Re-written here in the source's structure and order, not copied: under ``__main__`` train.py parses --job-dir and
--image-dir, makes job_dir/weights and job_dir/logs, loads job_dir/config.json (base_model_name MobileNet,
n_classes 10, batch_size 96, epochs_train_dense 5, learning_rate_dense 0.001, decay_dense 0, epochs_train_all 9,
learning_rate_all 3e-5, decay_all 2.3e-5, dropout_rate 0.75, multiprocessing_data_load false,
num_workers_data_load 1) and job_dir/samples.json (AVA: a list of {image_id, label}, label the ten score vote
counts) and calls ``train(samples=..., job_dir=..., image_dir=..., **config)``; train builds ``Nima``
(model_builder: the keras.applications module imported by name, ``MobileNet(input_shape=(224, 224, 3),
weights='imagenet', include_top=False, pooling='avg')``, Dropout(dropout_rate), Dense(n_classes, softmax); compile
with ``Adam(lr=learning_rate, decay=decay)`` and losses.earth_movers_distance), splits the samples with sklearn's
``train_test_split(samples, test_size=0.05, shuffle=True, random_state=10207)``, builds
``TrainDataGenerator(samples_train, image_dir, batch_size, n_classes, nima.preprocessing_function(),
img_format='jpg')`` (img_load_dims (256, 256), img_crop_dims (224, 224), shuffle True: on_epoch_end shuffles the
indexes with np.random; a batch: ``X = np.empty((n, 224, 224, 3))``, for each sample ``utils.load_image(
image_dir/<image_id>.jpg, (256, 256))`` = ``np.asarray(tf.keras.preprocessing.image.load_img(file,
target_size=...))``, ``utils.random_crop`` to 224x224, ``utils.random_horizontal_flip``, the label
``utils.normalize_labels`` (votes / their sum), then ``X = preprocess_input(X)``) and ``TestDataGenerator`` (load
at (224, 224), no crop or flip), a TensorBoard callback (update_freq='batch') and a ModelCheckpoint of the best
val_loss weights; sets every base-model layer untrainable, compiles, prints the summary and fits
``fit_generator(generator=training_generator, validation_data=validation_generator, epochs=epochs_train_dense,
verbose=1, use_multiprocessing=multiprocessing_data_load, workers=num_workers_data_load, max_queue_size=30,
callbacks=[tensorboard, model_checkpointer])``; then sets every base-model layer trainable, sets the learning rate
and decay to learning_rate_all and decay_all, compiles again and fits the same way with
``epochs=epochs_train_dense + epochs_train_all, initial_epoch=epochs_train_dense``; finally ``K.clear_session()``.

Changed: data paths (``$DOCTOR_SCRIPTS_DATA/nima_mobilenet/images/``: 600 generated 320x240 and 240x320 JPEG photos
for AVA's 255000, and ``job/`` with config.json, the author's aesthetic CPU config, and samples.json) in place of the
--job-dir and --image-dir arguments; epochs_train_dense 1 for 5 and epochs_train_all 2 for 9 (3 epochs in all, set
over the loaded config); images loaded at 96x96 and cropped to 80x80 for 256x256 and 224x224 (the test generator
loads at 80x80, the MobileNet's input_shape (80, 80, 3)); MobileNet alpha=0.25 (its filters divided by 4) and
weights=None for 'imagenet' (no download here);
sklearn's train_test_split re-written in NumPy as it splits (RandomState(10207).permutation, the first ceil(5%) for
the test samples); Keras 2 names ported to Keras 3: ``Adam(lr=, decay=)`` -> ``Adam(learning_rate=)`` with the
legacy decay as an InverseTimeDecay schedule (lr / (1 + decay * step), the same formula), fit_generator -> fit, and
its ``workers``, ``use_multiprocessing`` and ``max_queue_size`` set on the two Sequences (Keras 3 takes them on the
PyDataset, not in fit); the checkpoint written to ``.weights.h5`` (Keras 3's name for weights files) in a temporary
job folder; the TensorBoard callback left out; the modules inlined where train.py imports them.
"""

import json
import os
import tempfile

import numpy as np
import tensorflow as tf
from tensorflow.keras import backend as K
from tensorflow.keras.callbacks import ModelCheckpoint

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "nima_mobilenet")


# ----------------------------------------------------------------------------- sklearn.model_selection
def train_test_split(samples, test_size, shuffle, random_state):
    n = len(samples)
    n_test = int(np.ceil(test_size * n))
    permutation = np.random.RandomState(random_state).permutation(n)
    return [samples[i] for i in permutation[n_test:]], [samples[i] for i in permutation[:n_test]]


# ----------------------------------------------------------------------------- src/utils/utils.py
def load_json(file_path):
    with open(file_path, 'r') as f:
        return json.load(f)


def random_crop(img, crop_dims):
    h, w = img.shape[0], img.shape[1]
    ch, cw = crop_dims[0], crop_dims[1]
    assert h >= ch, 'image height is less than crop height'
    assert w >= cw, 'image width is less than crop width'
    x = np.random.randint(0, w - cw + 1)
    y = np.random.randint(0, h - ch + 1)
    return img[y:(y+ch), x:(x+cw), :]


def random_horizontal_flip(img):
    assert len(img.shape) == 3, 'input tensor must have 3 dimensions (height, width, channels)'
    assert img.shape[2] == 3, 'image not in channels last format'
    if np.random.random() < 0.5:
        img = img.swapaxes(1, 0)
        img = img[::-1, ...]
        img = img.swapaxes(0, 1)
    return img


_IMAGES = {}  # FIX: each (file, size) decoded and resized once, kept in memory


def load_image(img_file, target_size):
    if (img_file, target_size) not in _IMAGES:
        _IMAGES[img_file, target_size] = np.asarray(tf.keras.preprocessing.image.load_img(img_file, target_size=target_size))
    return _IMAGES[img_file, target_size]


def normalize_labels(labels):
    labels_np = np.array(labels)
    return labels_np / labels_np.sum()


def ensure_dir_exists(dir):
    if not os.path.exists(dir):
        os.makedirs(dir)


# ----------------------------------------------------------------------------- src/utils/losses.py
def earth_movers_distance(y_true, y_pred):
    cdf_true = K.cumsum(y_true, axis=-1)
    cdf_pred = K.cumsum(y_pred, axis=-1)
    emd = K.sqrt(K.mean(K.square(cdf_true - cdf_pred), axis=-1))
    return K.mean(emd)


# ----------------------------------------------------------------------------- src/handlers/data_generator.py
class TrainDataGenerator(tf.keras.utils.Sequence):
    '''inherits from Keras Sequence base object, allows to use multiprocessing in .fit_generator'''
    def __init__(self, samples, img_dir, batch_size, n_classes, basenet_preprocess, img_format,
                 img_load_dims=(96, 96), img_crop_dims=(80, 80), shuffle=True):
        super().__init__()
        self.samples = samples
        self.img_dir = img_dir
        self.batch_size = batch_size
        self.n_classes = n_classes
        self.basenet_preprocess = basenet_preprocess  # Keras basenet specific preprocessing function
        self.img_load_dims = img_load_dims  # dimensions that images get resized into when loaded
        self.img_crop_dims = img_crop_dims  # dimensions that images get randomly cropped to
        self.shuffle = shuffle
        self.img_format = img_format
        self.on_epoch_end()  # call ensures that samples are shuffled in first epoch if shuffle is set to True

    def __len__(self):
        return int(np.ceil(len(self.samples) / self.batch_size))  # number of batches per epoch

    def __getitem__(self, index):
        batch_indexes = self.indexes[index*self.batch_size:(index+1)*self.batch_size]  # get batch indexes
        batch_samples = [self.samples[i] for i in batch_indexes]  # get batch samples
        X, y = self.__data_generator(batch_samples)
        return X, y

    def on_epoch_end(self):
        self.indexes = np.arange(len(self.samples))
        if self.shuffle is True:
            np.random.shuffle(self.indexes)

    def __data_generator(self, batch_samples):
        # initialize images and labels tensors for faster processing
        X = np.empty((len(batch_samples), *self.img_crop_dims, 3))
        y = np.empty((len(batch_samples), self.n_classes))

        for i, sample in enumerate(batch_samples):
            # load and randomly augment image
            img_file = os.path.join(self.img_dir, '{}.{}'.format(sample['image_id'], self.img_format))
            img = load_image(img_file, self.img_load_dims)
            if img is not None:
                img = random_crop(img, self.img_crop_dims)
                img = random_horizontal_flip(img)
                X[i, ] = img

            # normalize labels
            y[i, ] = normalize_labels(sample['label'])

        # apply basenet specific preprocessing
        # input is 4D numpy array of RGB values within [0, 255]
        X = self.basenet_preprocess(X)

        return X, y


class TestDataGenerator(tf.keras.utils.Sequence):
    '''inherits from Keras Sequence base object, allows to use multiprocessing in .fit_generator'''
    def __init__(self, samples, img_dir, batch_size, n_classes, basenet_preprocess, img_format,
                 img_load_dims=(80, 80)):
        super().__init__()
        self.samples = samples
        self.img_dir = img_dir
        self.batch_size = batch_size
        self.n_classes = n_classes
        self.basenet_preprocess = basenet_preprocess  # Keras basenet specific preprocessing function
        self.img_load_dims = img_load_dims  # dimensions that images get resized into when loaded
        self.img_format = img_format
        self.on_epoch_end()  # call ensures that samples are shuffled in first epoch if shuffle is set to True

    def __len__(self):
        return int(np.ceil(len(self.samples) / self.batch_size))  # number of batches per epoch

    def __getitem__(self, index):
        batch_indexes = self.indexes[index*self.batch_size:(index+1)*self.batch_size]  # get batch indexes
        batch_samples = [self.samples[i] for i in batch_indexes]  # get batch samples
        X, y = self.__data_generator(batch_samples)
        return X, y

    def on_epoch_end(self):
        self.indexes = np.arange(len(self.samples))

    def __data_generator(self, batch_samples):
        # initialize images and labels tensors for faster processing
        X = np.empty((len(batch_samples), *self.img_load_dims, 3))
        y = np.empty((len(batch_samples), self.n_classes))

        for i, sample in enumerate(batch_samples):
            # load and randomly augment image
            img_file = os.path.join(self.img_dir, '{}.{}'.format(sample['image_id'], self.img_format))
            img = load_image(img_file, self.img_load_dims)
            if img is not None:
                X[i, ] = img

            # normalize labels
            if sample.get('label') is not None:
                y[i, ] = normalize_labels(sample['label'])

        # apply basenet specific preprocessing
        # input is 4D numpy array of RGB values within [0, 255]
        X = self.basenet_preprocess(X)

        return X, y


# ----------------------------------------------------------------------------- src/handlers/model_builder.py
import importlib  # noqa: E402

from tensorflow.keras.layers import Dense, Dropout  # noqa: E402
from tensorflow.keras.models import Model  # noqa: E402
from tensorflow.keras.optimizers import Adam  # noqa: E402
from tensorflow.keras.optimizers.schedules import InverseTimeDecay  # noqa: E402


class Nima:
    def __init__(self, base_model_name, n_classes=10, learning_rate=0.001, dropout_rate=0, loss=earth_movers_distance,
                 decay=0, weights=None):
        self.n_classes = n_classes
        self.base_model_name = base_model_name
        self.learning_rate = learning_rate
        self.dropout_rate = dropout_rate
        self.loss = loss
        self.decay = decay
        self.weights = weights
        self._get_base_module()

    def _get_base_module(self):
        # import Keras base model module
        if self.base_model_name == 'InceptionV3':
            self.base_module = importlib.import_module('tensorflow.keras.applications.inception_v3')
        elif self.base_model_name == 'InceptionResNetV2':
            self.base_module = importlib.import_module('tensorflow.keras.applications.inception_resnet_v2')
        else:
            self.base_module = importlib.import_module('tensorflow.keras.applications.'+self.base_model_name.lower())

    def build(self):
        # get base model class
        BaseCnn = getattr(self.base_module, self.base_model_name)

        # load pre-trained model
        self.base_model = BaseCnn(input_shape=(80, 80, 3), alpha=0.25, weights=self.weights, include_top=False, pooling='avg')

        # add dropout and dense layer
        x = Dropout(self.dropout_rate)(self.base_model.output)
        x = Dense(units=self.n_classes, activation='softmax')(x)

        self.nima_model = Model(self.base_model.inputs, x)

    def compile(self):
        learning_rate = InverseTimeDecay(self.learning_rate, 1, self.decay) if self.decay else self.learning_rate
        self.nima_model.compile(optimizer=Adam(learning_rate=learning_rate), loss=self.loss)

    def preprocessing_function(self):
        return self.base_module.preprocess_input


# ----------------------------------------------------------------------------- src/handlers/samples_loader.py, config_loader.py
def load_samples(samples_file):
    return load_json(samples_file)


def load_config(config_file):
    config = load_json(config_file)
    return config


# ----------------------------------------------------------------------------- src/trainer/train.py
def train(
    base_model_name,
    n_classes,
    samples,
    image_dir,
    batch_size,
    epochs_train_dense,
    epochs_train_all,
    learning_rate_dense,
    learning_rate_all,
    dropout_rate,
    job_dir,
    img_format='jpg',
    existing_weights=None,
    multiprocessing_data_load=False,
    num_workers_data_load=2,
    decay_dense=0,
    decay_all=0,
    **kwargs
):

    # build NIMA model and load existing weights if they were provided in config
    nima = Nima(
        base_model_name, n_classes, learning_rate_dense, dropout_rate, decay=decay_dense
    )
    nima.build()

    if existing_weights is not None:
        nima.nima_model.load_weights(existing_weights)

    # split samples in train and validation set, and initialize data generators
    samples_train, samples_test = train_test_split(
        samples, test_size=0.05, shuffle=True, random_state=10207
    )

    training_generator = TrainDataGenerator(
        samples_train,
        image_dir,
        batch_size,
        n_classes,
        nima.preprocessing_function(),
        img_format=img_format,
    )

    validation_generator = TestDataGenerator(
        samples_test,
        image_dir,
        batch_size,
        n_classes,
        nima.preprocessing_function(),
        img_format=img_format,
    )

    # fit_generator(use_multiprocessing=..., workers=..., max_queue_size=30): Keras 3 takes them on the PyDataset
    for generator in (training_generator, validation_generator):
        generator.use_multiprocessing = multiprocessing_data_load
        generator.workers = num_workers_data_load
        generator.max_queue_size = 30

    model_save_name = (
        'weights_' + base_model_name.lower() + '_{epoch:02d}_{val_loss:.3f}.weights.h5'
    )
    model_file_path = os.path.join(job_dir, 'weights', model_save_name)
    model_checkpointer = ModelCheckpoint(
        filepath=model_file_path,
        monitor='val_loss',
        verbose=1,
        save_best_only=True,
        save_weights_only=True,
    )

    # start training only dense layers
    for layer in nima.base_model.layers:
        layer.trainable = False

    nima.compile()
    nima.nima_model.summary()

    nima.nima_model.fit(
        training_generator,
        validation_data=validation_generator,
        epochs=epochs_train_dense,
        verbose=1,
        callbacks=[model_checkpointer],
    )

    # start training all layers
    for layer in nima.base_model.layers:
        layer.trainable = True

    nima.learning_rate = learning_rate_all
    nima.decay = decay_all
    nima.compile()
    nima.nima_model.summary()

    nima.nima_model.fit(
        training_generator,
        validation_data=validation_generator,
        epochs=epochs_train_dense + epochs_train_all,
        initial_epoch=epochs_train_dense,
        verbose=1,
        callbacks=[model_checkpointer],
    )

    K.clear_session()


if __name__ == '__main__':

    image_dir = os.path.join(DATA, 'images')
    job_dir = tempfile.mkdtemp(prefix='nima_mobilenet.')

    ensure_dir_exists(os.path.join(job_dir, 'weights'))
    ensure_dir_exists(os.path.join(job_dir, 'logs'))

    config_file = os.path.join(DATA, 'job', 'config.json')
    config = load_config(config_file)
    config.update(epochs_train_dense=1, epochs_train_all=2)

    samples_file = os.path.join(DATA, 'job', 'samples.json')
    samples = load_samples(samples_file)

    train(samples=samples, job_dir=job_dir, image_dir=image_dir, **config)
