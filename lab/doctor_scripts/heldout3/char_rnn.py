"""Character-level RNN (char-rnn) on ABC-notation tunes, training: train.py of char-rnn-keras, a custom loop of
``model.train_on_batch`` over read_batches, a Python generator that fills each batch's inputs and one-hot targets
character by character.

Source: https://github.com/ekzhang/char-rnn-keras at 999c3d2b750ec19310802b686c60ad30cc7c1e40 (train.py and
model.py). Re-written here in the source's structure and order, not copied: the text is read whole and mapped
to indices by char_to_idx (sorted characters, saved as JSON); read_batches splits the index array into
BATCH_SIZE (16) parallel streams and, for each window of SEQ_LENGTH (64), fills X (16, 64) and one-hot Y
(16, 64, vocab) in two nested Python loops, one character at a time; build_model is an Embedding (512) and
three stateful LSTM(256, return_sequences) with Dropout(0.2), a TimeDistributed Dense(vocab) and a softmax,
compiled with categorical cross-entropy / adam / accuracy; train() loops over the epochs and, for each batch,
``loss, acc = model.train_on_batch(X, Y)``, prints the batch's loss and accuracy, logs the epoch's averages to
a CSV and saves the weights every save_freq epochs.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/char_rnn/data/nottingham-jigs.txt``: 43008 characters of generated
ABC tunes, 41 batches an epoch, for the repository's 130 KB file); LOG_DIR and MODEL_DIR under a temporary
folder; the Embedding 64 for 512 and the LSTMs 64 units for 256 (a step runs on 2 CPU cores); epochs 3 for 100;
``Embedding(..., batch_input_shape=(batch_size, seq_len))`` -> a ``keras.Input(batch_shape=...)`` first
(Keras 3 has no batch_input_shape); the weights saved as ``weights.N.weights.h5`` (Keras 3 wants that suffix);
the argparse defaults kept, --epochs 3; the resume path kept.
"""
# ruff: noqa: B007  (the source's loop, kept as written)

import argparse
import json
import os
import tempfile
from pathlib import Path

import numpy as np
from keras.layers import LSTM, Activation, Dense, Dropout, Embedding, Input, TimeDistributed
from keras.models import Sequential

DATA_DIR = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "char_rnn", "data")
LOG_DIR = os.path.join(tempfile.gettempdir(), "char_rnn_logs")
MODEL_DIR = os.path.join(tempfile.gettempdir(), "char_rnn_model")

BATCH_SIZE = 16
SEQ_LENGTH = 64


# ----------------------------------------------------------------------------- model.py
def save_weights(epoch, model):
    if not os.path.exists(MODEL_DIR):
        os.makedirs(MODEL_DIR)
    model.save_weights(os.path.join(MODEL_DIR, "weights.{}.weights.h5".format(epoch)))


def load_weights(epoch, model):
    model.load_weights(os.path.join(MODEL_DIR, "weights.{}.weights.h5".format(epoch)))


def build_model(batch_size, seq_len, vocab_size):
    model = Sequential()
    model.add(Input(batch_shape=(batch_size, seq_len)))
    model.add(Embedding(vocab_size, 64))
    for i in range(3):
        model.add(LSTM(64, return_sequences=True, stateful=True))
        model.add(Dropout(0.2))

    model.add(TimeDistributed(Dense(vocab_size)))
    model.add(Activation("softmax"))
    return model


# ----------------------------------------------------------------------------- train.py
class TrainLogger(object):
    def __init__(self, file, resume=0):
        self.file = os.path.join(LOG_DIR, file)
        self.epochs = resume
        if not resume:
            with open(self.file, "w") as f:
                f.write("epoch,loss,acc\n")

    def add_entry(self, loss, acc):
        self.epochs += 1
        s = "{},{},{}\n".format(self.epochs, loss, acc)
        with open(self.file, "a") as f:
            f.write(s)


def read_batches(T, vocab_size):
    length = T.shape[0]
    batch_chars = length // BATCH_SIZE

    for start in range(0, batch_chars - SEQ_LENGTH, SEQ_LENGTH):
        X = np.zeros((BATCH_SIZE, SEQ_LENGTH))
        Y = np.zeros((BATCH_SIZE, SEQ_LENGTH, vocab_size))
        for batch_idx in range(0, BATCH_SIZE):
            for i in range(0, SEQ_LENGTH):
                X[batch_idx, i] = T[batch_chars * batch_idx + start + i]
                Y[batch_idx, i, T[batch_chars * batch_idx + start + i + 1]] = 1
        yield X, Y


def train(text, epochs=100, save_freq=10, resume=False):
    if resume:
        print("Attempting to resume last training...")

        model_dir = Path(MODEL_DIR)
        c2ifile = model_dir.joinpath("char_to_idx.json")
        with c2ifile.open("r") as f:
            char_to_idx = json.load(f)

        checkpoints = list(model_dir.glob("weights.*.weights.h5"))
        if not checkpoints:
            raise ValueError("No checkpoints found to resume from")

        resume_epoch = max(int(p.name.split(".")[1]) for p in checkpoints)
        print("Resuming from epoch", resume_epoch)

    else:
        resume_epoch = 0
        char_to_idx = {ch: i for (i, ch) in enumerate(sorted(list(set(text))))}
        with open(os.path.join(MODEL_DIR, "char_to_idx.json"), "w") as f:
            json.dump(char_to_idx, f)

    vocab_size = len(char_to_idx)
    model = build_model(BATCH_SIZE, SEQ_LENGTH, vocab_size)
    model.summary()
    model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])

    if resume:
        load_weights(resume_epoch, model)

    T = np.asarray([char_to_idx[c] for c in text], dtype=np.int32)
    log = TrainLogger("training_log.csv", resume_epoch)

    for epoch in range(resume_epoch, epochs):
        print("\nEpoch {}/{}".format(epoch + 1, epochs))
        losses, accs = [], []
        for i, (X, Y) in enumerate(read_batches(T, vocab_size)):
            loss, acc = model.train_on_batch(X, Y)
            print("Batch {}: loss = {:.4f}, acc = {:.5f}".format(i + 1, loss, acc))
            losses.append(loss)
            accs.append(acc)

        log.add_entry(np.average(losses), np.average(accs))

        if (epoch + 1) % save_freq == 0:
            save_weights(epoch + 1, model)
            print("Saved checkpoint to", "weights.{}.weights.h5".format(epoch + 1))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Train the model on some text.")
    parser.add_argument("--input", default="nottingham-jigs.txt", help="name of the text file to train from")
    parser.add_argument("--epochs", type=int, default=3, help="number of epochs to train for")
    parser.add_argument("--freq", type=int, default=10, help="checkpoint save frequency")
    parser.add_argument("--resume", action="store_true", help="resume from previously interrupted training")
    args = parser.parse_args()

    if not os.path.exists(LOG_DIR):
        os.makedirs(LOG_DIR)
    if not os.path.exists(MODEL_DIR):
        os.makedirs(MODEL_DIR)

    with open(os.path.join(DATA_DIR, args.input), "r") as data_file:
        text = data_file.read()
    train(text, args.epochs, args.freq, args.resume)
