"""kit.models: the YAMNet-sized audio backbone and its transfer model; the U-Net and its losses."""


import numpy as np
import pytest
from helpers import SIZE, seg_load

from kit.models import audio
from kit.segmentation import Palette
from kit.spectrogram import features


def test_backbone_has_yamnet_size():
    b = audio.backbone()
    c = audio.cost(b)
    assert b.input_shape[1:] == (96, 64, 1) and b.output_shape[1:] == (1024,)
    # YAMNet: 3.75 M weights and 69.2 M multiply-adds with its 521-class layer
    # (1024 * 521 + 521 weights, 1024 * 521 multiply-adds), which the backbone leaves out.
    assert c.params == 3_751_369 - (1024 * 521 + 521) == 3_217_344
    assert c.macs == 69_165_056 - 1024 * 521 == 68_631_552
    assert c.flops == 2 * c.macs
    assert "3.22 M parameters" in str(c)


def test_transfer_model_trains_only_the_head(small):
    t = audio.transfer_model(small, audio.head(5, embedding_dim=256))
    c = audio.cost(t)
    assert c.trainable_params == 256 * 5 + 5
    assert c.params == audio.cost(small).params + 256 * 5 + 5
    assert not small.trainable


def test_weights_are_seeded_or_loaded_from_a_local_file(small, tmp_path):
    same = audio.backbone(alpha=0.25, seed=0)
    other = audio.backbone(alpha=0.25, seed=1)
    key = features.weights_fingerprint(small)
    assert features.weights_fingerprint(same) == key  # automatic names differ, the key does not
    assert features.weights_fingerprint(other) != key
    path = tmp_path / "b.weights.h5"
    other.save_weights(path)
    loaded = audio.backbone(path, alpha=0.25, seed=0)
    assert features.weights_fingerprint(loaded) == features.weights_fingerprint(other)
    with pytest.raises(FileNotFoundError, match="missing.weights.h5"):
        audio.backbone(tmp_path / "missing.weights.h5")


def test_sparse_loss_on_ids_equals_categorical_loss_on_one_hot(index, palette, tmp_path):
    from kit.models.unet import segmentation_loss, unet

    model = unet(palette.num_classes, input_dtype="uint8", filters=4, depth=2)
    x, ids = next(iter(seg_load("tfdata_tuned", index, palette, tmp_path, shuffle=False, x_dtype="uint8")))
    _, one_hot = next(iter(seg_load("tfdata_tuned", index, palette, tmp_path, shuffle=False, x_dtype="uint8",
                                 one_hot=True)))
    logits = model(x)
    sparse = float(segmentation_loss()(ids, logits))
    dense = float(segmentation_loss(one_hot=True)(one_hot, logits))
    assert sparse == pytest.approx(dense, rel=1e-6)
    # With an ignore label: ignored pixels add nothing to either; the sparse loss
    # averages over the others, so its sum equals the categorical sum.
    ids2 = np.array(ids)
    ids2[0, :5] = 255
    oh2 = Palette.one_hot(palette, ids2)
    assert (oh2[0, :5] == 0).all()
    sparse_mean = float(segmentation_loss(ignore_label=255)(ids2, logits))
    dense_mean = float(segmentation_loss(one_hot=True)(oh2, logits))
    assert sparse_mean * (ids2 != 255).sum() == pytest.approx(dense_mean * ids2.size, rel=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("name, options", [("sequence", {}), ("class_index", {}),
                                           ("tfdata_tuned", {"one_hot": True})])
def test_unet_trains_on_each_output_form(index, palette, tmp_path, name, options):
    import keras

    from kit.models.unet import segmentation_loss, unet
    from kit.segmentation.variants import default_x_dtype

    keras.utils.set_random_seed(0)
    x_dtype = default_x_dtype(name)
    model = unet(palette.num_classes, input_shape=SIZE + (3,), input_dtype=x_dtype, filters=4, depth=2)
    model.compile("adam", loss=segmentation_loss(one_hot=options.get("one_hot", False)))
    hist = model.fit(seg_load(name, index, palette, tmp_path, **options), epochs=2, verbose=0, shuffle=False)
    losses = hist.history["loss"]
    assert len(losses) == 2 and all(np.isfinite(losses)) and losses[0] < np.log(palette.num_classes) + 0.5


def test_unet_normalises_uint8_inside_the_model():
    from kit.models.unet import unet

    a = unet(3, input_dtype="uint8", filters=2, depth=1)
    b = unet(3, input_dtype="float32", filters=2, depth=1)
    b.set_weights(a.get_weights())
    x = np.random.default_rng(0).integers(0, 256, (1, 8, 8, 3)).astype(np.uint8)
    np.testing.assert_allclose(np.asarray(a(x)), np.asarray(b(x / np.float32(255))), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="input_dtype must be"):
        unet(3, input_dtype="float16")


def test_training_flops_count_a_frozen_backbone_forward_only(small):
    """Training FLOPs: forward everywhere, backward (twice the forward) only where gradients flow."""
    head = audio.head(5, embedding_dim=256)
    head_fwd = 2 * audio.cost(head).macs
    assert head_fwd == 2 * 256 * 5
    assert audio.training_flops(head) == 3 * head_fwd  # trainable: forward, weight and input gradients
    t = audio.transfer_model(small, head)
    backbone_fwd = 2 * audio.cost(small).macs
    assert audio.training_flops(t) == backbone_fwd + 3 * head_fwd  # nothing flows back into the frozen part
    assert sum(audio.layer_macs(layer) for layer in audio.leaf_layers(t)) == audio.cost(t).macs


def test_training_flops_of_a_frozen_layer_after_a_trainable_one_count_its_input_gradient():
    import keras

    inputs = keras.Input((8,))
    first = keras.layers.Dense(4, name="trains")
    last = keras.layers.Dense(3, name="frozen")
    model = keras.Model(inputs, last(first(inputs)))
    last.trainable = False
    assert audio.training_flops(model) == 3 * 2 * 8 * 4 + 2 * 2 * 4 * 3
