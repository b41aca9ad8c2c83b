"""Segmentation case (seed 004): 512x512 PNG images with colour-coded PNG masks.

Public face:
    PairIndex, Palette: the validated pairs (``PairIndex.from_csv``) and the masks'
        colour code (``Palette.from_csv`` of a CamVid-style ``class_dict.csv``).
    make_loader, VARIANTS: every loader variant, built by one function.
    convert: pairs decoded once into uint8 class-index shards (atomic, resumable, verified).
    USER_REPORT: what the user reported (3 epochs: 126 s with their DataGenerator, 208 s with tf.data).
    profile (module): what one pair costs in each stage (imports OpenCV and TensorFlow).
    dali (module): the DALI peer (``dali.available()`` says why not where it is missing).
"""

from kit.segmentation.case import USER_REPORT
from kit.segmentation.convert import convert
from kit.segmentation.index import PairIndex, Palette
from kit.segmentation.variants import GRAPH_ONLY, VARIANTS, default_x_dtype, make_loader

__all__ = ["PairIndex", "Palette", "make_loader", "VARIANTS", "GRAPH_ONLY", "convert", "USER_REPORT",
           "profile", "dali",
           # what the kit's other packages call through this one
           "default_x_dtype"]
