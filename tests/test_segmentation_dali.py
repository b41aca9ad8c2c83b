"""The optional ``dali`` segmentation variant: what is particular to it.

The tests every segmentation variant passes (each pair once per epoch, identical to
the direct decode, every output form, crop and pad, grey/palette/RGBA files, the
ignore label, a file damaged after indexing) run it too, in tests/test_segmentation.py.
Here: the colour lookup's two tables, the epoch's order (padding, seeds), its error
messages, model.fit, its options, and the message where DALI is missing.
"""

import sys

import numpy as np
import pytest
from helpers import SIZE, damage, paint_unknown, seg_epoch, seg_match

from kit.bench import segmentation as seg_bench
from kit.segmentation import VARIANTS, PairIndex, Palette, make_loader
from kit.segmentation.dali import available, lookup_keys

needs_dali = pytest.mark.skipif(available() is not None, reason=f"{available()}")


def _two_tables(palette, rgb):
    """The DALI pipeline's lookup, in NumPy: ``(r, g)`` -> group, ``group * 256 + b`` -> class id."""
    rg_keys, b_keys = lookup_keys(palette)
    first = np.full(1 << 16, 255, np.int64)
    first[rg_keys] = np.arange(len(rg_keys))
    second = np.full(1 << 16, palette.unknown_id, np.uint8)
    second[b_keys] = np.arange(len(b_keys))
    rgb = rgb.astype(np.int64)
    return second[first[rgb[..., 0] * 256 + rgb[..., 1]] * 256 + rgb[..., 2]]


@pytest.mark.parametrize("ignore_label", [None, 255, 11])
def test_two_lookup_tables_equal_the_palette_lut(tmp_path, ignore_label):
    """DALI's lookup_table takes keys below 65,536: two tables give the 24-bit palette lookup exactly."""
    rng = np.random.default_rng(0)
    colours = rng.integers(0, 256, (200, 3))
    colours[:60, :2] = colours[0, :2]  # many colours share (r, g): one group, different b
    colours = np.unique(colours, axis=0)
    p = tmp_path / "class_dict.csv"
    p.write_text("name,r,g,b\n" + "".join(f"c{i},{r},{g},{b}\n" for i, (r, g, b) in enumerate(colours)))
    pal = Palette.from_csv(p, ignore_label=ignore_label)
    near = np.c_[pal.colours[:, :2], (pal.colours[:, 2].astype(int) + 1) % 256].astype(np.uint8)  # known (r, g)
    rgb = np.concatenate([pal.colours, near, rng.integers(0, 256, (5000, 3)).astype(np.uint8)])
    want = pal.lut[(rgb[:, 0].astype(np.int32) << 16) | (rgb[:, 1].astype(np.int32) << 8) | rgb[:, 2]]
    assert (want[:len(pal)] == np.arange(len(pal))).all() and (want == pal.unknown_id).sum() > 5000
    assert np.array_equal(_two_tables(pal, rgb), want)


def test_a_missing_dali_says_what_to_install(monkeypatch, index, palette):
    """Where DALI is not installed: one line saying what to install; the bench leaves dali out, saying so."""
    monkeypatch.setitem(sys.modules, "nvidia.dali", None)  # as where it is not installed
    available.cache_clear()
    try:
        assert "pip install 'kit[dali]'" in available()
        with pytest.raises(ImportError, match=r"the dali variant needs DALI: .*pip install 'kit\[dali\]'"):
            make_loader("dali", index, palette, batch_size=2, size=SIZE)
        lines = []
        assert seg_bench.default_variants(log=lines.append) == [v for v in VARIANTS if v != "dali"]
        assert lines == ["dali: not measured: " + available()]
    finally:
        available.cache_clear()


@needs_dali
def test_the_bench_measures_dali_where_it_is_installed():
    lines = []
    assert seg_bench.default_variants(log=lines.append) == list(VARIANTS) and lines == []


@needs_dali
@pytest.mark.parametrize("batch_size", [2, 5, 8])
def test_every_pair_once_per_epoch_whatever_the_last_batch(index, palette, tmp_path, batch_size):
    """DALI runs full batches only; the epoch is padded and trimmed: never a shorter epoch, no repeat."""
    loader = make_loader("dali", index, palette, batch_size=batch_size, size=SIZE, seed=1, x_dtype="uint8")
    assert int(loader.cardinality()) == -(-5 // batch_size)
    for _ in range(2):
        sizes = [len(x) for x, _ in loader]
        assert sizes == [min(batch_size, 5 - i) for i in range(0, 5, batch_size)]
        rows = seg_match(seg_epoch(loader), index, palette, SIZE, x_dtype="uint8", one_hot=False)
        assert sorted(rows) == [0, 1, 2, 3, 4]


@pytest.mark.slow
@needs_dali
def test_epoch_orders_are_deterministic_by_seed(index, palette, tmp_path):
    def orders(seed, shuffle=True):
        loader = make_loader("dali", index, palette, batch_size=2, size=SIZE, seed=seed, shuffle=shuffle,
                             x_dtype="uint8")
        return [tuple(seg_match(seg_epoch(loader), index, palette, SIZE, x_dtype="uint8", one_hot=False))
                for _ in range(3)]

    a = orders(4)
    assert a == orders(4) and len(set(a)) > 1
    assert orders(5) != a
    assert orders(4, shuffle=False) == [(0, 1, 2, 3, 4)] * 3


@needs_dali
def test_a_file_cut_short_after_indexing_is_named_with_its_line(index, palette, data):
    import tensorflow as tf

    damage(data, "truncated")
    loader = make_loader("dali", index, palette, batch_size=2, size=SIZE, shuffle=False)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"index.csv line 4: image .*img_00002.png: truncated file \(its end marker is missing\)"):
        seg_epoch(loader)


@needs_dali
def test_a_file_removed_after_indexing_is_named(index, palette, data):
    import tensorflow as tf

    damage(data, "missing_mask")
    with pytest.raises(tf.errors.NotFoundError, match=r"img_00002_L.png"):
        seg_epoch(make_loader("dali", index, palette, batch_size=2, size=SIZE, shuffle=False))


@needs_dali
def test_a_colour_not_in_the_palette_gets_the_reference_message(data, palette):
    import tensorflow as tf

    paint_unknown(data)
    idx = PairIndex.from_csv(data / "index.csv")
    for batch_size in (2, 5):
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"index.csv line 5: .*img_00003_L.png: colour \(1, 2, 3\) is not in the palette "
                                 r".*: 7 pixels; 2 unknown colours, 8 pixels in all"):
            seg_epoch(make_loader("dali", idx, palette, batch_size=batch_size, size=SIZE, shuffle=False))


@pytest.mark.slow
@needs_dali
def test_model_fit_takes_the_dali_loader(index, palette):
    import keras

    from kit.models.unet import segmentation_loss, unet

    keras.utils.set_random_seed(0)
    model = unet(palette.num_classes, input_shape=SIZE + (3,), input_dtype="uint8", filters=4, depth=2)
    model.compile("adam", loss=segmentation_loss())
    loader = make_loader("dali", index, palette, batch_size=2, size=SIZE, x_dtype="uint8")
    losses = model.fit(loader, epochs=2, verbose=0, shuffle=False).history["loss"]
    assert len(losses) == 2 and all(np.isfinite(losses)) and losses[0] < np.log(palette.num_classes) + 0.5


@needs_dali
def test_dali_options_are_checked(index, palette):
    with pytest.raises(ValueError, match=r"device must be one of \('cpu', 'gpu'\) or None, got 'tpu'"):
        make_loader("dali", index, palette, batch_size=2, size=SIZE, device="tpu")
    with pytest.raises(ValueError, match="threads must be a positive integer, got 0"):
        make_loader("dali", index, palette, batch_size=2, size=SIZE, threads=0)
    with pytest.raises(ValueError, match=r"variant 'dali' takes no option\(s\) workers"):
        make_loader("dali", index, palette, batch_size=2, size=SIZE, workers=2)
