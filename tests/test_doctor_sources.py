"""The doctor's sources: one ``_known_length`` (kit.timing's) for every kind of batch source, what the
doctor's own copy handled (cardinality, len, a PyDataset with no length) and what timing's did
(a PyDataset's ``num_batches``)."""

import numpy as np
import pytest

from kit.doctor.sources import Counted
from kit.timing.batches import known_length as _known_length

X = np.zeros((64, 4), np.float32)


def _pydataset(kind):
    import keras

    class WithLen(keras.utils.PyDataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            return X[i * 8:(i + 1) * 8]

    class WithNumBatches(keras.utils.PyDataset):
        @property
        def num_batches(self):
            return 5

        def __getitem__(self, i):
            return X[i * 8:(i + 1) * 8]

    class Infinite(WithNumBatches):
        @property
        def num_batches(self):
            return None

    class Neither(keras.utils.PyDataset):
        def __getitem__(self, i):
            return X[:8]

    return {"len": WithLen, "num_batches": WithNumBatches, "infinite": Infinite, "neither": Neither}[kind]()


def _tfdata(kind):
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices(X).batch(8)
    return {"finite": ds, "infinite": ds.repeat(), "unknown": ds.filter(lambda x: True)}[kind]


@pytest.mark.parametrize("make, expected", [
    (lambda: _tfdata("finite"), 8),
    (lambda: _tfdata("infinite"), None),
    (lambda: _tfdata("unknown"), None),
    (lambda: _pydataset("len"), 8),
    (lambda: _pydataset("num_batches"), 5),
    (lambda: _pydataset("infinite"), None),
    (lambda: _pydataset("neither"), None),
    (lambda: [X[:8], X[8:16], X[16:]], 3),
    (lambda: (lambda: iter([X])), None),
], ids=["tfdata", "tfdata-repeat", "tfdata-filter", "pydataset-len", "pydataset-num_batches",
        "pydataset-infinite", "pydataset-neither", "list", "generator-function"])
def test_known_length_of_every_source(make, expected):
    source = make()
    assert _known_length(source) == expected
    counted = Counted(source)  # the doctor's view of a source: a length where the source has one
    if expected is None:
        with pytest.raises(TypeError, match="length unknown"):
            len(counted)
        assert _known_length(counted) is None
    else:
        assert len(counted) == expected == _known_length(counted)
