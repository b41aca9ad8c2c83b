"""Stanford (Shervine Amidi) "A detailed example of how to use data generators with Keras": a Sequence
(here ``keras.utils.PyDataset``) whose ``__getitem__`` ``np.load``s one .npy file per example ID.
Planted: one worker, while each file read waits on the disk (2 ms per file, as a network disk would:
simulated with ``time.sleep``, which releases the GIL as a real read does)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from doctor_corpus._common import dense_model, done, mark, pattern_images

SOURCE = ("Stanford/Shervine Amidi 'A detailed example of how to use data generators with Keras' (Sequence, "
          "np.load per ID): https://stanford.edu/~shervine/blog/keras-how-to-generate-data-on-the-fly")
PLANTED = ("pydataset_single_worker",)
VERDICT = "input-bound"
EXACT = True

NAME = "sequence_npy"
N, DIM, BATCH = 256, 32, 32
LATENCY_S = 0.002  # per file read: a network disk's latency


def make_data(folder) -> None:
    if done(folder, NAME, n=N, dim=DIM):
        return
    root = Path(folder) / NAME
    root.mkdir(parents=True, exist_ok=True)
    images, labels = pattern_images(N, DIM, seed=2, channels=1)
    for i, img in enumerate(images):
        np.save(root / f"id-{i}.npy", img.astype(np.float32) / 255)
    np.save(root / "labels.npy", labels)
    mark(folder, NAME, n=N, dim=DIM)


def _generator(folder, workers: int):
    import keras

    class DataGenerator(keras.utils.PyDataset):
        """Generates data for Keras (the blog's class, on PyDataset)."""

        def __init__(self, list_ids, labels, batch_size=BATCH, dim=(DIM, DIM), n_channels=1, shuffle=True,
                     **kwargs):
            super().__init__(**kwargs)
            self.dim, self.batch_size, self.labels = dim, batch_size, labels
            self.list_ids, self.n_channels, self.shuffle = list_ids, n_channels, shuffle
            self.rng = np.random.default_rng(0)
            self.on_epoch_end()

        def __len__(self):
            return int(np.floor(len(self.list_ids) / self.batch_size))

        def __getitem__(self, index):
            indexes = self.indexes[index * self.batch_size:(index + 1) * self.batch_size]
            return self.__data_generation([self.list_ids[k] for k in indexes])

        def on_epoch_end(self):
            self.indexes = np.arange(len(self.list_ids))
            if self.shuffle:
                self.rng.shuffle(self.indexes)

        def __data_generation(self, list_ids_temp):
            x = np.empty((self.batch_size, *self.dim, self.n_channels), np.float32)
            y = np.empty((self.batch_size,), dtype=np.int64)
            for i, id_ in enumerate(list_ids_temp):
                time.sleep(LATENCY_S)
                x[i,] = np.load(Path(folder) / NAME / f"{id_}.npy")
                y[i] = self.labels[id_]
            return x, y

    labels = np.load(Path(folder) / NAME / "labels.npy")
    ids = [f"id-{i}" for i in range(N)]
    return DataGenerator(ids, dict(zip(ids, labels.tolist())), workers=workers, use_multiprocessing=False)


def slow(folder):
    return _generator(folder, workers=1)


def fixed(folder, code=None):
    return _generator(folder, workers=4)  # threads: the reads wait on the disk, not on the GIL


def model():
    return dense_model((DIM, DIM, 1))
