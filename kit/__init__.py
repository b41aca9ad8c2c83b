"""kit: find and remove the data-input bottleneck in TensorFlow/Keras training.

Import what you use: ``from kit import samples, timing, spectrogram``. Importing
``kit`` itself does no work: it sets no seeds or devices and imports no TensorFlow.
"""

__version__ = "0.1.0"
__all__ = ["samples", "timing", "plots", "store", "cases", "spectrogram", "segmentation", "features", "models",
           "distribute", "epochs", "notebook", "util", "errors", "results", "doctor", "bench", "report",
           "cache", "progress"]
