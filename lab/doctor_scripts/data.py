"""Small generated data for the real training scripts of lab/doctor_scripts (issue 55 item 6).

``make(name, folder)`` writes the files script NAME reads under ``folder/NAME/`` in the formats the
source repository reads (PNG and JPEG images and masks, 16-bit WAV clips, ``.npy`` volumes and frames, CSV lists,
a GloVe-style text file, TFRecords, a pickled feature dict, an ABC-notation text, HDF5 files). Deterministic (seeded per script), idempotent (a ``.complete`` marker written
last: a second call finds it and does nothing) and atomic (each file written under a temporary name and
renamed; the folder is built under a temporary name and renamed when complete).

    python -m lab.doctor_scripts.data [NAME ...] [--folder DIR]

The default folder is ``$DOCTOR_SCRIPTS_DATA`` or ``/tmp/kit-doctor-scripts``, as the scripts read it.
No kit import.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import pickle
import shutil
import sys
import tempfile
import wave
import zlib
from pathlib import Path

import numpy as np

DEFAULT = os.environ.get("DOCTOR_SCRIPTS_DATA", str(Path(tempfile.gettempdir()) / "kit-doctor-scripts"))
MARK = ".complete"


def _png(path: Path, img: np.ndarray) -> None:
    from PIL import Image

    tmp = path.with_name(path.name + ".tmp.png")
    Image.fromarray(img).save(tmp)
    os.replace(tmp, path)


def _npy(path: Path, arr: np.ndarray) -> None:
    tmp = path.with_name(path.name + ".tmp.npy")
    np.save(tmp, arr)
    os.replace(tmp, path)


def _wav(path: Path, x: np.ndarray, sr: int) -> None:
    tmp = path.with_name(path.name + ".tmp")
    pcm = np.clip(x * 32767, -32768, 32767).astype("<i2")
    with wave.open(str(tmp), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(sr)
        w.writeframes(pcm.tobytes())
    os.replace(tmp, path)


def _text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _csv(path: Path, header, rows) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    os.replace(tmp, path)


def _blobs(rng, h, w, k=3):
    """An image with ``k`` soft bright ellipses and its binary mask (a polyp-like target)."""
    yy, xx = np.mgrid[0:h, 0:w]
    mask = np.zeros((h, w), bool)
    for _ in range(k):
        cy, cx = rng.uniform(0.2, 0.8) * h, rng.uniform(0.2, 0.8) * w
        ry, rx = rng.uniform(0.05, 0.15) * h, rng.uniform(0.05, 0.15) * w
        mask |= ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 < 1
    return mask


def _tone(rng, n, sr, label, n_labels):
    t = np.arange(n) / sr
    f0 = 200 + 150 * label
    x = 0.4 * np.sin(2 * np.pi * f0 * t) + 0.2 * np.sin(2 * np.pi * 2.5 * f0 * t)
    return (x * rng.uniform(0.5, 1.0) + 0.05 * rng.standard_normal(n)).astype(np.float32)


# --------------------------------------------------------------------------- per script


def polyp_unet(d: Path, rng) -> None:
    # CVC-612-like: 384x288 RGB frames, grayscale masks, same file names in images/ and masks/.
    (d / "images").mkdir()
    (d / "masks").mkdir()
    for i in range(160):
        m = _blobs(rng, 288, 384)
        img = rng.integers(0, 90, (288, 384, 3), dtype=np.uint8)
        img[m] = np.clip(img[m].astype(int) + 140, 0, 255).astype(np.uint8)
        _png(d / "images" / f"{i:03d}.png", img)
        _png(d / "masks" / f"{i:03d}.png", (m * 255).astype(np.uint8))


def _protein_images(d: Path, rng, n, size, colors):
    ids, targets = [], []
    for i in range(n):
        ident = f"{zlib.crc32(str(i).encode()):08x}-{i:04d}"
        labels = sorted(set(rng.integers(0, 28, rng.integers(1, 4)).tolist()))
        for c in colors:
            img = (rng.random((size, size)) * 60).astype(np.uint8)
            for lab in labels:  # a faint stripe per label so the label is learnable
                img[:, (lab * size) // 28] = 255
            _png(d / "train" / f"{ident}_{c}.png", img)
        ids.append(ident)
        targets.append(" ".join(map(str, labels)))
    _csv(d / "train.csv", ["Id", "Target"], zip(ids, targets))


def hpa_protein(d: Path, rng) -> None:
    # The Kaggle HPA layout: train/<Id>_<color>.png (grayscale), train.csv (Id, Target "a b c").
    (d / "train").mkdir()
    _protein_images(d, rng, 600, 256, ["red", "green", "blue"])


def brats_3d(d: Path, rng) -> None:
    # input_data_128 layout of the repository, volumes shrunk to 32^3: image_i.npy (D,H,W,3) float32,
    # mask_i.npy (D,H,W,4) one-hot float32.
    for split, n in (("train", 48), ("val", 8)):
        for sub in ("images", "masks"):
            (d / split / sub).mkdir(parents=True)
        for i in range(n):
            lab = rng.integers(0, 4, (32, 32, 32))
            img = (rng.random((32, 32, 32, 3)) * 0.2 + lab[..., None] * 0.2).astype(np.float32)
            _npy(d / split / "images" / f"image_{i}.npy", img)
            _npy(d / split / "masks" / f"mask_{i}.npy", np.eye(4, dtype=np.float32)[lab])


WORDS = ["down", "go", "left", "no", "off", "on", "right", "stop", "up", "yes"]


def _speech(d: Path, rng, n_per_word, seconds=1.0, sr=16000, words=WORDS):
    for k, word in enumerate(words):
        (d / word).mkdir(parents=True)
        for i in range(n_per_word):
            n = int(sr * seconds * rng.uniform(0.8, 1.0))  # clips shorter than a second, padded by the reader
            _wav(d / word / f"{zlib.crc32(f'{word}{i}'.encode()):08x}_nohash_{i}.wav", _tone(rng, n, sr, k, len(words)), sr)


def kws_tiny(d: Path, rng) -> None:
    # speech_commands folders: <word>/<hash>_nohash_<i>.wav, 16 kHz mono 16-bit; train/ and validation/.
    _speech(d / "train", rng, 200)
    _speech(d / "validation", rng, 20)


def kws_streaming(d: Path, rng) -> None:
    _speech(d / "train", rng, 150)
    _speech(d / "validation", rng, 10)


def audio_tagging(d: Path, rng) -> None:
    # kaggle_audio_tagging/{train,valid}/<label>/<fname>.wav, 3 s clips at 16 kHz.
    labels = ["Bark", "Cello", "Clarinet", "Flute", "Gong", "Knock"]
    for split, n in (("train", 120), ("valid", 8)):
        for k, lab in enumerate(labels):
            (d / split / lab).mkdir(parents=True)
            for i in range(n):
                x = _tone(rng, 16000 * 3, 16000, k, len(labels))
                _wav(d / split / lab / f"{zlib.crc32(f'{lab}{split}{i}'.encode()):08x}.wav", x, 16000)


def delft_text(d: Path, rng) -> None:
    # A GloVe text file (word v1 ... v50) and a toxic-comment-like CSV (id, comment_text, 6 labels).
    vocab = [f"w{i}" for i in range(3000)]
    vecs = rng.standard_normal((len(vocab), 50)).astype(np.float32)
    _text(d / "glove.6B.50d.txt", "".join(w + " " + " ".join(f"{v:.4f}" for v in row) + "\n"
                                          for w, row in zip(vocab, vecs)))
    classes = ["toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate"]
    rows = []
    for i in range(3072):
        y = (rng.random(6) < 0.2).astype(int)
        words = rng.choice(vocab, rng.integers(40, 120))
        marks = [f"w{k}" for k in np.flatnonzero(y)]
        text = " ".join(list(words) + marks) + ". " + ", ".join(rng.choice(vocab, 5)) + "!"
        rows.append([f"{i:06x}", text, *y])
    _csv(d / "train.csv", ["id", "comment_text", *classes], rows)


def fakenews_from_generator(d: Path, rng) -> None:
    # The source synthesizes its examples inside the generator: nothing to read; a marker only.
    _text(d / "README.txt", "dataset_generators_sample.py draws its examples in its generator.\n")


def spectrogram_user(d: Path, rng) -> None:
    # The user's layout: SpectrogramsPositivePatches/<file>.npy, each holding many 1-second frames
    # (here 250 frames of 64x64 float32 = 4 MB per file, one frame 16 KB: reading a whole file per
    # frame is the read amplification of the seed), and a CSV of (id, file, frame, label, partition).
    sub = d / "SpectrogramsPositivePatches"
    sub.mkdir()
    rows = []
    for f in range(12):
        labels = rng.integers(0, 2, 250)
        frames = (rng.random((250, 64, 64)) * 0.5 + labels[:, None, None] * 0.25).astype(np.float32)
        name = f"rec_{f:02d}.npy"
        _npy(sub / name, frames)
        for j in range(250):
            rows.append([len(rows), name, j, int(labels[j]), "test" if f >= 10 else "train"])
    _csv(d / "frames.csv", ["id", "file", "frame", "label", "partition"], rows)


def keras_segmentation(d: Path, rng) -> None:
    # dataset1's layout: images_prepped_{train,test}/*.png (240x180 RGB, half of 480x360) and annotations_prepped_*/*.png
    # whose pixel values are class indices (5 classes here).
    for split, n in (("train", 60), ("test", 20)):
        (d / f"images_prepped_{split}").mkdir()
        (d / f"annotations_prepped_{split}").mkdir()
        for i in range(n):
            lab = np.zeros((180, 240), np.uint8)
            for k in range(1, 5):
                lab[_blobs(rng, 180, 240, 1)] = k
            img = np.clip(lab[..., None] * 50 + rng.integers(0, 40, (180, 240, 3)), 0, 255).astype(np.uint8)
            _png(d / f"images_prepped_{split}" / f"{split}_{i:04d}.png", img)
            _png(d / f"annotations_prepped_{split}" / f"{split}_{i:04d}.png", np.repeat(lab[..., None], 3, -1))


def protein_kaggle(d: Path, rng) -> None:
    (d / "train").mkdir()
    _protein_images(d, rng, 450, 256, ["red", "green", "blue", "yellow"])


PALETTE = [("Sky", 128, 128, 128), ("Building", 128, 0, 0), ("Road", 128, 64, 128), ("Car", 64, 0, 128),
           ("Pedestrian", 64, 64, 0), ("Tree", 128, 128, 0)]


def segmentation_user(d: Path, rng) -> None:
    # CamVid-style: train/*.png RGB, train_labels/*_L.png colour-coded masks, class_dict.csv (name,r,g,b).
    for sub in ("train", "train_labels", "val", "val_labels"):
        (d / sub).mkdir()
    _csv(d / "class_dict.csv", ["name", "r", "g", "b"], PALETTE)
    colors = np.array([p[1:] for p in PALETTE], np.uint8)
    for split, n in (("train", 150), ("val", 12)):
        for i in range(n):
            lab = np.zeros((128, 128), int)
            for k in range(1, len(PALETTE)):
                lab[_blobs(rng, 128, 128, 1)] = k
            img = np.clip(colors[lab].astype(int) + rng.integers(-30, 30, (128, 128, 3)), 0, 255).astype(np.uint8)
            _png(d / split / f"f{i:03d}.png", img)
            _png(d / f"{split}_labels" / f"f{i:03d}_L.png", colors[lab])


# --------------------------------------------------------------------------- the heldout2 half


def lstm_timeseries(d: Path, rng) -> None:
    # jaungiers' data/sp500.csv layout: Date, Open, High, Low, Close, Volume (daily rows, a random walk here).
    (d / "data").mkdir()
    n = 6000
    close = 1000 * np.exp(np.cumsum(rng.normal(0.0003, 0.01, n)))
    openp = close * (1 + rng.normal(0, 0.003, n))
    high = np.maximum(openp, close) * (1 + np.abs(rng.normal(0, 0.004, n)))
    low = np.minimum(openp, close) * (1 - np.abs(rng.normal(0, 0.004, n)))
    volume = rng.integers(1_000_000, 5_000_000, n)
    days = np.datetime64("2000-01-03") + np.arange(n)
    _csv(d / "data" / "sp500.csv", ["Date", "Open", "High", "Low", "Close", "Volume"],
         ([str(days[i]), f"{openp[i]:.2f}", f"{high[i]:.2f}", f"{low[i]:.2f}", f"{close[i]:.2f}", int(volume[i])]
          for i in range(n)))


def sigmoid_classifier(d: Path, rng) -> None:
    # inzapp/sigmoid-classifier's layout: train/<class>/*.jpg|png and validation/<class>/*.png, grayscale
    # (256x256 here, read at the model's 64x64); a class is a bright bar at its own angle.
    for split, n in (("train", 240), ("validation", 60)):
        for k, cls in enumerate(("bolt", "nut", "washer")):
            (d / split / cls).mkdir(parents=True)
            for i in range(n):
                img = rng.integers(0, 80, (256, 256), dtype=np.uint8)
                img[(40 + 60 * k):(80 + 60 * k), 30:226] = 230
                _png(d / split / cls / f"{cls}_{i:04d}.png", np.rot90(img, rng.integers(0, 4)).copy())


CML_COLUMNS = ["Dia Disp", "Ambient", "Ref Temp on Bed", "Spindle Rear", "Coolantwall", "Transfomerbed",
               "Spindle Front", "Time"]


def cml_thermal(d: Path, rng) -> None:
    # continuous-deploy/CML_thermal's data/ folder: one CSV per thermal test (TM<n>), 8 columns (the target,
    # Dia Disp, first); the temperatures drift with time and the displacement follows them.
    (d / "data").mkdir()
    for f in range(1, 4):
        n = 8000
        t = np.arange(n) * 10.0
        temps = 20 + np.cumsum(rng.normal(0, 0.05, (n, 6)), axis=0) + np.linspace(0, 8, n)[:, None]
        disp = temps @ rng.uniform(0.5, 2.0, 6) - 60 + rng.normal(0, 0.5, n)
        rows = np.column_stack([disp, temps, t])
        _csv(d / "data" / f"TM{f}.csv", CML_COLUMNS, ([f"{v:.4f}" for v in row] for row in rows))


COFFEE_LABELS = ["normal", "ardido", "brocado", "marinheiro", "preto", "quebrado", "verde"]


def coffee_classification(d: Path, rng) -> None:
    # wbmagalhaes/coffee-classification's records: tf.train.Example with 'image' (64x64x3 uint8 bytes) and
    # 'label' (int64), written as create_tfrecords.py writes them (TFRecordWriter over serialized examples).
    import tensorflow as tf

    def example(img, label):
        return tf.train.Example(features=tf.train.Features(feature={
            "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[img.tobytes()])),
            "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label]))})).SerializeToString()

    yy, xx = np.mgrid[0:64, 0:64]
    for split, n in (("train", 4200), ("valid", 700)):
        tmp = d / f"{split}.tfrecord.tmp"
        with tf.io.TFRecordWriter(str(tmp)) as w:
            for _ in range(n):
                label = int(rng.integers(0, len(COFFEE_LABELS)))
                bean = ((yy - 32) / rng.uniform(14, 20)) ** 2 + ((xx - 32) / rng.uniform(10, 16)) ** 2 < 1
                img = rng.integers(0, 40, (64, 64, 3)).astype(np.uint8)
                img[bean] = np.clip(np.array([60 + 25 * label, 120, 200 - 20 * label]) + rng.integers(-20, 20, 3),
                                    0, 255).astype(np.uint8)
                w.write(example(img, label))
        os.replace(tmp, d / f"{split}.tfrecord")


def age_estimation(d: Path, rng) -> None:
    # APPA-REAL's layout as yu4u/age-gender-estimation reads it: train/ and valid/ with <file_name>_face.jpg
    # (256x256 colour JPEG faces here) and gt_avg_train.csv / gt_avg_valid.csv (file_name, num_ratings,
    # apparent_age_avg, apparent_age_std, real_age); the face's brightness follows its age.
    from PIL import Image

    yy, xx = np.mgrid[0:256, 0:256]
    face = ((yy - 128) / 100.0) ** 2 + ((xx - 128) / 75.0) ** 2 < 1
    for split, n in (("train", 640), ("valid", 128)):
        (d / split).mkdir()
        rows = []
        for i in range(n):
            age = float(rng.uniform(1, 90))
            img = rng.integers(0, 60, (256, 256, 3)).astype(np.uint8)
            img[face] = np.clip(np.array([200, 170, 150]) - age + rng.integers(-15, 15, 3), 0, 255).astype(np.uint8)
            name = f"{i:06d}.jpg"
            tmp = d / split / f".{name}_face.tmp.jpg"
            Image.fromarray(img).save(tmp, quality=90)
            os.replace(tmp, d / split / f"{name}_face.jpg")
            rows.append([name, 40, f"{age:.3f}", "5.0", int(age)])
        _csv(d / f"gt_avg_{split}.csv", ["file_name", "num_ratings", "apparent_age_avg", "apparent_age_std",
                                         "real_age"], rows)


# --------------------------------------------------------------------------- the heldout3 half

MODELNET10 = ["bathtub", "bed", "chair", "desk", "dresser", "monitor", "night_stand", "sofa", "table", "toilet"]


def voxnet_modelnet(d: Path, rng) -> None:
    # PFIAir's convertShapenet.py layout: <split>/<classname>/<instance>.<rot>.npy, each a (32, 32, 32, 1) uint8
    # occupancy grid (ModelNet10's 30^3 padded to 32^3), and train_labels.csv / test_labels.csv (filenames, labels),
    # the file names relative to the data folder here (the source writes absolute ones); a class is a box of its own
    # proportions at a jittered place.
    for split, n in (("train", 128), ("test", 32)):
        rows = []
        for k, cls in enumerate(MODELNET10):
            (d / split / cls).mkdir(parents=True)
            for i in range(n):
                arr = np.zeros((32, 32, 32, 1), np.uint8)
                sx, sy, sz = 6 + (k % 3) * 6, 6 + ((k // 3) % 3) * 6, 6 + (k % 4) * 5
                ox, oy, oz = (int(rng.integers(1, 31 - s)) for s in (sx, sy, sz))
                arr[ox:ox + sx, oy:oy + sy, oz:oz + sz] = 1
                arr[rng.random((32, 32, 32, 1)) < 0.01] = 1
                name = f"{split}/{cls}/{cls}_{i:04d}.{int(rng.integers(0, 12)):03d}.npy"
                _npy(d / name, arr)
                rows.append([name, k])
        _csv(d / f"{split}_labels.csv", ["filenames", "labels"], rows)


CAPTION_WORDS = [f"{a}{b}" for a in ("red", "big", "old", "wet", "tall", "small", "dark", "blue") for b in
                 ("dog", "man", "girl", "boat", "ball", "tree", "car", "bike", "road", "park", "cat", "wall", "sea",
                  "hill", "shirt", "bench", "snow", "grass", "crowd", "water")]
CAPTION_VERBS = ["is", "runs", "jumps", "sits", "plays", "walks", "stands", "rides", "looks", "holds", "in", "on",
                 "at", "with", "near", "the", "two", "of", "and", "into"]


def caption_flickr(d: Path, rng) -> None:
    # therrshan/image-captioning's RNN/ layout: descriptions.txt (one "<image id> <cleaned caption>" line per
    # caption, 5 per image), data/Flicker8k_text/Flickr_8k.trainImages.txt (one "<id>.jpg" per line) and
    # features.pkl (a pickled dict id -> (1, 2048) float32 InceptionV3 feature); 300 training images of 360.
    import pickle

    (d / "data" / "Flicker8k_text").mkdir(parents=True)
    ids = [f"{zlib.crc32(str(i).encode()):010d}_{i:04x}" for i in range(360)]
    features, lines = {}, []
    for ident in ids:
        topic = rng.choice(len(CAPTION_WORDS), 3, replace=False)
        feat = rng.standard_normal((1, 2048)).astype(np.float32) * 0.1
        feat[0, topic * 12] += 1.0
        features[ident] = feat
        for _ in range(5):
            n = int(rng.integers(6, 16))
            words = [CAPTION_WORDS[t] if rng.random() < 0.4 else CAPTION_VERBS[int(rng.integers(0, 20))]
                     for t in rng.choice(topic, n)]
            lines.append(f"{ident} {' '.join(words)}")
    _text(d / "descriptions.txt", "\n".join(lines))
    _text(d / "data" / "Flicker8k_text" / "Flickr_8k.trainImages.txt", "".join(f"{i}.jpg\n" for i in ids[:300]))
    tmp = d / "features.pkl.tmp"
    with open(tmp, "wb") as f:
        pickle.dump(features, f)
    os.replace(tmp, d / "features.pkl")


CHAR_RNN_CHARS = 16 * 64 * 42  # 41 batches of 16 x 64 characters an epoch (read_batches' count)


def char_rnn(d: Path, rng) -> None:
    # ekzhang/char-rnn-keras's data/nottingham-jigs.txt: tunes in ABC notation (X:, T:, M:, K: headers, then bars
    # of notes and chords), generated here to CHAR_RNN_CHARS characters.
    (d / "data").mkdir()
    notes, chords = "ABCDEFGabcdefg", ["A", "D", "G", "E7", "Bm", "Em", "A7", "D7"]
    out, n = [], 0
    while n < CHAR_RNN_CHARS:
        tune = [f"X: {len(out) + 1}", f"T:Jig {len(out) + 1}", "% Nottingham Music Database", "S:EF", "M:6/8",
                f"K:{rng.choice(['A', 'D', 'G'])}", "P:A"]
        for _ in range(int(rng.integers(4, 9))):
            bar = "|".join(f'"{rng.choice(chords)}"' + "".join(rng.choice(list(notes), 3)) + " "
                           + "".join(rng.choice(list(notes), 2)) + str(rng.choice(["", "2", "3"]))
                           for _ in range(4))
            tune.append(bar + "|")
        text = "\n".join(tune) + "\n\n\n"
        out.append(text)
        n += len(text)
    _text(d / "data" / "nottingham-jigs.txt", "".join(out)[:CHAR_RNN_CHARS])


def tk_keypoint(d: Path, rng) -> None:
    # zodiac000/tk's layout: images/IMG<date><time>.jpg (grayscale camera frames; 640x512 here, half the source's
    # 1280x1024) and saved_dict.csv, no header: path, x, y of the one keypoint (a bright disc here) in pixels;
    # the paths relative to the data folder (the source's are absolute).
    (d / "images").mkdir()
    yy, xx = np.mgrid[0:512, 0:640]
    rows = []
    for i in range(224):
        x, y = int(rng.integers(150, 500)), int(rng.integers(150, 400))
        img = (rng.random((512, 640)) * 70 + 40 * np.sin(xx / 37.0 + i)).clip(0, 255)
        img[(yy - y) ** 2 + (xx - x) ** 2 < 144] = 250
        name = f"images/IMG0204060{42339 + i * 7:06d}.jpg"
        _jpg(d / name, img.astype(np.uint8))
        rows.append([name, x, y])
    _csv_rows(d / "saved_dict.csv", rows)


def siamese_omniglot(d: Path, rng) -> None:
    # bubbliiiing/Siamese-tf2's datasets/ layout for Omniglot: images_background/<alphabet>/<character>/<n>.png,
    # 105x105 grayscale ("L") drawings, white background; a character is a few dark strokes of its own, each
    # drawing jittered.
    from PIL import Image, ImageDraw

    root = d / "datasets" / "images_background"
    for a in range(4):
        for c in range(8):
            folder = root / f"Alphabet_{a:02d}" / f"character{c + 1:02d}"
            folder.mkdir(parents=True)
            strokes = rng.integers(15, 90, (3, 4))
            for j in range(10):
                im = Image.new("L", (105, 105), 255)
                draw = ImageDraw.Draw(im)
                for s in strokes:
                    x0, y0, x1, y1 = (s + rng.integers(-4, 5, 4)).tolist()
                    draw.line((x0, y0, x1, y1), fill=0, width=3)
                tmp = folder / f".{j}.tmp.png"
                im.save(tmp)
                os.replace(tmp, folder / f"{a * 1000 + c * 20 + j:04d}_{j + 1:02d}.png")


# --------------------------------------------------------------------------- the heldout4 half


def trigger_word(d: Path, rng) -> None:
    # tdjaballah/multrigger-word's data/processed/*.tfrecord: tf.train.Examples of N_SAMPLES_IN_TFRECORD (100)
    # each, 'X' a float_list of the clip's TX x FX spectrogram (188 x 257 here: 1.1 s at 44.1 kHz, NFFT 512) and
    # 'Y' a float_list of its TY x N_CLASSES labels (44 x 2: 1 for the 25 label steps after each trigger word).
    import tensorflow as tf

    tx, fx, ty = 188, 257, 44
    (d / "data" / "processed").mkdir(parents=True)
    for f in range(3):
        tmp = d / "data" / "processed" / f".dev_{f}.tfrecord.tmp"
        with tf.io.TFRecordWriter(str(tmp)) as w:
            for _ in range(100):
                x = (rng.random((tx, fx)) * 0.3).astype(np.float32)
                y = np.zeros((ty, 2), np.float32)
                y[:, 0] = 1
                for _ in range(int(rng.integers(0, 3))):
                    t = int(rng.integers(10, tx - 30))
                    x[t:t + 12, 20:60] += 1.0  # the trigger word's energy
                    k = min(ty - 1, round((t - 15) / 4) + 1)
                    y[k:k + 6] = (0, 1)
                ex = tf.train.Example(features=tf.train.Features(feature={
                    "X": tf.train.Feature(float_list=tf.train.FloatList(value=x.ravel())),
                    "Y": tf.train.Feature(float_list=tf.train.FloatList(value=y.ravel()))}))
                w.write(ex.SerializeToString())
        os.replace(tmp, d / "data" / "processed" / f"dev_{f}.tfrecord")


DEBRUITEUR_NOISES = ["GaussianNoise", "PoissonNoise", "UniformNoise", "SaltPepperNoise", "SquareMaskNoise",
                     "SpeckleNoise"]


def denoise_autoencoder(d: Path, rng) -> None:
    # RomainCapo/ledebruiteur's resized_images/ (100x100 grayscale PNGs) and noised_images/ (each image with each
    # of the six noises), and dataframes/noised.csv (original path, noised path, noise), paths relative to the data
    # folder (the source's make_noised_dataframe writes absolute ones).
    for sub in ("resized_images", "noised_images", "dataframes"):
        (d / sub).mkdir()
    yy, xx = np.mgrid[0:100, 0:100]
    rows = []
    for i in range(80):
        img = (60 + 40 * np.sin(xx / rng.uniform(5, 15)) + 40 * np.cos(yy / rng.uniform(5, 15))).astype(float)
        cy, cx, r = rng.uniform(20, 80), rng.uniform(20, 80), rng.uniform(8, 25)
        img[(yy - cy) ** 2 + (xx - cx) ** 2 < r * r] = 230
        img = np.clip(img, 0, 255).astype(np.uint8)
        orig = f"resized_images/img{i}.png"
        _png(d / orig, img)
        for noise in DEBRUITEUR_NOISES:
            f = img.astype(float)
            if noise == "GaussianNoise":
                f += rng.normal(0, 10, f.shape)
            elif noise == "PoissonNoise":
                f = rng.poisson(f).astype(float)
            elif noise == "UniformNoise":
                f += rng.uniform(-50, 50, f.shape)
            elif noise == "SaltPepperNoise":
                m = rng.random(f.shape)
                f[m < 0.15] = 0
                f[m > 0.85] = 255
            elif noise == "SquareMaskNoise":
                for _ in range(10):
                    y0, x0 = rng.integers(0, 90, 2)
                    f[y0:y0 + 10, x0:x0 + 10] = 0
            else:
                f *= 1 + rng.normal(0, 0.2, f.shape)
            noised = f"noised_images/img{i}_{noise}.png"
            _png(d / noised, np.clip(f, 0, 255).astype(np.uint8))
            rows.append([orig, noised, noise])
    _csv(d / "dataframes" / "noised.csv", ["original", "noised", "noise"], rows)


SPEECH_WORDS = ["nine", "yes", "no", "up", "down", "left", "right", "on", "off", "stop"]


def speech_attrnn(d: Path, rng) -> None:
    # douglas125/SpeechCmdRecognition's speech commands after audioUtils.WAV2Numpy: <word>/<hash>_nohash_<i>.wav.npy,
    # each a (16000, 1) float32 clip (tf.audio.decode_wav with desired_samples=16000), and the dataset's
    # validation_list.txt naming the validation clips.
    val = []
    for k, word in enumerate(SPEECH_WORDS):
        (d / "train" / word).mkdir(parents=True)
        for i in range(60):
            name = f"{word}/{zlib.crc32(f'{word}{i}'.encode()):08x}_nohash_{i}.wav.npy"
            x = np.zeros(16000, np.float32)
            n = int(16000 * rng.uniform(0.6, 0.9))
            start = int(rng.integers(0, 16000 - n))
            x[start:start + n] = _tone(rng, n, 16000, k, len(SPEECH_WORDS))
            _npy(d / "train" / name, x[:, None])
            if i >= 48:
                val.append(name)
    _text(d / "train" / "validation_list.txt", "".join(v[:-4] + "\n" for v in val))


def glucose_lag(d: Path, rng) -> None:
    # kwisatzheadache/glucose-learning's CGM.csv: a continuous glucose monitor's export, datetime, isig (the sensor
    # current) and glucose, one row every 5 minutes; isig an autocorrelated walk here.
    n = 3000
    isig = 20 + np.cumsum(rng.normal(0, 0.4, n)) * 0.5 + 5 * np.sin(np.arange(n) / 60)
    glucose = 5.5 * isig + rng.normal(0, 4, n)
    t0 = np.datetime64("2017-03-01T00:00")
    _csv(d / "CGM.csv", ["datetime", "isig", "glucose"],
         ([str(t0 + np.timedelta64(5 * i, "m")), f"{isig[i]:.2f}", f"{glucose[i]:.0f}"] for i in range(n)))


SENTIMENT_WORDS = [f"word{i}" for i in range(3000)]


def imdb_lstm(d: Path, rng) -> None:
    # gurjitkaur0/imbd-sentiment-analysis's cleaned_reviews.csv: review (lower-cased, cleaned text) and sentiment
    # (positive / negative); a review draws a few words of its polarity among common ones.
    pos, neg = SENTIMENT_WORDS[:40], SENTIMENT_WORDS[40:80]
    rows = []
    for _ in range(2000):
        label = int(rng.integers(0, 2))
        words = list(rng.choice(SENTIMENT_WORDS[80:], int(rng.integers(80, 260))))
        for _ in range(int(rng.integers(3, 10))):
            words.insert(int(rng.integers(0, len(words))), str(rng.choice(pos if label else neg)))
        rows.append([" ".join(words), "positive" if label else "negative"])
    _csv(d / "cleaned_reviews.csv", ["review", "sentiment"], rows)


def squeezenet_faces(d: Path, rng) -> None:
    # Osebek/Conditional-Variational-Autoencoder-Keras's IMDB-WIKI layout: imdb_db/aligned/<nn>/<file>.jpg (face
    # crops, some grayscale; 128x128 here) and the imdb.mat metadata as imdb_db/imdb_crop/imdb.csv (full_path,
    # photo_taken, dob_year, name, face_score, second_face_score, face_location); 8 people with 80 usable photos
    # each (640 rows kept by HandleData's filters) and 40 rows the filters drop (a low face score, a second face).
    from PIL import Image

    (d / "imdb_db" / "imdb_crop").mkdir(parents=True)
    yy, xx = np.mgrid[0:128, 0:128]
    rows = []
    for p in range(8):
        name = f"Actor Number{p:02d}"
        tone = np.array([80 + 20 * p, 200 - 15 * p, 120 + (p % 3) * 40])
        for j in range(85):
            folder = d / "imdb_db" / "aligned" / f"{(p * 85 + j) % 100:02d}"
            folder.mkdir(parents=True, exist_ok=True)
            img = rng.integers(0, 50, (128, 128, 3)).astype(np.uint8)
            face = ((yy - 64 - rng.integers(-6, 6)) / 45.0) ** 2 + ((xx - 64 - rng.integers(-6, 6)) / 35.0) ** 2 < 1
            img[face] = np.clip(tone + rng.integers(-20, 20, 3), 0, 255).astype(np.uint8)
            fname = f"nm{p:07d}_rm{zlib.crc32(f'{p}-{j}'.encode()):010d}_{1960 + p}-1-1_{2000 + j % 15}.jpg"
            rel = f"{(p * 85 + j) % 100:02d}/{fname}"
            im = Image.fromarray(img)
            if j % 7 == 3:
                im = im.convert("L")
            tmp = folder / f".{fname}.tmp.jpg"
            im.save(tmp, quality=90)
            os.replace(tmp, folder / fname)
            score = 4.5 if j < 80 else 1.5
            second = "nan" if j < 80 or j % 2 else "2.1"
            rows.append([rel, 2000 + j % 15, 1960 + p, name, score, second, "10 10 118 118"])
    _csv(d / "imdb_db" / "imdb_crop" / "imdb.csv", ["full_path", "photo_taken", "dob_year", "name", "face_score",
                                                    "second_face_score", "face_location"], rows)


def muography_unet(d: Path, rng) -> None:
    # SamuelDominguezGamero/Muography_Denoising's data/datasets/dataset0.h5: for each split (train, val, test)
    # 'poca' (N, 64, 64, 3) uint8 POCA counts of the XY, XZ, YZ projections (128 px in the source) and 'gt'
    # (N, 64, 64, 3) float32 ground truth in [0, 1] (256, 48, 32 examples); an object is a few blocks of high scattering density.
    import h5py

    (d / "data" / "datasets").mkdir(parents=True)
    tmp = d / "data" / "datasets" / ".dataset0.h5.tmp"
    with h5py.File(tmp, "w") as f:
        for split, n in (("train", 256), ("val", 48), ("test", 32)):
            gt = np.zeros((n, 64, 64, 3), np.float32)
            for i in range(n):
                for _ in range(int(rng.integers(1, 4))):
                    y0, x0 = rng.integers(4, 44, 2)
                    h, w = rng.integers(6, 18, 2)
                    gt[i, y0:y0 + h, x0:x0 + w, :] = rng.uniform(0.4, 1.0)
            poca = np.clip(gt * 200 + rng.normal(20, 15, gt.shape), 0, 255).astype(np.uint8)
            f.create_dataset(f"{split}/poca", data=poca)
            f.create_dataset(f"{split}/gt", data=gt)
    os.replace(tmp, d / "data" / "datasets" / "dataset0.h5")


def plankton_siamese(d: Path, rng) -> None:
    # ketil-malde/plankton-siamese's data/train/<class>/*.png and data/validate/<class>/*.png: ZooScan plankton
    # images that convert-images.sh centres on a white canvas (299x299 there, 96x96 here), grayscale; a class is a
    # dark body of its own shape and size, each image jittered.
    from PIL import Image, ImageDraw

    for split, n in (("train", 30), ("validate", 8)):
        for k in range(12):
            folder = d / "data" / split / f"taxon_{k:02d}"
            folder.mkdir(parents=True)
            for j in range(n):
                im = Image.new("L", (96, 96), 255)
                draw = ImageDraw.Draw(im)
                w, h = 14 + 4 * (k % 4), 10 + 6 * (k // 4)
                cx, cy = 48 + int(rng.integers(-8, 9)), 48 + int(rng.integers(-8, 9))
                draw.ellipse((cx - w, cy - h, cx + w, cy + h), fill=int(rng.integers(20, 90)))
                for _ in range(k % 5 + 1):
                    a = rng.uniform(0, 2 * np.pi)
                    draw.line((cx, cy, cx + int(40 * np.cos(a)), cy + int(40 * np.sin(a))), fill=40, width=2)
                tmp = folder / f".{j}.tmp.png"
                im.save(tmp)
                os.replace(tmp, folder / f"{split[0]}{k:02d}_{j:03d}.png")


def skin_cancer(d: Path, rng) -> None:
    # askysrsh/SKIN.CANCER.DETECTION's data/ (the ISIC dermatologist-ai zips as extracted): data/train/<class>/*.jpg and
    # data/valid/<class>/*.jpg for nevus, seborrheic_keratosis, melanoma (160x160 JPEGs here); a lesion is a dark
    # blob on skin tone, melanoma's darker and more irregular.
    yy, xx = np.mgrid[0:160, 0:160]
    for split, n in (("train", 256), ("valid", 43)):
        for k, cls in enumerate(("nevus", "seborrheic_keratosis", "melanoma")):
            (d / "data" / split / cls).mkdir(parents=True)
            for j in range(n):
                img = np.clip(np.array([200, 160, 140]) + rng.normal(0, 12, (160, 160, 3)), 0, 255)
                r = ((yy - 80 - rng.integers(-15, 15)) / rng.uniform(25, 45)) ** 2 + \
                    ((xx - 80 - rng.integers(-15, 15)) / rng.uniform(25, 45)) ** 2
                img[r < 1 + 0.3 * k * rng.random((160, 160))] *= 0.6 - 0.15 * k
                _jpg(d / "data" / split / cls / f"ISIC_{k}{j:06d}.jpg", img.astype(np.uint8))


CITY_CLASSES = 6


def cityscapes_unet(d: Path, rng) -> None:
    # iamthedh7/CS331.M22.KHCL-SematicSegmentation_ForSelfDrivingCar's layout: leftImg8bit/<split>/<city>/*.png (RGB street
    # scenes; 128x256 here), its four lighting-augmented copies train_light_1/2 and train_night_1/2 with the same
    # names, and mask/<split>/*.png (one channel, class ids 0..5) in the same sorted order.
    cities = ("aachen", "bremen", "zurich")
    for split, n in (("train", 8), ("val", 6)):
        (d / "mask" / split).mkdir(parents=True)
        for c in cities:
            for j in range(n):
                mask = np.zeros((128, 256), np.uint8)
                mask[64:] = 1  # road
                mask[: int(rng.integers(20, 50))] = 2  # sky
                for _ in range(int(rng.integers(1, 4))):
                    x0, w = int(rng.integers(0, 220)), int(rng.integers(10, 36))
                    mask[int(rng.integers(40, 70)):int(rng.integers(80, 120)), x0:x0 + w] = int(rng.integers(3, 6))
                img = np.array([[90, 90, 90], [128, 64, 128], [70, 130, 180], [220, 20, 60], [0, 0, 142],
                                [107, 142, 35]], np.float32)[mask] + rng.normal(0, 10, (128, 256, 3))
                name = f"{c}_{j:06d}_000019_leftImg8bit.png"
                _png(d / "mask" / split / f"{c}_{j:06d}.png", mask)
                variants = {"train": 1.0, "train_light_1": 1.2, "train_light_2": 1.4, "train_night_1": 0.5,
                            "train_night_2": 0.3} if split == "train" else {"val": 1.0}
                for v, gain in variants.items():
                    (d / "leftImg8bit" / v / c).mkdir(parents=True, exist_ok=True)
                    _png(d / "leftImg8bit" / v / c / name, np.clip(img * gain, 0, 255).astype(np.uint8))


def kashmir_asr(d: Path, rng) -> None:
    # kamrandar/Kashmir-ASR's "Audio Synthesis" folder: <label>.<variant>.wav, 16-bit mono clips of a spoken word
    # (label 1..1000; 24 words here) and its synthesized variants (Generate_different_Audio_Effects.py); 1 s at
    # 16 kHz with silence around the word, which librosa.effects.trim cuts.
    (d / "Audio Synthesis").mkdir(parents=True)
    for label in range(1, 25):
        for v in range(16):
            x = np.zeros(16000, np.float32)
            n = int(16000 * rng.uniform(0.4, 0.7))
            start = int(rng.integers(1000, 16000 - n - 1000))
            x[start:start + n] = _tone(rng, n, 16000, label % 12, 12) * np.hanning(n)
            x += 0.002 * rng.standard_normal(16000).astype(np.float32)
            _wav(d / "Audio Synthesis" / f"{label}.{v}.wav", x, 16000)


def deepdriving(d: Path, rng) -> None:
    # babraham123/deepdriving's train_images/: TORCS frames as <8-digit index>.jpg (210x280 colour), affordances.npy
    # (N, 15): the index and the 14 affordance indicators (angle, toMarking_L/M/R, dist_L/R, toMarking_LL/ML/MR/RR,
    # dist_LL/MM/RR, fast), and deepdriving_average.h5 ('average', the mean image in [0, 1], 210x280x3).
    import h5py

    (d / "train_images").mkdir(parents=True)
    n = 960
    aff = np.zeros((n, 15), np.float32)
    total = np.zeros((210, 280, 3))
    for i in range(n):
        angle = rng.uniform(-0.5, 0.5)
        img = np.full((210, 280, 3), 60, np.float32)
        img[:90] = [200, 170, 120]
        shift = int(angle * 100)
        for x0 in (70, 140, 210):
            img[100:, max(0, x0 + shift - 3):x0 + shift + 3] = 230
        img = np.clip(img + rng.normal(0, 8, img.shape), 0, 255).astype(np.uint8)
        _jpg(d / "train_images" / f"{i + 1:08d}.jpg", img)
        total += img
        aff[i] = [i + 1, angle, *rng.uniform(-7, 7, 9), *rng.uniform(0, 75, 3), 1.0]
    _npy(d / "train_images" / "affordances.npy", aff)
    tmp = d / ".deepdriving_average.h5.tmp"
    with h5py.File(tmp, "w") as f:
        f.create_dataset("average", data=(total / n / 255).astype(np.float32))
    os.replace(tmp, d / "deepdriving_average.h5")


def pokemon_gan(d: Path, rng) -> None:
    # Avinashpathapati/Deep-Learning-PokeMon's pokemon-data/<name>/*.jpg (the Kaggle Pokemon images of one species;
    # 256 of Charmander here, 96x96 JPEGs): an orange body on a white background, posed and scaled at random.
    from PIL import Image, ImageDraw

    (d / "pokemon-data" / "Charmander").mkdir(parents=True)
    for j in range(256):
        im = Image.new("RGB", (96, 96), (255, 255, 255))
        draw = ImageDraw.Draw(im)
        cx, cy, s = 48 + int(rng.integers(-10, 11)), 52 + int(rng.integers(-8, 9)), int(rng.integers(16, 28))
        draw.ellipse((cx - s, cy - s, cx + s, cy + s + 8), fill=(240, 128 + int(rng.integers(-20, 20)), 48))
        draw.ellipse((cx - s // 2, cy - 2 * s, cx + s // 2, cy - s + 4), fill=(240, 140, 60))
        draw.line((cx + s, cy, cx + 2 * s, cy - s), fill=(250, 60, 20), width=5)
        _jpg(d / "pokemon-data" / "Charmander" / f"{j}.jpg", np.asarray(im))


def alexnet_dataset(d: Path, rng) -> None:
    # jroose/alexnet_weights_evolution's training folder (the ImageNet-style <class>/*.jpg tree that
    # image_dataset_from_directory reads): 4 classes of 160 generated 128x128 JPEGs here; a class is a shape of its own
    # (disc, square, bar, ring) in its own colour on a noisy background, placed and sized at random.
    from PIL import Image, ImageDraw

    colors = [(200, 60, 40), (40, 160, 60), (50, 80, 200), (220, 200, 40)]
    for k, cls in enumerate(("n01_disc", "n02_square", "n03_bar", "n04_ring")):
        (d / "train" / cls).mkdir(parents=True)
        for j in range(160):
            bg = np.clip(rng.normal(120, 30, (128, 128, 3)), 0, 255).astype(np.uint8)
            im = Image.fromarray(bg)
            draw = ImageDraw.Draw(im)
            cx, cy, s = (int(v) for v in (rng.integers(40, 88), rng.integers(40, 88), rng.integers(14, 34)))
            box = (cx - s, cy - s, cx + s, cy + s)
            if k == 0:
                draw.ellipse(box, fill=colors[k])
            elif k == 1:
                draw.rectangle(box, fill=colors[k])
            elif k == 2:
                draw.rectangle((cx - s, cy - 5, cx + s, cy + 5), fill=colors[k])
            else:
                draw.ellipse(box, outline=colors[k], width=6)
            _jpg(d / "train" / cls / f"{cls}_{j:04d}.jpg", np.asarray(im))


GENRES = ["electronic", "experimental", "folk", "hiphop", "instrumental", "international", "pop", "rock"]


def genre_mfcc(d: Path, rng) -> None:
    # jaskee1/top-n-genre-classification's fma_small_split_wav/fma_train/<genre>/*.wav and fma_validate/<genre>/*.wav
    # (FMA small's 30 s clips converted to WAV and split; 4 s mono 16-bit clips at 22050 Hz here, 12 training and 4
    # validation clips of each of the 8 genres): a genre is a chord of its own base pitch and beat rate, with noise.
    sr, n = 22050, 4 * 22050
    t = np.arange(n) / sr
    for split, count in (("fma_train", 12), ("fma_validate", 4)):
        for k, genre in enumerate(GENRES):
            (d / "fma_small_split_wav" / split / genre).mkdir(parents=True)
            for j in range(count):
                f0 = 110 * 2 ** (k / 4) * rng.uniform(0.97, 1.03)
                beat = 0.5 + 0.5 * np.sign(np.sin(2 * np.pi * (1 + k / 2) * t))
                x = (0.3 * np.sin(2 * np.pi * f0 * t) + 0.15 * np.sin(2 * np.pi * 1.5 * f0 * t)) * beat
                x = x + 0.05 * rng.standard_normal(n)
                _wav(d / "fma_small_split_wav" / split / genre / f"{k:03d}{j:03d}.wav", x.astype(np.float32), sr)


def libras_frames(d: Path, rng) -> None:
    # fabianaferreira/final-project-src's sign-language video frames (Crawler/Videos/<first letter>/<word>/DEResult_10/
    # frame<N>.jpg, the edge frames dropped) and cnn_dataset_generator.py's lists of them,
    # Classifier/datasets/CNN/{X,y}_{train,test}_no_edge_frames.npy (frame paths, relative to this folder here, and
    # one-hot rows over 48 classes); 40 words of 8 kept 88x120 RGB frames (176x240 there), 32 words for training and 8
    # for testing; a word's class moves a skin-toned hand blob along a path of its own over the frames.
    yy, xx = np.mgrid[0:88, 0:120]
    files, labels = [], []
    for w in range(40):
        word = f"palavra{w:02d}"
        cls = (w * 7) % 48
        folder = d / "Crawler" / "Videos" / word[0] / word / "DEResult_10"
        folder.mkdir(parents=True)
        frames = []
        for n in range(1, 9):
            img = np.clip(rng.normal(60, 12, (88, 120, 3)), 0, 255)
            cy = 44 + 25 * np.sin(2 * np.pi * (cls / 48 + n / 16))
            cx = 60 + 40 * np.cos(2 * np.pi * (cls / 24 + n / 16))
            hand = ((yy - cy) / 10.0) ** 2 + ((xx - cx) / 8.0) ** 2 < 1
            img[hand] = (210, 160, 130)
            _jpg(folder / f"frame{n}.jpg", img.astype(np.uint8))
            frames.append(f"Crawler/Videos/{word[0]}/{word}/DEResult_10/frame{n}.jpg")
        files.append(frames)
        labels.append(np.eye(48, dtype=np.float32)[cls])
    out = d / "Classifier" / "datasets" / "CNN"
    out.mkdir(parents=True)
    for split, words in (("train", range(32)), ("test", range(32, 40))):
        _npy(out / f"X_{split}_no_edge_frames.npy", np.array([f for w in words for f in files[w]]))
        _npy(out / f"y_{split}_no_edge_frames.npy", np.repeat(np.array([labels[w] for w in words]), 8, axis=0))


def carnd_cloning(d: Path, rng) -> None:
    # abhicoo/CarND-Behavioral-Cloning-P3's data/: the simulator's driving_log.csv (no header: center, left and right
    # image paths as the recorder wrote them, absolute, steering, throttle, brake, speed) and data/IMG/{center,left,
    # right}_*.jpg (160x320 RGB); 100 log lines here; a frame is sky over a grey road whose centre line's bend follows
    # the steering, the side cameras' views shifted by 30 px.
    (d / "data" / "IMG").mkdir(parents=True)
    yy, xx = np.mgrid[0:160, 0:320]
    rows = []
    for i in range(100):
        steering = float(np.clip(rng.normal(0, 0.25), -1, 1))
        names = []
        for cam, shift in (("center", 0), ("left", 30), ("right", -30)):
            img = np.empty((160, 320, 3), np.uint8)
            img[:] = (90, 90, 90)
            img[:70] = (200, 170, 120)
            line = 160 + shift + steering * 80 * ((160 - yy) / 90.0) ** 2
            img[(yy >= 70) & (np.abs(xx - line) < 3)] = (230, 230, 230)
            noisy = np.clip(img.astype(np.int16) + rng.integers(-12, 13, img.shape), 0, 255).astype(np.uint8)
            name = f"{cam}_2017_10_20_{i // 60:02d}_{i % 60:02d}_{i:03d}.jpg"
            _jpg(d / "data" / "IMG" / name, noisy)
            names.append(f"/home/user/simulator/IMG/{name}")
        rows.append([*names, f"{steering:.6f}", "0.8", "0", f"{rng.uniform(25, 30):.4f}"])
    _csv_rows(d / "data" / "driving_log.csv", rows)


def _jpg(path: Path, img: np.ndarray) -> None:
    from PIL import Image

    tmp = path.with_name("." + path.name + ".tmp.jpg")
    Image.fromarray(img).save(tmp, quality=90)
    os.replace(tmp, path)


def _csv_rows(path: Path, rows) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="") as f:
        csv.writer(f).writerows(rows)
    os.replace(tmp, path)


ODIR_CLASSES = ["Normal", "Diabetes", "Glaucoma", "Cataract", "Age related Macular Degeneration",
                "Hypertension", "Pathological Myopia", "Other diseases/abnormalities"]


def odir_fundus(d: Path, rng) -> None:
    # Tumbler-3/Diploma-project's ODIR-5K data as model.py reads it: df_proc.csv (ID, filename, class, class_name,
    # target: the one-hot list as text, written by data_preprocess.py) and "Training Images/<filename>" (128x128 RGB
    # JPEGs, cropped, CLAHE'd and resized by "image preprocessing.py"); 640 images here for 6393, about a quarter
    # Normal as in ODIR; a fundus is an orange disc on black with an optic disc, and a class adds its own lesion
    # (dots, cupping, haze, a pale macula, narrowed vessels, a stretched disc, a dark patch).
    (d / "Training Images").mkdir(parents=True)
    yy, xx = np.mgrid[0:128, 0:128]
    r = np.hypot(yy - 64, xx - 64)
    rows = []
    for i in range(640):
        cls = 0 if rng.random() < 0.25 else int(rng.integers(1, 8))
        img = np.zeros((128, 128, 3), np.float32)
        fundus = r < 60
        img[fundus] = (rng.uniform(150, 190), rng.uniform(70, 100), rng.uniform(30, 50))
        img += rng.normal(0, 8, img.shape)
        oy, ox = 64 + rng.integers(-6, 7), 40 + rng.integers(-6, 7)
        disc_r = 9 if cls != 2 else 14  # glaucoma: a larger, paler cup
        disc = np.hypot(yy - oy, xx - ox) < disc_r
        img[disc] = (240, 220, 170) if cls != 2 else (250, 245, 230)
        for k in range(4):  # vessels leaving the disc
            ang = k * np.pi / 2 + rng.uniform(-0.3, 0.3)
            t = np.linspace(0, 55, 80)
            vy = np.clip((oy + t * np.sin(ang)).astype(int), 0, 127)
            vx = np.clip((ox + t * np.cos(ang)).astype(int), 0, 127)
            w = 1 if cls == 5 else 2  # hypertension: narrow vessels
            for dy in range(w):
                img[np.clip(vy + dy, 0, 127), vx] = (120, 20, 20)
        if cls == 1:  # diabetes: scattered bright exudates and red dots
            for _ in range(14):
                cy, cx = rng.integers(30, 98, 2)
                img[cy - 1:cy + 2, cx - 1:cx + 2] = (255, 250, 120) if rng.random() < 0.5 else (90, 0, 0)
        elif cls == 3:  # cataract: a milky haze
            img = 0.45 * img + 0.55 * 200
        elif cls == 4:  # AMD: a pale macula
            mac = np.hypot(yy - 64, xx - 86) < 10
            img[mac] = (230, 200, 120)
        elif cls == 6:  # myopia: a stretched, tilted disc crescent
            cres = (np.hypot((yy - oy) / 1.0, (xx - ox - 8) / 2.2) < 10) & ~disc
            img[cres] = (245, 235, 210)
        elif cls == 7:  # other: a dark patch
            cy, cx = rng.integers(40, 88, 2)
            img[np.hypot(yy - cy, xx - cx) < 7] = (40, 20, 10)
        img[~fundus] = rng.normal(4, 2, (int((~fundus).sum()), 3))
        name = f"{i // 2}_{'left' if i % 2 else 'right'}.jpg"
        _jpg(d / "Training Images" / name, np.clip(img, 0, 255).astype(np.uint8))
        onehot = [int(k == cls) for k in range(8)]
        rows.append([i, name, cls, ODIR_CLASSES[cls], "[" + ", ".join(map(str, onehot)) + "]"])
    _csv(d / "df_proc.csv", ["ID", "filename", "class", "class_name", "target"], rows)


def realness_discriminator(d: Path, rng) -> None:
    # less-lab-uva/perception_fuzzing's mutation images as discriminator_keras.py globs them:
    # src/images/<run>/*_edit.png (a Cityscapes frame with a mutation pasted in) and *_orig.png (the frame unchanged),
    # 2048x1024 PNGs there; 256x128 here, 240 frames of each kind in two run folders. A frame is sky, buildings and a
    # grey road with lane marks; an edit pastes a car-like box of a new colour, with hard edges and no shading.
    yy, xx = np.mgrid[0:128, 0:256]
    for run in ("fri_run1", "fri_run2"):
        (d / "images" / run).mkdir(parents=True)
    for i in range(240):
        img = np.zeros((128, 256, 3), np.float32)
        horizon = int(rng.integers(50, 66))
        img[:horizon] = (rng.uniform(150, 210), rng.uniform(170, 220), rng.uniform(200, 240))  # sky (BGR-agnostic)
        x = 0
        while x < 256:  # buildings
            w, h = int(rng.integers(16, 48)), int(rng.integers(15, horizon))
            img[horizon - h:horizon, x:x + w] = rng.uniform(60, 140, 3)
            x += w
        road = yy >= horizon
        img[road] = (rng.uniform(80, 110),) * 3
        lane = road & (np.abs(xx - 128 - (yy - horizon) * 1.2) < 2) & ((yy // 6) % 2 == 0)
        img[lane] = (230, 230, 230)
        img += rng.normal(0, 6, img.shape)
        img += (yy / 128.0)[..., None] * rng.uniform(-20, 20)  # soft lighting gradient
        run = "fri_run1" if i % 2 == 0 else "fri_run2"
        orig = np.clip(img, 0, 255).astype(np.uint8)
        _png(d / "images" / run / f"mut{i:04d}_orig.png", orig)
        edit = img.copy()
        cy, cx = int(rng.integers(horizon + 10, 118)), int(rng.integers(30, 226))
        h, w = int(rng.integers(10, 22)), int(rng.integers(20, 44))
        edit[cy - h // 2:cy + h // 2, cx - w // 2:cx + w // 2] = rng.uniform(0, 255, 3)
        _png(d / "images" / run / f"mut{i:04d}_edit.png", np.clip(edit, 0, 255).astype(np.uint8))


def kitti_road_fcn(d: Path, rng) -> None:
    # sigmaai/self-driving-golf-cart's data_road/training (the KITTI road benchmark): image_2/{um,umm,uu}_0000NN.png
    # (375x1242 RGB camera frames) and gt_image_2/{cat}_road_0000NN.png (red background, magenta road, black other
    # road), plus the um_lane_*.png ground truths the script's glob skips; 24 frames here (8 a category): sky over
    # grass and a grey road whose vanishing point and width vary, the gt's road region the same trapezoid.
    (d / "data_road" / "training" / "image_2").mkdir(parents=True)
    (d / "data_road" / "training" / "gt_image_2").mkdir(parents=True)
    h, w = 375, 1242
    yy, xx = np.mgrid[0:h, 0:w]
    for cat in ("um", "umm", "uu"):
        for j in range(8):
            horizon = int(rng.integers(150, 200))
            vx = rng.uniform(0.35, 0.65) * w
            half_bottom = rng.uniform(0.3, 0.55) * w
            t = np.clip((yy - horizon) / (h - horizon), 0, None)
            road = (yy > horizon) & (np.abs(xx - vx) < 8 + t * half_bottom)
            img = np.empty((h, w, 3), np.float32)
            img[:] = (150, 180, 220)                                   # sky
            img[yy > horizon] = (70, 120, 50)                           # grass, trees
            img[road] = (105, 105, 110)                                 # asphalt
            img += rng.normal(0, 10, (h, w, 1)) + rng.normal(0, 4, (h, w, 3))
            img *= rng.uniform(0.8, 1.2)
            _png(d / "data_road" / "training" / "image_2" / f"{cat}_{j:06d}.png",
                 np.clip(img, 0, 255).astype(np.uint8))
            gt = np.zeros((h, w, 3), np.uint8)
            gt[:] = (255, 0, 0)
            gt[road] = (255, 0, 255)
            _png(d / "data_road" / "training" / "gt_image_2" / f"{cat}_road_{j:06d}.png", gt)
            if cat == "um":
                lane = np.zeros((h, w, 3), np.uint8)
                lane[:] = (255, 0, 0)
                lane[road & (xx > vx)] = (255, 0, 255)
                _png(d / "data_road" / "training" / "gt_image_2" / f"um_lane_{j:06d}.png", lane)


def srgan_celeba(d: Path, rng) -> None:
    # aurelio-amerio/Keras-SRGAN's dataset/img_align_celeba/*.jpg (CelebA's aligned faces, 178x218 JPEGs named
    # 000001.jpg ...); 320 here: a skin-toned face ellipse with hair, eyes and mouth on a plain background, placed,
    # sized and coloured at random, with fine texture for the super-resolution to recover.
    from PIL import Image, ImageDraw

    (d / "dataset" / "img_align_celeba").mkdir(parents=True)
    for j in range(320):
        bg = tuple(int(c) for c in rng.integers(40, 220, 3))
        im = Image.new("RGB", (178, 218), bg)
        draw = ImageDraw.Draw(im)
        cx, cy = 89 + int(rng.integers(-8, 9)), 118 + int(rng.integers(-8, 9))
        fw, fh = int(rng.integers(44, 58)), int(rng.integers(60, 74))
        hair = tuple(int(c) for c in rng.integers(10, 120, 3))
        draw.ellipse((cx - fw - 6, cy - fh - 10, cx + fw + 6, cy + fh // 3), fill=hair)
        skin = (int(rng.integers(170, 240)), int(rng.integers(120, 190)), int(rng.integers(90, 160)))
        draw.ellipse((cx - fw, cy - fh, cx + fw, cy + fh), fill=skin)
        for ex in (cx - fw // 2, cx + fw // 2):
            draw.ellipse((ex - 7, cy - 18, ex + 7, cy - 10), fill=(250, 250, 250))
            draw.ellipse((ex - 3, cy - 17, ex + 3, cy - 11), fill=(40, 30, 20))
        draw.line((cx, cy - 8, cx - 4, cy + 14), fill=tuple(int(c * 0.8) for c in skin), width=3)
        draw.arc((cx - 18, cy + 18, cx + 18, cy + 40), 10, 170, fill=(150, 40, 50), width=4)
        img = np.asarray(im).astype(np.int16) + rng.integers(-10, 11, (218, 178, 3))
        _jpg(d / "dataset" / "img_align_celeba" / f"{j + 1:06d}.jpg", np.clip(img, 0, 255).astype(np.uint8))


XCEPTION_WORDS = ["yes", "no", "up", "down", "left", "right", "on", "off", "stop", "go",
                "bed", "bird", "cat", "dog", "eight", "five", "four", "happy", "house", "marvin",
                "nine", "one", "seven", "sheila", "six", "three", "tree", "two", "wow", "zero"]


def speech_xception(d: Path, rng) -> None:
    # 3v1l91l/speech's layout of the Kaggle TensorFlow Speech Recognition Challenge data: input/train/audio/<word>/
    # <hash>_nohash_<i>.wav (16 kHz mono 16-bit, up to 1 s), input/train/valid/<word>/ (moved there by
    # move_validation_files.py), input/train/audio/silence/ (1 s cuts of the background noise, written by
    # generate_silence_audio.py) and input/train/audio/_background_noise_/ (long noise files, dropped by the
    # script); the 30 words of Speech Commands v0.01, 36 training and 5 validation clips each, 20 silence clips, 2
    # noise files of 3 s. A word is a tone of its own pitch (200 + 150 k Hz and a harmonic) in a Hann envelope at a
    # random place in the clip, over faint noise; a clip is 0.8-1 s long (the script left-pads it).
    sr = 16000
    for split, count in (("audio", 36), ("valid", 5)):
        for k, word in enumerate(XCEPTION_WORDS):
            (d / "input" / "train" / split / word).mkdir(parents=True)
            for i in range(count):
                n = int(sr * rng.uniform(0.8, 1.0))
                m = int(n * rng.uniform(0.4, 0.7))
                start = int(rng.integers(0, n - m))
                x = 0.01 * rng.standard_normal(n)
                x[start:start + m] += _tone(rng, m, sr, k, len(XCEPTION_WORDS)) * np.hanning(m)
                name = f"{zlib.crc32(f'{split}{word}{i}'.encode()):08x}_nohash_{i}.wav"
                _wav(d / "input" / "train" / split / word / name, x.astype(np.float32), sr)
    (d / "input" / "train" / "audio" / "silence").mkdir(parents=True)
    for i in range(20):
        x = rng.uniform(0.005, 0.05) * rng.standard_normal(sr)
        _wav(d / "input" / "train" / "audio" / "silence" / f"silence_{i}.wav", x.astype(np.float32), sr)
    (d / "input" / "train" / "audio" / "_background_noise_").mkdir(parents=True)
    for name in ("white_noise", "running_tap"):
        x = 0.1 * rng.standard_normal(3 * sr)
        _wav(d / "input" / "train" / "audio" / "_background_noise_" / f"{name}.wav", x.astype(np.float32), sr)


def bracs_mobilenet(d: Path, rng) -> None:
    # ahmetenesatas/Classification-of-Breast-Cancer-Subtypes-Using-Deep-Learning-Methods's new_dataset_3_128:
    # <train|test>/<0_B|1_A|2_M>/<RoI name>.<x><y>.png, 128x128 tiles cut from BRACS H&E RoIs by kmeans_3_128.py and
    # saved with plt.imsave (RGBA PNGs); 320 training and 64 test tiles here. A tile is pink stroma with purple
    # nuclei: benign few, small and round; atypical more and larger; malignant crowded, large, dark and irregular.
    yy, xx = np.mgrid[0:128, 0:128]
    names = ("0_B", "1_A", "2_M")
    for split, n in (("train", 320), ("test", 64)):
        for c in names:
            (d / "new_dataset_3_128" / split / c).mkdir(parents=True)
        for i in range(n):
            k = i % 3
            img = np.empty((128, 128, 3), np.float32)
            img[:] = (rng.uniform(215, 240), rng.uniform(150, 180), rng.uniform(190, 215))
            img += rng.normal(0, 10, (128, 128, 1)) * np.array([1.0, 1.2, 0.8])
            count, radius, dark = ((12, 3.0, 0.55), (28, 4.5, 0.45), (55, 6.0, 0.3))[k]
            for _ in range(int(count * rng.uniform(0.8, 1.2))):
                cy, cx = rng.uniform(0, 128, 2)
                ry, rx = radius * rng.uniform(0.7, 1.3 + 0.4 * k, 2)
                nucleus = ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 < 1
                img[nucleus] = np.array([120, 60, 160]) * dark * rng.uniform(0.8, 1.2)
            rgba = np.concatenate([np.clip(img, 0, 255).astype(np.uint8), np.full((128, 128, 1), 255, np.uint8)], -1)
            _png(d / "new_dataset_3_128" / split / names[k] / f"BRACS_{1000 + i}_{names[k][2:]}_{i % 5}.{i % 4 * 128}{i % 3 * 128}.png", rgba)


def _jpeg_bytes(img: np.ndarray) -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="JPEG", quality=90)
    return buf.getvalue()


def firecam_inception(d: Path, rng) -> None:
    # fuego-dev/firecam's TFRecords as train/prepare_trainset.py writes them: firecam_<split>_<shard>-of-<n>.tfrecord
    # (shards of up to 9000 crops, so one shard each here), tf.train.Examples of image/encoded (the crop's JPEG file
    # bytes), image/format b'jpg', image/class/label (0 nonSmoke, 1 smoke), image/height, image/width; 720 training
    # and 80 validation crops (90% / 10% as the source splits), about a fifth of them rectangular (the parse resizes
    # those). A crop is a sky gradient over a ridge line with scrub texture; a smoke crop adds a soft grey plume
    # rising from the ridge, drifting with the wind.
    import tensorflow as tf

    def example(jpg, h, w, label):
        def b(v):
            return tf.train.Feature(bytes_list=tf.train.BytesList(value=[v]))

        def i(v):
            return tf.train.Feature(int64_list=tf.train.Int64List(value=[v]))

        return tf.train.Example(features=tf.train.Features(feature={
            "image/encoded": b(jpg), "image/format": b(b"jpg"), "image/class/label": i(label),
            "image/height": i(h), "image/width": i(w)})).SerializeToString(deterministic=True)

    shapes = [(96, 96)] * 8 + [(96, 128), (120, 160)]
    for split, n in (("train", 720), ("validation", 80)):
        tmp = d / f".firecam_{split}.tmp"
        with tf.io.TFRecordWriter(str(tmp)) as w:
            for _ in range(n):
                h, wd = shapes[int(rng.integers(0, len(shapes)))]
                label = int(rng.random() < 0.5)
                yy, xx = np.mgrid[0:h, 0:wd] / np.array([h, wd])[:, None, None]
                img = np.empty((h, wd, 3), np.float32)
                sky = np.array([rng.uniform(120, 170), rng.uniform(160, 200), rng.uniform(200, 240)])
                img[:] = sky * (0.8 + 0.2 * yy[..., None])
                ridge = 0.5 + 0.12 * np.sin(xx * rng.uniform(4, 9) + rng.uniform(0, 6)) + rng.uniform(-0.1, 0.1)
                ground = yy > ridge
                img[ground] = np.array([rng.uniform(60, 110), rng.uniform(70, 110), rng.uniform(40, 70)])
                img[ground] += rng.normal(0, 14, (int(ground.sum()), 3))
                if label:
                    cx, drift = rng.uniform(0.2, 0.8), rng.uniform(-0.4, 0.4)
                    top = ridge.mean()
                    t = np.clip((top - yy) / max(top, 0.1), 0, 1)  # 0 at the ridge, 1 at the top
                    px = cx + drift * t
                    width = 0.04 + 0.18 * t
                    plume = np.exp(-((xx - px) / width) ** 2) * (yy < top + 0.05) * rng.uniform(0.4, 0.8)
                    grey = rng.uniform(170, 220)
                    img = img * (1 - plume[..., None]) + grey * plume[..., None]
                img += rng.normal(0, 4, img.shape)
                jpg = _jpeg_bytes(np.clip(img, 0, 255).astype(np.uint8))
                w.write(example(jpg, h, wd, label))
        os.replace(tmp, d / f"firecam_{split}_00000-of-00001.tfrecord")


SLEEP_STAGES = ("W", "N1", "N2", "N3", "REM")


def sleep_eeg_cnn(d: Path, rng) -> None:
    # Tommo56700/EEG-Sleep-Classifier's /scratch/c.c1673374/ layout: data/<ID>.npy, one 30-s scoring epoch of
    # (samples, 12) channels each (10 EEG, then EMG, then EOG: CNN_Multi splits them so), and obj/sampleLabels.pkl
    # (dict ID -> stage 0..4: W, N1, N2, N3, REM) with obj/trainIDs2.pkl, valIDs2.pkl, testIDs2.pkl (lists of IDs),
    # pickled with HIGHEST_PROTOCOL as the source's save_obj does. 960 float32 samples (32 Hz) for 6000 (200 Hz);
    # 592 / 48 / 16 epochs from 8 nights, N2 the most common stage as in real hypnograms. A stage sets the EEG's
    # rhythm (alpha in W, theta in N1, spindles and K-complexes in N2, large delta in N3, low mixed theta and
    # sawtooth waves in REM), the EMG's tone (high awake, lowest in REM) and the EOG's eye movements (blinks awake,
    # slow rolling in N1, rapid in REM).
    (d / "data").mkdir(parents=True)
    (d / "obj").mkdir()
    sr, n = 32, 960
    t = np.arange(n) / sr
    probs = np.array([0.15, 0.08, 0.45, 0.15, 0.17])
    labels, ids = {}, []
    for k in range(656):
        ID = f"night{k % 8 + 1:02d}_epoch{k // 8:04d}"
        stage = int(rng.choice(5, p=probs))

        def osc(f_lo, f_hi, amp):
            f = rng.uniform(f_lo, f_hi, (1, 10))
            ph = rng.uniform(0, 2 * np.pi, (1, 10))
            env = 1 + 0.3 * np.sin(2 * np.pi * rng.uniform(0.05, 0.3) * t[:, None] + ph)
            return amp * env * np.sin(2 * np.pi * f * t[:, None] + ph)

        eeg = rng.normal(0, 6, (n, 10))
        if stage == 0:
            eeg += osc(8, 12, 20) + osc(13, 15, 6)
        elif stage == 1:
            eeg += osc(4, 7, 18)
        elif stage == 2:
            eeg += osc(4, 7, 12)
            for _ in range(int(rng.integers(2, 5))):  # spindles
                c, w = rng.uniform(2, 28), rng.uniform(0.3, 0.8)
                eeg += (30 * np.exp(-((t - c) / w) ** 2) * np.sin(2 * np.pi * rng.uniform(12, 14) * t))[:, None]
            if rng.random() < 0.7:  # a K-complex
                c = rng.uniform(3, 27)
                eeg += (-90 * np.exp(-((t - c) / 0.25) ** 2) + 50 * np.exp(-((t - c - 0.5) / 0.3) ** 2))[:, None]
        elif stage == 3:
            eeg += osc(0.5, 2, 70)
        else:
            eeg += osc(4, 7, 10)
            for _ in range(int(rng.integers(1, 4))):  # sawtooth bursts
                c = rng.uniform(2, 28)
                saw = 2 * ((t * rng.uniform(2, 3)) % 1) - 1
                eeg += (20 * saw * (np.abs(t - c) < 1.0))[:, None]
        emg = rng.normal(0, (25, 12, 8, 7, 2)[stage], n)
        eog = rng.normal(0, 5, n)
        if stage == 0:
            for c in rng.uniform(1, 29, int(rng.integers(2, 6))):  # blinks
                eog += 150 * np.exp(-((t - c) / 0.15) ** 2)
        elif stage == 1:
            eog += 60 * np.sin(2 * np.pi * rng.uniform(0.1, 0.3) * t + rng.uniform(0, 6))
        elif stage == 4:
            for c in rng.uniform(1, 29, int(rng.integers(4, 12))):  # rapid eye movements
                eog += rng.choice([-1, 1]) * 120 * np.tanh((t - c) / 0.05) * (np.abs(t - c) < 0.4)
        x = np.concatenate([eeg, emg[:, None], eog[:, None]], axis=1).astype(np.float32)
        tmp = d / "data" / f".{ID}.tmp.npy"
        np.save(tmp, x)
        os.replace(tmp, d / "data" / f"{ID}.npy")
        labels[ID] = stage
        ids.append(ID)
    order = [ids[i] for i in rng.permutation(len(ids))]
    for name, obj in (("sampleLabels", labels), ("trainIDs2", order[:592]), ("valIDs2", order[592:640]),
                      ("testIDs2", order[640:])):
        tmp = d / "obj" / f".{name}.tmp"
        with open(tmp, "wb") as f:
            pickle.dump(obj, f, pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, d / "obj" / f"{name}.pkl")

def tb_resnet50v2(d: Path, rng) -> None:
    # AndryRafam/Tuberculosis's TB_Chest_Radiography_Database (Kaggle's Tuberculosis (TB) Chest X-ray Database, as
    # archive.zip unpacks it): Normal/Normal-<i>.png and Tuberculosis/Tuberculosis-<i>.png, 512x512 grayscale PNG
    # chest X-rays (3500 and 700), and README.md.txt beside the two folders; 600 and 120 generated 256x256 here (the
    # same 5:1 balance). A film is a bright chest on a dark background, two dark lung fields crossed by faint ribs,
    # the heart and spine bright between them; a TB film adds bright patchy opacities to the upper lung fields.
    root = d / "TB_Chest_Radiography_Database"
    yy, xx = (np.mgrid[0:256, 0:256] / 256.0).astype(np.float32)
    ribs = 0.5 + 0.5 * np.cos(2 * np.pi * 9 * yy)
    for cls, n in (("Normal", 600), ("Tuberculosis", 120)):
        (root / cls).mkdir(parents=True)
        for i in range(1, n + 1):
            cx, cy = 0.5 + rng.normal(0, 0.02), 0.52 + rng.normal(0, 0.02)
            body = np.exp(-(((xx - cx) / 0.4) ** 2 + ((yy - cy) / 0.55) ** 2) ** 3)
            img = 40 + 150 * body
            lungs = np.zeros_like(xx)
            for side in (-1, 1):
                lx, ly = cx + side * rng.uniform(0.16, 0.2), cy - rng.uniform(0.02, 0.06)
                rx, ry = rng.uniform(0.11, 0.14), rng.uniform(0.26, 0.32)
                lungs = np.maximum(lungs, np.exp(-(((xx - lx) / rx) ** 2 + ((yy - ly) / ry) ** 2) ** 2))
            img -= lungs * (80 - 12 * ribs) * rng.uniform(0.85, 1.1)
            img += 50 * np.exp(-(((xx - cx - 0.04) / 0.1) ** 2 + ((yy - cy - 0.12) / 0.12) ** 2))  # heart
            img += 40 * np.exp(-((xx - cx) / 0.03) ** 2) * body  # spine
            if cls == "Tuberculosis":
                for _ in range(int(rng.integers(3, 8))):
                    side = rng.choice((-1, 1))
                    px, py = cx + side * rng.uniform(0.1, 0.25), cy - rng.uniform(0.05, 0.28)
                    r = rng.uniform(0.02, 0.06)
                    img += rng.uniform(30, 60) * lungs * np.exp(-(((xx - px) ** 2 + (yy - py) ** 2) / r ** 2))
            img += rng.normal(0, 2.0, img.shape).astype(np.float32)
            _png(root / cls / f"{cls}-{i}.png", np.clip(img, 0, 255).astype(np.uint8))
    _text(root / "README.md.txt", "Tuberculosis (TB) Chest X-ray Database: Normal and Tuberculosis PNG images.\n")


SPEECH_FLOW_WORDS = ["yes", "no", "up", "down", "left", "right", "on", "off", "stop", "go",
                     "bed", "bird", "cat", "dog", "eight", "five", "happy", "house"]


def speech_flow_mel(d: Path, rng) -> None:
    # chrisakroyd/kaggle-speech-recognition's ./input/train/ (the Kaggle TensorFlow Speech Recognition Challenge's
    # train.7z, Speech Commands v0.01): audio/<word>/<hash>_nohash_<i>.wav (16 kHz mono 16-bit clips of up to 1 s),
    # audio/_background_noise_/ (six long noise recordings, about a minute each), validation_list.txt and
    # testing_list.txt (one "<word>/<file>.wav" a line); here the 10 command words with 36 clips each and 8 other
    # words with 14 each, the six noise files 30 s long, about a tenth of the clips listed for validation and another
    # tenth for testing (by the file's hash, as the dataset's lists are). A word is a tone of its own pitch (200 + 150 k
    # Hz and a harmonic) in a Hann envelope at a random place in a 0.8-1 s clip, over faint noise.
    sr = 16000
    audio = d / "input" / "train" / "audio"
    val, test = [], []
    for k, word in enumerate(SPEECH_FLOW_WORDS):
        (audio / word).mkdir(parents=True)
        for i in range(36 if k < 10 else 14):
            n = int(sr * rng.uniform(0.8, 1.0))
            m = int(n * rng.uniform(0.4, 0.7))
            start = int(rng.integers(0, n - m))
            x = 0.01 * rng.standard_normal(n)
            x[start:start + m] += _tone(rng, m, sr, k, len(SPEECH_FLOW_WORDS)) * np.hanning(m)
            h = zlib.crc32(f"{word}{i}".encode())
            name = f"{h:08x}_nohash_{i % 3}.wav"
            _wav(audio / word / name, x.astype(np.float32), sr)
            (val if h % 10 == 0 else test if h % 10 == 1 else []).append(f"{word}/{name}")
    (audio / "_background_noise_").mkdir(parents=True)
    for j, name in enumerate(("doing_the_dishes", "dude_miaowing", "exercise_bike", "pink_noise", "running_tap",
                              "white_noise")):
        x = rng.standard_normal(30 * sr)
        if j != 5:  # coloured: a running mean of the white noise
            x = np.convolve(x, np.ones(2 + 3 * j) / (2 + 3 * j), mode="same")
        _wav(audio / "_background_noise_" / f"{name}.wav", (0.2 * x / x.std()).astype(np.float32), sr)
    _text(d / "input" / "train" / "validation_list.txt", "".join(p + "\n" for p in val))
    _text(d / "input" / "train" / "testing_list.txt", "".join(p + "\n" for p in test))

def cifar_datagen(d: Path, rng) -> None:
    # PacktPublishing/Python-Deep-Learning-Second-Edition's chapter_04_003.py reads keras.datasets.cifar10.load_data():
    # here x_train.npy / x_test.npy (uint8 N x 32 x 32 x 3) and y_train.npy / y_test.npy (uint8 N x 1, classes 0-9),
    # 2000 training and 500 test images. An image is a sky-to-ground gradient with noise and one object whose
    # colour, shape (disc, square, bar, ring, cross) and size follow its class, its position jittered.
    yy, xx = np.mgrid[0:32, 0:32].astype(np.float32)
    hues = np.array([[200, 60, 50], [60, 170, 60], [60, 80, 200], [210, 190, 60], [170, 70, 190],
                     [60, 190, 190], [230, 130, 40], [120, 120, 120], [240, 240, 240], [30, 30, 30]], np.float32)
    for split, n in (("train", 2000), ("test", 500)):
        y = rng.integers(0, 10, n).astype(np.uint8)
        x = np.empty((n, 32, 32, 3), np.float32)
        top = rng.uniform(60, 200, (n, 1, 1, 3)).astype(np.float32)
        bottom = rng.uniform(40, 160, (n, 1, 1, 3)).astype(np.float32)
        t = (yy / 31)[None, :, :, None]
        x[:] = top * (1 - t) + bottom * t
        cy, cx = rng.uniform(10, 22, (2, n))
        r = rng.uniform(4, 8, n)
        for i in range(n):
            k = int(y[i])
            dy, dx = yy - cy[i], xx - cx[i]
            shape = k % 5
            if shape == 0:
                m = dy ** 2 + dx ** 2 < r[i] ** 2
            elif shape == 1:
                m = (np.abs(dy) < r[i]) & (np.abs(dx) < r[i])
            elif shape == 2:
                m = (np.abs(dy) < r[i] / 3) & (np.abs(dx) < r[i] * 1.5)
            elif shape == 3:
                m = np.abs(np.sqrt(dy ** 2 + dx ** 2) - r[i]) < 1.5
            else:
                m = ((np.abs(dy) < 1.5) | (np.abs(dx) < 1.5)) & (np.abs(dy) < r[i]) & (np.abs(dx) < r[i])
            x[i][m] = hues[k] * rng.uniform(0.8, 1.1)
        x += rng.normal(0, 8, x.shape).astype(np.float32)
        _npy(d / f"x_{split}.npy", np.clip(x, 0, 255).astype(np.uint8))
        _npy(d / f"y_{split}.npy", y[:, None])


MOVIE_GENRES = ["Action", "Adventure", "Animation", "Biography", "Comedy", "Crime", "Documentary", "Drama", "Family",
                "Fantasy", "History", "Horror", "Music", "Musical", "Mystery", "N/A", "News", "Reality-TV", "Romance",
                "Sci-Fi", "Short", "Sport", "Thriller", "War", "Western"]


def movie_poster_genres(d: Path, rng) -> None:
    # hieudo-dev/movie-genre-detection's src/Movies_Poster/Multi_Label_dataset (the Kaggle movie-poster set):
    # train.csv (Id, Genre "['Drama', 'Romance']", then a 0/1 column for each of the 25 genres) and Images/<Id>.jpg,
    # IMDb poster thumbnails of 182x268; 1000 posters here for 7254. One to three genres a poster, Drama and Comedy
    # the most common; a poster is a vertical gradient in its first genre's palette with a title band, a figure
    # and a stripe per genre at that genre's height, plus noise.
    root = d / "src" / "Movies_Poster" / "Multi_Label_dataset"
    (root / "Images").mkdir(parents=True)
    g = len(MOVIE_GENRES)
    weight = np.ones(g)
    weight[[MOVIE_GENRES.index("Drama"), MOVIE_GENRES.index("Comedy")]] = 8
    weight[[MOVIE_GENRES.index(n) for n in ("Action", "Romance", "Crime", "Thriller", "Adventure")]] = 3
    weight /= weight.sum()
    palette = rng.uniform(20, 235, (g, 2, 3))
    h, w = 268, 182
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    t = (yy / (h - 1))[..., None]
    rows, seen = [], set()
    for _ in range(1000):
        ident = f"tt{int(rng.integers(100000, 9999999)):07d}"
        while ident in seen:
            ident = f"tt{int(rng.integers(100000, 9999999)):07d}"
        seen.add(ident)
        labels = sorted(rng.choice(g, size=int(rng.integers(1, 4)), replace=False, p=weight).tolist())
        top, bottom = palette[labels[0]]
        img = top * (1 - t) + bottom * t
        for lab in labels:
            row = 20 + lab * 9
            img[row:row + 6] = palette[lab][0] * 0.5 + 120
        cy, cx, r = rng.uniform(110, 200), rng.uniform(50, 130), rng.uniform(25, 50)
        img[((yy - cy) / (1.6 * r)) ** 2 + ((xx - cx) / r) ** 2 < 1] *= 0.35
        img[225:250, 15:167] = rng.uniform(150, 255, 3)
        img += rng.normal(0, 12, (h, w, 1))
        _jpg(root / "Images" / f"{ident}.jpg", np.clip(img, 0, 255).astype(np.uint8))
        onehot = [int(k in labels) for k in range(g)]
        rows.append([ident, str([MOVIE_GENRES[k] for k in labels])] + onehot)
    _csv(root / "train.csv", ["Id", "Genre"] + MOVIE_GENRES, rows)


# AG's News topic classes (classes.txt): 1 World, 2 Sports, 3 Business, 4 Sci/Tech; a few words typical of each.
_AG_WORDS = (
    ("government", "minister", "president", "election", "troops", "iraq", "talks", "peace", "united", "nations",
     "officials", "killed", "capital", "leader", "rebels", "border", "vote", "parliament", "embassy", "crisis"),
    ("game", "season", "team", "coach", "win", "victory", "league", "points", "cup", "players", "final", "match",
     "scored", "champion", "olympic", "yankees", "quarterback", "title", "tournament", "injury"),
    ("company", "shares", "profit", "stocks", "prices", "oil", "percent", "quarter", "market", "sales", "billion",
     "investors", "deal", "bank", "earnings", "economy", "dollar", "firm", "rates", "merger"),
    ("software", "internet", "microsoft", "computer", "users", "new", "technology", "space", "web", "search",
     "google", "wireless", "scientists", "network", "online", "chip", "linux", "research", "nasa", "phone"),
)
_AG_COMMON = ("the", "a", "of", "to", "in", "and", "on", "for", "with", "as", "at", "by", "its", "after", "said",
              "will", "from", "that", "has", "more", "than", "over", "is", "was", "new", "two", "first", "week")
_AG_SOURCES = ("Reuters", "AP", "AFP", "washingtonpost.com", "Canadian Press", "SPACE.com")

CAPTCHA_ALPHANUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def carla_unet(d: Path, rng) -> None:
    # OmarRAbdelkafi/Machine_Learning's Image_Segmentation_UNet reads CARLA's dataA (the Lyft/Udacity semantic
    # segmentation set): dataA/CameraRGB/<name>.png frames and dataA/CameraSeg/<name>.png masks of the same name,
    # 600x800 RGB, the mask's class id (0..22, CARLA's palette index) in the red channel, green and blue 0. 320
    # frames of 150x200 here for 1000 at 600x800. A frame is a street scene: sky, buildings of random heights, a
    # road in perspective with lane marks, sidewalks, vegetation, poles and a few cars, each region coloured by its
    # class with per-object shade and light noise; the mask holds each pixel's class.
    rgb_dir, seg_dir = d / "dataA" / "CameraRGB", d / "dataA" / "CameraSeg"
    rgb_dir.mkdir(parents=True)
    seg_dir.mkdir(parents=True)
    h, w = 150, 200
    base = rng.uniform(30, 225, (23, 3))
    yy, xx = np.mgrid[0:h, 0:w]
    for k in range(320):
        cls = np.full((h, w), 13, np.uint8)  # sky
        horizon = int(rng.integers(55, 80))
        x0 = 0
        while x0 < w:  # buildings
            bw = int(rng.integers(15, 45))
            top = int(rng.integers(10, horizon - 5))
            cls[top:horizon, x0:x0 + bw] = 1 if rng.random() < 0.8 else 2
            x0 += bw
        cls[horizon:] = 8  # sidewalk
        vx = rng.uniform(0.3, 0.7) * w
        t = (yy - horizon) / max(h - horizon, 1)
        road = (yy >= horizon) & (np.abs(xx - vx) < 6 + t * 0.7 * w)
        cls[road] = 7
        cls[road & (np.abs(xx - vx) < 1 + t * 2) & ((yy // 6) % 2 == 0)] = 6  # lane marks
        for _ in range(int(rng.integers(1, 4))):  # vegetation
            cy, cx, r = rng.uniform(horizon - 20, horizon), rng.uniform(0, w), rng.uniform(8, 20)
            cls[((yy - cy) ** 2 + (xx - cx) ** 2 < r * r) & (yy < horizon + 5)] = 9
        for _ in range(int(rng.integers(1, 4))):  # poles
            px = int(rng.integers(0, w - 2))
            cls[int(rng.integers(10, horizon)):horizon + 10, px:px + 2] = 5
        for _ in range(int(rng.integers(0, 4))):  # cars on the road
            cy = rng.uniform(horizon + 10, h - 10)
            s = (cy - horizon) / (h - horizon)
            cw, ch = 12 + 40 * s, 6 + 20 * s
            cx = vx + rng.uniform(-0.3, 0.3) * s * w
            cls[(np.abs(yy - cy) < ch / 2) & (np.abs(xx - cx) < cw / 2)] = 10
        shade = rng.uniform(0.8, 1.2, (23, 1))
        img = (base * shade)[cls] + rng.normal(0, 4, (h, w, 3))
        name = f"{int(rng.integers(0, 10**6)):06d}_{k:04d}.png"
        _png(rgb_dir / name, np.clip(img, 0, 255).astype(np.uint8))
        mask = np.zeros((h, w, 3), np.uint8)
        mask[..., 0] = cls
        _png(seg_dir / name, mask)


def nima_mobilenet(d: Path, rng) -> None:
    # idealo/image-quality-assessment's training job: an image directory of AVA photos (<image_id>.jpg, the default
    # img_format 'jpg'; AVA's are around 500x330 to 800x530) and a job directory holding config.json
    # (models/MobileNet/config_aesthetic_cpu.json) and samples.json (a list of {"image_id", "label"}, the label AVA's
    # ten vote counts for scores 1..10, as data/AVA/ava_labels_train.json). 600 photos of 240x320 or 320x240 here for
    # AVA's 255000. A photo is a soft two-colour gradient with a few blurred shapes; its votes peak around a mean
    # score that grows with its contrast and colourfulness.
    images, job = d / "images", d / "job"
    images.mkdir(parents=True)
    job.mkdir(parents=True)
    samples = []
    for k in range(600):
        h, w = (240, 320) if rng.random() < 0.7 else (320, 240)
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
        c0, c1 = rng.uniform(0, 255, 3), rng.uniform(0, 255, 3)
        a = rng.uniform(0, 2 * np.pi)
        t = ((np.cos(a) * xx / w + np.sin(a) * yy / h) + 1) / 2
        img = c0 * (1 - t[..., None]) + c1 * t[..., None]
        for _ in range(int(rng.integers(1, 5))):
            cy, cx, r = rng.uniform(0, h), rng.uniform(0, w), rng.uniform(15, 70)
            blob = np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * r * r))
            img += blob[..., None] * (rng.uniform(0, 255, 3) - img) * rng.uniform(0.4, 0.9)
        img += rng.normal(0, 6, (h, w, 3))
        img = np.clip(img, 0, 255).astype(np.uint8)
        image_id = str(int(rng.integers(1, 999999)) * 1000 + k)
        _jpg(images / f"{image_id}.jpg", img)
        quality = np.clip(img.std() / 80 + np.abs(c0 - c1).mean() / 255, 0, 1)
        mean = 3.5 + 3.5 * quality + rng.normal(0, 0.5)
        votes = np.exp(-((np.arange(1, 11) - mean) ** 2) / (2 * 1.5 ** 2)) * rng.uniform(80, 300)
        samples.append({"image_id": image_id, "label": [int(v) for v in np.maximum(np.rint(votes), 0)]})
    config = {"train_env": "remote", "docker_image": "nima-cpu", "base_model_name": "MobileNet",
              "existing_weights": None, "n_classes": 10, "batch_size": 96, "epochs_train_dense": 5,
              "learning_rate_dense": 0.001, "decay_dense": 0, "epochs_train_all": 9, "learning_rate_all": 0.00003,
              "decay_all": 0.000023, "l2_reg": None, "dropout_rate": 0.75, "multiprocessing_data_load": False,
              "num_workers_data_load": 1}
    _text(job / "config.json", json.dumps(config, indent=2))
    _text(job / "samples.json", json.dumps(samples, indent=2))

def _ag_sentence(rng, k, n):
    words = []
    for _ in range(n):
        r = rng.random()
        if r < 0.35:
            words.append(str(rng.choice(_AG_WORDS[k])))
        elif r < 0.42:
            words.append(str(rng.choice(_AG_WORDS[int(rng.integers(0, 4))])))
        elif r < 0.47:
            words.append(str(int(rng.integers(1, 2005))))
        else:
            words.append(str(rng.choice(_AG_COMMON)))
    return words


def crepe_agnews(d: Path, rng) -> None:
    # johnb30/py_crepe reads data/ag_news_csv/train.csv and test.csv (Zhang et al.'s AG's News: no header, three
    # quoted columns: class index 1-4, title, description; 120000 and 7600 rows, about 236 characters a row); here
    # 1440 and 240 rows. A row is a title of 4-10 words and a description of 18-40 words (some capitalised, a
    # dateline, digits and punctuation) drawn mostly from its class's words, the rest common words.
    folder = d / "data" / "ag_news_csv"
    folder.mkdir(parents=True)
    for name, n in (("train.csv", 1440), ("test.csv", 240)):
        rows = []
        for _ in range(n):
            k = int(rng.integers(0, 4))
            title = " ".join(w.capitalize() if rng.random() < 0.6 else w for w in _ag_sentence(rng, k, int(rng.integers(4, 11))))
            desc = _ag_sentence(rng, k, int(rng.integers(18, 41)))
            desc[0] = desc[0].capitalize()
            if rng.random() < 0.5:
                desc.insert(int(rng.integers(3, 10)), "-")
            text = " ".join(desc) + "."
            if rng.random() < 0.6:
                text = f"{str(rng.choice(_AG_SOURCES))} - {text}"
            if rng.random() < 0.3:
                title += f" ({str(rng.choice(_AG_SOURCES))})"
            rows.append((str(k + 1), title, text))
        _csv_rows(folder / name, rows)


def so2sat_lcz(d: Path, rng) -> None:
    # ChunpingQiu/benchmark-on-So2SatLCZ42-dataset-a-simple-tour reads the So2Sat LCZ42 HDF5 files (TIANCHI_FINAL_DATASET
    # training.h5 and validation.h5: 'sen2' (N, 32, 32, 10) float64 Sentinel-2 reflectances, 'label' (N, 17) float64
    # one-hot local climate zones, contiguous, uncompressed; 352366 and 24119 patches); here 320 and 64 patches, and
    # no 'sen1' (the 8 Sentinel-1 bands, never read by the script). A class has its own spectrum over the 10 bands
    # (built-up classes 1-10 bright and flat, vegetation 11-14 with a red edge, water 17 dark), a built-up patch a
    # grid of buildings of its class's size, every patch a smooth random field and noise.
    import h5py

    yy, xx = np.mgrid[0:32, 0:32] / 32.0
    bands = np.linspace(0, 1, 10)
    spectra = np.empty((17, 10))
    for k in range(17):
        if k < 10:
            spectra[k] = 0.10 + 0.04 * bands + 0.01 * k
        elif k < 14:
            spectra[k] = 0.04 + 0.25 / (1 + np.exp(-(bands - 0.35) * 20)) * (0.6 + 0.1 * (k - 10))
        elif k < 16:
            spectra[k] = 0.12 + 0.10 * bands + 0.03 * (k - 14)
        else:
            spectra[k] = 0.05 * (1 - bands)
    for name, n in (("training.h5", 320), ("validation.h5", 64)):
        labels = rng.integers(0, 17, n)
        sen2 = np.empty((n, 32, 32, 10))
        for i, k in enumerate(labels):
            fx, fy, ph = rng.uniform(1, 3), rng.uniform(1, 3), rng.uniform(0, 2 * np.pi, 2)
            field = 0.5 + 0.25 * (np.sin(2 * np.pi * fx * xx + ph[0]) + np.sin(2 * np.pi * fy * yy + ph[1]))
            img = spectra[k] * (0.8 + 0.4 * field[..., None])
            if k < 10:  # buildings: a grid of bright blocks, denser and smaller in the compact classes
                step = 4 + k // 2
                blocks = ((np.arange(32)[:, None] % step < step // 2) & (np.arange(32)[None, :] % step < step // 2))
                img = img + 0.08 * blocks[..., None] * (1 - bands)[None, None, :]
            sen2[i] = np.clip(img + rng.normal(0, 0.01, img.shape), 0, None)
        label = np.zeros((n, 17))
        label[np.arange(n), labels] = 1.0
        tmp = d / f".{name}.tmp"
        with h5py.File(tmp, "w") as f:
            f.create_dataset("sen2", data=sen2)
            f.create_dataset("label", data=label)
        os.replace(tmp, d / name)

def _json(path: Path, obj) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj))
    os.replace(tmp, path)


def captcha_yolo(d: Path, rng) -> None:
    # aiguy110/captcha-breaker's data_dir (sys.argv[1]): a flat folder of <text>.png CAPTCHAs, 160x60 RGB as the
    # python `captcha` package's ImageCaptcha draws them, each beside <text>.json, a list of one rect a character
    # ({"left", "right", "top", "bottom", "label"}, floats in pixels); 200 here. A CAPTCHA is a light background
    # with 4-5 dark characters (letters of both cases and digits) in Hershey fonts, each rotated at random and
    # overlapping its neighbour a little, a noise curve and noise dots; a character's rect is its ink's bounding box.
    import cv2

    fonts = (cv2.FONT_HERSHEY_SIMPLEX, cv2.FONT_HERSHEY_DUPLEX, cv2.FONT_HERSHEY_COMPLEX, cv2.FONT_HERSHEY_TRIPLEX)
    h, w = 60, 160
    seen = set()
    while len(seen) < 200:
        n = int(rng.integers(4, 6))
        text = "".join(CAPTCHA_ALPHANUM[k] for k in rng.integers(0, len(CAPTCHA_ALPHANUM), n))
        if text in seen:
            continue
        bg = rng.integers(215, 256, 3)
        ink = rng.integers(10, 140, 3)
        img = np.empty((h, w, 3), np.uint8)
        img[:] = bg
        rects = []
        x = float(rng.uniform(2, 10))
        for ch in text:
            patch = np.zeros((60, 56), np.uint8)
            font, scale = fonts[int(rng.integers(0, len(fonts)))], float(rng.uniform(1.2, 1.6))
            cv2.putText(patch, ch, (8, 46), font, scale, 255, int(rng.integers(2, 4)), cv2.LINE_AA)
            m = cv2.getRotationMatrix2D((28, 30), float(rng.uniform(-25, 25)), float(rng.uniform(0.9, 1.1)))
            patch = cv2.warpAffine(patch, m, (56, 60))
            ys, xs = np.nonzero(patch > 60)
            if len(xs) == 0:
                continue
            x0, x1, y0, y1 = xs.min(), xs.max() + 1, ys.min(), ys.max() + 1
            cw, chh = x1 - x0, y1 - y0
            if x + cw > w - 1:
                break
            top = float(rng.uniform(1, max(1.5, h - chh - 1)))
            px, py = int(x), int(top)
            crop = patch[y0:y1, x0:x1].astype(np.float32)[..., None] / 255.0
            region = img[py:py + chh, px:px + cw].astype(np.float32)
            img[py:py + chh, px:px + cw] = (region * (1 - crop) + ink * crop).astype(np.uint8)
            rects.append({"left": float(px), "right": float(px + cw), "top": float(py), "bottom": float(py + chh),
                          "label": ch})
            x += cw * float(rng.uniform(0.75, 0.95))
        text = "".join(r["label"] for r in rects)
        if len(rects) < 3 or text in seen:
            continue
        seen.add(text)
        xs = np.arange(w)
        curve = h / 2 + rng.uniform(5, 15) * np.sin(xs / rng.uniform(12, 30) + rng.uniform(0, 6))
        cv2.polylines(img, [np.stack([xs, curve], 1).astype(np.int32)], False, ink.tolist(), int(rng.integers(1, 3)))
        for _ in range(int(rng.integers(30, 70))):
            cv2.circle(img, (int(rng.integers(0, w)), int(rng.integers(0, h))), int(rng.integers(1, 3)), ink.tolist(), -1)
        _png(d / f"{text}.png", img[:, :, ::-1].copy())  # cv2 colour order -> RGB file
        _json(d / f"{text}.json", rects)



def _sednn_sp(x, n_window=512, n_overlap=256):
    # scipy.signal.spectrogram(x, window=hamming(512), nperseg=512, noverlap=256, detrend=False, mode='magnitude')
    # as sednn's calc_sp calls it (frames of 512 every 256 samples, one-sided, scaled by the window), transposed
    hop = n_window - n_overlap
    win = np.hamming(n_window)
    n = 1 + (len(x) - n_window) // hop
    frames = np.stack([x[i * hop:i * hop + n_window] for i in range(n)]) * win
    return (np.abs(np.fft.rfft(frames, axis=1)) / win.sum()).astype(np.float32)


def _sednn_pack(sp, n_concat=7, n_hop=3):
    # sednn's pack_features: pad_with_border, mat_2d_to_3d(agg_num=7, hop=3)
    n_pad = (n_concat - 1) // 2
    sp = np.concatenate([sp[0:1]] * n_pad + [sp] + [sp[-1:]] * n_pad, axis=0)
    return np.array([sp[i:i + n_concat] for i in range(0, len(sp) - n_concat + 1, n_hop)])


def sednn_dnn(d: Path, rng) -> None:
    # yongxuUSTC/sednn mixture2clean_dnn's workspace after runme.sh's preparation steps (at 0 dB):
    # packed_features/spectrogram/{train,test}/0db/data.h5 (x: (n_segs, 7, 257) float32 log magnitude spectrograms of
    # the noisy mixture, 7 frames around each centre frame, hop 3 frames; y: (n_segs, 257) the clean speech's log
    # spectrogram at the centre frame) and train/0db/scaler.p (the fitted StandardScaler's mean_ and scale_ over the
    # training frames, pickled here as a dict of two float64 arrays for sklearn's pickled object). 3000 training and
    # 500 test segments (from 16 kHz, 1-1.4 s clips: a voiced "speech" of a few harmonic syllables under
    # formant-like envelopes, mixed at 0 dB with a coloured noise), about 29 MB.
    import pickle

    import h5py

    sr = 16000

    def clip():
        n = int(sr * rng.uniform(1.0, 1.4))
        t = np.arange(n) / sr
        speech = np.zeros(n)
        pos = 0
        while pos < n - 1600:
            m = int(rng.integers(1600, 4800))
            m = min(m, n - pos)
            f0 = rng.uniform(90, 260)
            formants = rng.uniform([300, 900, 2200], [900, 2200, 3500])
            seg = np.zeros(m)
            for h in range(1, int(4000 / f0)):
                gain = sum(np.exp(-((h * f0 - f) / 200.0) ** 2) for f in formants) + 0.05
                seg += gain / h * np.sin(2 * np.pi * h * f0 * t[:m] + rng.uniform(0, 6.3))
            speech[pos:pos + m] += seg * np.hanning(m)
            pos += m + int(rng.integers(0, 1600))
        noise = np.convolve(rng.standard_normal(n), np.ones(int(rng.integers(1, 8))), mode="same")
        scale = (np.sqrt(np.mean(speech ** 2)) / np.sqrt(np.mean(noise ** 2)))  # 0 dB
        speech = speech / scale
        mixed = speech + noise
        alpha = 1.0 / np.max(np.abs(mixed))
        return mixed * alpha, speech * alpha

    for split, n_segs in (("train", 3000), ("test", 500)):
        xs, ys = [], []
        total = 0
        while total < n_segs:
            mixed, speech = clip()
            x3d = _sednn_pack(_sednn_sp(mixed))
            y = _sednn_pack(_sednn_sp(speech))[:, 3, :]
            xs.append(x3d)
            ys.append(y)
            total += len(x3d)
        x = np.log(np.concatenate(xs)[:n_segs] + 1e-08).astype(np.float32)
        y = np.log(np.concatenate(ys)[:n_segs] + 1e-08).astype(np.float32)
        out = d / "packed_features" / "spectrogram" / split / "0db"
        out.mkdir(parents=True)
        tmp = out / "data.h5.tmp"
        with h5py.File(tmp, "w") as hf:
            hf.create_dataset("x", data=x)
            hf.create_dataset("y", data=y)
        os.replace(tmp, out / "data.h5")
        if split == "train":
            x2d = x.reshape(-1, x.shape[-1]).astype(np.float64)
            tmp = out / "scaler.p.tmp"
            with open(tmp, "wb") as f:
                pickle.dump({"mean_": x2d.mean(axis=0), "scale_": x2d.std(axis=0)}, f)
            os.replace(tmp, out / "scaler.p")


# heldout10 (ported by helpers A-D)

def _tif(path: Path, img: np.ndarray) -> None:
    from PIL import Image

    tmp = path.with_name("." + path.name + ".tmp.tif")
    Image.fromarray(img).save(tmp, format="TIFF")  # uncompressed, as the competition's tiles are
    tmp.replace(path)


def ravdess_ser(d: Path, rng) -> None:
    # shreyanshtandon4/ser's ./training/: RAVDESS speech clips, all in one folder, named
    # modality-channel-emotion-intensity-statement-repetition-actor.wav (03-01-EE-II-SS-RR-AA.wav: audio-only,
    # speech, emotion 01..08, intensity 01/02, statement 01/02, repetition 01/02, actor 01..24); here 15 clips of
    # each of the 8 emotions from 10 actors, 16-bit mono at 22050 Hz (RAVDESS: 48 kHz, about 3.5 s), 2.5-3.5 s long:
    # a voiced "utterance" (a harmonic tone whose pitch and vibrato depend on the emotion and the actor) between
    # short silences, over faint noise.
    sr = 22050
    folder = d / "training"
    folder.mkdir(parents=True)
    combos = [("01", "01", "01"), ("02", "01", "02"), ("01", "02", "01")]
    for e in range(8):
        for i in range(15):
            actor = i % 10 + 1
            intensity, statement, repetition = combos[i // 10]
            if e == 0:
                intensity = "01"  # RAVDESS has no strong-intensity neutral
            n = int(sr * rng.uniform(2.5, 3.5))
            t = np.arange(n) / sr
            f0 = 110 + 25 * e + 8 * actor + rng.uniform(-5, 5)
            vibrato = 1 + (0.01 + 0.01 * e) * np.sin(2 * np.pi * (3 + e) * t)
            phase = 2 * np.pi * np.cumsum(f0 * vibrato) / sr
            voice = sum(np.sin(h * phase) / h for h in range(1, 6))
            start, stop = int(0.4 * sr), n - int(0.3 * sr)
            env = np.zeros(n)
            env[start:stop] = np.hanning(stop - start) ** 0.5
            x = 0.3 * (0.6 + 0.1 * e) * env * voice / 2.3 + 0.005 * rng.standard_normal(n)
            name = f"03-01-{e + 1:02d}-{intensity}-{statement}-{repetition}-{actor:02d}.wav"
            _wav(folder / name, x.astype(np.float32), sr)


def histo_pcam(d: Path, rng) -> None:
    # cmpatino/Histopathological-Cancer-Detection's ../input/: train/<id>.tif (the Kaggle Histopathologic Cancer
    # Detection tiles: 96x96 RGB, uncompressed TIFF, named by a 40-hex id) and train_labels.csv (id,label: 1 when
    # the centre 32x32 holds tumour tissue); here 900 tiles, about 40 % positive. A tile is pink stroma (smoothed
    # noise) with purple nuclei; a positive one has a cluster of larger, darker nuclei in its centre.
    train = d / "input" / "train"
    train.mkdir(parents=True)
    yy, xx = np.mgrid[0:96, 0:96]
    rows = []
    for _i in range(900):
        label = int(rng.random() < 0.4)
        noise = rng.standard_normal((24, 24, 3))
        base = np.kron(noise, np.ones((4, 4, 1)))
        img = np.array([235, 180, 205], float) + 12 * base
        n_nuclei = int(rng.integers(8, 20))
        for j in range(n_nuclei + (12 if label else 0)):
            if label and j >= n_nuclei:
                cy, cx, r = rng.uniform(32, 64), rng.uniform(32, 64), rng.uniform(3.5, 6)
            else:
                cy, cx, r = rng.uniform(0, 96), rng.uniform(0, 96), rng.uniform(2, 4)
            m = (yy - cy) ** 2 + (xx - cx) ** 2 < r * r
            img[m] = np.array([120, 60, 150]) - (30 if label else 0) + 10 * rng.standard_normal(3)
        tid = "".join(f"{v:02x}" for v in rng.integers(0, 256, 20))
        _tif(train / f"{tid}.tif", np.clip(img, 0, 255).astype(np.uint8))
        rows.append([tid, label])
    _csv(d / "input" / "train_labels.csv", ["id", "label"], rows)


VUI_WORDS = ["the", "and", "of", "to", "a", "in", "he", "was", "that", "it", "his", "her", "you", "had", "with",
             "said", "not", "but", "for", "she", "on", "is", "as", "at", "him", "be", "my", "so", "me", "all"]


VUI_ALPHABET = "'abcdefghijklmnopqrstuvwxyz"


def vui_ctc(d: Path, rng) -> None:
    # CalebEverett/AIND-VUI-Capstone's data as the Udacity README makes it: LibriSpeech/dev-clean/ and test-clean/
    # (flac_to_wav.sh converts each flac to a 16 kHz mono 16-bit .wav beside it): <speaker>/<chapter>/
    # <speaker>-<chapter>-<nnnn>.wav and <speaker>-<chapter>.trans.txt ("<id> UPPER CASE TEXT" a line), and
    # create_desc_json.py's train_corpus.json (dev-clean) and valid_corpus.json (test-clean): JSON lines of key (the
    # WAV's path relative to the repository), duration (s) and text (lower case). Here 10 speakers x 50 utterances for
    # training and 6 x 25 for validation, each 1-3 s (about 1.27 s on average) of short words, 6-11 characters a second (so
    # CTC has time for them); a character is a tone of its own pitch with a harmonic in a Hann envelope, over faint noise.
    sr = 16000
    # each speaker's own tail of durations (s over 1 s): the second batch in file order (a training pass starts
    # unshuffled) must hold longer clips and texts than the first, as Keras 3 takes a generator's shapes from its
    # first two batches and fixes every dimension that did not differ between them
    for split, corpus, n_utt, spk0, tails in (
            ("dev-clean", "train_corpus.json", 50, 84, (0.15, 0.15, 0.4, 0.4, 0.25, 0.2, 0.3, 0.25, 0.2, 0.3)),
            ("test-clean", "valid_corpus.json", 25, 1089, (0.1, 0.1, 0.1, 0.1, 0.6, 0.6))):
        lines = []
        for s, tail in enumerate(tails):
            spk, chap = spk0 + 37 * s, 121123 + 1009 * s
            folder = d / "LibriSpeech" / split / str(spk) / str(chap)
            folder.mkdir(parents=True)
            trans = []
            for u in range(n_utt):
                # durations long-tailed as LibriSpeech's, the text's length in proportion
                n = int(sr * min(1.0 + rng.exponential(tail), 3.0))
                words, budget = [], n / sr * rng.uniform(6, 11)
                while not words or len(" ".join(words)) < budget:
                    words.append(VUI_WORDS[int(rng.integers(len(VUI_WORDS)))])
                text = " ".join(words)
                x = 0.01 * rng.standard_normal(n)
                lead = int(rng.integers(0, n // 8))
                seg = (n - lead - n // 8) // len(text)
                t = np.arange(seg) / sr
                for k, c in enumerate(text):
                    if c != " ":
                        f0 = 120 + 45 * VUI_ALPHABET.index(c)
                        tone = 0.3 * np.sin(2 * np.pi * f0 * t) + 0.15 * np.sin(2 * np.pi * 2.7 * f0 * t)
                        x[lead + k * seg:lead + (k + 1) * seg] += tone * np.hanning(seg) * rng.uniform(0.6, 1.0)
                file_id = f"{spk}-{chap}-{u:04d}"
                _wav(folder / f"{file_id}.wav", x.astype(np.float32), sr)
                trans.append(f"{file_id} {text.upper()}\n")
                key = f"LibriSpeech/{split}/{spk}/{chap}/{file_id}.wav"
                lines.append(json.dumps({"key": key, "duration": n / sr, "text": text}) + "\n")
            _text(folder / f"{spk}-{chap}.trans.txt", "".join(trans))
        _text(d / corpus, "".join(lines))


URBANSOUND_CLASSES = 10


def urbansound_tape(d: Path, rng) -> None:
    # yeyupiaoling/AudioClassification-Tensorflow's dataset/train.tfrecord and test.tfrecord as create_data.py writes
    # them: one tf.train.Example a clip, 'data' a float_list of the flattened librosa mel power spectrogram (64 mels x
    # 64 frames here for 128 x 128) and 'label' an int64 UrbanSound8K class (0-9). Each class has its own band of mels
    # and its own rhythm (a tone, a hum, pulses) over a pink-ish noise floor; power values as librosa gives them
    # (non-negative, heavy-tailed, up to a few hundred).
    import tensorflow as tf

    n_mels, n_frames = 64, 64
    mel = np.arange(n_mels)[:, None]
    frame = np.arange(n_frames)[None, :]
    (d / "dataset").mkdir(parents=True, exist_ok=True)
    for split, n in (("train", 640), ("test", 64)):
        tmp = d / "dataset" / f".{split}.tfrecord.tmp"
        with tf.io.TFRecordWriter(str(tmp)) as w:
            for _ in range(n):
                label = int(rng.integers(0, URBANSOUND_CLASSES))
                floor = rng.exponential(1.0, (n_mels, n_frames)) * 0.05 / (1 + mel / 8)
                centre = 4 + 5.5 * label + rng.uniform(-1.5, 1.5)
                band = np.exp(-0.5 * ((mel - centre) / rng.uniform(1.5, 4.0)) ** 2)
                period = 3 + label + int(rng.integers(0, 3))
                rhythm = 0.3 + (((frame + int(rng.integers(0, period))) % period) < max(1, period // 2))
                loud = rng.uniform(5, 300)
                spec = floor + loud * band * rhythm * rng.exponential(1.0, (n_mels, n_frames))
                ex = tf.train.Example(features=tf.train.Features(feature={
                    "data": tf.train.Feature(float_list=tf.train.FloatList(
                        value=spec.astype(np.float32).reshape(-1).tolist())),
                    "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label]))}))
                w.write(ex.SerializeToString())
        os.replace(tmp, d / "dataset" / f"{split}.tfrecord")


def tinyimagenet_mp(d: Path, rng) -> None:
    # blupig/recognizer's tiny-imagenet-200/ as Stanford CS231N's Tiny ImageNet unpacks and organize_validation_data.py
    # rearranges it: train/<wnid>/images/<wnid>_<n>.JPEG with train/<wnid>/<wnid>_boxes.txt, and val/<wnid>/val_<n>.JPEG
    # (the original val/images/ folder gone). 200 wnids, 6 training and 1 validation 64x64 JPEG a class here: each
    # class a background hue and an object (ellipse or box) of its own colour, placed, sized and lit at random, with
    # grain.
    from PIL import Image, ImageDraw

    base = d / "tiny-imagenet-200"
    wnids = [f"n{1440764 + 37 * k:08d}" for k in range(200)]
    for k, wnid in enumerate(wnids):
        hue = rng.integers(30, 226, 3)
        obj = tuple(int(c) for c in (255 - hue + rng.integers(-30, 31, 3)).clip(0, 255))
        (base / "train" / wnid / "images").mkdir(parents=True, exist_ok=True)
        (base / "val" / wnid).mkdir(parents=True, exist_ok=True)
        boxes = []
        for split, n in (("train", 6), ("val", 1)):
            for j in range(n):
                bg = tuple(int(c) for c in (hue * rng.uniform(0.7, 1.2)).clip(0, 255))
                im = Image.new("RGB", (64, 64), bg)
                draw = ImageDraw.Draw(im)
                x0, y0 = int(rng.integers(2, 28)), int(rng.integers(2, 28))
                x1, y1 = x0 + int(rng.integers(18, 34)), y0 + int(rng.integers(18, 34))
                (draw.ellipse if k % 2 else draw.rectangle)((x0, y0, x1, y1), fill=obj)
                img = np.asarray(im).astype(np.int16) + rng.integers(-12, 13, (64, 64, 3))
                img = np.clip(img, 0, 255).astype(np.uint8)
                if split == "train":
                    name = f"{wnid}_{j}.JPEG"
                    _jpg(base / "train" / wnid / "images" / name, img)
                    boxes.append(f"{name}\t{x0}\t{y0}\t{min(x1, 63)}\t{min(y1, 63)}\n")
                else:
                    _jpg(base / "val" / wnid / f"val_{k * n + j}.JPEG", img)
        (base / "train" / wnid / f"{wnid}_boxes.txt").write_text("".join(boxes))


def moonyard_depth(d: Path, rng) -> None:
    # alexispascual/monocular-depth-mapping's ./data/moon_yard/<name>/zed_image_left_<name>.jpg (a ZED stereo
    # camera's left frame) and depth_map_<name>.npy (its float32 depth in metres, +inf where too far: the ZED
    # SDK's TOO_FAR), and ./data/horizons/horizon_<name>.jpg (a hand-drawn horizon mask: white ground, black sky, saved as
    # a 3-channel JPEG); here 100 captures at 180x320 (a quarter of the ZED's 720x1280) of a grey "moon yard": a
    # wavy horizon, ground whose depth grows towards it (about 0.5 m at the bottom row to 20+ m), a few rocks
    # nearer than the ground behind them, +inf above the horizon. No NaN (the SDK's occlusions): mask_depth_map's
    # np.log(..., where=~invalid_mask) leaves those pixels uninitialised, which can turn the targets and loss NaN.
    h, w = 180, 320
    root = d / "data" / "moon_yard"
    horizons = d / "data" / "horizons"
    horizons.mkdir(parents=True)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    for i in range(100):
        name = f"{1656000000 + 37 * i}"
        folder = root / name
        folder.mkdir(parents=True)
        base = rng.uniform(0.3, 0.45) * h
        horizon = base + 6 * np.sin(xx[0] / w * 2 * np.pi * rng.uniform(1, 3) + rng.uniform(0, 6)) \
            + 3 * np.sin(xx[0] / w * 2 * np.pi * rng.uniform(4, 8))
        ground = yy > horizon[None, :]
        below = np.maximum(yy - horizon[None, :], 0.5)
        depth = (0.5 * (h - horizon[None, :]) / below).astype(np.float32)
        shade = 90 + 60 * np.clip(1 - depth / 20, 0, 1) + rng.normal(0, 8, (h, w))
        for _ in range(rng.integers(3, 8)):
            cy, cx = rng.uniform(base + 10, h - 5), rng.uniform(0, w)
            r = rng.uniform(4, 18)
            rock = (yy - cy) ** 2 + ((xx - cx) * 0.8) ** 2 < r * r
            depth = np.where(rock & ground, depth * 0.9, depth)
            shade = np.where(rock & ground, shade + 40 - (yy - cy) * 2, shade)
        depth = np.where(ground, depth, np.inf).astype(np.float32)
        image = np.where(ground, shade, 5 + rng.normal(0, 2, (h, w)))
        image = np.clip(image[..., None] * np.array([1.0, 0.98, 0.95]), 0, 255).astype(np.uint8)
        mask = np.repeat(np.where(ground, 255, 0).astype(np.uint8)[..., None], 3, axis=2)
        _jpg(folder / f"zed_image_left_{name}.jpg", image)
        _npy(folder / f"depth_map_{name}.npy", depth)
        _jpg(horizons / f"horizon_{name}.jpg", mask)




# heldout11 (ported by helpers A, B, C, D, E, F)


KWS_LOGFBANK_WORDS = ["backward", "bed", "bird", "cat", "dog", "down", "eight", "five", "follow", "forward", "four",
                      "go", "happy", "house", "learn", "left", "marvin", "nine", "no", "off", "on", "one", "right",
                      "seven", "sheila", "six", "stop", "three", "tree", "two", "up", "visual", "wow", "yes", "zero"]


def kws_logfbank(d: Path, rng) -> None:
    # danieleninni/small-footprint-keyword-spotting's data/full_speech_commands/ (Speech Commands v0.02, as the
    # notebook's get_file extracts it): <word>/<hash>_nohash_<i>.wav (16 kHz mono 16-bit clips of up to 1 s) for the
    # 35 words, _background_noise_/ (the six named noise recordings), validation_list.txt and testing_list.txt (one
    # "<word>/<file>.wav" a line) and training_list.txt (the rest, as the repository ships it); here 26 clips a word
    # (910 for 105829), about a tenth listed for validation and another tenth for testing (by the file's hash), the
    # six noise files 20 s long. A word is a tone of its own pitch in a Hann envelope at a random place in a 0.8-1 s
    # clip, over faint noise; the clips' amplitude is that of 16-bit speech (a few thousand).
    sr = 16000
    root = d / "data" / "full_speech_commands"
    train, val, test = [], [], []
    for k, word in enumerate(KWS_LOGFBANK_WORDS):
        (root / word).mkdir(parents=True)
        for i in range(26):
            n = int(sr * rng.uniform(0.8, 1.0))
            m = int(n * rng.uniform(0.4, 0.7))
            start = int(rng.integers(0, n - m))
            x = 0.01 * rng.standard_normal(n)
            x[start:start + m] += _tone(rng, m, sr, k % 12, 12) * (1 + k // 12) / 3 * np.hanning(m)
            h = zlib.crc32(f"{word}{i}".encode())
            name = f"{h:08x}_nohash_{i % 3}.wav"
            _wav(root / word / name, x.astype(np.float32), sr)
            (val if h % 10 == 0 else test if h % 10 == 1 else train).append(f"{word}/{name}")
    (root / "_background_noise_").mkdir(parents=True)
    for j, name in enumerate(("doing_the_dishes", "dude_miaowing", "exercise_bike", "pink_noise", "running_tap",
                              "white_noise")):
        x = rng.standard_normal(20 * sr)
        if j != 5:  # coloured: a running mean of the white noise
            x = np.convolve(x, np.ones(2 + 3 * j) / (2 + 3 * j), mode="same")
        _wav(root / "_background_noise_" / f"{name}.wav", (0.1 * x / x.std()).astype(np.float32), sr)
    _text(root / "validation_list.txt", "".join(p + "\n" for p in val))
    _text(root / "testing_list.txt", "".join(p + "\n" for p in test))
    _text(root / "training_list.txt", "".join(p + "\n" for p in train))



def segnet_roads(d: Path, rng) -> None:
    """200 train / 40 val generated 176x144 road scenes and their 0/1 road maps (3-channel PNG), same file names."""
    h, w = 144, 176
    yy, xx = np.mgrid[0:h, 0:w]
    for split, n in (("train", 200), ("val", 40)):
        (d / "dataset" / split / "images").mkdir(parents=True, exist_ok=True)
        (d / "dataset" / split / "maps").mkdir(parents=True, exist_ok=True)
        for k in range(n):
            # a road as a band between two lines, a curved second road sometimes
            x0, slope, width = rng.uniform(0.2, 0.8) * w, rng.uniform(-0.6, 0.6), rng.uniform(12, 30)
            road = np.abs(xx - (x0 + slope * (yy - h / 2))) < width / 2
            if rng.random() < 0.5:
                y0, curve = rng.uniform(0.2, 0.8) * h, rng.uniform(-0.01, 0.01)
                road |= np.abs(yy - (y0 + curve * (xx - w / 2) ** 2)) < rng.uniform(6, 16)
            ground = np.stack([rng.uniform(60, 140) + 20 * np.sin(xx / rng.uniform(5, 20)),
                               rng.uniform(80, 160) + 20 * np.cos(yy / rng.uniform(5, 20)),
                               rng.uniform(40, 100) + 0 * xx], -1)
            asphalt = rng.uniform(90, 130) + 0 * ground
            img = np.where(road[..., None], asphalt, ground) + rng.normal(0, 8, (h, w, 3))
            img = np.clip(img, 0, 255).astype(np.uint8)
            mask = np.repeat(road.astype(np.uint8)[..., None], 3, axis=-1)
            _png(d / "dataset" / split / "images" / f"{k:04}.png", img)
            _png(d / "dataset" / split / "maps" / f"{k:04}.png", mask)



def aptos_inception(d: Path, rng) -> None:
    # KLdivergence/blindness_detection's data/ as Kaggle's APTOS 2019 Blindness Detection unpacks it: train.csv
    # (id_code, diagnosis 0-4) and train_images/<id_code>.png. 320 generated 288x216 RGB fundus photographs here
    # (the originals are up to 3216x2136): a dark background, an orange-red disc lit from one side, an optic disc,
    # vessels, and more bright lesions (exudates) and dark spots (haemorrhages) the higher the grade; mild grain. 320 rows: validation_split 0.1 leaves 32 for validation and 288 (9 batches of 32) for training.
    base = d / "data"
    (base / "train_images").mkdir(parents=True, exist_ok=True)
    h, w = 216, 288
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    rows = []
    for _i in range(320):
        grade = int(rng.choice(5, p=[0.45, 0.12, 0.25, 0.08, 0.10]))
        cy, cx, r = h / 2 + rng.uniform(-8, 8), w / 2 + rng.uniform(-10, 10), rng.uniform(94, 104)
        dist = np.sqrt((yy - cy) ** 2 + (xx - cx) ** 2)
        light = 1.0 - 0.35 * np.clip((xx - cx) / r * rng.choice([-1, 1]), -1, 1)
        base_col = np.array([rng.uniform(170, 220), rng.uniform(70, 110), rng.uniform(20, 45)], np.float32)
        img = base_col[None, None, :] * light[..., None] * (1 - 0.4 * (dist / r) ** 2)[..., None]
        ody, odx = cy + rng.uniform(-15, 15), cx + rng.choice([-1, 1]) * r * 0.45
        od = np.exp(-((yy - ody) ** 2 + (xx - odx) ** 2) / (2 * 14.0 ** 2))
        img += od[..., None] * np.array([60, 70, 50], np.float32)
        for _ in range(8):  # vessels: darker arcs from the optic disc
            ang, curv = rng.uniform(0, 2 * np.pi), rng.uniform(-0.004, 0.004)
            t = np.linspace(0, r * 1.1, 200)
            py = ody + t * np.sin(ang) + curv * t ** 2
            px = odx + t * np.cos(ang)
            for y0, x0 in zip(py.astype(int)[::2], px.astype(int)[::2]):
                if 2 <= y0 < h - 2 and 2 <= x0 < w - 2:
                    img[y0 - 1:y0 + 2, x0 - 1:x0 + 2] *= 0.7
        for _ in range(grade * 6):  # lesions
            ly, lx = cy + rng.uniform(-0.7, 0.7) * r, cx + rng.uniform(-0.7, 0.7) * r
            s = rng.uniform(2, 5)
            y0, x0 = int(np.clip(ly, 12, h - 13)), int(np.clip(lx, 12, w - 13))
            win = (slice(y0 - 12, y0 + 13), slice(x0 - 12, x0 + 13))
            blob = np.exp(-((yy[win] - ly) ** 2 + (xx[win] - lx) ** 2) / (2 * s ** 2))[..., None]
            img[win] += blob * (np.array([70, 70, 30], np.float32) if rng.random() < 0.5 else np.array([-90, -50, -20], np.float32))
        img[dist > r] = 0
        img += rng.normal(0, 1.5, img.shape)
        img = np.clip(img, 0, 255).astype(np.uint8)
        id_code = "%012x" % int(rng.integers(0, 2 ** 48))
        _png(base / "train_images" / f"{id_code}.png", img)
        rows.append((id_code, grade))
    _csv(base / "train.csv", ["id_code", "diagnosis"], rows)



CLOUD_CLASSES = ["Fish", "Flower", "Gravel", "Sugar"]


def _cloud_noise(rng, h, w, cell):
    # smooth random field in [0, 1]: a coarse grid of uniform noise, bicubically upsampled
    import cv2

    gh, gw = max(2, h // cell + 2), max(2, w // cell + 2)
    f = cv2.resize(rng.random((gh, gw), dtype=np.float32), (w, h), interpolation=cv2.INTER_CUBIC)
    return np.clip(f, 0.0, 1.0)


def _rle_columns(mask: np.ndarray) -> str:
    # the Kaggle cloud competition's EncodedPixels: 1-based runs of "start length" over the mask read column by
    # column (top to bottom, then left to right)
    pixels = np.concatenate([[0], mask.T.flatten().astype(np.int8), [0]])
    runs = np.where(pixels[1:] != pixels[:-1])[0] + 1
    runs[1::2] -= runs[::2]
    return " ".join(str(x) for x in runs)


def cloud_efficientnet(d: Path, rng) -> None:
    # voanhkha/UnderstandingCloudOrganization_Kaggle's input folder (Kaggle's Understanding Clouds from Satellite
    # Images): train_images/<7 hex>.jpg (5546 1400x2100 RGB JPEGs of MODIS true-colour scenes) and train.csv, four
    # rows an image (Image_Label "<id>.jpg_Fish", "_Flower", "_Gravel", "_Sugar"; EncodedPixels a column-major
    # 1-based run-length mask, empty where the pattern is absent; every image has at least one); here 400 generated
    # 480x720 JPEGs (about a third of the size), masks at that size. A scene is dark ocean under cloud fields, one
    # to three labelled rectangles each textured as its pattern (Sugar fine dust, Gravel granules, Flower large
    # separate blobs, Fish a long skeletal band), about half the scenes crossed by a black swath gap.
    import cv2

    h, w = 240, 360  # drawn at half size, upsampled to 480x720 before the noise and the JPEG
    (d / "train_images").mkdir(parents=True)
    rows = []
    used = set()
    for _ in range(400):
        while True:
            name = f"{int(rng.integers(0, 16 ** 7)):07x}.jpg"
            if name not in used:
                used.add(name)
                break
        ocean = 0.18 + 0.06 * _cloud_noise(rng, h, w, 80)
        img = ocean[..., None] * np.array([0.8, 0.95, 1.25], np.float32)
        k = int(rng.choice([1, 2, 2, 3, 3]))
        present = sorted(rng.choice(4, size=k, replace=False).tolist())
        masks = {}
        for c in present:
            y0, x0 = int(rng.integers(0, h // 2)), int(rng.integers(0, w // 2))
            y1, x1 = min(h, y0 + int(rng.integers(h // 4, h // 2 + 20))), min(w, x0 + int(rng.integers(w // 4, w // 2)))
            mask = np.zeros((2 * h, 2 * w), bool)
            mask[2 * y0:2 * y1, 2 * x0:2 * x1] = True
            rh, rw = y1 - y0, x1 - x0
            name_c = CLOUD_CLASSES[c]
            if name_c == "Sugar":
                cloud = np.clip(_cloud_noise(rng, rh, rw, 3) * 1.6 - 0.9, 0, 1) * 0.6
            elif name_c == "Gravel":
                cloud = np.clip(_cloud_noise(rng, rh, rw, 7) * 2.2 - 1.2, 0, 1)
            elif name_c == "Flower":
                cloud = np.clip(_cloud_noise(rng, rh, rw, 30) * 3.0 - 2.0, 0, 1)
            else:
                band = np.exp(-((np.arange(rh)[:, None] - rh / 2) / (rh / 5)) ** 2)
                streak = cv2.resize(rng.random((max(2, rh // 5), max(2, rw // 40)), dtype=np.float32), (rw, rh),
                                    interpolation=cv2.INTER_CUBIC)
                cloud = np.clip(band * (streak * 1.8 - 0.3), 0, 1)
            cloud = cloud * (0.85 + 0.15 * _cloud_noise(rng, rh, rw, 4))
            img[y0:y1, x0:x1] += (0.9 - img[y0:y1, x0:x1]) * cloud[..., None]
            masks[name_c] = mask
        img += np.float32(0.1) * np.clip(_cloud_noise(rng, h, w, 15) * 2 - 1.3, 0, 1)[..., None]  # unlabelled cloud
        if rng.random() < 0.5:  # a black swath gap between satellite passes
            x = np.arange(w, dtype=np.float32)[None, :] - np.float32(rng.uniform(0.2, 0.8) * w) \
                - np.float32(rng.uniform(-0.3, 0.3)) * np.arange(h, dtype=np.float32)[:, None]
            img *= (np.abs(x) >= rng.uniform(10, 35))[..., None]
        img = cv2.resize(img, (2 * w, 2 * h), interpolation=cv2.INTER_LINEAR)
        img += 0.01 * rng.standard_normal(img.shape, dtype=np.float32)
        _jpg(d / "train_images" / name, (np.clip(img, 0, 1) * 255).astype(np.uint8))
        for name_c in CLOUD_CLASSES:
            rows.append([f"{name}_{name_c}", _rle_columns(masks[name_c]) if name_c in masks else ""])
    _csv(d / "train.csv", ["Image_Label", "EncodedPixels"], rows)



def edges2pic_gan(d: Path, rng) -> None:
    # NNDEV1/Edges2Pic's /content/edges2shoes/ (pix2pix's edges2shoes.tar.gz as extracted): train/<n>_AB.jpg, each a
    # 256x512 RGB JPEG of the edge map (A, left half: black strokes on white) beside the photo (B, right half: a shoe
    # on a white background); here 64 pairs for 49825 (val/ left out: the script reads only train/). A shoe is a
    # random ellipse-and-heel silhouette in a random colour with shading and a sole; its edge map is the silhouette's
    # outline and a few inner strokes.
    root = d / "edges2shoes" / "train"
    root.mkdir(parents=True)
    yy, xx = np.mgrid[0:256, 0:256].astype(np.float32)
    for n in range(64):
        cx, cy = rng.uniform(110, 146), rng.uniform(120, 150)
        ax, ay = rng.uniform(80, 110), rng.uniform(35, 55)
        tilt = rng.uniform(-0.25, 0.25)
        u = (xx - cx) * np.cos(tilt) + (yy - cy) * np.sin(tilt)
        v = -(xx - cx) * np.sin(tilt) + (yy - cy) * np.cos(tilt)
        body = (u / ax) ** 2 + (v / ay) ** 2 <= 1.0
        hx = cx + rng.uniform(-0.8, -0.4) * ax
        heel = (np.abs(xx - hx) < rng.uniform(8, 18)) & (yy > cy) & (yy < cy + ay + rng.uniform(10, 30))
        shoe = body | heel
        sole = shoe & (yy > cy + 0.6 * ay)
        colour = rng.uniform(20, 230, size=3)
        shade = 0.75 + 0.25 * np.cos(np.clip(v / ay, -1, 1) * 1.4)[..., None]
        photo = np.full((256, 256, 3), 255.0, np.float32)
        photo[shoe] = (colour * shade[shoe])
        photo[sole] = 40 + 20 * rng.random()
        photo += rng.normal(0, 4, photo.shape)
        edge = np.zeros((256, 256), bool)
        edge[1:, :] |= shoe[1:, :] != shoe[:-1, :]
        edge[:, 1:] |= shoe[:, 1:] != shoe[:, :-1]
        edge[1:, :] |= sole[1:, :] != sole[:-1, :]
        for _ in range(int(rng.integers(2, 5))):  # laces and seams
            x0 = int(rng.uniform(cx - 0.3 * ax, cx + 0.4 * ax))
            y0 = int(cy - 0.5 * ay)
            edge[y0:y0 + int(rng.uniform(10, 30)), x0:x0 + 2] = True
        sketch = np.where(edge, 0.0, 255.0).astype(np.float32)[..., None].repeat(3, axis=2)
        img = np.concatenate([sketch, photo], axis=1)
        _jpg(root / f"{int(rng.integers(1, 50000))}_{n}_AB.jpg", np.clip(img, 0, 255).astype(np.uint8))



def cyclone_unet(d: Path, rng) -> None:
    # EMPIRIC2/EMPIRIC_TC's "Training Data Generation/Data/train/AllData_<time.time()>.hdf5", as
    # GenerateTrainingData.py writes them (h5py defaults: float32, contiguous, no compression): train_genesis
    # (N, 6, lat, lon), the STORM genesis matrices of the South Pacific's six genesis months (1, 2, 3, 4, 11, 12)
    # rounded to one decimal; train_movement (N, 11, 13), the basin's movement coefficients; train_output
    # (N, 2*lat, 2*lon, 12), the average landfalls per year for each month on the twice-as-fine grid (non-zero on land
    # cells only, in the six genesis months); the same for test. Here two runs' files of 160 training and 16 test
    # samples each, lat x lon 14x26 for 55x105 (about 28 MB in all); every row generated (no all-zero row).
    import h5py

    lat, lon, years = 14, 26, 100
    yy, xx = np.mgrid[0:lat, 0:lon]
    land = np.zeros((2 * lat, 2 * lon), bool)
    for _ in range(14):  # islands: small discs on the fine grid
        cy, cx, r = rng.integers(0, 2 * lat), rng.integers(0, 2 * lon), rng.uniform(1.0, 3.0)
        fy, fx = np.mgrid[0:2 * lat, 0:2 * lon]
        land |= (fy - cy) ** 2 + (fx - cx) ** 2 <= r * r
    out_months = [0, 1, 2, 3, 10, 11]
    folder = d / "Training Data Generation" / "Data" / "train"
    folder.mkdir(parents=True)
    for stamp in ("1707693914.2731564", "1707712650.9018202"):
        tmp = folder / f".AllData_{stamp}.hdf5.tmp"
        with h5py.File(tmp, "w-") as data:
            for split, n in (("train", 160), ("test", 16)):
                genesis = np.zeros((n, 6, lat, lon), np.float32)
                for _ in range(3):  # genesis hot spots per sample and month
                    cy = rng.uniform(0, lat, (n, 6, 1, 1))
                    cx = rng.uniform(0, lon, (n, 6, 1, 1))
                    s = rng.uniform(1.5, 4.0, (n, 6, 1, 1))
                    a = rng.gamma(2.0, 0.6, (n, 6, 1, 1))
                    genesis += a * np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * s * s))
                genesis = np.round(genesis, 1)
                genesis[:, :, 0, 0] = np.maximum(genesis[:, :, 0, 0], 0.1)  # never an all-zero (ungenerated) row
                movement = rng.normal(0.0, 0.5, (n, 11, 13)).astype(np.float32)
                rate = genesis.repeat(2, axis=2).repeat(2, axis=3) * land * 8.0  # (n, 6, 2lat, 2lon)
                counts = rng.poisson(rate).astype(np.float32) / years
                output = np.zeros((n, 2 * lat, 2 * lon, 12), np.float32)
                output[..., out_months] = counts.transpose(0, 2, 3, 1)
                data.create_dataset(f"{split}_genesis", (n, 6, lat, lon))
                data.create_dataset(f"{split}_movement", (n, 11, 13))
                data.create_dataset(f"{split}_output", (n, 2 * lat, 2 * lon, 12))
                data[f"{split}_genesis"][...] = genesis
                data[f"{split}_movement"][...] = movement
                data[f"{split}_output"][...] = output
        os.replace(tmp, folder / f"AllData_{stamp}.hdf5")



MAKERS = {f.__name__: f for f in (polyp_unet, hpa_protein, brats_3d, kws_tiny, kws_streaming, delft_text,
                                  fakenews_from_generator, audio_tagging, keras_segmentation, protein_kaggle,
                                  spectrogram_user, segmentation_user, lstm_timeseries, sigmoid_classifier,
                                  cml_thermal, coffee_classification, age_estimation, voxnet_modelnet,
                                  caption_flickr, char_rnn, tk_keypoint, siamese_omniglot, trigger_word,
                                  denoise_autoencoder, speech_attrnn, glucose_lag, imdb_lstm,
                                  squeezenet_faces, muography_unet, plankton_siamese, skin_cancer,
                                  cityscapes_unet, kashmir_asr, deepdriving, pokemon_gan, alexnet_dataset,
                                  genre_mfcc, libras_frames, carnd_cloning, odir_fundus,
                                  realness_discriminator, kitti_road_fcn, srgan_celeba, speech_xception,
                                  bracs_mobilenet, firecam_inception, sleep_eeg_cnn, tb_resnet50v2, speech_flow_mel, cifar_datagen, movie_poster_genres,
                                  carla_unet, nima_mobilenet, crepe_agnews, so2sat_lcz, captcha_yolo, sednn_dnn,
                                  ravdess_ser, histo_pcam, vui_ctc, urbansound_tape, tinyimagenet_mp, moonyard_depth,
                                  kws_logfbank, segnet_roads, aptos_inception, cloud_efficientnet, edges2pic_gan, cyclone_unet)}



def make(name: str, folder: str | os.PathLike = DEFAULT) -> Path:
    """Writes script ``name``'s data under ``folder/name`` once; returns that folder."""
    if name not in MAKERS:
        raise ValueError(f"no data maker for {name!r}; known: {', '.join(MAKERS)}")
    out = Path(folder) / name
    if (out / MARK).exists():
        return out
    Path(folder).mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=folder))
    try:
        MAKERS[name](tmp, np.random.default_rng(zlib.crc32(name.encode())))
        _text(tmp / MARK, "complete\n")
        if out.exists():  # an incomplete earlier attempt (no marker): ours to replace
            shutil.rmtree(out)
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("names", nargs="*", help="scripts to make data for (all by default)")
    p.add_argument("--folder", default=DEFAULT)
    a = p.parse_args(argv)
    for name in a.names or list(MAKERS):
        print(make(name, a.folder), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
