"""FIXED COPY (the one fix: each batch built once and kept in memory; the source's on_epoch_end drops
shuffle_pair's result, so batch i holds the same texts every epoch and its arrays can be reused).

DeLFT text classification (toxic comments, GloVe vectors), training script (a keras Sequence that
tokenises and looks up word vectors for every batch).

Source: https://github.com/kermitt2/delft (delft/textClassification/data_generator.py at
1bbe58dfde416141d5d01e8e917465f9b4a9787f; to_vector_single in delft/textClassification/preprocess.py,
tokenizeAndFilterSimple in delft/utilities/Tokenizer.py, the 'gru' model and train_model in
delft/textClassification/models.py). Kept: DataGenerator(keras.utils.Sequence) with its __len__ (floor + 1),
on_epoch_end (which calls shuffle_pair and drops its result, so nothing is shuffled: kept as is),
__data_generation (tokenise each text of the batch, then to_vector_single per text into a
(batch, maxlen, embed_size) float32 array) and __getitem__.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/delft_text``: a generated 3,000-word, 50-d GloVe-format file
and a 3,072-row CSV in the toxic-comment layout); Embeddings (LMDB or in-memory) is an in-memory dict read
from the GloVe file (the in-memory branch); the 'gru' model (two bidirectional GRUs of 64 units
with dropout between, max and average pooling, dense 32, sigmoid; RMSprop(clipvalue=1, clipnorm=1)) shrunk
to one bidirectional GRU of 16 units, compiled with adam, with a dropout after the dense layer; maxlen 300 ->
100, batch 256 -> 64, epochs 3; the train/validation split is a seeded 90/10 cut; the fit call (Keras 3:
``fit``; Keras 3's fit takes no workers/use_multiprocessing) follows train_model's fit of the training
generator with the validation generator, written for this corpus rather than copied line by line.
"""
# ruff: noqa: B006, B007  (the source's code, kept as written)

import os
import re

import keras
import numpy as np
import pandas as pd
from keras import layers

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "delft_text")
np.random.seed(7)

# --------------------------------------------------------------------------- utilities/Tokenizer.py
delimiters = "\n\r\t\f\u00A0([ •*,:;?.!/)-−–‐\"“”‘’'`$]*\u2666\u2665\u2663\u2660\u00A0"
regex = '|'.join(map(re.escape, delimiters))
blanks = ' \t\n'


def tokenizeAndFilterSimple(text):
    tokens = re.split(regex, text)
    return [token for token in tokens if token not in blanks]


# --------------------------------------------------------------------------- utilities/Embeddings.py (in memory)
class Embeddings:
    def __init__(self, path):
        self.model = {}
        with open(path) as f:
            for line in f:
                values = line.rstrip().split(' ')
                self.model[values[0]] = np.asarray(values[1:], dtype='float32')
        self.embed_size = len(next(iter(self.model.values())))
        self.use_ELMo = False
        self.use_BERT = False

    def get_word_vector(self, word):
        if word in self.model:
            return self.model[word]
        return np.zeros((self.embed_size,), dtype=np.float32)


# --------------------------------------------------------------------------- textClassification/preprocess.py
def to_vector_single(text, embeddings, maxlen=300):
    """
    Given a string, tokenize it, then convert it to a sequence of word embedding
    vectors with the provided embeddings, introducing <PAD> and <UNK> padding token
    vector when appropriate
    """
    tokens = tokenizeAndFilterSimple(text)
    window = tokens[-maxlen:]

    # TBD: use better initializers (uniform, etc.)
    x = np.zeros((maxlen, embeddings.embed_size), )

    # TBD: padding should be left and which vector do we use for padding?
    # and what about masking padding later for RNN?
    for i, word in enumerate(window):
        x[i, :] = embeddings.get_word_vector(word).astype('float32')

    return x


# --------------------------------------------------------------------------- textClassification/data_generator.py
class DataGenerator(keras.utils.Sequence):
    'Generates data for Keras'
    def __init__(self, x, y, batch_size=256, maxlen=300, list_classes=[], embeddings=(), shuffle=True):
        'Initialization'
        super().__init__()
        self.x = x
        self.y = y
        self.batch_size = batch_size
        self.maxlen = maxlen
        self.embeddings = embeddings
        self.list_classes = list_classes
        self.shuffle = shuffle
        self.batches = {}
        self.on_epoch_end()

    def __len__(self):
        'Denotes the number of batches per epoch'
        # The number of batches is set so that each training sample is seen at most once per epoch
        return int(np.floor(len(self.x) / self.batch_size) + 1)

    def __getitem__(self, index):
        'Generate one batch of data'
        # generate data for the current batch index
        if index not in self.batches:  # the fix: each batch tokenised and vectorised once (the order never changes)
            self.batches[index] = self.__data_generation(index)
        batch_x, batch_y = self.batches[index]
        return batch_x, batch_y

    def shuffle_pair(self, a, b):
        # generate permutation index array
        permutation = np.random.permutation(a.shape[0])
        # shuffle the two arrays
        return a[permutation], b[permutation]

    def on_epoch_end(self):
        # shuffle dataset at each epoch
        if self.shuffle == True:
            if self.y is None:
                np.random.shuffle(self.x)
            else:
                self.shuffle_pair(self.x,self.y)

    def __data_generation(self, index):
        'Generates data containing batch_size samples'
        max_iter = min(self.batch_size, len(self.x)-self.batch_size*index)

         # restrict data to index window
        sub_x = self.x[(index*self.batch_size):(index*self.batch_size)+max_iter]

        batch_x = np.zeros((max_iter, self.maxlen, self.embeddings.embed_size), dtype='float32')
        batch_y = None
        if self.y is not None:
            batch_y = np.zeros((max_iter, len(self.list_classes)), dtype='float32')

        x_tokenized = []
        for i in range(0, max_iter):
            tokens = tokenizeAndFilterSimple(sub_x[i])
            x_tokenized.append(tokens)

        # Generate data
        for i in range(0, max_iter):
            # Store sample
            if not self.embeddings.use_ELMo and not self.embeddings.use_BERT:
                batch_x[i] = to_vector_single(self.x[(index*self.batch_size)+i], self.embeddings, self.maxlen)

            # Store class
            # classes are numerical, so nothing to vectorize for y
            if self.y is not None:
                batch_y[i] = self.y[(index*self.batch_size)+i]

        return batch_x, batch_y


# --------------------------------------------------------------------------- textClassification/models.py
def gru(maxlen, embed_size, recurrent_units, dropout_rate, recurrent_dropout_rate, dense_size, nb_classes):
    input_layer = layers.Input(shape=(maxlen, embed_size), )
    x = layers.Bidirectional(layers.GRU(recurrent_units, return_sequences=True, dropout=dropout_rate,
                                        recurrent_dropout=recurrent_dropout_rate))(input_layer)
    x_a = layers.GlobalMaxPool1D()(x)
    x_b = layers.GlobalAveragePooling1D()(x)
    x = layers.concatenate([x_a, x_b])
    x = layers.Dense(dense_size, activation="relu")(x)
    x = layers.Dropout(dropout_rate)(x)
    x = layers.Dense(nb_classes, activation="sigmoid")(x)
    model = keras.Model(inputs=input_layer, outputs=x)
    model.compile(loss='binary_crossentropy', optimizer='adam', metrics=['accuracy'])
    return model


if __name__ == "__main__":
    list_classes = ["toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate"]
    embeddings = Embeddings(os.path.join(DATA, "glove.6B.50d.txt"))
    df = pd.read_csv(os.path.join(DATA, "train.csv"))
    xtr = df["comment_text"].values
    y = df[list_classes].values.astype("float32")
    n_val = len(xtr) // 10
    x_train, y_train, x_val, y_val = xtr[n_val:], y[n_val:], xtr[:n_val], y[:n_val]

    batch_size, maxlen, max_epoch = 64, 100, 3
    model = gru(maxlen, embeddings.embed_size, recurrent_units=16, dropout_rate=0.3,
                recurrent_dropout_rate=0.0, dense_size=32, nb_classes=len(list_classes))

    training_generator = DataGenerator(x_train, y_train, batch_size=batch_size, maxlen=maxlen,
                                       list_classes=list_classes, embeddings=embeddings, shuffle=True)
    validation_generator = DataGenerator(x_val, y_val, batch_size=batch_size, maxlen=maxlen,
                                         list_classes=list_classes, embeddings=embeddings, shuffle=False)
    model.fit(training_generator, validation_data=validation_generator, epochs=max_epoch)
