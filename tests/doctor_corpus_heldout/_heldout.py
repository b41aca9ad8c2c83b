"""What the held-out cases share beyond tests/doctor_corpus/_common.py: WAV files of sine mixtures,
text from a word list, JPEGs, and a light compile helper."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np

RATE = 16000

#: Words for the generated texts: a common pool, plus words that lean towards one class each.
COMMON = ("the a of and to in is it that was for on with as this but be at by not from have are one all "
          "they we his her there been if more when will would who so no out up into what about than "
          "them can only other time new some could these two may first then do any like my now over "
          "such our man me even most made after also did many before must through back years where much "
          "your way well down should because each just those people how too little state good very make "
          "world still own see men work long get here between both life being under never day same").split()
LEANING = (("great excellent wonderful loved best amazing fine happy brilliant superb").split(),
           ("awful terrible worst boring bad poor dull waste horrible weak").split(),
           ("python pandas numpy array dataframe import function loop list dict").split(),
           ("java class interface spring maven object static void public thread").split())


def sine_wav(path: Path, label: int, seed: int, seconds: float = 1.0) -> None:
    """A mono 16-bit WAV of ``seconds``: a sine mixture whose base frequency depends on ``label``, plus
    noise, at 16 kHz."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(RATE * seconds)) / RATE
    base = 220.0 * (label + 1)
    sig = sum(rng.uniform(0.2, 0.5) * np.sin(2 * np.pi * base * k * t + rng.uniform(0, 6.3)) for k in (1, 2, 3))
    sig = sig + rng.normal(0, 0.05, t.shape)
    pcm = np.clip(sig / 2, -1, 1) * 32000
    path.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm.astype("<i2").tobytes())


def sentence_texts(n: int, words: int, classes: int, seed: int) -> tuple[list[str], np.ndarray]:
    """``n`` texts of about ``words`` words (with punctuation and capitals), each leaning towards its
    class's words, and their labels (0..classes-1)."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % classes
    texts = []
    for k in labels:
        pool = COMMON * 2 + LEANING[k]
        ws = [pool[i] for i in rng.integers(0, len(pool), int(rng.integers(words // 2, words * 3 // 2)))]
        out = []
        for i, w in enumerate(ws):
            out.append(w.capitalize() if i % 12 == 0 else w)
            if i % 12 == 11:
                out[-1] += "."
            elif i % 7 == 6:
                out[-1] += ","
        texts.append(" ".join(out))
    return texts, labels.astype(np.int64)


def compiled(model, loss="sparse_categorical_crossentropy_logits", optimizer="adam"):
    """``model`` compiled with Adam and (by default) sparse categorical cross-entropy on logits."""
    import keras

    if loss == "sparse_categorical_crossentropy_logits":
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(optimizer=optimizer, loss=loss)
    return model
