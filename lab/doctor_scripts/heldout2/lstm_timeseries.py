"""LSTM time-series prediction, training: run.py's out-of-memory path, Model.train_generator over
DataLoader.generate_train_batch, a plain Python generator that cuts and normalises each window in Python.

Source: https://github.com/jaungiers/LSTM-Neural-Network-for-Time-Series-Prediction (run.py and
core/model.py at 14b04dd4104dc5c7e39f4dcc580c46fd3d2c02bf, core/data_processor.py at
1fa4b818fe0100c4600b97ff43c9e518969a32a5, config.json). Re-written here in the source's structure and
order, not copied: DataLoader reads the CSV with pandas once and splits it by train_test_split;
generate_train_batch walks the training rows, for each example takes the window of sequence_length rows,
normalises it against its first row column by column with a Python list comprehension over the values
(normalise_windows), and yields np.array batches (a short last batch, then from the start again);
Model.build_model stacks the config's layers (LSTM 100 return_sequences, Dropout 0.2, LSTM 100
return_sequences, LSTM 100, Dropout 0.2, Dense 1 linear) and compiles with mse / adam; run.py computes
steps_per_epoch = ceil((len_train - sequence_length) / batch_size) and Model.train_generator fits the
generator with a ModelCheckpoint callback on 'loss'.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/lstm_timeseries/data/sp500.csv``: the same columns, 6000
generated daily rows instead of the S&P 500's); columns ["Close", "Volume"] (the repository's later
config) for ["Close"]; the LSTMs at 16 units for 100 (a step runs on 2 CPU cores); epochs 3 for 2;
``fit_generator(..., workers=1)`` -> ``fit(...)`` (Keras 3 has no fit_generator and no workers argument;
one worker is its default); the checkpoint callbacks, the test windows, the predictions and the plots left out (not part of the
fit); the in-memory path kept as in run.py: get_train_data is called (its windows unused by the
generator fit) and the Model.train call is commented out.
"""
# ruff: noqa: B007  (the source's loop, kept as written)

import math
import os

import numpy as np
import pandas as pd
from tensorflow import keras
from tensorflow.keras.layers import LSTM, Dense, Dropout

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "lstm_timeseries")

CONFIGS = {
    "data": {"filename": "sp500.csv", "columns": ["Close", "Volume"], "sequence_length": 50,
             "train_test_split": 0.85, "normalise": True},
    "training": {"epochs": 3, "batch_size": 32},
    "model": {"loss": "mse", "optimizer": "adam", "layers": [
        {"type": "lstm", "neurons": 16, "input_timesteps": 49, "input_dim": 2, "return_seq": True},
        {"type": "dropout", "rate": 0.2},
        {"type": "lstm", "neurons": 16, "return_seq": True},
        {"type": "lstm", "neurons": 16, "return_seq": False},
        {"type": "dropout", "rate": 0.2},
        {"type": "dense", "neurons": 1, "activation": "linear"}]},
}


class DataLoader:
    """Loads the CSV once and cuts normalised windows from it (the repository's DataLoader)."""

    def __init__(self, filename, split, cols):
        dataframe = pd.read_csv(filename)
        i_split = int(len(dataframe) * split)
        self.data_train = dataframe.get(cols).values[:i_split]
        self.data_test = dataframe.get(cols).values[i_split:]
        self.len_train = len(self.data_train)
        self.len_test = len(self.data_test)

    def get_train_data(self, seq_len, normalise):
        """All training windows at once, in memory (the repository's batch method, for in-memory training)."""
        data_x, data_y = [], []
        for i in range(self.len_train - seq_len):
            x, y = self._next_window(i, seq_len, normalise)
            data_x.append(x)
            data_y.append(y)
        return np.array(data_x), np.array(data_y)

    def generate_train_batch(self, seq_len, batch_size, normalise):
        """Yields (x, y) batches of training windows forever, a short batch at the end of the rows."""
        i = 0
        while i < (self.len_train - seq_len):
            x_batch, y_batch = [], []
            for b in range(batch_size):
                if i >= (self.len_train - seq_len):
                    yield np.array(x_batch), np.array(y_batch)
                    i = 0
                x, y = self._next_window(i, seq_len, normalise)
                x_batch.append(x)
                y_batch.append(y)
                i += 1
            yield np.array(x_batch), np.array(y_batch)

    def _next_window(self, i, seq_len, normalise):
        window = self.data_train[i:i + seq_len + 1]
        window = self.normalise_windows(window, single_window=True)[0] if normalise else window
        return window[:-1], window[-1, [0]]

    def normalise_windows(self, window_data, single_window=False):
        """Each value over its column's first value, minus one, in Python (the repository's loop)."""
        eps = 0.00001
        normalised_data = []
        window_data = [window_data] if single_window else window_data
        for window in window_data:
            normalised_window = []
            for col_i in range(window.shape[1]):
                normalised_col = [((float(p) / (float(window[0, col_i]) + eps)) - 1) for p in window[:, col_i]]
                normalised_window.append(normalised_col)
            normalised_data.append(np.array(normalised_window).T)
        return np.array(normalised_data)


class Model:
    def __init__(self):
        self.model = keras.Sequential()

    def build_model(self, configs):
        for layer in configs["model"]["layers"]:
            neurons = layer.get("neurons")
            if layer["type"] == "lstm":
                if "input_timesteps" in layer:
                    self.model.add(keras.Input((layer["input_timesteps"], layer["input_dim"])))
                self.model.add(LSTM(neurons, return_sequences=layer["return_seq"]))
            if layer["type"] == "dense":
                self.model.add(Dense(neurons, activation=layer.get("activation")))
            if layer["type"] == "dropout":
                self.model.add(Dropout(layer["rate"]))
        self.model.compile(loss=configs["model"]["loss"], optimizer=configs["model"]["optimizer"])

    def train(self, x, y, epochs, batch_size):
        print(f"[Model] {epochs} epochs, {batch_size} batch size")
        self.model.fit(x, y, epochs=epochs, batch_size=batch_size)

    def train_generator(self, data_gen, epochs, batch_size, steps_per_epoch):
        print(f"[Model] {epochs} epochs, {batch_size} batch size, {steps_per_epoch} batches per epoch")
        self.model.fit(data_gen, steps_per_epoch=steps_per_epoch, epochs=epochs)


def main():
    configs = CONFIGS
    data = DataLoader(os.path.join(DATA, "data", configs["data"]["filename"]),
                      configs["data"]["train_test_split"], configs["data"]["columns"])
    model = Model()
    model.build_model(configs)
    x, y = data.get_train_data(seq_len=configs["data"]["sequence_length"], normalise=configs["data"]["normalise"])
    """
    # in-memory training
    model.train(x, y, epochs=configs["training"]["epochs"], batch_size=configs["training"]["batch_size"])
    """
    # out-of-memory generative training
    steps_per_epoch = math.ceil((data.len_train - configs["data"]["sequence_length"]) / configs["training"]["batch_size"])
    model.train_generator(
        data_gen=data.generate_train_batch(seq_len=configs["data"]["sequence_length"],
                                           batch_size=configs["training"]["batch_size"],
                                           normalise=configs["data"]["normalise"]),
        epochs=configs["training"]["epochs"], batch_size=configs["training"]["batch_size"],
        steps_per_epoch=steps_per_epoch)


if __name__ == "__main__":
    main()
