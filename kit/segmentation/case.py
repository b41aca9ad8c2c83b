"""The segmentation case declared once for the registry (``kit.cases.registry``)."""

from __future__ import annotations

from pathlib import Path

from kit import samples
from kit.cases.registry import Case, SampleOption, Scale, register
from kit.segmentation.index import PairIndex, Palette
from kit.segmentation.variants import make_loader
from kit.util import positive_int


def _loader(variant: str, csv: Path, index, *, batch_size: int, **options):
    palette = Palette.from_csv(Path(csv).parent / "class_dict.csv")  # the palette lives beside the index
    return make_loader(variant, index, palette, batch_size=batch_size, **options)


#: What the segmentation user reported, model included: 3 epochs of 140 steps of 3 pairs, on one CPU core
#: feeding four GPUs; their DataGenerator ran 8 worker processes, their tf.data map 4 parallel calls.
USER_REPORT = {"epochs": 3, "pairs_per_epoch": 420, "datagenerator_s": 126.0, "tfdata_s": 208.0,
               "cpu_cores": 1, "gpus": 4, "batch_size": 3, "datagenerator_workers": 8, "tfdata_parallel_calls": 4}

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
