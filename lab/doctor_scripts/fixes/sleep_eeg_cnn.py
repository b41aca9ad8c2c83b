"""FIXED COPY (the one fix: the PyDataset's six workers are threads, use_multiprocessing=False: no pool of six
processes forked from the training process for every epoch's training and validation passes, and no float64 batch
pickled through a pipe for every step; np.load waits on files and copies arrays, which threads overlap with the step).

Sleep stage scoring from polysomnography, training: test_model.py, dataGenerator.py and model.py of
EEG-Sleep-Classifier (a final-year project on automated sleep stage scoring), a 1D CNN over 30-second epochs of 12
channels (10 EEG, EMG, EOG) fitted on DataGenerator, a keras Sequence whose ``__getitem__`` np.loads every one of its
batch's per-epoch .npy files (one file per 30 s of recording) into a float64 array each time the batch is asked for,
in six worker processes (``use_multiprocessing=True, workers=6``), every epoch, and the validation set the same way.

Source: https://github.com/Tommo56700/EEG-Sleep-Classifier at ba76538120be570ca708a1d15c7c6f1ff867e47f
(test_model.py, dataGenerator.py, model.py). Re-written here in the source's structure and order, not copied:
test_model.main(modelName) sets INPUT_SHAPE (6000, 12) (30 s at 200 Hz), NUM_CLASSES 5, BATCH_SIZE 16, EPOCHS 80,
loads the pickled dict sampleLabels (ID -> stage) and the ID lists trainIDs2, valIDs2 and testIDs2 from
/scratch/c.c1673374/obj/, builds three DataGenerators (dim 6000, batchSize 16, numClasses 5, numChannels 12,
shuffle True), EarlyStopping(val_loss, patience 25) and ModelCheckpoint('E1/' + modelName + '_wts_b.hdf5',
monitor='val_acc', save_best_only, mode max), clears the session, builds ``Model.factory(modelName, ...)``, fits,
loads the best weights and tests; DataGenerator's ``__len__`` is floor(len(listIDs) / batchSize), on_epoch_end
reshuffles the index array, ``__getitem__`` takes the batch's IDs and __data_generation fills ``X = np.empty((16,
6000, 12))`` (float64) with ``np.load('/scratch/c.c1673374/data/' + ID + '.npy')`` per ID and returns X and
to_categorical of the labels; Model.fit calls ``fit_generator(generator=trainingGen, steps_per_epoch=len,
epochs, verbose=1, callbacks, validation_data=validationGen, validation_steps=len, use_multiprocessing=True,
workers=6)``, Model.test ``evaluate_generator(testingGen, use_multiprocessing=True, workers=6)``; "cnn" (CNN) is
Conv1D 32 (5, valid, relu), MaxPooling1D 5, Conv1D 48 (5), GlobalAveragePooling1D, Dense 40 relu, Dropout 0.1 and a
softmax Dense, compiled with categorical cross-entropy, Adam and accuracy.

Changed: data and pickles under ``$DOCTOR_SCRIPTS_DATA/sleep_eeg_cnn/`` (data/<ID>.npy: 592 training, 48 validation
and 16 test generated 30-s epochs of 960 float32 samples x 12 channels, 32 Hz for the source's 200 Hz; obj/*.pkl)
for /scratch/c.c1673374/; INPUT_SHAPE (960, 12) for (6000, 12); EPOCHS 3 for 80; the model "cnn" (the factory's
first) for sys.argv[1] (only the factory entry it builds kept: cnn2, multi, multi2, lstm, para, res and spec left
out, and the unused predict / predict_single with their utils plots); fit_generator / evaluate_generator -> fit /
evaluate (gone from Keras 3), and with them ``workers=6, use_multiprocessing=True`` (the source's values) moved to
DataGenerator's ``super().__init__`` (Keras 3's PyDataset takes them there; added); the checkpoint under a temporary
folder as <model>_wts_b.keras (Keras 3 wants the suffix) monitoring 'val_accuracy' (the name Keras 3 logs for what
the Keras of the source logged as val_acc); keras.backend.clear_session() kept.
"""

import math  # noqa: F401 (the source's imports)
import os
import pickle
import sys
import tempfile
import time

import numpy as np
from tensorflow import keras as keras

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "sleep_eeg_cnn")
E1 = tempfile.mkdtemp(prefix="E1_")


# ----------------------------------------------------------------------------- dataGenerator.py
class DataGenerator(keras.utils.Sequence):
  'Generates data for Keras'
  def __init__(self, listIDs, labels, batchSize=32, dim=6000, numChannels=12, numClasses=5, shuffle=False):
    'Initialization'
    super().__init__(workers=6, use_multiprocessing=False)  # the fix: threads, not forked processes
    self.dim = dim
    self.batchSize = batchSize
    self.labels = labels
    self.listIDs = listIDs
    self.numChannels = numChannels
    self.numClasses = numClasses
    self.shuffle = shuffle
    self.on_epoch_end()

  def __len__(self):
    'Denotes the number of batches per epoch'
    return int(np.floor(len(self.listIDs) / self.batchSize))

  def __getitem__(self, index):
    'Generate one batch of data'
    # Generate indexes of the batch
    indexes = self.indexes[index * self.batchSize:(index + 1) * self.batchSize]

    # Find list of IDs
    listIDsTemp = [self.listIDs[k] for k in indexes]

    # Generate data
    X, y = self.__data_generation(listIDsTemp)

    return X, y

  def on_epoch_end(self):
    'Updates indexes after each epoch'
    self.indexes = np.arange(len(self.listIDs))
    if self.shuffle == True:
      np.random.shuffle(self.indexes)

  def __data_generation(self, listIDsTemp):
    'Generates data containing batchSize samples' # X : (numSamples, dim, numChannels)
    # Initialization
    X = np.empty((self.batchSize, self.dim, self.numChannels))
    y = np.empty((self.batchSize), dtype = int)

    # Generate data
    for i, ID in enumerate(listIDsTemp):
      # Store sample
      X[i,] = np.load(DATA + '/data/' + ID + '.npy')

      # Store class
      y[i] = self.labels[ID]

    return X, keras.utils.to_categorical(y, num_classes = self.numClasses)


# ----------------------------------------------------------------------------- model.py
class Model(object):
  def factory(type, inputShape, numClasses):
    if type == "cnn": return CNN(inputShape, numClasses)

    raise AssertionError("Bad model creation: " + type)

  def fit(self, batchSize, numEpochs, trainingGen, validationGen, callbackList):
    startTime = time.time()

    hist = self.model.fit(trainingGen,  # noqa: F841 (the source's)
                          steps_per_epoch = trainingGen.__len__(),
                          epochs = numEpochs,
                          verbose = 1,
                          callbacks = callbackList,
                          validation_data = validationGen,
                          validation_steps = validationGen.__len__())
    duration = time.time() - startTime
    print("Training time:", duration)

  def load_weights(self, path):
    self.model.load_weights(path)

  def test(self, testingGen):
    score = self.model.evaluate(testingGen, verbose = 1)

    print("\nAccuracy on test data: %0.4f" % score[1])
    print("\nLoss on test data: %0.4f" % score[0])

    return score[1]


class CNN(Model):
  def __init__(self, inputShape, numClasses):
    self.model = self.build(inputShape, numClasses)
    self.model.summary()

  def build(self, inputShape, numClasses):
    inputLayer = keras.layers.Input(inputShape)

    conv1 = keras.layers.Conv1D(filters = 32, kernel_size = 5, padding = 'valid', activation = 'relu')(inputLayer)
    conv1 = keras.layers.MaxPooling1D(pool_size = 5)(conv1)

    conv2 = keras.layers.Conv1D(filters = 48, kernel_size = 5, padding = 'valid', activation = 'relu')(conv1)
    conv2 = keras.layers.GlobalAveragePooling1D()(conv2)

    denseLayer = keras.layers.Dense(40, activation = 'relu')(conv2)
    denseLayer = keras.layers.Dropout(0.1)(denseLayer)

    outputLayer = keras.layers.Dense(numClasses, activation = 'softmax')(denseLayer)

    modelCNN = keras.models.Model(inputs = inputLayer, outputs = outputLayer)
    modelCNN.compile(loss = 'categorical_crossentropy', optimizer = keras.optimizers.Adam(), metrics = ['accuracy'])

    return modelCNN


# ----------------------------------------------------------------------------- test_model.py
def save_obj(obj, name):
    with open(E1 + '/' + name + '.pkl', 'wb') as f:
        pickle.dump(obj, f, pickle.HIGHEST_PROTOCOL)

def load_obj(name):
  with open(DATA + '/obj/' + name + '.pkl', 'rb') as f:
    return pickle.load(f)

def main(modelName):
  INPUT_SHAPE = (960, 12)
  NUM_CLASSES = 5
  BATCH_SIZE = 16
  EPOCHS = 3

  labels = load_obj('sampleLabels')

  params = {'dim': INPUT_SHAPE[0],
            'batchSize': BATCH_SIZE,
            'numClasses': NUM_CLASSES,
            'numChannels': INPUT_SHAPE[1],
            'shuffle': True}

  callbacksList = [keras.callbacks.EarlyStopping(monitor='val_loss', mode='min', verbose=1, patience=25), keras.callbacks.ModelCheckpoint(E1 + '/' + modelName + '_wts_b.keras', monitor='val_accuracy', verbose=1, save_best_only=True, mode='max')]

  trainIDs = load_obj('trainIDs2')
  valIDs = load_obj('valIDs2')
  testIDs = load_obj('testIDs2')

  trainingGen = DataGenerator(trainIDs, labels, **params)
  validationGen = DataGenerator(valIDs, labels, **params)
  testingGen = DataGenerator(testIDs, labels, **params)

  keras.backend.clear_session()

  model = Model.factory(modelName, INPUT_SHAPE, NUM_CLASSES)

  model.fit(BATCH_SIZE, EPOCHS, trainingGen, validationGen, callbacksList)

  model.load_weights(E1 + '/' + modelName + '_wts_b.keras')

  model.test(testingGen)

if __name__ == '__main__':
  main(sys.argv[1] if len(sys.argv) > 1 else "cnn")
