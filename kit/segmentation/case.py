"""The segmentation case declared once for the registry (``kit.cases.registry``)."""

from __future__ import annotations

from pathlib import Path

from kit import samples
from kit.cases.registry import Case, SampleOption, Scale, register
from kit.scenario import SEGMENTATION
from kit.segmentation.index import PairIndex, Palette
from kit.segmentation.variants import make_loader
from kit.util import positive_int


def _loader(variant: str, csv: Path, index, *, batch_size: int, **options):
    palette = Palette.from_csv(Path(csv).parent / "class_dict.csv")  # the palette lives beside the index
    return make_loader(variant, index, palette, batch_size=batch_size, **options)


_U = SEGMENTATION
#: What the segmentation user reported (``kit.scenario.SEGMENTATION``, declared there once), model
#: included: 3 epochs of 140 steps of 3 pairs, on one CPU core feeding four GPUs; their DataGenerator
#: ran 8 worker processes, their tf.data map 4 parallel calls.
USER_REPORT = {"epochs": _U.epochs, "pairs_per_epoch": _U.pairs_per_epoch, "datagenerator_s": _U.datagenerator_s,
               "tfdata_s": _U.tfdata_s, "cpu_cores": _U.cores, "gpus": _U.gpus, "batch_size": _U.batch,
               "datagenerator_workers": _U.datagenerator_workers, "tfdata_parallel_calls": _U.tfdata_parallel_calls}

CASE = register(Case(
    name="segmentation",
    unit="pairs",
    description="RGB PNG scenes with colour-coded PNG masks (the segmentation user's data)",
    loaders="kit.segmentation.variants",
    index_columns=frozenset({"image", "label"}),
    open_index=PairIndex.from_csv,
    make_loader=_loader,
    make_samples=samples.make_segmentation,
    sample_options=(
        SampleOption("images", positive_int, "number of image/mask pairs", required=True),
        SampleOption("size", positive_int, "side of the square images in pixels (default 512)", default=512),
    ),
    embedded=samples.DATA_SAMPLES / "segmentation" / "index.csv",
    default_variant="sequence",
    default_batch=3,
    scale=Scale(examples=int(USER_REPORT["pairs_per_epoch"]), replicas=1, global_batch=3),
    model_for=lambda variant: "unet",
    store_kinds=("segmentation",),
))
