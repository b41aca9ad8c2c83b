"""FIXED COPY (the one fix: the evaluation's model.predict(batch_x) -> model.predict_on_batch(batch_x): one forward of
the 500 rows, no data adapter, callbacks and progress bar per call, not 16 forwards of Keras's default batch of 32).

Speech enhancement (noisy mixture -> clean speech log spectrogram), training: mixture2clean_dnn/main_dnn.py of
yongxuUSTC/sednn (Qiuqiang Kong's Keras DNN, after Yong Xu's regression approach), a custom training loop: a Python
for-loop over DataGenerator.generate, a generator of shuffled mini-batches sliced from in-memory arrays, calling
``model.train_on_batch`` for each batch, with an evaluation pass over the training and test arrays (``model.predict``
on each mini-batch) every 1000 iterations.

Source: https://github.com/yongxuUSTC/sednn at 819502d27c1f1214aabce2ae4c9fd49e40c0f094 (mixture2clean_dnn/main_dnn.py,
mixture2clean_dnn/data_generator.py, mixture2clean_dnn/prepare_data.py; the arguments from mixture2clean_dnn/runme.sh).
Re-written here in the source's structure and order, not copied: runme.sh prepares the workspace (mixture csvs, STFT
features, packed 7-frame segments, a StandardScaler) and calls ``main_dnn.py train --workspace=$WORKSPACE --tr_snr=0
--te_snr=0 --lr=1e-4``; ``train(args)`` loads packed_features/spectrogram/{train,test}/0db/data.h5 with
``pp_data.load_hdf5`` (x: (n_segs, 7, 257) log spectrograms of the mixture, y: (n_segs, 257) the clean speech's centre
frame), batch_size 500, scales x and y with the pickled scaler (``scale_on_3d`` / ``scale_on_2d``: scaler.transform),
builds a Sequential DNN (Flatten, three Dense(2048, relu) each with Dropout(0.2), Dense(257, linear)) compiled with
mean_absolute_error and Adam(lr), makes DataGenerator(batch_size, type='train') (shuffled index, endless, reshuffled
every pass) and two DataGenerator(type='test', te_max_iter=100) for the evaluation, evaluates once before training
(``eval``: ``model.predict(batch_x)`` for each test-type mini-batch of the training and of the test arrays, the mean
absolute error of the concatenated predictions) and dumps the stats with cPickle, then ``for (batch_x, batch_y) in
tr_gen.generate(xs=[tr_x], ys=[tr_y]): loss = model.train_on_batch(batch_x, batch_y)``, evaluating and dumping stats
every 1000 iterations, saving the model every 5000 and stopping at iteration 10001.

Changed: data paths (``$DOCTOR_SCRIPTS_DATA/sednn_dnn/packed_features/spectrogram/``: 3000 training and 500 test
generated segments of 7 x 257 for TIMIT's mixtures with 115 noises); the iteration counts scaled to the data (a pass is
3000 / 500 = 6 iterations): evaluation every 6 iterations for 1000 (one pass), the model saved every 18 for 5000 and
the loop stopped at iteration 18 for 10001 (3 passes); the command line of runme.sh given to the parser as a list
(``train --workspace=... --tr_snr=0 --te_snr=0 --lr=1e-4``), the inference and calculate_pesq modes (not run by
training) left out with their imports (spectrogram_to_wave, config, matplotlib, glob); sklearn's pickled
StandardScaler (sklearn is not installed) as a NumPy stand-in with its transform, built from scaler.p's pickled
mean_ and scale_; Python 2 / Keras 2 -> 3: cPickle as pickle, Adam(lr=) -> Adam(learning_rate=); models and
training stats written under a temporary folder for the workspace's models/ and training_stats/.
"""

import argparse
import os
import pickle
import pickle as cPickle
import tempfile
import time

import h5py
import numpy as np
from keras.layers import Dense, Dropout, Flatten
from keras.models import Sequential
from keras.optimizers import Adam

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "sednn_dnn")
OUT = os.path.join(tempfile.gettempdir(), "sednn_dnn_out")


# ----------------------------------------------------------------------------- data_generator.py
class DataGenerator(object):
    def __init__(self, batch_size, type, te_max_iter=None):
        assert type in ['train', 'test']
        self._batch_size_ = batch_size
        self._type_ = type
        self._te_max_iter_ = te_max_iter

    def generate(self, xs, ys):
        x = xs[0]
        y = ys[0]
        batch_size = self._batch_size_
        n_samples = len(x)

        index = np.arange(n_samples)
        np.random.shuffle(index)

        iter = 0
        epoch = 0
        pointer = 0
        while True:
            if (self._type_ == 'test') and (self._te_max_iter_ is not None):
                if iter == self._te_max_iter_:
                    break
            iter += 1
            if pointer >= n_samples:
                epoch += 1
                if (self._type_) == 'test' and (epoch == 1):
                    break
                pointer = 0
                np.random.shuffle(index)

            batch_idx = index[pointer : min(pointer + batch_size, n_samples)]
            pointer += batch_size
            yield x[batch_idx], y[batch_idx]


# ----------------------------------------------------------------------------- prepare_data.py (what train uses)
class StandardScaler(object):
    """sklearn.preprocessing.StandardScaler(with_mean=True, with_std=True), fitted: transform only."""

    def __init__(self, mean_, scale_):
        self.mean_ = mean_
        self.scale_ = scale_

    def transform(self, X):
        return (X - self.mean_) / self.scale_


class pp_data:
    @staticmethod
    def create_folder(fd):
        if not os.path.exists(fd):
            os.makedirs(fd)

    @staticmethod
    def scale_on_2d(x2d, scaler):
        """Scale 2D array data.
        """
        return scaler.transform(x2d)

    @staticmethod
    def scale_on_3d(x3d, scaler):
        """Scale 3D array data.
        """
        (n_segs, n_concat, n_freq) = x3d.shape
        x2d = x3d.reshape((n_segs * n_concat, n_freq))
        x2d = scaler.transform(x2d)
        x3d = x2d.reshape((n_segs, n_concat, n_freq))
        return x3d

    @staticmethod
    def load_hdf5(hdf5_path):
        """Load hdf5 data.
        """
        with h5py.File(hdf5_path, 'r') as hf:
            x = hf.get('x')
            y = hf.get('y')
            x = np.array(x)     # (n_segs, n_concat, n_freq)
            y = np.array(y)     # (n_segs, n_freq)
        return x, y

    @staticmethod
    def np_mean_absolute_error(y_true, y_pred):
        return np.mean(np.abs(y_pred - y_true))


# ----------------------------------------------------------------------------- main_dnn.py
def eval(model, gen, x, y):
    """Validation function.

    Args:
      model: keras model.
      gen: object, data generator.
      x: 3darray, input, (n_segs, n_concat, n_freq)
      y: 2darray, target, (n_segs, n_freq)
    """
    pred_all, y_all = [], []

    # Inference in mini batch.
    for (batch_x, batch_y) in gen.generate(xs=[x], ys=[y]):
        pred = model.predict_on_batch(batch_x)  # FIX: one batch, one call into the predict graph
        pred_all.append(pred)
        y_all.append(batch_y)

    # Concatenate mini batch prediction.
    pred_all = np.concatenate(pred_all, axis=0)
    y_all = np.concatenate(y_all, axis=0)

    # Compute loss.
    loss = pp_data.np_mean_absolute_error(y_all, pred_all)
    return loss


def train(args):
    """Train the neural network. Write out model every several iterations.

    Args:
      workspace: str, path of workspace.
      tr_snr: float, training SNR.
      te_snr: float, testing SNR.
      lr: float, learning rate.
    """
    print(args)
    workspace = args.workspace
    tr_snr = args.tr_snr
    te_snr = args.te_snr
    lr = args.lr

    # Load data.
    t1 = time.time()
    tr_hdf5_path = os.path.join(workspace, "packed_features", "spectrogram", "train", "%ddb" % int(tr_snr), "data.h5")
    te_hdf5_path = os.path.join(workspace, "packed_features", "spectrogram", "test", "%ddb" % int(te_snr), "data.h5")
    (tr_x, tr_y) = pp_data.load_hdf5(tr_hdf5_path)
    (te_x, te_y) = pp_data.load_hdf5(te_hdf5_path)
    print(tr_x.shape, tr_y.shape)
    print(te_x.shape, te_y.shape)
    print("Load data time: %s s" % (time.time() - t1,))

    batch_size = 500
    print("%d iterations / epoch" % int(tr_x.shape[0] / batch_size))

    # Scale data.
    if True:
        t1 = time.time()
        scaler_path = os.path.join(workspace, "packed_features", "spectrogram", "train", "%ddb" % int(tr_snr), "scaler.p")
        scaler = StandardScaler(**pickle.load(open(scaler_path, 'rb')))
        tr_x = pp_data.scale_on_3d(tr_x, scaler)
        tr_y = pp_data.scale_on_2d(tr_y, scaler)
        te_x = pp_data.scale_on_3d(te_x, scaler)
        te_y = pp_data.scale_on_2d(te_y, scaler)
        print("Scale data time: %s s" % (time.time() - t1,))

    # Build model
    (_, n_concat, n_freq) = tr_x.shape
    n_hid = 2048

    model = Sequential()
    model.add(Flatten(input_shape=(n_concat, n_freq)))
    model.add(Dense(n_hid, activation='relu'))
    model.add(Dropout(0.2))
    model.add(Dense(n_hid, activation='relu'))
    model.add(Dropout(0.2))
    model.add(Dense(n_hid, activation='relu'))
    model.add(Dropout(0.2))
    model.add(Dense(n_freq, activation='linear'))
    model.summary()

    model.compile(loss='mean_absolute_error',
                  optimizer=Adam(learning_rate=lr))

    # Data generator.
    tr_gen = DataGenerator(batch_size=batch_size, type='train')
    eval_te_gen = DataGenerator(batch_size=batch_size, type='test', te_max_iter=100)
    eval_tr_gen = DataGenerator(batch_size=batch_size, type='test', te_max_iter=100)

    # Directories for saving models and training stats
    model_dir = os.path.join(OUT, "models", "%ddb" % int(tr_snr))
    pp_data.create_folder(model_dir)

    stats_dir = os.path.join(OUT, "training_stats", "%ddb" % int(tr_snr))
    pp_data.create_folder(stats_dir)

    # Print loss before training.
    iter = 0
    tr_loss = eval(model, eval_tr_gen, tr_x, tr_y)
    te_loss = eval(model, eval_te_gen, te_x, te_y)
    print("Iteration: %d, tr_loss: %f, te_loss: %f" % (iter, tr_loss, te_loss))

    # Save out training stats.
    stat_dict = {'iter': iter,
                    'tr_loss': tr_loss,
                    'te_loss': te_loss, }
    stat_path = os.path.join(stats_dir, "%diters.p" % iter)
    cPickle.dump(stat_dict, open(stat_path, 'wb'), protocol=cPickle.HIGHEST_PROTOCOL)

    # Train.
    t1 = time.time()
    for (batch_x, batch_y) in tr_gen.generate(xs=[tr_x], ys=[tr_y]):
        loss = model.train_on_batch(batch_x, batch_y)  # noqa: F841
        iter += 1

        # Validate and save training stats.
        if iter % 6 == 0:
            tr_loss = eval(model, eval_tr_gen, tr_x, tr_y)
            te_loss = eval(model, eval_te_gen, te_x, te_y)
            print("Iteration: %d, tr_loss: %f, te_loss: %f" % (iter, tr_loss, te_loss))

            # Save out training stats.
            stat_dict = {'iter': iter,
                         'tr_loss': tr_loss,
                         'te_loss': te_loss, }
            stat_path = os.path.join(stats_dir, "%diters.p" % iter)
            cPickle.dump(stat_dict, open(stat_path, 'wb'), protocol=cPickle.HIGHEST_PROTOCOL)

        # Save model.
        if iter % 18 == 0:
            model_path = os.path.join(model_dir, "md_%diters.h5" % iter)
            model.save(model_path)
            print("Saved model to %s" % model_path)

        if iter == 18:
            break

    print("Training time: %s s" % (time.time() - t1,))


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    subparsers = parser.add_subparsers(dest='mode')

    parser_train = subparsers.add_parser('train')
    parser_train.add_argument('--workspace', type=str, required=True)
    parser_train.add_argument('--tr_snr', type=float, required=True)
    parser_train.add_argument('--te_snr', type=float, required=True)
    parser_train.add_argument('--lr', type=float, required=True)

    args = parser.parse_args(['train', '--workspace=' + DATA, '--tr_snr=0', '--te_snr=0', '--lr=1e-4'])

    if args.mode == 'train':
        train(args)
    else:
        raise Exception("Error!")
