"""Models used by the walkthrough: an audio backbone and head (spectrogram case) and a
small U-Net (segmentation case). Each lives in its own module; TensorFlow is imported
only when a model is built.
"""
