"""Models used by the walkthrough: an audio backbone and head (spectrogram case) and a
small U-Net (segmentation case), and the small conv net the demos and benches
train (``small_model``). Each lives in its own module, which imports Keras at its top; this
package imports none of them until a name of one is used (``small_model``, or the module).
"""

import importlib

__all__ = ["audio", "unet", "small", "small_model"]


def __getattr__(name):
    if name == "small_model":  # kit.models.small imports Keras: loaded on first use
        return importlib.import_module("kit.models.small").small_model
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), "small_model"])
