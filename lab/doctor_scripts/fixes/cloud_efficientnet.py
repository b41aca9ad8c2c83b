"""FIXED COPY (the one fix: each scene JPEG read, decoded and resized once and kept in memory as uint8, for the training
batches, the fit's validation and both PR-AUC callbacks' predictions; the augmentation still runs per batch).

Understanding Clouds from Satellite Images (Kaggle), the pattern classifier's training:
tensorflow_cloud_classification/train.py of voanhkha/UnderstandingCloudOrganization_Kaggle, an EfficientNet (B2 by
default, global average pooling, Dense 4 sigmoid) fitted with fit_generator on a keras.utils.Sequence whose
__getitem__ reads each batch's 1400x2100 scene JPEGs with ``cv2.imread``, resizes them with ``cv2.resize``, runs
albumentations' flips, rotation and grid distortion on the training images and scales them to [0, 1], every batch
of every epoch; two PR-AUC callbacks predict over the whole training set and the validation set again after each
epoch, reading every image again.

Source: https://github.com/voanhkha/UnderstandingCloudOrganization_Kaggle at a9035ed16224c204c2b34eb493c5af578e4dae9c
(tensorflow_cloud_classification/train.py, self-contained: the same folder's generator.py, callbacks.py, model.py and
preprocess.py are earlier copies of its parts). Re-written here in the source's structure and order, not copied:
PrAucCallback(data_generator, num_workers=1, early_stopping_patience=5, plateau_patience=3, reduction_rate=0.5,
stage='train', checkpoints_path='classifier/checkpoints/', checkpoint_name='') calls ``super(Callback,
self).__init__()`` and at every epoch's end runs ``self.model.predict_generator(self.data_generator,
workers=self.num_workers)``, takes the generator's labels and prints each class's precision-recall AUC (sklearn's
precision_recall_curve and auc) and their mean; on the 'val' stage it also stops early after 5 epochs without a
better mean, saves the model to ``checkpoint_name + '.h5'`` when the mean improves (first deleting old
'classifier_densenet169_epoch_*' files) and halves the learning rate after 3 epochs without one. get_model(model,
shape) calls ``K.clear_session()`` and builds ``efn.EfficientNetB0..B7(weights='imagenet', include_top=False,
pooling='avg', input_shape=(h, w, 3))`` (qubvel's efficientnet.keras) by name with a Dense(4, sigmoid) on its output.
DataGenenerator(Sequence)(images_list, folder_imgs, img_2_ohe_vector, batch_size=32, shuffle=True, augmentation=None,
resized_height=260, resized_width=260, num_channels=3): ``__len__`` is images // batch_size; ``on_epoch_start``
(never called by Keras) would shuffle the list; ``__getitem__`` fills a float64 ``np.empty((batch, h, w, 3))`` with
``cv2.resize(cv2.imread(path), (h, w)).astype(np.float32)``, the augmentation's ``(image=img)['image']`` when given,
divided by 255, and the image's one-hot vector; ``get_labels`` returns the labels in order. preprocess() reads
train.csv, keeps the rows with an EncodedPixels mask, splits Image_Label into Image and Class, groups the classes of
each image into a set, adds a 0/1 column per class and builds an image -> vector dict. train(cls_model, shape,
batch_size, seed) makes ``StratifiedKFold(n_splits=5, random_state=seed, shuffle=True)`` over the images stratified by
their sorted class set, ``Compose([VerticalFlip(), HorizontalFlip(), Rotate(limit=20), GridDistortion()], p=1)``, and
for each fold a training generator with that augmentation, a training-evaluation one and a validation one (shuffle
False), the model compiled with ``RAdam()`` (keras_radam), binary cross-entropy and accuracy, the two PR-AUC callbacks,
and ``model.fit_generator(generator=data_generator_train, validation_data=data_generator_val, epochs=40,
callbacks=[train_metric_callback, val_callback], verbose=1)``. Under ``__main__`` argparse gives --model b2,
--batch_size 5, --shape (256, 256), --cpu and --seed 1.

Changed: data paths (``$DOCTOR_SCRIPTS_DATA/cloud_efficientnet/``: train.csv and 400 generated 480x720 JPEGs in
train_images/ for 5546 at 1400x2100); --shape default (64, 64) for (256, 256); the EfficientNets replaced by a small
network of the same role (a stride-2 Conv2D stem of 16, three depthwise-separable blocks of 24, 40 and 80 filters at
stride 2, a 1x1 Conv2D of 160, BatchNormalization and swish, global average pooling): EfficientNetB0 alone took 77 s
for its first step here, and weights='imagenet' cannot be downloaded; the fold loop stops after its first fold
(``break``), epochs 3 for 40; dead or absent libraries re-written as they worked: keras_radam's RAdam as Keras 3's
Adam (learning rate 0.001, RAdam's default; the rectification is a per-variable scalar), albumentations 0.4's
VerticalFlip, HorizontalFlip, Rotate (cv2.warpAffine, linear, BORDER_REFLECT_101) and GridDistortion (5 steps, limit
0.3, cv2.remap) with their p=0.5 and Python's random, sklearn's StratifiedKFold (as 0.22+ assigns folds),
precision_recall_curve and auc in NumPy; Keras 2 -> Keras 3: fit_generator -> fit, predict_generator -> predict
(workers=1, the callback's value, is Keras 3's default, so it is dropped), ``optimizer.lr`` with
keras.backend.get_value/set_value -> ``optimizer.learning_rate`` read with keras.ops and assigned (never reached in
3 epochs); keras.utils.Sequence kept without a ``super().__init__()`` call, as the source has it (Keras 3 warns and
uses one worker, its default), and the callback's ``super(Callback, self).__init__()`` kept; the checkpoints
(.h5, as written) in a temporary folder; the default paths read from module constants.
"""

import argparse
import glob
import multiprocessing  # noqa: F401
import os
import random
import sys
import tempfile
from copy import deepcopy

import cv2
import keras
import keras.backend as K
import numpy as np
import pandas as pd
from keras.callbacks import Callback
from keras.layers import BatchNormalization, Conv2D, Dense, DepthwiseConv2D, GlobalAveragePooling2D, Input
from keras.models import Model
from keras.optimizers import Adam as RAdam
from keras.utils import Sequence

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "cloud_efficientnet")
OUT = os.path.join(tempfile.gettempdir(), "cloud_efficientnet_out")
TRAIN_IMAGES = os.path.join(DATA, "train_images")
CHECKPOINTS = os.path.join(OUT, "classifier/checkpoints/")


# ----------------------------------------------------------------------------- sklearn, re-written in NumPy
class StratifiedKFold:
    def __init__(self, n_splits=5, random_state=None, shuffle=False):
        self.n_splits, self.random_state, self.shuffle = n_splits, random_state, shuffle

    def split(self, X, y):
        rng = np.random.RandomState(self.random_state)
        y = np.asarray(y)
        _, y_idx, y_inv = np.unique(y, return_index=True, return_inverse=True)
        _, class_perm = np.unique(y_idx, return_inverse=True)
        y_encoded = class_perm[y_inv]
        n_classes = len(y_idx)
        y_order = np.sort(y_encoded)
        allocation = np.asarray([np.bincount(y_order[i::self.n_splits], minlength=n_classes)
                                 for i in range(self.n_splits)])
        test_folds = np.empty(len(y), dtype=int)
        for k in range(n_classes):
            folds_for_class = np.arange(self.n_splits).repeat(allocation[:, k])
            if self.shuffle:
                rng.shuffle(folds_for_class)
            test_folds[y_encoded == k] = folds_for_class
        for i in range(self.n_splits):
            yield np.where(test_folds != i)[0], np.where(test_folds == i)[0]


def precision_recall_curve(y_true, probas_pred):
    desc = np.argsort(probas_pred, kind="mergesort")[::-1]
    y_score, y_true = probas_pred[desc], y_true[desc]
    threshold_idxs = np.r_[np.where(np.diff(y_score))[0], y_true.size - 1]
    tps = np.cumsum(y_true)[threshold_idxs]
    fps = 1 + threshold_idxs - tps
    precision = tps / (tps + fps)
    recall = tps / tps[-1]
    last_ind = tps.searchsorted(tps[-1])
    sl = slice(last_ind, None, -1)
    return np.r_[precision[sl], 1], np.r_[recall[sl], 0], y_score[threshold_idxs][sl]


def auc(x, y):
    dx = np.diff(x)
    direction = -1 if np.any(dx < 0) and np.all(dx <= 0) else 1
    return direction * np.trapezoid(y, x)


# ----------------------------------------------------------------------------- albumentations 0.4, re-written in cv2
class _Transform:
    def __init__(self, p=0.5):
        self.p = p

    def __call__(self, img):
        return self.apply(img) if random.random() < self.p else img


class VerticalFlip(_Transform):
    def apply(self, img):
        return np.ascontiguousarray(img[::-1, ...])


class HorizontalFlip(_Transform):
    def apply(self, img):
        return np.ascontiguousarray(img[:, ::-1, ...])


class Rotate(_Transform):
    def __init__(self, limit=90, p=0.5):
        super().__init__(p)
        self.limit = limit

    def apply(self, img):
        angle = random.uniform(-self.limit, self.limit)
        height, width = img.shape[:2]
        matrix = cv2.getRotationMatrix2D((width / 2, height / 2), angle, 1.0)
        return cv2.warpAffine(img, matrix, (width, height), flags=cv2.INTER_LINEAR,
                              borderMode=cv2.BORDER_REFLECT_101)


class GridDistortion(_Transform):
    def __init__(self, num_steps=5, distort_limit=0.3, p=0.5):
        super().__init__(p)
        self.num_steps, self.distort_limit = num_steps, distort_limit

    def _axis(self, size, steps):
        step = size // self.num_steps
        xx = np.zeros(size, np.float32)
        prev = 0
        for idx, x in enumerate(range(0, size, step)):
            start, end = x, x + step
            if end > size:
                end, cur = size, size
            else:
                cur = prev + step * steps[idx]
            xx[start:end] = np.linspace(prev, cur, end - start)
            prev = cur
        return xx

    def apply(self, img):
        stepsx = [1 + random.uniform(-self.distort_limit, self.distort_limit) for _ in range(self.num_steps + 1)]
        stepsy = [1 + random.uniform(-self.distort_limit, self.distort_limit) for _ in range(self.num_steps + 1)]
        height, width = img.shape[:2]
        map_x, map_y = np.meshgrid(self._axis(width, stepsx), self._axis(height, stepsy))
        return cv2.remap(img, map_x.astype(np.float32), map_y.astype(np.float32), interpolation=cv2.INTER_LINEAR,
                         borderMode=cv2.BORDER_REFLECT_101)


class Compose:
    def __init__(self, transforms, p=1.0):
        self.transforms, self.p = transforms, p

    def __call__(self, image):
        if random.random() < self.p:
            for t in self.transforms:
                image = t(image)
        return {"image": image}


# ----------------------------------------------------------------------------- train.py
#num_cores = multiprocessing.cpu_count()

class PrAucCallback(Callback):
    def __init__(self, data_generator, num_workers=1,
                 early_stopping_patience=5,
                 plateau_patience=3, reduction_rate=0.5,
                 stage='train', checkpoints_path=CHECKPOINTS,
                 checkpoint_name=''):
        super(Callback, self).__init__()
        self.data_generator = data_generator
        self.num_workers = num_workers
        self.class_names = ['Fish', 'Flower', 'Sugar', 'Gravel']
        self.history = [[] for _ in range(len(self.class_names) + 1)] # to store per each class and also mean PR AUC
        self.early_stopping_patience = early_stopping_patience
        self.plateau_patience = plateau_patience
        self.reduction_rate = reduction_rate
        self.stage = stage
        self.best_pr_auc = -float('inf')
        if not os.path.exists(checkpoints_path):
            os.makedirs(checkpoints_path)
        self.checkpoints_path = checkpoints_path
        self.checkpoint_name = checkpoint_name

    def compute_pr_auc(self, y_true, y_pred):
        pr_auc_mean = 0
        print(f"\n{'# ' *30}\n")
        for class_i in range(len(self.class_names)):
            precision, recall, _ = precision_recall_curve(y_true[:, class_i], y_pred[:, class_i])
            pr_auc = auc(recall, precision)
            pr_auc_mean += pr_auc /len(self.class_names)
            print(f"PR AUC {self.class_names[class_i]}, {self.stage}: {pr_auc:.3f}\n")
            self.history[class_i].append(pr_auc)
        print(f"\n{'# ' *20}\n PR AUC mean, {self.stage}: {pr_auc_mean:.3f}\n{'# ' *20}\n")
        self.history[-1].append(pr_auc_mean)
        return pr_auc_mean

    def is_patience_lost(self, patience):
        if len(self.history[-1]) > patience:
            best_performance = max(self.history[-1][-(patience + 1):-1])
            return best_performance == self.history[-1][-(patience + 1)] and best_performance >= self.history[-1][-1]

    def early_stopping_check(self, pr_auc_mean):
        if self.is_patience_lost(self.early_stopping_patience):
            self.model.stop_training = True

    def model_checkpoint(self, pr_auc_mean, epoch):
        if pr_auc_mean > self.best_pr_auc:
            # remove previous checkpoints to save space
            for checkpoint in glob.glob(os.path.join(self.checkpoints_path, 'classifier_densenet169_epoch_*')):
                os.remove(checkpoint)
            self.best_pr_auc = pr_auc_mean
            self.model.save(os.path.join(self.checkpoints_path, self.checkpoint_name + '.h5'))
            print(f"\n{'# ' *20}\nSaved new checkpoint\n{'# ' *20}\n")

    def reduce_lr_on_plateau(self):
        if self.is_patience_lost(self.plateau_patience):
            new_lr = float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate)) * self.reduction_rate
            self.model.optimizer.learning_rate.assign(new_lr)
            print(f"\n{'# ' *20}\nReduced learning rate to {new_lr}.\n{'# ' *20}\n")

    def on_epoch_end(self, epoch, logs={}):  # noqa: B006
        y_pred = self.model.predict(self.data_generator)
        y_true = self.data_generator.get_labels()
        # estimate AUC under precision recall curve for each class
        pr_auc_mean = self.compute_pr_auc(y_true, y_pred)

        if self.stage == 'val':
            # early stop after early_stopping_patience=4 epochs of no improvement in mean PR AUC
            self.early_stopping_check(pr_auc_mean)

            # save a model with the best PR AUC in validation
            self.model_checkpoint(pr_auc_mean, epoch)

            # reduce learning rate on PR AUC plateau
            self.reduce_lr_on_plateau()

    def get_pr_auc_history(self):
        return self.history

def get_model(model='b2', shape=(320,320)):
    K.clear_session()
    h,w = shape
    # the stand-in for efn.EfficientNetB0..B7(weights='imagenet', include_top=False, pooling='avg', input_shape=(h, w, 3))
    inputs = Input((h, w, 3))
    x = Conv2D(16, 3, strides=2, padding='same', use_bias=False)(inputs)
    x = BatchNormalization()(x)
    x = keras.layers.Activation('swish')(x)
    for filters in (24, 40, 80):
        x = DepthwiseConv2D(3, strides=2, padding='same', use_bias=False)(x)
        x = BatchNormalization()(x)
        x = keras.layers.Activation('swish')(x)
        x = Conv2D(filters, 1, use_bias=False)(x)
        x = BatchNormalization()(x)
    x = Conv2D(160, 1, use_bias=False)(x)
    x = BatchNormalization()(x)
    x = keras.layers.Activation('swish')(x)
    base_model = Model(inputs, GlobalAveragePooling2D()(x))

    x = base_model.output
    y_pred = Dense(4, activation='sigmoid')(x)
    return Model(inputs=base_model.input, outputs=y_pred)

_decoded = {}  # FIX: path -> the resized uint8 image, filled on first read

class DataGenenerator(Sequence):
    def __init__(self, images_list=None, folder_imgs=TRAIN_IMAGES,
                 img_2_ohe_vector=None,batch_size=32, shuffle=True, augmentation=None,
                 resized_height=260, resized_width=260, num_channels=3):
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.augmentation = augmentation
        if images_list is None:
            self.images_list = os.listdir(folder_imgs)
        else:
            self.images_list = deepcopy(images_list)
        self.folder_imgs = folder_imgs
        self.len = len(self.images_list) // self.batch_size
        self.resized_height = resized_height
        self.resized_width = resized_width
        self.num_channels = num_channels
        self.num_classes = 4
        self.is_test = not 'train' in folder_imgs

        self.img_2_ohe_vector = img_2_ohe_vector
        if not shuffle and not self.is_test:
            self.labels = [self.img_2_ohe_vector[img] for img in self.images_list[:self.len * self.batch_size]]

    def __len__(self):
        return self.len

    def on_epoch_start(self):
        if self.shuffle:
            random.shuffle(self.images_list)

    def __getitem__(self, idx):
        current_batch = self.images_list[idx * self.batch_size: (idx + 1) * self.batch_size]
        X = np.empty((self.batch_size, self.resized_height, self.resized_width, self.num_channels))
        y = np.empty((self.batch_size, self.num_classes))

        for i, image_name in enumerate(current_batch):
            path = os.path.join(self.folder_imgs, image_name)
            if path not in _decoded:  # FIX: read, decode and resize once
                _decoded[path] = cv2.resize(cv2.imread(path), (self.resized_height, self.resized_width))
            img = _decoded[path].astype(np.float32)
            if not self.augmentation is None:
                augmented = self.augmentation(image=img)
                img = augmented['image']
            X[i, :, :, :] = img / 255.0
            if not self.is_test:
                y[i, :] = self.img_2_ohe_vector[image_name]
        return X, y

    def get_labels(self):
        if self.shuffle:
            images_current = self.images_list[:self.len * self.batch_size]
            labels = [self.img_2_ohe_vector[img] for img in images_current]
        else:
            labels = self.labels
        return np.array(labels)
def preprocess():
    train_df = pd.read_csv(os.path.join(DATA, 'train.csv'))
    train_df = train_df[~train_df['EncodedPixels'].isnull()]
    train_df['Image'] = train_df['Image_Label'].map(lambda x: x.split('_')[0])
    train_df['Class'] = train_df['Image_Label'].map(lambda x: x.split('_')[1])
    classes = train_df['Class'].unique()
    train_df = train_df.groupby('Image')['Class'].agg(set).reset_index()
    for class_name in classes:
        train_df[class_name] = train_df['Class'].map(lambda x: 1 if class_name in x else 0)  # noqa: B023

    img_2_ohe_vector = {img: vec for img, vec in zip(train_df['Image'], train_df.iloc[:, 2:].values)}

    return train_df, img_2_ohe_vector


def train(cls_model='b2', shape=(320,320), batch_size=5, seed=1):

    kfold = StratifiedKFold(n_splits=5, random_state=seed, shuffle=True)
    train_df, img_2_vector = preprocess()

    albumentations_train = Compose([
        VerticalFlip(), HorizontalFlip(), Rotate(limit=20), GridDistortion()
    ], p=1)

    for n_fold, (train_indices, val_indices) in enumerate(kfold.split(train_df['Image'].values, train_df['Class'].map(lambda x: str(sorted(list(x)))))):
        train_imgs = train_df['Image'].values[train_indices]
        val_imgs = train_df['Image'].values[val_indices]
        data_generator_train = DataGenenerator(train_imgs, augmentation=albumentations_train,
                                               resized_height=shape[0], resized_width=shape[1],
                                               img_2_ohe_vector=img_2_vector, batch_size=batch_size)

        data_generator_train_eval = DataGenenerator(train_imgs, shuffle=False,
                                                    resized_height=shape[0], resized_width=shape[1],
                                                    img_2_ohe_vector=img_2_vector, batch_size=batch_size)

        data_generator_val = DataGenenerator(val_imgs, shuffle=False,
                                             resized_height=shape[0], resized_width=shape[1],
                                             img_2_ohe_vector=img_2_vector, batch_size=batch_size)

        model = get_model(cls_model, shape=shape)

        model.compile(optimizer=RAdam(), loss='binary_crossentropy',
                      metrics=['accuracy'])

        train_metric_callback = PrAucCallback(data_generator_train_eval)
        checkpoint_name = cls_model +'_seed' + str(seed) +'_' + str(n_fold)
        val_callback = PrAucCallback(data_generator_val, stage='val', checkpoint_name=checkpoint_name)

        model.fit(data_generator_train,
                  validation_data=data_generator_val,
                  epochs=3,
                  callbacks=[train_metric_callback, val_callback],
                  verbose=1
                  )
        break  # the first of the five folds only

def parse_args(args):
    """ Parse the arguments.
    """
    parser = argparse.ArgumentParser(description='Predict script')
    parser.add_argument('--model', help='Classification model', default='b2')
    parser.add_argument('--batch_size', default=5, type=int)
    parser.add_argument('--shape', help='Shape of resized images', default=(64,64), type=tuple)
    parser.add_argument("--cpu", default=False, type=bool)
    parser.add_argument("--seed", default=1, type=int)
    return parser.parse_args(args)

if __name__ == '__main__':
    args = sys.argv[1:]
    args = parse_args(args)

    if args.cpu:
        os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"  # see issue #152
        os.environ["CUDA_VISIBLE_DEVICES"] = ""


    train(args.model,args.shape, batch_size=args.batch_size, seed=args.seed)
