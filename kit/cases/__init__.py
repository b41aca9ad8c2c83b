"""What every case shares, so that a case holds only what differs.

A case (``kit.spectrogram``, ``kit.segmentation``, or a third one) is a folder of
three small modules: its index (a ``CsvIndex`` with its columns and validation), its
conversion (what a derived store holds, through ``kit.store``) and its loaders (the
variant builders, each a ``Variant`` in the case's registry, built by
``build_loader``). This package holds the rest:

* ``CsvIndex``: the validation preamble of an index CSV, its content key
  (``fingerprint``), ``subset`` and ``of_split``;
* ``LoaderOptions`` (the options every variant takes) and ``VariantOptions`` (typed,
  validated options of one variant; an unknown option is one clear error);
* ``Variant`` and ``build_loader``: one registry entry per variant, one function
  that builds any of them, checks that tf.data service can run it, and records the
  exact example count (``kit.epochs.epoch_of``);
* ``EpochPyDataset`` (``epoch_pydataset()`` returns it) / ``pydataset_class``: the
  epoch-reshuffling ``keras.utils.PyDataset`` base, and a class on it from a mixin with its
  ``load`` (``kit.cases.pydataset`` imports Keras: loaded on first use of these names);
* ``check_shards`` / ``store_folder`` / ``shard_tags`` (``kit.cases.stores``): the shard
  checks and the stores' folder naming; ``kit.cases.tfrecords.check_tfrecord_shard``, the
  deep check of a TFRecord shard (it imports TensorFlow).
"""

import importlib

from kit.cases.index import CsvIndex
from kit.cases.loaders import LoaderOptions, NoOptions, Variant, VariantOptions, build_loader, graph_only
from kit.cases.stores import check_shards, shard_tags, store_folder

__all__ = ["LoaderOptions", "VariantOptions", "Variant", "build_loader", "check_shards",
           # what the kit's other packages call through this one
           "CsvIndex", "NoOptions", "graph_only", "shard_tags", "store_folder"]

#: Names of ``kit.cases.pydataset`` (it imports Keras): loaded on first use, so that importing
#: this package imports no Keras.
_PYDATASET = ("EpochPyDataset", "epoch_pydataset", "pydataset_class")


def __getattr__(name):
    if name in _PYDATASET:
        return getattr(importlib.import_module("kit.cases.pydataset"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_PYDATASET])
