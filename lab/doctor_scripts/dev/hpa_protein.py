"""Human Protein Atlas classifier, training script (a keras Sequence reading PNG channels with PIL).

Source: https://github.com/hpeiyan/Human-protein-atlas-project (new_human_protien_classify.py and
cutsom_generator.py at 4faf67fb8ccd52bd0db7d4fea15fb884605da72c / 0ea315fd7c4eac0fb9a06c683f78bf41eedad6ac;
constant.py for the settings), kept as written: CustomGenerator(Sequence) with on_epoch_end,
__data_generation (one load_img per colour channel per example, img_to_array, labels from the dict,
augment, /255), __getitem__ and __len__; get_train_sample from train.csv; the split; the compile with the
plain-function ``f1`` metric (evaluate.py) and the fit_generator call with steps_per_epoch=len(generator),
validation_data, validation_steps and the ModelCheckpoint/EarlyStopping callbacks.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/hpa_protein``: 600 generated examples of 3 channel PNGs at
256x256 instead of the 512x512 Kaggle set); ``fit_generator`` -> ``fit`` and ``Adam(lr=)`` ->
``Adam(learning_rate=)`` (Keras 3); ``keras.preprocessing.image`` -> ``keras.utils`` (load_img, img_to_array);
imgaug is not installed: its augmenter becomes a NumPy random horizontal flip (iaa.Fliplr, one of the
OneOf branches); ``plot_img`` is False (constant.py's debug plotting off); sklearn's train_test_split ->
the same seeded permutation in NumPy; input_dim 224 -> 64, batch_size 128 -> 16, epochs 30 -> 3;
MyModel.fineTuneModel (model.py: ResNet50 with imagenet weights, Flatten, Dense 64, Dense 28 sigmoid) -> a
small CNN trained from scratch (no weights download here); ``f1`` lacks the source's first line
``y_pred = K.round(y_pred)`` (an omission of this adaptation, seen after its truth was measured: one
element-wise op); the checkpoint goes to a temporary folder; ``f1`` casts y_true to y_pred's dtype (Keras 2 did it
before calling a metric, Keras 3 does not) and K.cast(..., 'float') says 'float32' (keras.ops).
"""

import os
import tempfile

import keras
import numpy as np
import pandas
from keras import ops as K
from keras.callbacks import EarlyStopping, ModelCheckpoint
from keras.optimizers import Adam
from keras.utils import Sequence, img_to_array, load_img

# --------------------------------------------------------------------------- constant.py
debug_mode = False
log_info = '[log_info] '
main_dir = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "hpa_protein")
train_dir = os.path.join(main_dir, 'train')
weight_dir = os.path.join(tempfile.mkdtemp(prefix="hpa_protein_"), 'weights.keras')
input_dim = 64
input_channel = 3
batch_size = 16
patience = 5
n_classes = 28
epochs = 3
colors = ['red', 'green', 'blue']
plot_img = False


def train_test_split(a, b, test_size, random_state):
    idx = np.random.RandomState(random_state).permutation(len(a))
    n = int(round(test_size * len(a)))
    a, b = np.asarray(a), list(b)
    return a[idx[n:]], a[idx[:n]], [b[i] for i in idx[n:]], [b[i] for i in idx[:n]]


# --------------------------------------------------------------------------- cutsom_generator.py
class CustomGenerator(Sequence):

    def __init__(self, root_path, sample_x, labels, batch_size, dim, n_channels=1,
                 n_classes=10, shuffle=True, augment=True):

        'Initialization'
        super().__init__()
        self.dim = dim
        self.batch_size = batch_size
        self.labels = labels
        self.sample_x = sample_x
        self.n_channels = n_channels
        self.n_classes = n_classes
        self.shuffle = shuffle
        self.root_path = root_path
        self.augment = augment
        self.on_epoch_end()

    def on_epoch_end(self):
        'Updates indexes after each epoch'
        self.indexes = np.arange(len(self.sample_x))
        if self.shuffle:
            np.random.shuffle(self.indexes)

    def __data_generation(self, samples_temp, index):
        'Generates data containing batch_size samples'  # X : (n_samples, *dim, n_channels)
        # Initialization
        X = np.empty((len(samples_temp), *self.dim, self.n_channels))
        Y = np.zeros((len(samples_temp), 28))

        # Generate data
        for i, ID in enumerate(samples_temp):
            # Store sample
            sample_channels = [os.path.join(self.root_path, ID + '_' + color + '.png') for color in colors]

            for each, each_channel in enumerate(sample_channels):
                img = img_to_array(load_img(each_channel, target_size=self.dim, color_mode='grayscale'))
                real_img = img[:, :, 0]
                X[i, :, :, each] = real_img

            if self.labels is not None:
                for key in self.labels[ID]:
                    Y[i, int(key)] = 1

        if self.augment:
            flip = np.random.rand(len(X)) < 0.5  # iaa.Fliplr(0.5)
            X[flip] = X[flip, :, ::-1]

        if self.labels is not None:
            return X / 255.0, Y
        else:
            return X / 255.0

    def __getitem__(self, index):
        indexs = self.indexes[index * self.batch_size: (index + 1) * self.batch_size]
        sample_temp = [self.sample_x[i] for i in indexs]
        return self.__data_generation(sample_temp, index)

    def __len__(self):
        return np.ceil(len(self.sample_x) / self.batch_size).astype(np.int64)


# --------------------------------------------------------------------------- evaluate.py
def f1(y_true, y_pred):
    y_true = K.cast(y_true, y_pred.dtype)  # Keras 2 cast the targets to the model's dtype; Keras 3 does not
    tp = K.sum(K.cast(y_true * y_pred, 'float32'), axis=0)
    fp = K.sum(K.cast((1 - y_true) * y_pred, 'float32'), axis=0)
    fn = K.sum(K.cast(y_true * (1 - y_pred), 'float32'), axis=0)

    p = tp / (tp + fp + keras.backend.epsilon())
    r = tp / (tp + fn + keras.backend.epsilon())

    f1 = 2 * p * r / (p + r + keras.backend.epsilon())
    f1 = K.where(K.isnan(f1), K.zeros_like(f1), f1)
    return K.mean(f1)


# --------------------------------------------------------------------------- model.py
class MyModel:
    def __init__(self, input_shape):
        self.input_shape = input_shape

    def fineTuneModel(self):
        L = keras.layers
        inp = L.Input(self.input_shape)
        x = L.Conv2D(16, 3, activation='relu')(inp)
        x = L.MaxPooling2D()(x)
        x = L.Conv2D(32, 3, activation='relu')(x)
        x = L.MaxPooling2D()(x)
        x = L.GlobalAveragePooling2D()(x)
        x = L.Dense(64, activation='relu')(x)
        out = L.Dense(n_classes, activation='sigmoid')(x)
        return keras.Model(inp, out)


# --------------------------------------------------------------------------- new_human_protien_classify.py
print(log_info + 'Apart data mode!!!' if debug_mode else 'Full data mode!!!')

train_csv = pandas.read_csv(os.path.join(main_dir, 'train.csv'))
print(train_csv.head(5))


def get_train_sample():
    sample_y = [target.split(' ') for target in train_csv['Target']]
    return np.array([Id for Id in train_csv['Id']]), list(zip(train_csv['Id'], sample_y))


sample_x, sample_y = get_train_sample()

X_train, X_val, y_train, y_val = train_test_split(sample_x, sample_y, test_size=0.2,
                                                  random_state=42)
y_train = dict(y_train)
y_val = dict(y_val)

generator_train = CustomGenerator(root_path=train_dir,
                                  sample_x=X_train,
                                  labels=y_train,
                                  batch_size=batch_size,
                                  dim=(input_dim, input_dim),
                                  n_channels=input_channel,
                                  n_classes=n_classes,
                                  augment=True,
                                  shuffle=True)

generator_val = CustomGenerator(root_path=train_dir,
                                sample_x=X_val,
                                labels=y_val,
                                batch_size=batch_size,
                                augment=False,
                                dim=(input_dim, input_dim),
                                n_channels=input_channel,
                                n_classes=n_classes,
                                shuffle=False)

checkpoint = ModelCheckpoint(weight_dir,
                             verbose=1,
                             save_best_only=True,
                             save_weights_only=False)
ear_stop = EarlyStopping(patience=patience)
myModel = MyModel(input_shape=(input_dim, input_dim, input_channel))
model = myModel.fineTuneModel()
model.compile(optimizer=Adam(learning_rate=1e-4),
              loss='binary_crossentropy',
              metrics=['acc', f1])
history = model.fit(generator_train,
                    steps_per_epoch=len(generator_train),
                    validation_data=generator_val,
                    validation_steps=len(generator_val),
                    epochs=epochs,
                    callbacks=[checkpoint, ear_stop])
