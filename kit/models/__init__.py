"""Models of the walkthrough: an audio backbone and head (``audio``), a small U-Net (``unet``) and the
small conv net the demos and benches train (``small_model``). Imports no Keras until one is used.
"""

import importlib

__all__ = ["audio", "unet", "small", "small_model"]


def __getattr__(name):
    if name == "small_model":  # kit.models.small imports Keras: loaded on first use
        return importlib.import_module("kit.models.small").small_model
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), "small_model"])
