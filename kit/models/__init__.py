"""Models used by the walkthrough: an audio backbone and head (spectrogram case) and a
small U-Net (segmentation case), and the small conv net the demos and benches
train (``small_model``). Each lives in its own module; TensorFlow is imported
only when a model is built.
"""

from kit.models.small import small_model

__all__ = ["audio", "unet", "small", "small_model"]
