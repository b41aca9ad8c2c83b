"""The segmentation case's loader variants, named without building any: ``VARIANTS``,
``GRAPH_ONLY``, ``default_x_dtype`` and ``make_loader``, whose builders (TensorFlow, Keras,
OpenCV) live in ``kit.segmentation.loaders`` and load on the first ``make_loader`` call, so
that ``import kit.segmentation`` (and ``python -m kit --help``) imports no TensorFlow.
"""

from __future__ import annotations

__all__ = ["make_loader", "VARIANTS", "GRAPH_ONLY", "X_DTYPES", "default_x_dtype"]

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

#: Variants whose pipeline is pure TensorFlow graph (no Python function), what tf.data
#: service can run; ``class_index`` is too with ``format="tfrecord"`` (``kit.segmentation.loaders``
#: checks this against its registry).
GRAPH_ONLY = ("tfdata_naive", "tfdata_tuned")


def default_x_dtype(name: str) -> str:
    """The ``x`` dtype a variant delivers unless told: uint8 for ``class_index``, else float32."""
    return "uint8" if name == "class_index" else "float32"


def make_loader(name: str, index, palette, *, batch_size: int, size=(512, 512),
                shuffle: bool = True, seed: int = 0, workdir=None, x_dtype: str | None = None,
                one_hot: bool = False, progress: bool | str = True, service: str | None = None,
                service_timeout_s: float | None = None, **options):
    """Builds the loader variant ``name`` over ``index``.

    Args:
        name: one of ``VARIANTS``.
        index: a ``PairIndex``.
        palette: the masks' colour code (and ignore label), a ``Palette``.
        batch_size: pairs per batch (the last batch of an epoch may be smaller).
        size: ``(height, width)`` (or one int) every pair is cropped or padded to.
        shuffle: reshuffle every epoch.
        seed: makes the shuffles reproducible.
        workdir: where the ``class_index`` store is built.
        x_dtype: ``"float32"`` or ``"uint8"`` (see the module docstring); default
            ``default_x_dtype(name)``.
        one_hot: masks as one-hot float32.
        progress: show a progress bar while converting.
        service: ``grpc://host:port`` of a tf.data service dispatcher (graph-only pipelines).
        service_timeout_s: with ``service``, the longest wait for one batch before the
            read raises an error naming the dispatcher and the count (default 120 s).
        **options: the variant's own, its options class in ``REGISTRY``:
            ``sequence``/``sequence_workers``: ``workers`` (1 / the usable CPUs),
            ``use_multiprocessing`` (False / True), ``max_queue_size`` (10);
            ``tfdata_naive``: ``parallel_calls`` (4, the user's setting);
            ``class_index``: ``format`` (``"memmap"`` or ``"tfrecord"``), ``folder`` (use this
            store folder), ``shard_mb`` (100), ``shuffle_buffer`` (64, tfrecord), ``check_store``
            (None: a reused store's checksums compared once per change; False skips them);
            ``dali``: ``device`` (``"cpu"``/``"gpu"``, default: a GPU if TensorFlow sees one),
            ``threads`` (DALI's, the usable CPUs), ``parallel_reads`` (AUTOTUNE).

    Returns:
        A ``keras.utils.PyDataset`` for the ``sequence`` variants, else a ``tf.data.Dataset``
        (ending with ``assert_cardinality``, so a short epoch fails loudly). All go
        straight into ``model.fit`` and ``kit.timing.measure``.
    """
    from kit.segmentation import loaders  # keeps kit.segmentation light: TensorFlow, Keras

    return loaders.make_loader(name, index, palette, batch_size=batch_size, size=size, shuffle=shuffle, seed=seed,
                               workdir=workdir, x_dtype=x_dtype, one_hot=one_hot, progress=progress,
                               service=service, service_timeout_s=service_timeout_s, **options)
