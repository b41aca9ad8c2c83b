"""kit.segmentation: index and palette validation, every loader variant's exactness, the
class-index store and its CLI."""

import subprocess
import sys

import numpy as np
import pytest
from helpers import SIZE, damage, flip, paint_unknown, seg_epoch, seg_load, seg_match
from PIL import Image

from kit import samples, store
from kit.errors import DataError
from kit.segmentation import VARIANTS, PairIndex, Palette, convert, make_loader
from kit.segmentation.dali import available as dali_missing
from kit.segmentation.index import crop_or_pad
from kit.store.checks import DEEP_CHECKS

#: Every variant; the optional ``dali`` one skips, saying why, where DALI is not installed.
NAMES = [pytest.param(n, marks=pytest.mark.skipif(dali_missing() is not None, reason=f"{dali_missing()}"))
         if n == "dali" else n for n in VARIANTS]


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
    damage(data, how)
    with pytest.raises(DataError, match=message):
        PairIndex.from_csv(data / "index.csv")


def test_index_errors_for_the_csv_itself(tmp_path):
    with pytest.raises(DataError, match="index file not found"):
        PairIndex.from_csv(tmp_path / "nope.csv")
    (tmp_path / "i.csv").write_text("path,label\na,b\n")
    with pytest.raises(DataError, match=r"missing column\(s\) image"):
        PairIndex.from_csv(tmp_path / "i.csv")


@pytest.mark.slow
def test_a_file_damaged_after_indexing_fails_loudly_in_every_variant(index, palette, data, tmp_path):
    """The header check passed; the file is cut short afterwards: no variant yields a short epoch."""
    import tensorflow as tf

    damage(data, "truncated")
    with pytest.raises(DataError, match=r"index.csv line 4: .*img_00002.png: unreadable image"):
        index.check(palette)
    for name in VARIANTS:
        if name == "dali":
            if dali_missing() is None:  # reads the bytes in tf.data first: names the file and its line
                with pytest.raises(tf.errors.InvalidArgumentError,
                                   match=r"index.csv line 4: image .*img_00002.png: truncated file"):
                    seg_epoch(seg_load(name, index, palette, tmp_path, shuffle=False))
            continue
        if name == "class_index":  # the conversion decodes every pair first
            with pytest.raises(DataError, match=r"line 4: .*img_00002.png: unreadable image"):
                seg_load(name, index, palette, tmp_path)
            continue
        options = {"use_multiprocessing": False} if name == "sequence_workers" else {}
        loader = seg_load(name, index, palette, tmp_path, shuffle=False, **options)
        if name.startswith("sequence"):
            with pytest.raises(DataError, match=r"line 4: .*img_00002.png: unreadable image"):
                seg_epoch(loader)
        else:
            with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid PNG data"):
                seg_epoch(loader)


def test_unknown_colour_is_named_with_its_pixel_count(index, palette, data, tmp_path):
    import tensorflow as tf

    paint_unknown(data)
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
            seg_epoch(seg_load(name, idx, palette, tmp_path, shuffle=False, use_multiprocessing=False))
    for name in ("tfdata_naive", "tfdata_tuned"):
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"index.csv line 5: .*img_00003_L.png: colour \(1, 2, 3\) is not in the "
                                 r"palette .*: 7 pixels \(8 of unknown colours in all\)"):
            seg_epoch(seg_load(name, idx, palette, tmp_path, shuffle=False))


@pytest.mark.parametrize("name", NAMES)
def test_ignore_label_marks_unknown_colours(data, tmp_path, name):
    paint_unknown(data)
    idx = PairIndex.from_csv(data / "index.csv")
    pal = Palette.from_csv(data / "class_dict.csv", ignore_label=255)
    _, ids = idx.read(3, pal, SIZE)
    assert ids[10, 20:27].tolist() == [255] * 7 and ids[40, 5] == 255 and (ids == 255).sum() == 8
    for one_hot in (False, True):
        loader = seg_load(name, idx, pal, tmp_path, shuffle=False, one_hot=one_hot, x_dtype="uint8")
        rows = seg_match(seg_epoch(loader), idx, pal, SIZE, x_dtype="uint8", one_hot=one_hot)
        assert sorted(rows) == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("name", NAMES)
def test_every_variant_yields_each_pair_once_per_epoch_identical_to_a_direct_decode(index, palette, tmp_path,
                                                                                     name):
    from kit.segmentation.variants import default_x_dtype

    loader = seg_load(name, index, palette, tmp_path)
    orders = []
    for _ in range(3):  # three epochs: each complete, reshuffled
        rows = seg_match(seg_epoch(loader), index, palette, SIZE, x_dtype=default_x_dtype(name), one_hot=False)
        assert sorted(rows) == [0, 1, 2, 3, 4]
        orders.append(rows)
    assert len(set(map(tuple, orders))) > 1  # reshuffled


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("x_dtype, one_hot", [("float32", True), ("uint8", False)])
def test_every_output_form_is_the_same_data(index, palette, tmp_path, name, x_dtype, one_hot):
    loader = seg_load(name, index, palette, tmp_path, x_dtype=x_dtype, one_hot=one_hot)
    rows = seg_match(seg_epoch(loader), index, palette, SIZE, x_dtype=x_dtype, one_hot=one_hot)
    assert sorted(rows) == [0, 1, 2, 3, 4]


def test_class_index_tfrecord_is_the_same_data(index, palette, tmp_path):
    loader = seg_load("class_index", index, palette, tmp_path, format="tfrecord", shard_mb=0.04)
    rows = seg_match(seg_epoch(loader), index, palette, SIZE, x_dtype="uint8", one_hot=False)
    assert sorted(rows) == [0, 1, 2, 3, 4]


def test_tf_data_variants_guard_the_epoch_length(index, palette, tmp_path):
    for name in ("tfdata_naive", "tfdata_tuned", "class_index"):
        assert int(seg_load(name, index, palette, tmp_path).cardinality()) == 3  # 5 pairs, batch 2


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
        loader = seg_load(name, index, palette, tmp_path, size=size, x_dtype="uint8", one_hot=one_hot)
        assert sorted(seg_match(seg_epoch(loader), index, palette, size, x_dtype="uint8", one_hot=one_hot)) == list(range(5))


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
    loader = seg_load(name, idx, pal, tmp_path, x_dtype="uint8")
    assert sorted(seg_match(seg_epoch(loader), idx, pal, SIZE, x_dtype="uint8", one_hot=False)) == list(range(5))


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
    check = DEEP_CHECKS["segmentation-memmap"]
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
        seg_load("class_index", index, palette, tmp_path)


def test_tfrecord_store_verifies(index, palette, tmp_path):
    folder, m = convert(index, palette, "tfrecord", size=SIZE, workdir=tmp_path, shard_mb=0.04, progress=False)
    assert m.kind == "segmentation-tfrecord" and m.count == 5 and len(m.shards) == 3
    assert store.verify(folder) == []


def test_cli_convert_and_verify(data, tmp_path, capsys):
    from kit.cli import main

    out = tmp_path / "store"
    assert main(["convert", "segmentation", "--index", str(data / "index.csv"), "--palette",
                 str(data / "class_dict.csv"), "--out", str(out), "--size", "64"]) == 0
    assert "5 pairs in 2 file(s)" in capsys.readouterr().out
    assert main(["verify", str(out)]) == 0
    assert "OK" in capsys.readouterr().out
    paint_unknown(data)
    assert main(["convert", "segmentation", "--index", str(data / "index.csv"), "--out", str(out),
                 "--size", "64"]) == 2
    assert "colour (1, 2, 3) is not in the palette" in capsys.readouterr().err
    assert main(["convert", "segmentation", "--index", str(data / "index.csv"), "--out", str(tmp_path / "s2"),
                 "--size", "64", "--ignore-label", "255", "--format", "tfrecord"]) == 0


def test_importing_the_case_does_not_import_tensorflow():
    code = ("import sys, kit.segmentation, kit.segmentation.commands, kit.models.unet, kit.bench.segmentation; "
            "print('tensorflow' in sys.modules, 'keras' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_class_index_refuses_a_flipped_byte_unless_the_loader_opts_out(tmp_path):
    """Item 6, the segmentation case: a flipped byte in a class_index shard is found at open;
    ``check_store=False`` in make_loader skips the checksums, for that call only."""
    from kit.segmentation import PairIndex, Palette, convert, make_loader

    csv = samples.make_segmentation(tmp_path / "seg", images=3, size=160)  # shards past the 64 KiB head and tail
    index, palette = PairIndex.from_csv(csv), Palette.from_csv(csv.parent / "class_dict.csv")

    def load(**options):
        return make_loader("class_index", index, palette, batch_size=2, size=(160, 160),
                           workdir=tmp_path / "work", progress=False, **options)

    load()
    folder, m = convert(index, palette, size=(160, 160), workdir=tmp_path / "work", progress=False)
    victim = folder / m.shards[0]["name"]
    assert victim.stat().st_size > 3 * 65536
    flip(victim, victim.stat().st_size // 2)
    with pytest.raises(store.StoreError, match=f"{victim.name}: checksum differs from the manifest"):
        load()
    assert sum(len(y) for _, y in load(check_store=False)) == 3  # opted out: read as it is
    with pytest.raises(store.StoreError, match=f"{victim.name}: checksum differs from the manifest"):
        load()
    with pytest.raises(ValueError, match="check_store must be True, False or None, got 0"):
        load(check_store=0)


def test_a_bad_palette_colour_is_shown_as_plain_numbers(tmp_path):
    """Item 12: a colour out of range is shown as (300, 0, 0), not np.int64(300)."""
    from kit.errors import DataError
    from kit.segmentation import Palette

    (tmp_path / "class_dict.csv").write_text("name,r,g,b\nSky,300,0,0\n")
    with pytest.raises(DataError, match=r"line 2: colour \(300, 0, 0\) is not three integers"):
        Palette.from_csv(tmp_path / "class_dict.csv")


def test_duplicate_or_empty_palette_names_and_duplicate_pairs_are_errors(tmp_path):
    """Item 8: the palette's class names are unique and not empty; a pair is listed once."""
    from kit.errors import DataError
    from kit.segmentation import PairIndex, Palette

    (tmp_path / "p.csv").write_text("name,r,g,b\nSky,1,2,3\nRoad,4,5,6\nSky,7,8,9\n")
    with pytest.raises(DataError, match=r"p.csv lines 2 and 4: the class name 'Sky' twice"):
        Palette.from_csv(tmp_path / "p.csv")
    (tmp_path / "p.csv").write_text('name,r,g,b\nSky,1,2,3\n" ",4,5,6\n')
    with pytest.raises(DataError, match=r"p.csv line 3: empty class name"):
        Palette.from_csv(tmp_path / "p.csv")
    csv = samples.make_segmentation(tmp_path / "g", images=2, size=32)
    rows = csv.read_text().splitlines()
    csv.write_text("\n".join(rows + [rows[1]]) + "\n")
    with pytest.raises(DataError, match=r"index.csv lines 2 and 4: the same image .* listed twice"):
        PairIndex.from_csv(csv)
