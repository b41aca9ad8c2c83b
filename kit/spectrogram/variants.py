"""The spectrogram case's loader variants, named without building any: ``VARIANTS``,
``GRAPH_ONLY`` and ``make_loader``, whose builders (TensorFlow, Keras) live in
``kit.spectrogram.loaders`` and load on the first ``make_loader`` call, so that
``import kit.spectrogram`` (and ``python -m kit --help``) imports no TensorFlow.
"""

from __future__ import annotations

from typing import Any, Callable

#: name -> one-line description, from the user's generator (the floor) to all data in RAM (the
#: ceiling); ``kit.spectrogram.loaders.REGISTRY`` holds their builders.
VARIANTS = {
    "generator": "the user's pattern: a Python generator that np.loads a whole file for every frame",
    "pydataset": "keras.utils.PyDataset reading frames by memory map (workers, use_multiprocessing)",
    "numpy_function": "tf.data with a per-frame tf.numpy_function, parallel map, prefetch (GIL-bound)",
    "memmap": "frames consolidated once into one memory-mapped .npy; one sorted gather per batch in the graph",
    "tfrecord_guide": "TensorFlow's guide: a tf.train.Example per frame in TFRecord shards, parallel "
                      "interleaved reads, a shuffle buffer, batch then a vectorised parse_example, prefetch",
    "tfrecord": "TFRecord shards of records of 32 frames, read by TFRecordDataset in parallel, the records "
                "shuffled, a batch of records decoded at once",
    "grain": "Google Grain over ArrayRecord shards (optional, the peers extra): a global shuffle per "
             "epoch, a batch's records decoded at once in NumPy, read by threads (default: the usable "
             "CPUs), no processes (processes=N: mp_prefetch)",
    "in_memory": "all frames in RAM, one gather per batch: the ceiling",
}

#: Variants whose pipeline is pure TensorFlow graph (no Python function): what tf.data service
#: can run (``kit.spectrogram.loaders`` checks this against its registry).
GRAPH_ONLY = ("tfrecord_guide", "tfrecord", "in_memory")


def make_loader(name: str, index, *, batch_size: int, shuffle: bool = True, seed: int = 0,
                workdir=None, progress: bool | str = True, service: str | None = None,
                service_timeout_s: float | None = None, **options):
    """Builds the loader variant ``name`` over ``index``.

    Args:
        name: one of ``VARIANTS``.
        index: a ``FrameIndex``.
        batch_size: examples per batch (the last batch of an epoch may be smaller).
        shuffle: reshuffle every epoch.
        seed: makes the shuffles reproducible (where the variant allows it).
        workdir: where derived stores (memmap, TFRecord shards) are built.
        progress: show a progress bar while converting.
        service: ``grpc://host:port`` of a tf.data service dispatcher, for variants
            in ``GRAPH_ONLY``.
        service_timeout_s: with ``service``, the longest wait for one batch before the
            read raises an error naming the dispatcher and the count (default 120 s).
        **options: the variant's own, its options class in ``REGISTRY``:
            ``pydataset``: ``workers`` (1), ``use_multiprocessing`` (False), ``max_queue_size`` (10);
            ``memmap``: ``folder`` (use this store folder), ``store_dtype`` ("float32"),
            ``check_store`` (None: checksums of a reused store compared once per change,
            unless ``$KIT_CHECK_STORES=0``; False skips them),
            ``order`` ("random" or "blocks"), ``block_frames`` (256), ``window_blocks`` (32);
            ``tfrecord_guide``: ``folder``, ``store_dtype``, ``check_store``, ``shard_mb`` (100),
            ``shuffle_buffer`` (4096 frames), see ``GuideOptions``;
            ``tfrecord``: ``folder``, ``store_dtype``, ``check_store``, ``shard_mb`` (100), ``record_frames`` (32),
            ``shuffle_buffer`` (4096 frames), ``cycle_length`` (4);
            ``grain`` (optional: the peers extra): ``folder``, ``store_dtype``, ``check_store``,
            ``shard_mb`` (100), ``threads`` (None: the usable CPUs), ``processes`` (0: no
            ``mp_prefetch``), ``prefetch`` (None: 2 batches per thread), see ``GrainOptions``.

    Returns:
        A ``tf.data.Dataset`` for every variant but ``pydataset`` (a ``keras.utils.PyDataset``)
        and ``grain`` (a ``kit.spectrogram.grain_loader.GrainLoader``, a ``grain.IterDataset`` whose
        every iteration is the next epoch). All go straight into ``model.fit`` and
        ``kit.timing.measure``.
    """
    from kit.spectrogram import loaders  # keeps kit.spectrogram light: TensorFlow, Keras

    return loaders.make_loader(name, index, batch_size=batch_size, shuffle=shuffle, seed=seed, workdir=workdir,
                               progress=progress, service=service, service_timeout_s=service_timeout_s, **options)


def pipeline_source(name: str) -> str:
    """The code the variant ``name`` runs, as the kit runs it: a learner can paste it (``tfrecord``:
    the pipeline, then the decode of a batch of records; ``tfrecord_guide``: the same for the guide)."""
    import inspect

    from kit.spectrogram.convert import decode_records, parse_examples
    from kit.spectrogram.loaders import _tfrecord_guide, tfrecord_pipeline

    parts: dict[str, list[Callable[..., Any]]] = {"tfrecord": [tfrecord_pipeline, decode_records],
                                                  "tfrecord_guide": [_tfrecord_guide, parse_examples]}
    if name not in parts:
        raise ValueError(f"no source shown for {name!r}; choose one of {', '.join(parts)}")
    return "\n\n".join(inspect.getsource(f) for f in parts[name])
