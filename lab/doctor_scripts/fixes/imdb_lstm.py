"""FIXED COPY (the candidate fix: compile(steps_per_execution=8), 8 steps per call).

IMDB review sentiment with an LSTM, training: Istm_model.py of imbd-sentiment-analysis, an Embedding + LSTM
classifier fitted on in-memory NumPy arrays of padded token ids.

Source: https://github.com/gurjitkaur0/imbd-sentiment-analysis at 74b728f38a53c2f8bcba4fb8a115713ee902b143
(Istm_model.py; cleaned_reviews.csv is written by preprocessing.py). Re-written here in the source's structure and
order, not copied: the cleaned reviews are read with pandas, the sentiment mapped to 1 / 0; a Tokenizer(num_words=
5000) is fitted on the reviews, texts_to_sequences and ``pad_sequences(maxlen=200)`` make the arrays;
``train_test_split(test_size=0.2)`` splits them; a Sequential Embedding(5000, 128), LSTM(128), Dense(1, sigmoid)
is compiled with binary cross-entropy, adam and accuracy and fitted ``model.fit(X_train, y_train, epochs=5,
batch_size=64, validation_data=(X_test, y_test))``.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/imdb_lstm/cleaned_reviews.csv``: 2000 generated reviews for the 50000
of IMDB); the Embedding 32 for 128 and the LSTM 32 units for 128 (a step runs on 2 CPU cores); epochs 3 for 5;
Keras 2's ``tensorflow.keras.preprocessing.text.Tokenizer`` re-written below as it counts and indexes words
(lower-cased, its default filters, the num_words - 1 most frequent kept; Keras 3 has no Tokenizer) and
``pad_sequences`` from ``keras.preprocessing.sequence``; ``train_test_split`` re-written with NumPy as scikit-learn
does it (a random permutation, the first ceil(0.2 n) rows the test set; no scikit-learn here), given y as
its NumPy values.
"""

import math
import os
from collections import Counter

import numpy as np
import pandas as pd
from keras.preprocessing.sequence import pad_sequences
from tensorflow.keras.layers import LSTM, Dense, Embedding
from tensorflow.keras.models import Sequential

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "imdb_lstm")


class Tokenizer:
    """keras.preprocessing.text.Tokenizer's word counting and indexing (Keras 2), for Keras 3 which has none."""

    filters = '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n'

    def __init__(self, num_words=None):
        self.num_words = num_words
        self.word_counts = Counter()
        self.word_index = {}

    def _words(self, text):
        text = text.lower().translate(str.maketrans(self.filters, " " * len(self.filters)))
        return [w for w in text.split(" ") if w]

    def fit_on_texts(self, texts):
        for text in texts:
            self.word_counts.update(self._words(text))
        ordered = sorted(self.word_counts.items(), key=lambda kv: -kv[1])
        self.word_index = {w: i + 1 for i, (w, _) in enumerate(ordered)}

    def texts_to_sequences(self, texts):
        out = []
        for text in texts:
            seq = [self.word_index.get(w) for w in self._words(text)]
            out.append([i for i in seq if i and (not self.num_words or i < self.num_words)])
        return out


def train_test_split(*arrays, test_size=0.25, random_state=None):
    n = len(arrays[0])
    n_test = int(math.ceil(test_size * n))
    perm = np.random.RandomState(random_state).permutation(n)
    test, train = perm[:n_test], perm[n_test:n]
    out = []
    for a in arrays:
        out += [a[train], a[test]]
    return out


# ----------------------------------------------------------------------------- Istm_model.py
df = pd.read_csv(os.path.join(DATA, "cleaned_reviews.csv"))

X = df["review"]
y = df["sentiment"].map({"positive": 1, "negative": 0})

tokenizer = Tokenizer(num_words=5000)
tokenizer.fit_on_texts(X)
sequences = tokenizer.texts_to_sequences(X)
X_pad = pad_sequences(sequences, maxlen=200)

X_train, X_test, y_train, y_test = train_test_split(X_pad, y.values, test_size=0.2)

model = Sequential()
model.add(Embedding(5000, 32))
model.add(LSTM(32))
model.add(Dense(1, activation="sigmoid"))

model.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"], steps_per_execution=8)  # fix
model.fit(X_train, y_train, epochs=3, batch_size=64, validation_data=(X_test, y_test))
