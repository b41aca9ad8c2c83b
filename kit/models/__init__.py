"""Models of the walkthrough: the audio backbone and its head (``audio_backbone``, ``audio_head``,
joined by ``transfer_model`` and compiled by ``compile_classifier``; ``cost`` and ``training_flops``
count their work), a small U-Net for the segmentation case (``unet_model``, ``segmentation_loss``)
and the small conv net the demos and benches train (``small_model``). Each loads Keras on its
first use, so that importing this package imports none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kit import lazy_face

if TYPE_CHECKING:
    from kit.models.audio import backbone as audio_backbone
    from kit.models.audio import compile_classifier, cost, training_flops, transfer_model
    from kit.models.audio import head as audio_head
    from kit.models.small import small_model
    from kit.models.unet import segmentation_loss
    from kit.models.unet import unet as unet_model

#: name -> (module, its name there): each module imports Keras, loaded on first use.
_LAZY = {
    "audio_backbone": ("kit.models.audio", "backbone"),
    "audio_head": ("kit.models.audio", "head"),
    "transfer_model": ("kit.models.audio", "transfer_model"),
    "compile_classifier": ("kit.models.audio", "compile_classifier"),
    "cost": ("kit.models.audio", "cost"),
    "training_flops": ("kit.models.audio", "training_flops"),
    "unet_model": ("kit.models.unet", "unet"),
    "segmentation_loss": ("kit.models.unet", "segmentation_loss"),
    "small_model": ("kit.models.small", "small_model"),
}

__all__ = ["audio_backbone", "audio_head", "transfer_model", "compile_classifier", "cost", "training_flops",
           "unet_model", "segmentation_loss", "small_model"]


__getattr__, __dir__ = lazy_face(__name__, _LAZY)
