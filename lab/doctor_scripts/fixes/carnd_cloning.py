"""FIXED COPY (the one fix: each camera JPEG read and converted to RGB once, kept in memory; the flips and the batch
shuffle still per batch).

Behavioural cloning of a simulator's driver, training: model.py and batch_generator.py of CarND-Behavioral-Cloning-P3,
the NVIDIA end-to-end CNN (normalisation and cropping in the model) fitted on ``generator``, a plain Python generator
that for every driving-log line of a batch reads the centre, left and right camera JPEGs with cv2, converts each to
RGB and adds its horizontal flip (six images a line, the side cameras' angles corrected by 0.35), every epoch, and
validated on a second such generator.

Source: https://github.com/abhicoo/CarND-Behavioral-Cloning-P3 at b9577a1163a13e3cb0d5699f2a8f138545e77124
(model.py, batch_generator.py). Re-written here in the source's structure and order, not copied: model.py reads
./data/driving_log.csv with csv.reader, ``train_test_split(samples, test_size=0.2, random_state=88)``, makes
``generator(train_samples, batch_size=32)`` and the same for the validation lines; the model is Input(160, 320, 3),
Lambda(x / 127.5 - 0.5), Cropping2D(((70, 25), (0, 0))), Convolution2D 24, 36, 48 5x5 subsample 2 and 64, 64 3x3
(valid, relu), Flatten, Dense 100, 50, 10 (relu, Dropout 0.5 each), Dense 1, compiled with mse and adam, fitted
``model.fit_generator(train_generator, samples_per_epoch=(total_training_samples * 6), validation_data=
validation_generator, nb_val_samples=(total_validation_samples * 6), nb_epoch=5, verbose=1)`` and saved to model.h5;
batch_generator.generator loops forever: ``shuffle(samples)`` (sklearn's, which returns a shuffled copy the source
drops: the lines keep their order), then for each batch of lines cv2.imread of the three cameras' files under
./data/IMG/ (the recorded paths' base names), cv2.cvtColor BGR -> RGB, the image and its cv2.flip with the negated
angle, and yields ``shuffle(X_train, y_train)`` (sklearn's: the batch's images and angles in one random order).

Changed: data paths (``$DOCTOR_SCRIPTS_DATA/carnd_cloning/data/``: 100 generated log lines of 160x320 frames for the
simulator's recordings); batch_size 16 for 32 (both generators: 96 images a batch); epochs 3 for 5; Keras 1 names ported to Keras 3 (Convolution2D(n, nb_row, nb_col,
border_mode, subsample) -> Conv2D(n, (rows, cols), padding, strides), Model(input=, output=) -> inputs=/outputs=);
fit_generator -> fit with samples_per_epoch and nb_val_samples (Keras 1 counted images: six a log line, one
generator batch of 16 lines is 96) as steps_per_epoch and validation_steps = ceil(lines / 16), the same number of
generator batches; sklearn (not installed here) re-written in NumPy: train_test_split as ShuffleSplit draws it
(RandomState(88).permutation, the first ceil(20 %) for validation), the discarded ``shuffle(samples)`` kept as a
copy that is dropped, ``shuffle(X_train, y_train)`` as one random permutation of both; model.h5 saved under the
temporary folder.
"""

import csv
import math
import os
import tempfile

import cv2
import numpy as np
from keras.layers import Activation, Conv2D, Cropping2D, Dense, Dropout, Flatten, Input, Lambda
from keras.models import Model

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "carnd_cloning")


# ----------------------------------------------------------------------------- sklearn (utils.shuffle, train_test_split)
def shuffle(*arrays):
    order = np.random.permutation(len(arrays[0]))
    out = [np.asarray(a)[order] if isinstance(a, np.ndarray) else [a[i] for i in order] for a in arrays]
    return out[0] if len(out) == 1 else tuple(out)


def train_test_split(samples, test_size, random_state):
    permutation = np.random.RandomState(random_state).permutation(len(samples))
    n_test = math.ceil(test_size * len(samples))
    return [samples[i] for i in permutation[n_test:]], [samples[i] for i in permutation[:n_test]]


# ----------------------------------------------------------------------------- batch_generator.py
def flip_image(image):
    return cv2.flip(image, 1)


def generator(samples, batch_size):
    decoded = {}  # the fix: each camera image read and converted once, kept in memory
    num_samples = len(samples)
    while 1:
        shuffle(samples)
        for offset in range(0, num_samples, batch_size):
            batch_samples = samples[offset:offset + batch_size]
            images = []
            angles = []
            for batch_sample in batch_samples:
                center_angle = float(batch_sample[3])
                correction = 0.35
                left_angle = center_angle + correction
                right_angle = center_angle - correction
                angles_data = [center_angle, left_angle, right_angle]

                for i in range(3):
                    name = DATA + '/data/IMG/' + batch_sample[i].split('/')[-1]
                    if name not in decoded:
                        decoded[name] = cv2.cvtColor(cv2.imread(name), cv2.COLOR_BGR2RGB)
                    image = decoded[name]
                    images.append(image)
                    angles.append(angles_data[i])
                    # Flipped Image
                    flipped_image = flip_image(image)
                    images.append(flipped_image)
                    angles.append(angles_data[i] * -1)
            X_train = np.array(images)
            y_train = np.array(angles)
            yield shuffle(X_train, y_train)


# ----------------------------------------------------------------------------- model.py
batch_size = 16
epochs = 3

samples = []
with open(DATA + '/data/driving_log.csv') as csvfile:
    reader = csv.reader(csvfile)
    for line in reader:
        samples.append(line)

train_samples, validation_samples = train_test_split(samples, test_size=0.2, random_state=88)
total_training_samples = len(train_samples)
total_validation_samples = len(validation_samples)
train_generator = generator(train_samples, batch_size=16)
validation_generator = generator(validation_samples, batch_size=16)
print(total_training_samples)

# Input Layer for model
input_shape = (160, 320, 3)
inputs = Input(shape=input_shape)
# End of Input Layer

# Image Pre Processing Steps
# Zero Mean And Normalizing image
normalization = Lambda(lambda x: x / 127.5 - 0.5)(inputs)
# Cropping Unwanted region from image
cropping = Cropping2D(cropping=((70, 25), (0, 0)))(normalization)
# End of Image Pre Processing

# Conv1 layer filter_size of 5 stride 2 and total_filters 24
conv1 = Conv2D(24, (5, 5), padding='valid', strides=(2, 2))(cropping)
conv1 = Activation('relu')(conv1)

# Conv2 layer filter_size of 5 stride 2 and total_filters 36
conv2 = Conv2D(36, (5, 5), padding='valid', strides=(2, 2))(conv1)
conv2 = Activation('relu')(conv2)

# Conv3 layer filter_size of 5 stride 2 and total_filters 48
conv3 = Conv2D(48, (5, 5), padding='valid', strides=(2, 2))(conv2)
conv3 = Activation('relu')(conv3)

# Conv4 layer filter_size of 3 stride 1 and total_filters 64
conv4 = Conv2D(64, (3, 3), padding='valid', strides=(1, 1))(conv3)
conv4 = Activation('relu')(conv4)

# Conv5 layer filter_size of 3 stride 1 and total_filters 64
conv5 = Conv2D(64, (3, 3), padding='valid', strides=(1, 1))(conv4)
conv5 = Activation('relu')(conv5)

# Flatten the last conv output.
# Flattened output will be input to fully connected layer
fc0 = Flatten()(conv5)

# First fully connected layer
fc1 = Dense(100)(fc0)
fc1 = Activation('relu')(fc1)
fc1 = Dropout(0.5)(fc1)

# Second fully connected layer
fc2 = Dense(50)(fc1)
fc2 = Activation('relu')(fc2)
fc2 = Dropout(0.5)(fc2)

# Third fully connected layer
fc3 = Dense(10)(fc2)
fc3 = Activation('relu')(fc3)
fc3 = Dropout(0.5)(fc3)

# Final output layer
outputs = Dense(1)(fc3)

model = Model(inputs=inputs, outputs=outputs)
model.compile(loss='mse', optimizer='adam')
model.fit(train_generator,
          steps_per_epoch=math.ceil(total_training_samples * 6 / (batch_size * 6)),
          validation_data=validation_generator,
          validation_steps=math.ceil(total_validation_samples * 6 / (batch_size * 6)),
          epochs=epochs,
          verbose=1)
model.save(os.path.join(tempfile.gettempdir(), 'carnd_cloning_model.h5'))
