"""kit.segmentation: index and palette validation, every loader variant's exactness, the
class-index store and its CLI, the U-Net and its losses, the bench on tiny data."""

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from kit import samples, store, timing
from kit.errors import DataError
from kit.segmentation import VARIANTS, PairIndex, Palette, convert, crop_or_pad, make_loader
from kit.segmentation.dali import available as dali_missing

SIZE = (64, 64)
UNKNOWN_RGB = (1, 2, 3)
#: Every variant; the optional ``dali`` one skips, saying why, where DALI is not installed.
NAMES = [pytest.param(n, marks=pytest.mark.skipif(dali_missing() is not None, reason=f"{dali_missing()}"))
         if n == "dali" else n for n in VARIANTS]


@pytest.fixture(scope="module")
def tiny_src(tmp_path_factory):
    """5 generated pairs at 64x64 (fast), shared; tests copy it before damaging it."""
    return samples.make_segmentation(tmp_path_factory.mktemp("seg") / "tiny", images=5, size=64).parent


@pytest.fixture
def data(tmp_path, tiny_src):
    dst = tmp_path / "data"
    shutil.copytree(tiny_src, dst)
    return dst


@pytest.fixture
def index(data):
    return PairIndex.from_csv(data / "index.csv")


@pytest.fixture
def palette(data):
    return Palette.from_csv(data / "class_dict.csv")


def _epoch(loader):
    """Every example of one epoch as numpy ``(x, y)`` pairs."""
    out = []
    for x, y in timing.iterate(loader):
        x, y = np.asarray(x), np.asarray(y)
        out.extend(zip(x, y))
    return out


def _match(examples, index, palette, size, *, x_dtype, one_hot):
    """Maps each delivered example to its row by image content; asserts it equals the direct decode."""
    refs = [index.read(i, palette, size) for i in range(len(index))]
    rows = []
    for x, y in examples:
        if x_dtype == "float32":
            assert x.dtype == np.float32 and 0.0 <= x.min() and x.max() <= 1.0
            pixels = np.rint(x * 255).astype(np.uint8)
        else:
            assert x.dtype == np.uint8
            pixels = x
        hits = [i for i, (img, _) in enumerate(refs) if np.array_equal(img, pixels)]
        assert len(hits) == 1, "each delivered image matches exactly one pair"
        i = hits[0]
        if x_dtype == "float32":
            np.testing.assert_allclose(x, refs[i][0] / np.float32(255), rtol=0, atol=1e-7)
        want = palette.one_hot(refs[i][1]) if one_hot else refs[i][1]
        assert y.dtype == want.dtype and y.shape == want.shape
        assert np.array_equal(y, want), f"class ids of row {i} differ from the direct decode"
        rows.append(i)
    return rows


def _load(name, index, palette, tmp_path, size=SIZE, **options):
    return make_loader(name, index, palette, batch_size=2, size=size, seed=3, workdir=tmp_path / "work",
                       progress=False, **options)


# ------------------------------------------------------------------------- palette and index


def test_palette_reads_camvid_class_dict(palette):
    assert len(palette) == 12 and palette.names[0] == "Sky" and palette.names[-1] == "Void"
    assert palette.colours.dtype == np.uint8 and tuple(palette.colours[3]) == (128, 64, 128)
    assert palette.pad_id == 11  # Void is (0, 0, 0)
    rgb = np.array([[[128, 64, 128], [0, 0, 0]]], np.uint8)
    assert palette.lookup(rgb).tolist() == [[3, 11]]
    assert palette.with_ignore_label(255).pad_id == 255


@pytest.mark.parametrize("text, message", [
    ("name,r,g,b\nA,1,2,3\nB,1,2,3\n", r"lines 2 and 3: the same colour \(1, 2, 3\) for two classes"),
    ("name,r,g,b\nA,1,2,300\n", r"line 2: colour .* is not three integers in 0..255"),
    ("name,r,g\nA,1,2\n", r"missing column\(s\) b"),
    ("name,r,g,b\n", r"no rows"),
])
def test_palette_errors_name_the_line(tmp_path, text, message):
    p = tmp_path / "class_dict.csv"
    p.write_text(text)
    with pytest.raises(DataError, match=message):
        Palette.from_csv(p)


def test_palette_ignore_label_must_fit_uint8(data):
    with pytest.raises(ValueError, match="ignore_label must be an integer in 0..255"):
        Palette.from_csv(data / "class_dict.csv", ignore_label=256)


def test_index_reads_pairs_relative_to_the_csv(index, data):
    assert len(index) == 5
    assert index.images[0] == str((data / "images/img_00000.png").resolve())
    assert index.labels[4] == str((data / "labels/img_00004_L.png").resolve())
    assert index.heights.tolist() == [64] * 5 and index.widths.tolist() == [64] * 5
    assert index.where(1) == "index.csv line 3"


def test_index_subset_and_split(data):
    (data / "index.csv").write_text(
        "image,label,split\nimages/img_00000.png,labels/img_00000_L.png,train\n"
        "images/img_00001.png,labels/img_00001_L.png,val\nimages/img_00002.png,labels/img_00002_L.png,train\n")
    idx = PairIndex.from_csv(data / "index.csv")
    train = idx.of_split("train")
    assert len(train) == 2 and train.labels[1].endswith("img_00002_L.png") and train.where(1) == "index.csv line 4"
    assert train.fingerprint() != idx.fingerprint()


def _damage(data, how):
    img, lab = data / "images/img_00002.png", data / "labels/img_00002_L.png"
    if how == "missing_image":
        img.unlink()
    elif how == "missing_mask":
        lab.unlink()
    elif how == "size_mismatch":
        Image.fromarray(np.zeros((64, 48, 3), np.uint8)).save(lab)
    elif how == "truncated":
        blob = img.read_bytes()
        img.write_bytes(blob[:len(blob) // 2])
    elif how == "not_an_image":
        img.write_bytes(b"this is not a png")
    elif how == "sixteen_bit":
        Image.fromarray(np.zeros((64, 64), np.uint16)).save(img)


@pytest.mark.parametrize("how, message", [
    ("missing_image", r"index.csv line 4: image .*img_00002.png: file not found"),
    ("missing_mask", r"index.csv line 4: mask .*img_00002_L.png: file not found"),
    ("size_mismatch", r"index.csv line 4: image .*img_00002.png is 64x64 \(width x height\) but its "
                      r"mask .*img_00002_L.png is 48x64"),
    ("truncated", r"index.csv line 4: image .*img_00002.png: truncated PNG file"),
    ("not_an_image", r"index.csv line 4: image .*img_00002.png: not an image file"),
    ("sixteen_bit", r"index.csv line 4: image .*img_00002.png: image mode 'I;16' is not supported"),
])
def test_index_errors_name_the_line_and_the_file(data, how, message):
    _damage(data, how)
    with pytest.raises(DataError, match=message):
        PairIndex.from_csv(data / "index.csv")


def test_index_errors_for_the_csv_itself(tmp_path):
    with pytest.raises(DataError, match="index file not found"):
        PairIndex.from_csv(tmp_path / "nope.csv")
    (tmp_path / "i.csv").write_text("path,label\na,b\n")
    with pytest.raises(DataError, match=r"missing column\(s\) image"):
        PairIndex.from_csv(tmp_path / "i.csv")


def test_a_file_damaged_after_indexing_fails_loudly_in_every_variant(index, palette, data, tmp_path):
    """The header check passed; the file is cut short afterwards: no variant yields a short epoch."""
    import tensorflow as tf

    _damage(data, "truncated")
    with pytest.raises(DataError, match=r"index.csv line 4: .*img_00002.png: unreadable image"):
        index.check(palette)
    for name in VARIANTS:
        if name == "dali":
            if dali_missing() is None:  # reads the bytes in tf.data first: names the file and its line
                with pytest.raises(tf.errors.InvalidArgumentError,
                                   match=r"index.csv line 4: image .*img_00002.png: truncated file"):
                    _epoch(_load(name, index, palette, tmp_path, shuffle=False))
            continue
        if name == "class_index":  # the conversion decodes every pair first
            with pytest.raises(DataError, match=r"line 4: .*img_00002.png: unreadable image"):
                _load(name, index, palette, tmp_path)
            continue
        options = {"use_multiprocessing": False} if name == "sequence_workers" else {}
        loader = _load(name, index, palette, tmp_path, shuffle=False, **options)
        if name.startswith("sequence"):
            with pytest.raises(DataError, match=r"line 4: .*img_00002.png: unreadable image"):
                _epoch(loader)
        else:
            with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid PNG data"):
                _epoch(loader)


# ------------------------------------------------------------------------- unknown colours, ignore label


def _paint_unknown(data, pixels=7):
    lab = data / "labels/img_00003_L.png"
    rgb = np.array(Image.open(lab).convert("RGB"))
    rgb[10, 20:20 + pixels] = UNKNOWN_RGB
    rgb[40, 5] = (9, 9, 9)
    Image.fromarray(rgb).save(lab)
    return lab


def test_unknown_colour_is_named_with_its_pixel_count(index, palette, data, tmp_path):
    import tensorflow as tf

    _paint_unknown(data)
    idx = PairIndex.from_csv(data / "index.csv")
    msg = r"index.csv line 5: .*img_00003_L.png: colour \(1, 2, 3\) is not in the palette .*: 7 pixels"
    with pytest.raises(DataError, match=msg + r"; 2 unknown colours, 8 pixels in all"):
        idx.check(palette)
    with pytest.raises(DataError, match=msg):
        idx.read(3, palette, SIZE)
    with pytest.raises(DataError, match=msg):
        convert(idx, palette, "memmap", tmp_path / "store", size=SIZE, progress=False)
    for name in ("sequence", "sequence_workers"):
        with pytest.raises(DataError, match=msg):
            _epoch(_load(name, idx, palette, tmp_path, shuffle=False, use_multiprocessing=False))
    for name in ("tfdata_naive", "tfdata_tuned"):
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"index.csv line 5: .*img_00003_L.png: colour \(1, 2, 3\) is not in the "
                                 r"palette .*: 7 pixels \(8 of unknown colours in all\)"):
            _epoch(_load(name, idx, palette, tmp_path, shuffle=False))


@pytest.mark.parametrize("name", NAMES)
def test_ignore_label_marks_unknown_colours(data, tmp_path, name):
    _paint_unknown(data)
    idx = PairIndex.from_csv(data / "index.csv")
    pal = Palette.from_csv(data / "class_dict.csv", ignore_label=255)
    _, ids = idx.read(3, pal, SIZE)
    assert ids[10, 20:27].tolist() == [255] * 7 and ids[40, 5] == 255 and (ids == 255).sum() == 8
    for one_hot in (False, True):
        loader = _load(name, idx, pal, tmp_path, shuffle=False, one_hot=one_hot, x_dtype="uint8")
        rows = _match(_epoch(loader), idx, pal, SIZE, x_dtype="uint8", one_hot=one_hot)
        assert sorted(rows) == [0, 1, 2, 3, 4]


# ------------------------------------------------------------------------- every variant, exactly


@pytest.mark.parametrize("name", NAMES)
def test_every_variant_yields_each_pair_once_per_epoch_identical_to_a_direct_decode(index, palette, tmp_path,
                                                                                     name):
    from kit.segmentation import default_x_dtype

    loader = _load(name, index, palette, tmp_path)
    orders = []
    for _ in range(3):  # three epochs: each complete, reshuffled
        rows = _match(_epoch(loader), index, palette, SIZE, x_dtype=default_x_dtype(name), one_hot=False)
        assert sorted(rows) == [0, 1, 2, 3, 4]
        orders.append(rows)
    assert len(set(map(tuple, orders))) > 1  # reshuffled


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("x_dtype, one_hot", [("float32", True), ("uint8", False)])
def test_every_output_form_is_the_same_data(index, palette, tmp_path, name, x_dtype, one_hot):
    loader = _load(name, index, palette, tmp_path, x_dtype=x_dtype, one_hot=one_hot)
    rows = _match(_epoch(loader), index, palette, SIZE, x_dtype=x_dtype, one_hot=one_hot)
    assert sorted(rows) == [0, 1, 2, 3, 4]


def test_class_index_tfrecord_is_the_same_data(index, palette, tmp_path):
    loader = _load("class_index", index, palette, tmp_path, format="tfrecord", shard_mb=0.04)
    rows = _match(_epoch(loader), index, palette, SIZE, x_dtype="uint8", one_hot=False)
    assert sorted(rows) == [0, 1, 2, 3, 4]


def test_tf_data_variants_guard_the_epoch_length(index, palette, tmp_path):
    for name in ("tfdata_naive", "tfdata_tuned", "class_index"):
        assert int(_load(name, index, palette, tmp_path).cardinality()) == 3  # 5 pairs, batch 2


def test_crop_or_pad_is_centred_like_tensorflow():
    import tensorflow as tf

    a = np.arange(5 * 7 * 3, dtype=np.uint8).reshape(5, 7, 3)
    for size in [(3, 4), (8, 10), (3, 10), (8, 4), (5, 7)]:
        want = tf.image.resize_with_crop_or_pad(a, *size).numpy()
        assert np.array_equal(crop_or_pad(a, size), want), size


@pytest.mark.parametrize("name", NAMES)
def test_crop_and_pad_in_every_variant(index, palette, tmp_path, name):
    """48 rows (cropped from 64) by 80 columns (padded from 64): black image, Void (11) mask."""
    size = (48, 80)
    image, ids = index.read(0, palette, size)
    assert image.shape == (48, 80, 3) and ids.shape == (48, 80)
    assert (image[:, :8] == 0).all() and (image[:, -8:] == 0).all()
    assert (ids[:, :8] == 11).all() and (ids[:, -8:] == 11).all()
    full_img, full_ids = index.read(0, palette, SIZE)
    assert np.array_equal(image[:, 8:72], full_img[8:56]) and np.array_equal(ids[:, 8:72], full_ids[8:56])
    for one_hot in (False, True):
        loader = _load(name, index, palette, tmp_path, size=size, x_dtype="uint8", one_hot=one_hot)
        assert sorted(_match(_epoch(loader), index, palette, size, x_dtype="uint8", one_hot=one_hot)) == list(range(5))


def test_padding_needs_a_class_for_the_padded_pixels(index, tmp_path):
    p = tmp_path / "class_dict.csv"
    p.write_text("name,r,g,b\n" + "".join(f"{n},{r},{g},{b}\n" for n, r, g, b in samples.PALETTE[:-1]))
    no_black = Palette.from_csv(p)
    with pytest.raises(DataError, match=r"line 2: .*img_00000_L.png is 64x64, smaller than the target 80x48 "
                                        r".*set an ignore label"):
        make_loader("tfdata_tuned", index, no_black, batch_size=2, size=(48, 80))
    index.check_size((48, 64), no_black)  # crop only: fine


@pytest.mark.parametrize("name", NAMES)
def test_grey_palette_and_rgba_files_are_converted(data, tmp_path, name):
    img0, img1 = data / "images/img_00000.png", data / "images/img_00001.png"
    lab0, lab1 = data / "labels/img_00000_L.png", data / "labels/img_00001_L.png"
    grey = np.array(Image.open(img0).convert("L"))
    Image.fromarray(grey, "L").save(img0)
    rgba = np.dstack([np.array(Image.open(img1).convert("RGB")), np.full((64, 64), 77, np.uint8)])
    Image.fromarray(rgba, "RGBA").save(img1)
    mask1 = np.array(Image.open(lab1).convert("RGB"))
    Image.fromarray(np.dstack([mask1, np.full((64, 64), 200, np.uint8)]), "RGBA").save(lab1)
    Image.open(lab0).convert("RGB").convert("P", palette=Image.Palette.ADAPTIVE, colors=16).save(lab0)
    idx = PairIndex.from_csv(data / "index.csv")
    pal = Palette.from_csv(data / "class_dict.csv")
    image0, _ = idx.read(0, pal, SIZE)
    assert np.array_equal(image0, np.repeat(grey[..., None], 3, axis=2))  # grey replicated
    image1, ids1 = idx.read(1, pal, SIZE)
    assert np.array_equal(image1, rgba[..., :3])  # alpha dropped
    assert np.array_equal(ids1, pal.lookup(mask1))
    loader = _load(name, idx, pal, tmp_path, x_dtype="uint8")
    assert sorted(_match(_epoch(loader), idx, pal, SIZE, x_dtype="uint8", one_hot=False)) == list(range(5))


def test_make_loader_refuses_bad_options(index, palette):
    with pytest.raises(ValueError, match="unknown variant 'fast'"):
        make_loader("fast", index, palette, batch_size=2)
    with pytest.raises(ValueError, match="batch_size must be a positive integer, got 0"):
        make_loader("sequence", index, palette, batch_size=0)
    with pytest.raises(ValueError, match="x_dtype must be one of"):
        make_loader("sequence", index, palette, batch_size=2, x_dtype="float16")
    with pytest.raises(ValueError, match=r"variant 'tfdata_tuned' takes no option\(s\) workers"):
        make_loader("tfdata_tuned", index, palette, batch_size=2, workers=3)
    with pytest.raises(ValueError, match="runs Python code in its pipeline"):
        make_loader("sequence", index, palette, batch_size=2, service="grpc://localhost:5000")
    with pytest.raises(ValueError, match="size must be positive"):
        make_loader("sequence", index, palette, batch_size=2, size=(0, 4))


# ------------------------------------------------------------------------- the class-index store


def test_store_is_reused_rebuilt_when_stale_and_verified(index, palette, data, tmp_path):
    folder, m = convert(index, palette, size=SIZE, workdir=tmp_path, progress=False)
    assert m.kind == "segmentation-memmap" and m.count == 5 and store.verify(folder) == []
    images = np.load(folder / m.shards[0]["name"], allow_pickle=False)
    assert images.shape == (5, 64, 64, 3) and np.array_equal(images[2], index.read(2, palette, SIZE)[0])
    again, m2 = convert(index, palette, size=SIZE, workdir=tmp_path, progress=False)
    assert again == folder and m2.meta["created"] == m.meta["created"]  # reused, not rebuilt
    # Another palette (an ignore label), another size: other keys, other folders.
    assert convert(index, palette.with_ignore_label(255), size=SIZE, workdir=tmp_path, progress=False)[0] != folder
    # Changed input into the same folder: the stale store is discarded and rebuilt.
    lab = data / "labels/img_00001_L.png"
    rgb = np.array(Image.open(lab).convert("RGB"))
    rgb[:8] = samples.PALETTE[2][1:]
    Image.fromarray(rgb).save(lab)
    idx2 = PairIndex.from_csv(data / "index.csv")
    _, m3 = convert(idx2, palette, "memmap", folder, size=SIZE, progress=False)
    assert m3.key != m.key
    labels = np.load(folder / m3.shards[1]["name"], allow_pickle=False)
    assert (labels[1, :8] == 2).all()
    # A corrupted byte is caught by verify, naming the file.
    path = folder / m3.shards[1]["name"]
    blob = bytearray(path.read_bytes())
    blob[-1] ^= 0xFF
    path.write_bytes(bytes(blob))
    assert any(m3.shards[1]["name"] in p and "checksum" in p for p in store.verify(folder))


def test_store_deep_check_finds_out_of_range_ids(index, palette, tmp_path):
    folder, m = convert(index, palette, size=SIZE, workdir=tmp_path, progress=False)
    shard = m.shards[1]
    labels = np.load(folder / shard["name"], mmap_mode="r+", allow_pickle=False)
    labels[0, 0, 0] = 40
    labels.flush()
    del labels
    check = store.DEEP_CHECKS["segmentation-memmap"]
    assert check(folder, m, shard) == "class ids [40] out of range"


class _Crash(RuntimeError):
    pass


def test_interrupted_conversion_resumes(index, palette, tmp_path, monkeypatch):
    calls = []
    real = PairIndex.read_image

    def flaky(self, i, size):
        calls.append(i)
        if i == 3 and calls.count(3) == 1:  # dies once, on the second shard
            raise _Crash("killed mid-conversion")
        return real(self, i, size)

    monkeypatch.setattr(PairIndex, "read_image", flaky)
    folder = tmp_path / "store"
    shard_mb = 2.5 * 64 * 64 * 4 / 1e6  # two pairs per shard: 3 shards
    with pytest.raises(_Crash):
        convert(index, palette, "memmap", folder, size=SIZE, shard_mb=shard_mb, workers=1, progress=False)
    assert store.complete(folder) is None
    first = list(calls)
    assert first == [0, 1, 2, 3]
    _, m = convert(index, palette, "memmap", folder, size=SIZE, shard_mb=shard_mb, workers=1, progress=False)
    assert calls[len(first):] == [2, 3, 4]  # the finished shard (rows 0, 1) was kept
    assert m.count == 5 and len(m.shards) == 6 and store.verify(folder) == []


def test_class_index_refuses_a_shard_cut_short(index, palette, tmp_path):
    folder, m = convert(index, palette, size=SIZE, workdir=tmp_path / "work", progress=False)
    path = folder / m.shards[0]["name"]
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(store.StoreError, match=r"images-.*\.npy: (missing or )?\d+ bytes where the manifest says"):
        _load("class_index", index, palette, tmp_path)


def test_tfrecord_store_verifies(index, palette, tmp_path):
    folder, m = convert(index, palette, "tfrecord", size=SIZE, workdir=tmp_path, shard_mb=0.04, progress=False)
    assert m.kind == "segmentation-tfrecord" and m.count == 5 and len(m.shards) == 3
    assert store.verify(folder) == []


# ------------------------------------------------------------------------- model and losses


def test_sparse_loss_on_ids_equals_categorical_loss_on_one_hot(index, palette, tmp_path):
    from kit.models.unet import segmentation_loss, unet

    model = unet(palette.num_classes, input_dtype="uint8", filters=4, depth=2)
    x, ids = next(iter(_load("tfdata_tuned", index, palette, tmp_path, shuffle=False, x_dtype="uint8")))
    _, one_hot = next(iter(_load("tfdata_tuned", index, palette, tmp_path, shuffle=False, x_dtype="uint8",
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


@pytest.mark.parametrize("name, options", [("sequence", {}), ("class_index", {}),
                                           ("tfdata_tuned", {"one_hot": True})])
def test_unet_trains_on_each_output_form(index, palette, tmp_path, name, options):
    import keras

    from kit.models.unet import segmentation_loss, unet
    from kit.segmentation import default_x_dtype

    keras.utils.set_random_seed(0)
    x_dtype = default_x_dtype(name)
    model = unet(palette.num_classes, input_shape=SIZE + (3,), input_dtype=x_dtype, filters=4, depth=2)
    model.compile("adam", loss=segmentation_loss(one_hot=options.get("one_hot", False)))
    hist = model.fit(_load(name, index, palette, tmp_path, **options), epochs=2, verbose=0, shuffle=False)
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


# ------------------------------------------------------------------------- CLI and bench


def test_cli_convert_and_verify(data, tmp_path, capsys):
    from kit.cli import main

    out = tmp_path / "store"
    assert main(["convert", "segmentation", "--index", str(data / "index.csv"), "--palette",
                 str(data / "class_dict.csv"), "--out", str(out), "--size", "64"]) == 0
    assert "5 pairs in 2 file(s)" in capsys.readouterr().out
    assert main(["verify", str(out)]) == 0
    assert "OK" in capsys.readouterr().out
    _paint_unknown(data)
    assert main(["convert", "segmentation", "--index", str(data / "index.csv"), "--out", str(out),
                 "--size", "64"]) == 2
    assert "colour (1, 2, 3) is not in the palette" in capsys.readouterr().err
    assert main(["convert", "segmentation", "--index", str(data / "index.csv"), "--out", str(tmp_path / "s2"),
                 "--size", "64", "--ignore-label", "255", "--format", "tfrecord"]) == 0


def test_bench_runs_on_tiny_data(data, tmp_path, capsys):
    from kit.bench import segmentation as bench
    from kit.cli import main

    out = tmp_path / "bench.json"
    assert main(["bench", "segmentation", "--data", str(data / "index.csv"), "--size", "64", "--batch-size", "2",
                 "--rounds", "1", "--batches", "2", "--seconds", "0.2", "--slow-seconds", "0.2",
                 "--variants", "sequence,tfdata_tuned,class_index", "--workdir", str(tmp_path / "w"),
                 "--json", str(out)]) == 0
    # The class_index store (built, or found from an earlier run) read into the page cache before timing.
    assert "read into the page cache: class_index store" in capsys.readouterr().out
    res = json.loads(out.read_text())
    assert res["bench"] == "segmentation" and [r["variant"] for r in res["rows"]] == [
        "sequence", "tfdata_tuned", "class_index"]
    for r in res["rows"]:
        assert r["examples_per_s"] > 0 and "x_sequence" in r and "epoch_s_420" in r
    assert res["rows"][0]["x_sequence"] == 1.0
    prof = bench.profile(data / "index.csv", pairs=2, size=64, repeat=1)
    assert set(prof["library"]) == {"NumPy/OpenCV", "TensorFlow"} and (prof["ms_per_pair"] >= 0).all()
    assert len(prof) == 12
    sums = bench.pipeline_costs(prof)
    assert list(sums["variant"]) == ["sequence", "tfdata_naive", "tfdata_tuned"]
    assert sums["colour_loop_ms"][0] > 0 and sums["colour_loop_ms"][2] == 0  # tiny data: TF stages may round to 0
    assert np.allclose(sums["pairs_per_s_one_core"], 1e3 / sums["ms_per_pair"])


def test_importing_the_case_does_not_import_tensorflow():
    code = ("import sys, kit.segmentation, kit.segmentation.commands, kit.models.unet, kit.bench.segmentation; "
            "print('tensorflow' in sys.modules, 'keras' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
