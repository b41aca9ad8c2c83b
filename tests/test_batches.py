"""kit.timing.batches: reading any source batch by batch, a PyDataset through Keras's private adapter."""

import numpy as np

from kit.timing import batches


def test_keras_private_pydataset_adapter_is_where_kit_expects():
    """kit.timing reads a PyDataset through Keras's private PyDatasetAdapter: a Keras upgrade
    that moves it fails here, by name, rather than deep inside a measurement."""
    import keras

    adapter = batches.pydataset_adapter()
    for method in ("on_epoch_begin", "get_numpy_iterator", "on_epoch_end"):
        assert callable(getattr(adapter, method, None)), f"Keras {keras.__version__}: PyDatasetAdapter.{method} moved"

    class Two(keras.utils.PyDataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return np.full((3, 2), i, np.float32), np.zeros(3)

    got = [int(x[0, 0]) for x, _ in batches.iterate(Two())]
    assert got == [0, 1]
