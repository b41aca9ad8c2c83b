"""Segmentation case (the segmentation user): 512x512 PNG images with colour-coded PNG masks: the validated pairs
and palette (``PairIndex``, ``Palette``), every loader variant (``make_loader``), the class-index
conversion (``convert``), what each stage of a pair costs (``stage_costs``, added up per variant by
``pipeline_costs``; they import TensorFlow and OpenCV, loaded on first use), the loaders measured on ONE
CPU core as the user ran them (``one_core``: a pinned child process) and whether the DALI peer can run
here (``dali_available``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kit import lazy_face
from kit.segmentation.case import USER_REPORT
from kit.segmentation.convert import convert
from kit.segmentation.index import PairIndex, Palette
from kit.segmentation.variants import GRAPH_ONLY, VARIANTS, make_loader

if TYPE_CHECKING:
    from kit.segmentation.dali import available as dali_available
    from kit.segmentation.pinned import one_core
    from kit.segmentation.profile import pipeline_costs, stage_costs

#: name -> (module, its name there), loaded on first use: ``profile`` imports TensorFlow and OpenCV.
_LAZY = {
    "stage_costs": ("kit.segmentation.profile", "stage_costs"),
    "pipeline_costs": ("kit.segmentation.profile", "pipeline_costs"),
    "dali_available": ("kit.segmentation.dali", "available"),
    "one_core": ("kit.segmentation.pinned", "one_core"),
}

__all__ = ["PairIndex", "Palette", "make_loader", "VARIANTS", "GRAPH_ONLY", "convert", "USER_REPORT", "stage_costs",
           "pipeline_costs", "one_core", "dali_available"]


__getattr__, __dir__ = lazy_face(__name__, _LAZY)
