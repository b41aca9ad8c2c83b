"""Spectrogram case (the spectrogram user): a million one-second frames in many ``.npy`` files.

Public face:
    FrameIndex: the validated index (``FrameIndex.from_csv``).
    make_loader, VARIANTS, GRAPH_ONLY: every loader variant, built by one function;
        pipeline_source(name): the code a taught variant runs (tfrecord, tfrecord_guide).
    convert: frames into a memmap, TFRecord or (the peers extra) ArrayRecord store (atomic,
        resumable, verified).
    The user's layout (notebook 01): USER_REPORT (their 40 hours), sample_layout, measure_layout,
        read_amplification, fit_layouts, layout_reaching, layout_epochs: the generator's epoch
        against frames per file, and the layout that reaches the user's epoch.
    The tf.data guide's ladder, one change per rung (notebook 02): make_ladder, LADDER_RUNGS,
        LADDER_CHANGES, ladder_source, ladder_steps, ladder_reading.
    The order a loader delivers, read back from the frames (notebooks 03, 03b): frame_digests,
        epoch_rows, order_quality, fit_orders, order_randomness, epoch_orders; the read orders timed cold
        and warm (notebook 03b): ORDER_LOADERS, read_cold_and_warm, order_why.
    grain_available(): None where the Grain peer can run, else why not.
    The frozen-backbone feature cache (notebooks 07, 08): extract_features (a FeatureCache),
        feature_cache_key, head_loader, train_head, evaluate_head, embedding_stats; compare_transfer:
        the head trained three ways (generator, fastest loader, cached features) in interleaved rounds,
        what ``python -m kit bench transfer`` runs.
    default_data: the default sample data (200 files x 100 frames) in the kit cache, made once.

The names of the modules that import TensorFlow or Keras load on first use, so that
``import kit.spectrogram`` imports neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kit import lazy_face
from kit.spectrogram.convert import convert
from kit.spectrogram.index import FrameIndex
from kit.spectrogram.peers import available as grain_available
from kit.spectrogram.variants import GRAPH_ONLY, VARIANTS, make_loader, pipeline_source

if TYPE_CHECKING:
    from kit.spectrogram.case import USER_REPORT, default_data
    from kit.spectrogram.features import (
        FeatureCache,
        embedding_stats,
        evaluate_head,
        extract_features,
        head_loader,
        train_head,
    )
    from kit.spectrogram.features import cache_key as feature_cache_key
    from kit.spectrogram.ladder import CHANGES as LADDER_CHANGES
    from kit.spectrogram.ladder import RUNGS as LADDER_RUNGS
    from kit.spectrogram.ladder import ladder as make_ladder
    from kit.spectrogram.ladder import reading as ladder_reading
    from kit.spectrogram.ladder import source as ladder_source
    from kit.spectrogram.ladder import steps as ladder_steps
    from kit.spectrogram.layouts import amplification as read_amplification
    from kit.spectrogram.layouts import epoch_table as layout_epochs
    from kit.spectrogram.layouts import fit as fit_layouts
    from kit.spectrogram.layouts import measure as measure_layout
    from kit.spectrogram.layouts import reaching as layout_reaching
    from kit.spectrogram.layouts import sample as sample_layout
    from kit.spectrogram.order import (
        ORDER_LOADERS,
        epoch_orders,
        epoch_rows,
        fit_orders,
        frame_digests,
        order_quality,
        order_randomness,
        order_why,
        read_cold_and_warm,
    )
    from kit.spectrogram.transfer import compare_transfer
    from kit.spectrogram.user import UserEpochs, user_epochs

#: name -> (module, its name there), loaded on first use (the modules import TensorFlow or Keras).
_LAZY = {
    "USER_REPORT": ("kit.spectrogram.case", "USER_REPORT"),
    "default_data": ("kit.spectrogram.case", "default_data"),
    "user_epochs": ("kit.spectrogram.user", "user_epochs"),
    "UserEpochs": ("kit.spectrogram.user", "UserEpochs"),
    **{name: ("kit.spectrogram.layouts", attr) for name, attr in [
        ("sample_layout", "sample"), ("measure_layout", "measure"), ("read_amplification", "amplification"),
        ("fit_layouts", "fit"), ("layout_reaching", "reaching"), ("layout_epochs", "epoch_table")]},
    **{name: ("kit.spectrogram.ladder", attr) for name, attr in [
        ("make_ladder", "ladder"), ("LADDER_RUNGS", "RUNGS"), ("LADDER_CHANGES", "CHANGES"),
        ("ladder_source", "source"), ("ladder_steps", "steps"), ("ladder_reading", "reading")]},
    **{name: ("kit.spectrogram.order", name) for name in [
        "frame_digests", "epoch_rows", "order_quality", "fit_orders", "order_randomness", "epoch_orders",
        "ORDER_LOADERS", "read_cold_and_warm", "order_why"]},
    **{name: ("kit.spectrogram.features", attr) for name, attr in [
        ("FeatureCache", "FeatureCache"), ("extract_features", "extract_features"),
        ("feature_cache_key", "cache_key"), ("head_loader", "head_loader"), ("train_head", "train_head"),
        ("evaluate_head", "evaluate_head"), ("embedding_stats", "embedding_stats")]},
    "compare_transfer": ("kit.spectrogram.transfer", "compare_transfer"),
}

__all__ = ["FrameIndex", "make_loader", "VARIANTS", "GRAPH_ONLY", "pipeline_source", "convert", "default_data",
           # the user's layout (notebook 01)
           "USER_REPORT", "user_epochs", "UserEpochs", "sample_layout", "measure_layout", "read_amplification", "fit_layouts", "layout_reaching",
           "layout_epochs",
           # the tf.data guide's ladder (notebook 02)
           "make_ladder", "LADDER_RUNGS", "LADDER_CHANGES", "ladder_source", "ladder_steps", "ladder_reading",
           # the order a loader delivers (notebooks 03, 03b)
           "frame_digests", "epoch_rows", "order_quality", "fit_orders", "order_randomness", "epoch_orders",
           "ORDER_LOADERS", "read_cold_and_warm", "order_why",
           "grain_available",
           # the frozen-backbone feature cache (notebooks 07, 08)
           "FeatureCache", "extract_features", "feature_cache_key", "head_loader", "train_head", "evaluate_head",
           "embedding_stats", "compare_transfer"]


__getattr__, __dir__ = lazy_face(__name__, _LAZY)
