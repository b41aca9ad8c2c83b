"""The ``grain`` variant: Google Grain over an ArrayRecord store, the peer a user would pick instead.

Optional (``pip install 'kit[peers]'``: ``grain`` and ``array-record``; ``make test`` installs
them). The pipeline, built the way Grain's documentation builds one:

1. ``convert(index, "arrayrecord")``: the frames in sharded ArrayRecord files, one record a
   frame (its bytes in the store dtype, then its label: ``kit.spectrogram.convert``),
   built once and checked at open like every kit store;
2. ``grain.MapDataset.source(ArrayRecordDataSource(shards))`` (through ``NamedRecords``, whose
   read errors name the shard and the index row); ``.shuffle(seed=...)``: a
   global shuffle, a permutation of every record computed index by index (nothing
   buffered); ``.batch(batch_size, batch_fn=DecodeBatch(...))``: a batch's records
   decoded at once (``np.frombuffer`` with the layout's structured dtype, float16 frames
   cast to float32), the last partial batch kept; ``.repeat()``: endless epochs, each
   shuffled with its own seed (Grain folds the epoch into the shuffle's seed);
3. read through ``to_iter_dataset(grain.ReadOptions(num_threads=threads,
   prefetch_buffer_size=prefetch))``: ``threads`` threads each read and decode a whole
   batch, ``prefetch`` batches ahead; with ``processes`` > 0, then
   ``mp_prefetch(grain.MultiprocessingOptions(num_workers=processes))``.

``make_loader("grain", ...)`` returns a ``GrainLoader``, a ``grain.IterDataset`` whose every
iteration is the next epoch (a slice of the endless dataset): ``kit.timing.measure``,
``kit.timing.batches.iterate`` and ``model.fit(loader, epochs=...)`` each see every frame once an
epoch, in a new order every epoch. Its iterators (``EpochIterator``) save and restore their
position with Grain's ``get_state``/``set_state``, and inside a ``tf.train.Checkpoint``
(``kit.epochs.iterator_checkpoint``, ``kit.timing.fitting.fit(checkpoint_dir=...)``) as the kit's
tf.data loaders do.

The fit pitfall: Keras's Grain adapter (``keras.src.trainers.data_adapters.grain_dataset_adapter``,
for a ``MapDataset``, ``IterDataset`` or ``DataLoader``) iterates what it is given afresh at
every epoch when ``steps_per_epoch`` is not set. A plain ``MapDataset``
(``source.shuffle(seed).batch(...)``, ``GrainLoader.one_epoch``) starts again from its index 0,
which is the same order every epoch. Grain's own answer is ``.repeat()`` with
``steps_per_epoch``: ``model.fit(loader.endless(), steps_per_epoch=loader.steps_per_epoch,
epochs=...)``, one iterator across the epochs (``mp_prefetch``'s processes started once).
The loader itself, a new epoch at every iteration, is right without either:
``model.fit(loader, epochs=...)``, never with ``steps_per_epoch`` (Keras then keeps one
iterator across the epochs, and the second epoch finds it spent: epochs of 96, 0 and 96
frames on the embedded sample, as for the kit's tf.data loaders). Keras warns "Your input
ran out of data; interrupting training" at the end of each epoch of a finite Grain dataset
(its adapter does not know the epoch's length); the epochs are whole all the same
(tests/test_spectrogram_grain.py counts them). The endless form gives no such warning.
"""

from __future__ import annotations

from kit.spectrogram.grain_options import GrainOptions
from kit.spectrogram.peers import require


def _pipeline():
    """``kit.spectrogram.grain_loader`` (Grain's subclasses and the pipeline), once ``require``
    has said what to install where the peers extra is missing."""
    require("the grain variant")
    from kit.spectrogram import grain_loader  # optional extra: grain

    return grain_loader


def make_grain(index, opts, vopts: GrainOptions):
    """The ``grain`` loader over ``index`` (see the module docstring), a
    ``kit.spectrogram.grain_loader.GrainLoader``: ``index`` the ``FrameIndex``, ``opts`` the
    ``LoaderOptions``, ``vopts`` the variant's ``GrainOptions``."""
    return _pipeline().make_grain(index, opts, vopts)
