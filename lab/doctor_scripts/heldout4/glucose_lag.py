"""Glucose sensor forecasting from lagged readings, training: analysis.py and ml.py of glucose-learning, a small
dense regressor fitted on in-memory NumPy arrays with ``batch_size=1``.

Source: https://github.com/kwisatzheadache/glucose-learning at 1bf343ea23372d06abac4db5e41ca0a4fe8ec61e (ml.py;
the data preparation of analysis.py at 2ebe490a59f3, which ml.py's names X_train, Y_train, X_test, Y_test come
from). Re-written here in the source's structure and order, not copied: analysis.py reads CGM.csv, takes the
first 39450 rows of isig, glucose and datetime, builds ``lag(isig, 10)`` (the series and its 10 shifted copies by
``pandas.concat``, the first 10 rows dropped), X the 10 lags and Y the current value, and splits them with
``train_test_split(X, Y, test_size=0.33, random_state=7)``; ml.py builds a Sequential Dense(64, relu) + Dense(1),
compiles it with rmsprop, mse and mae, fits ``model.fit(X_train, Y_train, epochs=5, batch_size=1)``, evaluates,
fits again ``epochs=20, batch_size=1``, evaluates and prints both scores.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/glucose_lag/CGM.csv``: 3000 generated rows of a sensor's export for the
repository's 39450); the two fits 3 and 2 epochs for 5 and 20 (one epoch of ~2000 single-example steps takes 2-3
s on 2 CPU cores); ``train_test_split`` re-written with NumPy as scikit-learn does it (a RandomState(7)
permutation, the first ceil(0.33 n) rows the test set; no scikit-learn here); ``from keras import layers`` added
(ml.py uses ``layers`` without importing it); the
plots, pearsonr, the seasonal decomposition and the persistence baseline of analysis.py left out (not part of the
fit).
"""

import math
import os

import numpy as np
from keras import layers
from keras.models import Sequential
from pandas import DataFrame, concat, read_csv, to_datetime, to_numeric

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "glucose_lag")


def train_test_split(*arrays, test_size=0.25, random_state=None):
    n = len(arrays[0])
    n_test = int(math.ceil(test_size * n))
    perm = np.random.RandomState(random_state).permutation(n)
    test, train = perm[:n_test], perm[n_test:n]
    out = []
    for a in arrays:
        out += [a[train], a[test]]
    return out


# ----------------------------------------------------------------------------- analysis.py
raw = read_csv(os.path.join(DATA, "CGM.csv"), header=0)

isig = to_numeric(raw["isig"][:39450])
glucose = to_numeric(raw["glucose"][:39450])
datetime = raw["datetime"][:39450]
series = DataFrame({"isig": isig, "glucose": glucose})
series.index = to_datetime(datetime)


# Function to automate creation of lagged data from variable and window-size
def lag(variable, window):
    df1 = DataFrame(variable)
    for i in range(window):
        j = window - i
        df1 = concat([df1, variable.shift(j)], axis=1)
    columns = [variable.name]
    for i in range(window):
        j = window - i
        columns.append("t - %d" % j)
    df1.columns = columns
    return df1.iloc[window:]


lagged = lag(isig, 10).values
X = lagged[:, 1:]
Y = lagged[:, 0]
test_size = 0.33
seed = 7

X_train, X_test, Y_train, Y_test = train_test_split(X, Y, test_size=test_size, random_state=seed)

# ----------------------------------------------------------------------------- ml.py
model = Sequential()
model.add(layers.Dense(64, activation="relu", input_shape=(X_train.shape[1],)))
model.add(layers.Dense(1))
model.compile(optimizer="rmsprop", loss="mse", metrics=["mae"])

model.fit(X_train, Y_train, epochs=3, batch_size=1)
mse5, mae5 = model.evaluate(X_test, Y_test)

model.fit(X_train, Y_train, epochs=2, batch_size=1)
mse20, mae20 = model.evaluate(X_test, Y_test)

print("Training for 5 epochs, mse=%f mae=%f" % (mse5, mae5))
print("Training for 20 epochs, mse=%f mae=%f" % (mse20, mae20))
