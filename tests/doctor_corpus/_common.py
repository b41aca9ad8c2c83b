"""What the corpus cases share: generated data (PNG images in class folders, .npy files, TFRecords),
small compiled models, and a marker file that makes ``make_data`` idempotent."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

CLASSES = 4


def done(folder: Path, name: str, **info) -> bool:
    """Whether ``name``'s data, made with ``info`` (its sizes), is already in ``folder`` (the marker is
    written last, so an interrupted ``make_data`` starts again)."""
    marker = Path(folder) / name / ".done"
    return marker.exists() and json.loads(marker.read_text()) == json.loads(json.dumps(info))


def mark(folder: Path, name: str, **info) -> None:
    """Writes ``name``'s marker: its data, made with ``info``, is complete."""
    (Path(folder) / name / ".done").write_text(json.dumps(info))


def pattern_images(n: int, size: int, *, seed: int, channels: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """``n`` uint8 images of ``size`` x ``size`` whose class (0..CLASSES-1) shows as a stripe pattern,
    plus noise (so PNGs do not compress to nothing), and their labels."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % CLASSES
    yy, xx = np.mgrid[0:size, 0:size]
    images = np.empty((n, size, size, channels), np.uint8)
    for i, k in enumerate(labels):
        base = 127 + 100 * np.sin((xx * (k + 1) + yy * (CLASSES - k)) / 4.0)
        noise = rng.normal(0, 30, (size, size, channels))
        images[i] = np.clip(base[..., None] + noise, 0, 255).astype(np.uint8)
    return images, labels.astype(np.int64)


def write_png_folders(root: Path, images: np.ndarray, labels: np.ndarray) -> list[Path]:
    """One PNG per image under ``root/class_<k>/``, named so that sorted order is the image order."""
    from PIL import Image

    paths = []
    for i, (img, k) in enumerate(zip(images, labels)):
        path = Path(root) / f"class_{k}" / f"img_{i:05d}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(img).save(path)
        paths.append(path)
    return paths


def conv_model(shape, *, filters: int = 8, classes: int = CLASSES, rescale: bool = True, seed: int = 0,
               strides: int = 2, second: int = 0):
    """A small compiled conv net: (Rescaling) Conv2D [Conv2D] GlobalAveragePooling Dense (``strides=1``:
    the convolution at full resolution, about four times the step's work; ``second``: the filters of a
    second 3x3 convolution after the first, 0 for none)."""
    import keras

    keras.utils.set_random_seed(seed)
    layers = [keras.Input(shape)]
    if rescale:
        layers.append(keras.layers.Rescaling(1 / 255))
    layers.append(keras.layers.Conv2D(filters, 3, strides=strides, activation="relu"))
    if second:
        layers.append(keras.layers.Conv2D(second, 3, activation="relu"))
    layers += [keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(classes)]
    model = keras.Sequential(layers)
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def dense_model(shape, *, width: int = 32, classes: int = CLASSES, seed: int = 0):
    """A small compiled MLP: Flatten Dense(width) Dense(classes)."""
    import keras

    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input(shape), keras.layers.Flatten(),
                              keras.layers.Dense(width, activation="relu"), keras.layers.Dense(classes)])
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def pooled_model(shape, *, pool: int = 8, classes: int = CLASSES, rescale: bool = True, seed: int = 0):
    """A cheap compiled model for input-bound cases: (Rescaling) AveragePooling2D Flatten Dense."""
    import keras

    keras.utils.set_random_seed(seed)
    layers = [keras.Input(shape)] + ([keras.layers.Rescaling(1 / 255)] if rescale else [])
    layers += [keras.layers.AveragePooling2D(pool), keras.layers.Flatten(), keras.layers.Dense(classes)]
    model = keras.Sequential(layers)
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model
