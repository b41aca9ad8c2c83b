"""A small U-Net for the segmentation case, and its loss.

Everything is built inside functions, so importing this module does not import
TensorFlow or Keras.

Example:
    >>> model = unet(num_classes=12, input_dtype="uint8")   # normalises on the accelerator
    >>> model.compile("adam", loss=segmentation_loss(ignore_label=None))
"""

from __future__ import annotations

from kit.util import check_int

__all__ = ["unet", "segmentation_loss"]


def unet(num_classes: int, *, input_shape=(None, None, 3), input_dtype: str = "float32", filters: int = 16,
         depth: int = 3, name: str = "unet"):
    """A small U-Net-style model: per-pixel logits ``(B, H, W, num_classes)``.

    Args:
        num_classes: classes of the palette.
        input_shape: ``(H, W, 3)``; H and W must be multiples of ``2 ** depth`` (None: any such size).
        input_dtype: ``"float32"`` for images already in [0, 1]; ``"uint8"`` for raw pixels,
            which the model casts and scales by 1/255 itself, on the accelerator (the
            ``class_index`` loader's default output).
        filters: channels of the first level; each level down doubles them.
        depth: levels of down-sampling.

    Returns:
        An uncompiled ``keras.Model`` whose outputs are logits (use ``from_logits=True``).
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
    """The loss for a loader's ``y``: sparse on class ids, categorical on one-hot masks.

    The two give the same value on the same masks (sparse needs no one-hot tensor:
    it reads the logit of the right class directly). ``ignore_label`` makes the
    sparse loss skip those pixels (averaging over the others); one-hot masks give
    ignored pixels all-zero rows, which add nothing to the categorical loss.
    """
    import keras  # keeps kit.models.unet light: Keras (tests/test_segmentation.py checks it)

    if one_hot:
        return keras.losses.CategoricalCrossentropy(from_logits=True)
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=ignore_label)
