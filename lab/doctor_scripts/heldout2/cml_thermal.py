"""CML thermal model, training: train.py's "Model 1: ANN", a small dense regression network fitted on
pandas DataFrames of a machine tool's temperature readings (continuous-deploy/CML_thermal).

Source: https://github.com/continuous-deploy/CML_thermal (train.py at
238de26269a0f54e9a33c425001b11583ea35308, models/ann.py at 0521608240de2af0638887251ad4033cb219ffef,
utils/preprocess_data.py at 10dcdf14fec4178f88706b131d66fef18df688cf, utils/load_data.py at
53dff4f20c67f14eddee3e425312198fa703c444). Re-written here in the source's structure and order, not
copied: load_data reads the 3 most recent CSVs of data/ with pandas and renames their columns;
load_and_concat_data concatenates them, splits train/test (sklearn's default 25% test, random_state=1)
and writes temp/training_data_simple.csv and temp/test_data_simple.csv, which train.py reads back; ANN
is Dense(64, relu, input_dim=7), Dense(32, relu), Dense(1, linear) compiled with adam / mean_squared_error
/ mae, fitted with ``fit(X, y, epochs=100, batch_size=32, validation_split=0.2)`` on the DataFrame columns
X_col (7 sensor columns and Time) and y_col (Dia Disp).

Changed: data path (``$DOCTOR_SCRIPTS_DATA/cml_thermal/data``: 3 generated CSVs, TM1..TM3, 8000 rows each
in the source's 8 columns); the temp/ CSVs under a temporary folder; sklearn's train_test_split ->
the same 75/25 split by a seeded NumPy permutation (no sklearn here); epochs 3 for 100; the evaluation of
the old model, the plots, the saved model, the random forest, XGBoost and LSTM models of train.py left out
(not part of the ANN's fit).
"""

import os
import tempfile

import numpy as np
import pandas as pd
from tensorflow.keras.layers import Dense
from tensorflow.keras.models import Sequential

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "cml_thermal")
data_folder_path = os.path.join(DATA, "data")
TEMP = os.path.join(tempfile.gettempdir(), "cml_thermal_temp")
cols = ["Dia Disp", "Ambient", "Ref Temp on Bed", "Spindle Rear", "Coolantwall", "Transfomerbed", "Spindle Front",
        "Time"]
y_col = ["Dia Disp"]
X_col = ["Ambient", "Ref Temp on Bed", "Spindle Rear", "Coolantwall", "Transfomerbed", "Spindle Front", "Time"]


def get_most_recent_files(data_folder_path=data_folder_path, num_files=3):
    file_lst = []
    for root, _, files in os.walk(data_folder_path):
        for file in files:
            if file.endswith(".csv"):
                file_path = os.path.join(root, file)
                file_lst.append((file_path, os.path.getmtime(file_path)))
    most_recent_files = sorted(file_lst, key=lambda x: x[1], reverse=False)[-num_files:]
    return [file[0] for file in most_recent_files]


def load_data(file_count=3):
    df_lst = [pd.read_csv(file_) for file_ in get_most_recent_files(data_folder_path, file_count)]
    return [df.rename(columns=dict(zip(df.columns, cols))) for df in df_lst]


def train_test_split(df, test_size=0.25, random_state=1):
    order = np.random.RandomState(random_state).permutation(len(df))
    n_test = int(np.ceil(test_size * len(df)))
    return df.iloc[order[n_test:]], df.iloc[order[:n_test]]


def load_and_concat_data():
    full_data = pd.concat(load_data(3), ignore_index=True)
    training_data, test_data = train_test_split(full_data, random_state=1)
    os.makedirs(TEMP, exist_ok=True)
    training_data.to_csv(os.path.join(TEMP, "training_data_simple.csv"), mode="w")
    test_data.to_csv(os.path.join(TEMP, "test_data_simple.csv"), mode="w")


class ANN:
    def __init__(self):
        self.model = Sequential()
        self.model.add(Dense(64, input_dim=7, activation="relu"))
        self.model.add(Dense(32, activation="relu"))
        self.model.add(Dense(1, activation="linear"))
        self.model.compile(optimizer="adam", loss="mean_squared_error", metrics=["mae"])

    def fit_model(self, X, y, epochs=100, batch_size=32, validation_ratio=0.2):
        return self.model.fit(X, y, epochs=epochs, batch_size=batch_size, validation_split=validation_ratio)


if __name__ == "__main__":
    # prepare data for model
    load_and_concat_data()
    # load data for training
    training_data = pd.read_csv(os.path.join(TEMP, "training_data_simple.csv"))
    test_data = pd.read_csv(os.path.join(TEMP, "test_data_simple.csv"))
    # Model 1: ANN
    ann = ANN()
    hist = ann.fit_model(training_data[X_col], training_data[y_col], epochs=3)
