"""The segmentation case's loader variants, named without building any: their builders live in
``kit.segmentation.loaders`` (TensorFlow, Keras, OpenCV), loaded on the first ``make_loader`` call.
"""

from __future__ import annotations

X_DTYPES = ("float32", "uint8")

#: name -> one-line description (``kit.segmentation.loaders.REGISTRY`` holds their builders).
VARIANTS = {
    "sequence": "the user's DataGenerator: keras PyDataset, one worker; OpenCV decode, float "
                "conversion, a loop over the palette colours per mask (the baseline)",
    "sequence_workers": "the same PyDataset with workers (default: the usable CPUs) and use_multiprocessing",
    "tfdata_naive": "the user's tf.data rewrite: decode_png, convert_image_dtype, an equal/reduce_all "
                    "per palette colour in the graph, map with 4 parallel calls, batch",
    "tfdata_tuned": "tf.data: native decode, one vectorised palette lookup (no colour loop), uint8 "
                    "until a per-batch cast, parallel map, prefetch",
    "class_index": "converted once: uint8 images and class-index maps in memmap (or TFRecord) shards, "
                   "one vectorised read per batch; normalisation (and one-hot) in the model",
    "dali": "NVIDIA DALI (optional, the dali extra): decode and a two-table palette lookup in a DALI "
            "pipeline (on the GPU when there is one), uint8 into TensorFlow through DALIDataset",
}

#: Variants whose pipeline is pure TensorFlow graph, which tf.data service can run (``class_index``
#: too with ``format="tfrecord"``).
GRAPH_ONLY = ("tfdata_naive", "tfdata_tuned")


def default_x_dtype(name: str) -> str:
    """The ``x`` dtype a variant delivers unless told: uint8 for ``class_index``, else float32."""
    return "uint8" if name == "class_index" else "float32"


def make_loader(name: str, index, palette, *, batch_size: int, size=(512, 512),
                shuffle: bool = True, seed: int = 0, workdir=None, x_dtype: str | None = None,
                one_hot: bool = False, progress: bool | str = True, service: str | None = None,
                service_timeout_s: float | None = None, **options):
    """Builds the loader variant ``name`` (one of ``VARIANTS``) over ``index``.

    Args:
        index, palette: a ``PairIndex`` and the masks' ``Palette``.
        batch_size: pairs per batch (the last batch of an epoch may be smaller).
        size: ``(height, width)`` (or one int) every pair is cropped or padded to.
        shuffle, seed: reshuffle every epoch, reproducibly.
        workdir: where the ``class_index`` store is built.
        x_dtype: ``"float32"`` or ``"uint8"``; default ``default_x_dtype(name)``.
        one_hot: masks as one-hot float32.
        progress: show a progress bar while converting.
        service: ``grpc://host:port`` of a tf.data service dispatcher (graph-only pipelines).
        service_timeout_s: with ``service``, the longest wait for one batch (default 120 s).
        **options: the variant's own (its options class in ``kit.segmentation.loaders.REGISTRY``):
            ``sequence``/``sequence_workers``: ``workers``, ``use_multiprocessing``, ``max_queue_size``;
            ``tfdata_naive``: ``parallel_calls`` (4, the user's); ``class_index``: ``format``,
            ``folder``, ``shard_mb``, ``shuffle_buffer``, ``check_store``; ``dali``: ``device``,
            ``threads``, ``parallel_reads``.

    Returns:
        A ``keras.utils.PyDataset`` for the ``sequence`` variants, else a ``tf.data.Dataset``
        (ending with ``assert_cardinality``, so a short epoch fails loudly).
    """
    from kit.segmentation import loaders  # keeps kit.segmentation light: TensorFlow, Keras

    return loaders.make_loader(name, index, palette, batch_size=batch_size, size=size, shuffle=shuffle, seed=seed,
                               workdir=workdir, x_dtype=x_dtype, one_hot=one_hot, progress=progress,
                               service=service, service_timeout_s=service_timeout_s, **options)
