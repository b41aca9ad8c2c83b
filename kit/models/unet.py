"""A small U-Net for the segmentation case, and its loss (Keras imported only when built).

Example:
    >>> model = unet(num_classes=12, input_dtype="uint8")   # normalises on the accelerator
    >>> model.compile("adam", loss=segmentation_loss(ignore_label=None))
"""

from __future__ import annotations

from kit.util import check_int


def unet(num_classes: int, *, input_shape=(None, None, 3), input_dtype: str = "float32", filters: int = 16,
         depth: int = 3, name: str = "unet"):
    """A small U-Net-style model: per-pixel logits ``(B, H, W, num_classes)``, uncompiled.

    Args:
        num_classes: classes of the palette.
        input_shape: ``(H, W, 3)``; H and W multiples of ``2 ** depth`` (None: any such size).
        input_dtype: ``"float32"`` for images in [0, 1]; ``"uint8"`` for raw pixels, which the model
            scales itself, on the accelerator (the ``class_index`` loader's default).
        filters: channels of the first level; each level down doubles them.
        depth: levels of down-sampling.
    """
    import keras  # keeps kit.models.unet light: Keras (tests/test_segmentation.py checks it)

    if input_dtype not in ("float32", "uint8"):
        raise ValueError(f"input_dtype must be 'float32' or 'uint8', got {input_dtype!r}")
    for name, value in (("num_classes", num_classes), ("filters", filters), ("depth", depth)):
        check_int(name, value)
    layers = keras.layers

    def block(x, f, tag):
        x = layers.Conv2D(f, 3, padding="same", activation="relu", name=f"{tag}_conv1")(x)
        return layers.Conv2D(f, 3, padding="same", activation="relu", name=f"{tag}_conv2")(x)

    inputs = keras.Input(input_shape, dtype=input_dtype, name="image")
    x = inputs
    if input_dtype == "uint8":
        x = layers.Rescaling(1.0 / 255, name="normalise")(x)  # casts to float32, then scales
    skips = []
    for d in range(depth):
        x = block(x, filters * 2 ** d, f"down{d}")
        skips.append(x)
        x = layers.MaxPooling2D(name=f"pool{d}")(x)
    x = block(x, filters * 2 ** depth, "bottom")
    for d in reversed(range(depth)):
        x = layers.Conv2DTranspose(filters * 2 ** d, 2, strides=2, name=f"up{d}")(x)
        x = layers.Concatenate(name=f"skip{d}")([x, skips[d]])
        x = block(x, filters * 2 ** d, f"dec{d}")
    outputs = layers.Conv2D(num_classes, 1, name="logits")(x)
    return keras.Model(inputs, outputs, name=name)


def segmentation_loss(*, one_hot: bool = False, ignore_label: int | None = None):
    """The loss for a loader's ``y``: sparse on class ids (skipping ``ignore_label`` pixels),
    categorical on one-hot masks (whose ignored pixels are all-zero rows): the same value."""
    import keras  # keeps kit.models.unet light: Keras (tests/test_segmentation.py checks it)

    if one_hot:
        return keras.losses.CategoricalCrossentropy(from_logits=True)
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=ignore_label)
