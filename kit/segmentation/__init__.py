"""Segmentation case (seed 004): 512x512 PNG images with colour-coded PNG masks: the validated pairs
and palette (``PairIndex``, ``Palette``), every loader variant (``make_loader``), the class-index
conversion (``convert``), per-stage costs (``profile``, imports TensorFlow) and the DALI peer (``dali``).
"""

from kit.segmentation.case import USER_REPORT
from kit.segmentation.convert import convert
from kit.segmentation.index import PairIndex, Palette
from kit.segmentation.variants import GRAPH_ONLY, VARIANTS, default_x_dtype, make_loader

__all__ = ["PairIndex", "Palette", "make_loader", "VARIANTS", "GRAPH_ONLY", "convert", "USER_REPORT",
           "profile", "dali",
           # what the kit's other packages call through this one
           "default_x_dtype"]
