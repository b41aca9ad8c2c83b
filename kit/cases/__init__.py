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
* ``Case``, ``Scale``, ``SampleOption`` and ``register`` (``kit.cases.registry``): a case declares
  itself once, and every consumer iterates the registry;
* ``check_shards`` (``kit.cases.stores``): the shard checks of a case's stores.

The rest is the kit's own, in its modules: ``kit.cases.pydataset`` (the epoch-reshuffling
``keras.utils.PyDataset`` base; it imports Keras), ``kit.cases.stores`` (the stores' folder naming),
``kit.cases.tfrecords`` (the deep check of a TFRecord shard; it imports TensorFlow).
"""

from kit.cases.index import CsvIndex
from kit.cases.loaders import LoaderOptions, Variant, VariantOptions, build_loader
from kit.cases.registry import Case, SampleOption, Scale, register
from kit.cases.stores import check_shards

__all__ = ["Case", "Scale", "SampleOption", "register", "CsvIndex", "LoaderOptions", "VariantOptions", "Variant",
           "build_loader", "check_shards"]
