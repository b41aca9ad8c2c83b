"""FIXED COPY (the one fix: every text one-hot encoded once before the epochs and kept, as uint8 rows by text;
the batches stacked from them, the shuffle and batch order unchanged).

Character-level CNN text classification (Crepe, Zhang, Zhao and LeCun 2015) on AG's News, training: main.py of
johnb30/py_crepe, a Keras re-implementation of Crepe: six 1D convolutions over one-hot characters, two Dense layers
with Dropout, four topic classes; trained in a custom train_on_batch loop over data_helpers.mini_batch_generator, a
Python generator that one-hot encodes every batch's raw texts character by character (a 1014 x 69 float64 matrix a
text) each time the batch is drawn, for every epoch's training and test passes.

Source: https://github.com/johnb30/py_crepe at 5d9a17cb78fcb8653df24fcffa1cd219fc2faf89 (main.py, data_helpers.py,
py_crepe.py). Re-written here in the source's structure and order, not copied: main.py seeds NumPy
(np.random.seed(0123), Python 2's octal 83), sets maxlen 1014, nb_filter 256, dense_outputs 1024, filter_kernels
[7, 7, 3, 3, 3, 3], cat_output 4, batch_size 80, nb_epoch 10; data_helpers.load_ag_data reads
data/ag_news_csv/train.csv and test.csv with pandas (header=None; train's rows with a missing field dropped), x =
title + description (columns 1 + 2, joined with no space), y = to_categorical(class - 1);
create_vocab_set builds the 69-character alphabet (lowercase letters, digits, punctuation, newline) as a dict
character -> index and a set to check membership; main.py encodes the whole test set once with encode_data (the
result, test_data, is never used), builds py_crepe.model (Input (1014, 69) float32; Convolution1D 256 of 7, max-pool
3, Convolution1D 256 of 7, max-pool 3, four Convolution1D 256 of 3, max-pool 3, Flatten, two Dense 1024 relu each
followed by Dropout 0.5, Dense 4 softmax; SGD(lr=0.01, momentum=0.9), categorical cross-entropy, accuracy); then for
each epoch shuffles the training and the test texts with their labels (shuffle_matrix: np.matrix of texts stacked
with the one-hot labels, np.random.shuffle of the rows), makes mini_batch_generator over each (slices of 80 texts,
each slice passed to encode_data: for every text a zero 1014 x 69 array, the text lowercased with its spaces
removed, for every character a new int zero vector of 69 with a one at the character's index, copied into the
text's row, the text's matrix copied into the batch's float64 array), runs train_on_batch on every training batch
(averaging loss and accuracy, printed every 100 steps), test_on_batch on every test batch, and prints the epoch's
test loss and accuracy and its time.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/crepe_agnews/data/ag_news_csv/``: 1440 and 240 generated rows for AG's
News' 120000 and 7600); nb_epoch 3 for 10; nb_filter 32 for 256 and dense_outputs 128 for 1024 (an eighth); Python 2
-> 3 (xrange -> range, the octal seed 0123 written 0o123, np.int -> int: NumPy's alias of the builtin, removed in
NumPy 1.24); Keras 1 -> Keras 3 (Convolution1D(nb_filter, filter_length, border_mode) -> Conv1D(filters,
kernel_size, padding), MaxPooling1D(pool_length) -> pool_size, Model(input, output) -> inputs, outputs, SGD(lr) ->
learning_rate, keras.utils.np_utils.to_categorical -> keras.utils.to_categorical, the first convolution's input_shape
argument dropped: the Input gives it); data_helpers' functions inlined and called by name, py_crepe.model as a static
method of a class py_crepe; shuffle_matrix's label matrix (an object array: it is stacked with the texts) cast to
float32 when returned, as Keras 1 on Theano cast a batch (Keras 3 cannot convert an object array); save stays False
as in the source.
"""

import datetime
import json
import os
import string

import numpy as np
import pandas as pd
from keras.layers import Conv1D, Dense, Dropout, Flatten, Input, MaxPooling1D
from keras.models import Model
from keras.optimizers import SGD
from keras.utils import to_categorical

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "crepe_agnews")


# ----------------------------------------------------------------------------- data_helpers.py
def load_ag_data():
    train = pd.read_csv(os.path.join(DATA, 'data/ag_news_csv/train.csv'), header=None)
    train = train.dropna()

    x_train = train[1] + train[2]
    x_train = np.array(x_train)

    y_train = train[0] - 1
    y_train = to_categorical(y_train)

    test = pd.read_csv(os.path.join(DATA, 'data/ag_news_csv/test.csv'), header=None)
    x_test = test[1] + test[2]
    x_test = np.array(x_test)

    y_test = test[0] - 1
    y_test = to_categorical(y_test)

    return (x_train, y_train), (x_test, y_test)


def mini_batch_generator(x, y, vocab, vocab_size, vocab_check, maxlen,
                         batch_size=128):

    for i in range(0, len(x), batch_size):
        x_sample = x[i:i + batch_size]
        y_sample = y[i:i + batch_size]

        input_data = encode_data(x_sample, maxlen, vocab, vocab_size,
                                 vocab_check)

        yield (input_data, y_sample)


def encode_data(x, maxlen, vocab, vocab_size, check):
    #Iterate over the loaded data and create a matrix of size maxlen x vocabsize
    #In this case that will be 1014x69. This is then placed in a 3D matrix of size
    #data_samples x maxlen x vocab_size. Each character is encoded into a one-hot
    #array. Chars not in the vocab are encoded into an all zero vector.

    input_data = np.zeros((len(x), maxlen, vocab_size))
    for dix, sent in enumerate(x):
        counter = 0
        sent_array = np.zeros((maxlen, vocab_size))
        chars = list(sent.lower().replace(' ', ''))
        for c in chars:
            if counter >= maxlen:
                pass
            else:
                char_array = np.zeros(vocab_size, dtype=int)
                if c in check:
                    ix = vocab[c]
                    char_array[ix] = 1
                sent_array[counter, :] = char_array
                counter += 1
        input_data[dix, :, :] = sent_array

    return input_data


def shuffle_matrix(x, y):
    stacked = np.hstack((np.matrix(x).T, y))
    np.random.shuffle(stacked)
    xi = np.array(stacked[:, 0]).flatten()
    yi = np.array(stacked[:, 1:]).astype('float32')

    return xi, yi


def create_vocab_set():
    #This alphabet is 69 chars vs. 70 reported in the paper since they include two
    # '-' characters. See https://github.com/zhangxiangxiao/Crepe#issues.

    alphabet = (list(string.ascii_lowercase) + list(string.digits) +
                list(string.punctuation) + ['\n'])
    vocab_size = len(alphabet)
    check = set(alphabet)

    vocab = {}
    reverse_vocab = {}
    for ix, t in enumerate(alphabet):
        vocab[t] = ix
        reverse_vocab[ix] = t

    return vocab, reverse_vocab, vocab_size, check


# ----------------------------------------------------------------------------- py_crepe.py
class py_crepe:
    @staticmethod
    def model(filter_kernels, dense_outputs, maxlen, vocab_size, nb_filter,
              cat_output):
        #Define what the input shape looks like
        inputs = Input(shape=(maxlen, vocab_size), name='input', dtype='float32')

        #All the convolutional layers...
        conv = Conv1D(filters=nb_filter, kernel_size=filter_kernels[0],
                      padding='valid', activation='relu')(inputs)
        conv = MaxPooling1D(pool_size=3)(conv)

        conv1 = Conv1D(filters=nb_filter, kernel_size=filter_kernels[1],
                       padding='valid', activation='relu')(conv)
        conv1 = MaxPooling1D(pool_size=3)(conv1)

        conv2 = Conv1D(filters=nb_filter, kernel_size=filter_kernels[2],
                       padding='valid', activation='relu')(conv1)

        conv3 = Conv1D(filters=nb_filter, kernel_size=filter_kernels[3],
                       padding='valid', activation='relu')(conv2)

        conv4 = Conv1D(filters=nb_filter, kernel_size=filter_kernels[4],
                       padding='valid', activation='relu')(conv3)

        conv5 = Conv1D(filters=nb_filter, kernel_size=filter_kernels[5],
                       padding='valid', activation='relu')(conv4)
        conv5 = MaxPooling1D(pool_size=3)(conv5)
        conv5 = Flatten()(conv5)

        #Two dense layers with dropout of .5
        z = Dropout(0.5)(Dense(dense_outputs, activation='relu')(conv5))
        z = Dropout(0.5)(Dense(dense_outputs, activation='relu')(z))

        #Output dense layer with softmax activation
        pred = Dense(cat_output, activation='softmax', name='output')(z)

        model = Model(inputs=inputs, outputs=pred)

        sgd = SGD(learning_rate=0.01, momentum=0.9)
        model.compile(loss='categorical_crossentropy', optimizer=sgd,
                      metrics=['accuracy'])

        return model


# ----------------------------------------------------------------------------- main.py
np.random.seed(0o123)  # for reproducibility

# set parameters:

subset = None

#Whether to save model parameters
save = False
model_name_path = 'params/crepe_model.json'
model_weights_path = 'params/crepe_model_weights.h5'

#Maximum length. Longer gets chopped. Shorter gets padded.
maxlen = 1014

#Model params
#Filters for conv layers
nb_filter = 32
#Number of units in the dense layer
dense_outputs = 128
#Conv layer kernel size
filter_kernels = [7, 7, 3, 3, 3, 3]
#Number of units in the final output layer. Number of classes.
cat_output = 4

#Compile/fit params
batch_size = 80
nb_epoch = 3

print('Loading data...')
#Expect x to be a list of sentences. Y to be a one-hot encoding of the
#categories.
(xt, yt), (x_test, y_test) = load_ag_data()

print('Creating vocab...')
vocab, reverse_vocab, vocab_size, check = create_vocab_set()

test_data = encode_data(x_test, maxlen, vocab, vocab_size, check)

# FIX: each text encoded once (in chunks of 200: encode_data builds float64), the batches stacked from the rows
encoded = {}
for i in range(0, len(xt), 200):
    encoded.update(zip(xt[i:i + 200], encode_data(xt[i:i + 200], maxlen, vocab, vocab_size, check).astype(np.uint8)))
encoded.update(zip(x_test, test_data.astype(np.uint8)))  # the test set's encoding, made above and unused


def mini_batch_generator(x, y, vocab, vocab_size, vocab_check, maxlen, batch_size=128):  # noqa: F811
    for i in range(0, len(x), batch_size):
        yield (np.stack([encoded[s] for s in x[i:i + batch_size]]), y[i:i + batch_size])


print('Build model...')

model = py_crepe.model(filter_kernels, dense_outputs, maxlen, vocab_size,
                       nb_filter, cat_output)

print('Fit model...')
initial = datetime.datetime.now()
for e in range(nb_epoch):
    xi, yi = shuffle_matrix(xt, yt)
    xi_test, yi_test = shuffle_matrix(x_test, y_test)
    if subset:
        batches = mini_batch_generator(xi[:subset], yi[:subset],
                                       vocab, vocab_size, check,
                                       maxlen,
                                       batch_size=batch_size)
    else:
        batches = mini_batch_generator(xi, yi, vocab, vocab_size,
                                       check, maxlen,
                                       batch_size=batch_size)

    test_batches = mini_batch_generator(xi_test, yi_test, vocab,
                                        vocab_size, check, maxlen,
                                        batch_size=batch_size)

    accuracy = 0.0
    loss = 0.0
    step = 1
    start = datetime.datetime.now()
    print('Epoch: {}'.format(e))
    for x_train, y_train in batches:
        f = model.train_on_batch(x_train, y_train)
        loss += f[0]
        loss_avg = loss / step
        accuracy += f[1]
        accuracy_avg = accuracy / step
        if step % 100 == 0:
            print('  Step: {}'.format(step))
            print('\tLoss: {}. Accuracy: {}'.format(loss_avg, accuracy_avg))
        step += 1

    test_accuracy = 0.0
    test_loss = 0.0
    test_step = 1

    for x_test_batch, y_test_batch in test_batches:
        f_ev = model.test_on_batch(x_test_batch, y_test_batch)
        test_loss += f_ev[0]
        test_loss_avg = test_loss / test_step
        test_accuracy += f_ev[1]
        test_accuracy_avg = test_accuracy / test_step
        test_step += 1
    stop = datetime.datetime.now()
    e_elap = stop - start
    t_elap = stop - initial
    print('Epoch {}. Loss: {}. Accuracy: {}\nEpoch time: {}. Total time: {}\n'.format(e, test_loss_avg, test_accuracy_avg, e_elap, t_elap))

if save:
    print('Saving model params...')
    json_string = model.to_json()
    with open(model_name_path, 'w') as f:
        json.dump(json_string, f)

    model.save_weights(model_weights_path)
