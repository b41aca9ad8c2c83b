"""FIXED COPY (the one fix: np.load(..., mmap_mode='r') reads the one frame it keeps, not the whole file).

The spectrogram user's training script as they wrote it (seed 000, /work/shared/seeds/000_*.txt).

A class holding the train/test lists of (id, file, frame, label), with gen_spectrogram (``load`` of a whole
.npy file for every frame it keeps), get_next, next_train / next_test (infinite generators that reshuffle
their partition at the end of a pass), shuffle_data_by_partition; a MirroredStrategy, GLOBAL_BATCH_SIZE
256, a frozen pretrained network with one trainable Dense layer on top, and
``model.fit(x=gen.next_train(), steps_per_epoch=..., validation_data=gen.next_test(), validation_steps=...)``.

Written for this corpus from the seed's code and description (no repository): the class name, __init__ and
the model are ours; the four methods are the seed's. Data: ``$DOCTOR_SCRIPTS_DATA/spectrogram_user``: 12
files of 250 frames of 64x64 float32 (4 MB a file, 16 KB a frame: reading a whole file per frame is the
seed's read amplification), frames.csv listing (id, file, frame, label, partition). The pretrained network
is a small frozen CNN with random weights (no download here). Epochs 3. The seed's next_train resets at
``train_index > len - batch_size``: the last partial batch of a pass is skipped, as written.
"""

import csv
import os
import random

import numpy as np
import tensorflow as tf
from numpy import load

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "spectrogram_user") + "/"
GLOBAL_BATCH_SIZE = 256


class SpectrogramGenerator:
    def __init__(self, data_path, batch_size):
        self.data_path = data_path
        self.batch_size = batch_size
        self.train, self.test = [], []
        with open(data_path + "frames.csv") as f:
            for row in csv.DictReader(f):
                item = (int(row["id"]), row["file"], int(row["frame"]), int(row["label"]))
                (self.train if row["partition"] == "train" else self.test).append(item)
        self.train_index = 0
        self.test_index = 0
        self.shuffle_data_by_partition('train')
        self.shuffle_data_by_partition('test')

    def shuffle_data_by_partition(self, partition):
        if partition == 'train':
            random.shuffle(self.train)
        elif partition == 'test':
            random.shuffle(self.test)

    def gen_spectrogram(self, filenames,idx_frame):
        spect_path=self.data_path+'SpectrogramsPositivePatches/'
        X_data=[]
        j=0
        for f in filenames:
            Sxx = load(spect_path+f, mmap_mode='r')  # the fix: map the file, read one frame
            index = idx_frame[j]
            X_data.append(Sxx[index].reshape(Sxx.shape[1],Sxx.shape[2],1))
            j+=1
        return X_data

    def get_next(self, partition):
        if partition=='train':
            cur_index=self.train_index
            audio_files = list(zip(*self.train))[1]
            idx_frame=list(zip(*self.train))[2]
            label = list(zip(*self.train))[3]
        elif partition=='test':
            cur_index=self.test_index
            audio_files=list(zip(*self.test))[1]
            idx_frame=list(zip(*self.test))[2]
            label = list(zip(*self.test))[3]
        filenames=audio_files[cur_index: cur_index+self.batch_size]
        idx_frames=idx_frame[cur_index: cur_index+self.batch_size]
        labels = label[cur_index: cur_index+self.batch_size]
        X_data = self.gen_spectrogram(filenames,idx_frames)
        return np.array(X_data), np.array(labels)

    def next_train(self):
        while True:
            ret = self.get_next('train')
            self.train_index += self.batch_size
            if self.train_index > len(self.train) - self.batch_size:
                self.train_index = 0
                self.shuffle_data_by_partition('train')
            yield ret

    def next_test(self):
        while True:
            ret = self.get_next('test')
            self.test_index += self.batch_size
            if self.test_index > len(self.test) - self.batch_size:
                self.test_index = 0
                self.shuffle_data_by_partition('test')
            yield ret


def pretrained_network():
    L = tf.keras.layers
    base = tf.keras.Sequential([tf.keras.Input((64, 64, 1)), L.Conv2D(16, 3, strides=2, activation="relu"),
                                L.Conv2D(32, 3, strides=2, activation="relu"), L.GlobalAveragePooling2D()],
                               name="pretrained")
    base.trainable = False
    return base


if __name__ == "__main__":
    gen = SpectrogramGenerator(DATA, GLOBAL_BATCH_SIZE)
    strategy = tf.distribute.MirroredStrategy()
    with strategy.scope():
        base = pretrained_network()
        model = tf.keras.Sequential([base, tf.keras.layers.Dense(2, activation="softmax")])
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x=gen.next_train(), steps_per_epoch=len(gen.train) // GLOBAL_BATCH_SIZE,
              validation_data=gen.next_test(), validation_steps=len(gen.test) // GLOBAL_BATCH_SIZE,
              epochs=3)
