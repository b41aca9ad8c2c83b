"""What the doctor accepts as a batch source: the checks, the kind of source, its first batch, counted re-reads."""

from __future__ import annotations

import os
import re
import sysconfig
import time
import traceback
from collections.abc import Iterator

import numpy as np

from kit import timing
from kit.timing.batches import batch_size_of, known_length


def is_dataset(obj) -> bool:
    """Whether ``obj`` is a ``tf.data.Dataset`` (told without importing TensorFlow)."""
    return any(c.__name__ == "DatasetV2" and c.__module__.startswith("tensorflow")
               for c in type(obj).__mro__)


def is_pydataset(obj) -> bool:
    """Whether ``obj`` is a ``keras.utils.PyDataset``."""
    return any(c.__name__ == "PyDataset" for c in type(obj).__mro__)


def is_model(obj) -> bool:
    """Whether ``obj`` is a Keras model."""
    return any(c.__name__ == "Model" and c.__module__.startswith("keras") for c in type(obj).__mro__)


def check_source(source, name: str = "source"):
    """Raises ``ValueError`` (naming ``name``) unless ``source`` is a re-readable batch source."""
    if isinstance(source, Iterator) and not is_pydataset(source):  # ImageDataGenerator's flows are PyDatasets too
        raise ValueError(f"{name} is a one-shot iterator ({type(source).__name__}); the doctor reads it "
                         f"several times: pass a tf.data.Dataset, a PyDataset or a function returning "
                         f"a fresh generator")
    if (source is None or isinstance(source, (str, bytes, int, float, np.ndarray))
            or not (is_pydataset(source) or callable(source) or hasattr(source, "__iter__"))):
        raise ValueError(f"{name} is of type {type(source).__name__!r}, not a batch source (a "
                         f"tf.data.Dataset, a keras.utils.PyDataset or a function returning a generator "
                         f"of batches)")


class Progress:
    """What the doctor is reading now and how many batches of it arrived, so that a watchdog can say
    which batch it waits for."""

    def __init__(self):
        self.what, self.batches, self.since = "starting", 0, time.monotonic()

    def start(self, what: str) -> None:
        self.what, self.batches, self.since = what, 0, time.monotonic()

    def arrived(self) -> None:
        self.batches += 1
        self.since = time.monotonic()

    def waited(self) -> float:
        """Seconds since the last batch arrived (or reading started)."""
        return time.monotonic() - self.since

    def waiting(self) -> str:
        """``batch 3 of the loader alone, waited 41 s``."""
        return f"batch {self.batches + 1} of {self.what}, waited {time.monotonic() - self.since:,.0f} s"


#: The doctor's one record of what it reads (one diagnosis runs at a time in a process).
PROGRESS = Progress()
#: What ``PROGRESS`` reads while the compute ceiling replays a batch from memory to a copy of the model.
CEILING = "the compute ceiling"


def first_batch(source, name: str):
    """The first batch of ``source`` and its size; ``ValueError`` naming ``name`` if there is none."""
    PROGRESS.start(f"{name}, its first batch")
    it = timing.iterate(source)
    try:
        batch = next(it)
        PROGRESS.arrived()
    except StopIteration:
        raise ValueError(f"{name} yielded no batches") from None
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            close()
    try:
        n = batch_size_of(batch)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{name} does not yield batches: {e}") from None
    return batch, n


class Counted:
    """A re-iterable view of a batch source that records each epoch's batch sizes."""

    def __init__(self, source):
        self.source = source
        self.epochs: list[list[int]] = []

    def __iter__(self):
        sizes: list[int] = []
        self.epochs.append(sizes)
        for batch in timing.iterate(self.source):
            sizes.append(batch_size_of(batch))
            yield batch

    def __len__(self):
        n = known_length(self.source)
        if n is None:
            raise TypeError("length unknown")
        return n


def loop(source, sizes: list, what: str = "the loader alone"):
    """Batches of ``source`` epoch after epoch (for timing beyond one short epoch)."""
    PROGRESS.start(what)
    while True:
        empty = True
        batches = timing.iterate(source)
        try:
            for batch in batches:
                empty = False
                PROGRESS.arrived()
                sizes.append(batch_size_of(batch))
                yield batch
        finally:  # closed early (measure_loader's window ended): the epoch ends now
            close = getattr(batches, "close", None)
            if close is not None:
                close()
        if empty:
            return


def _leaves(batch) -> list:
    """A batch's arrays, in order: tuples, lists and dicts (``{"image": x, "meta": m}``) followed."""
    if isinstance(batch, dict):
        return [leaf for v in batch.values() for leaf in _leaves(v)]
    if isinstance(batch, (tuple, list)):
        return [leaf for v in batch for leaf in _leaves(v)]
    return [batch]


def nbytes(batch) -> int:
    """Bytes of a batch's arrays (tuples, lists and dicts followed; a ragged or sparse tensor's values)."""
    total = 0
    for leaf in _leaves(batch):
        leaf = getattr(leaf, "flat_values", getattr(leaf, "values", leaf))  # RaggedTensor, SparseTensor
        total += int(np.asarray(leaf).nbytes)
    return total


def as_xy(batch):
    """``(x, (y, ...))``: a batch's inputs and the rest (targets, sample weights), as Keras reads
    ``x``, ``(x,)``, ``(x, y)`` and ``(x, y, w)``; ``x`` may itself be a tuple or a dict of inputs."""
    if isinstance(batch, (tuple, list)) and batch:
        return batch[0], tuple(batch[1:])
    return batch, ()


def shapes(batch) -> str:
    """A batch's shapes for an error message: ``batches of 16x16, 16``; nested inputs in brackets,
    ``batches of {image: 16x8x8x3, meta: 16x4}, 16`` or ``batches of (16x4, 16x2), 16``."""
    def shape(v) -> str:
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k}: {shape(x)}" for k, x in v.items()) + "}"
        if isinstance(v, (tuple, list)):
            return "(" + ", ".join(shape(x) for x in v) + ")"
        return "x".join(str(d) for d in np.shape(v)) or "scalar"

    parts = batch if isinstance(batch, (tuple, list)) else [batch]
    return "batches of " + ", ".join(shape(v) for v in parts)


class ModelError(ValueError):
    """The model, not the source, is at fault: not compiled, not copyable, or not taking the batches."""


# TensorFlow's wrapping around an op's message: "{{function_node ...}}", the preamble, "[[{{node X}}]]"
# lines, a trailing " [Op:IteratorGetNext] name: ".
_TF_PREFIX = re.compile(r"\{\{function_node [^}]*\}\}\s*")
_TF_SUFFIX = re.compile(r"\s*(\[\[[^\]]*\]\]\s*)*(\[Op:[^\]]*\])?\s*(name:\s*\S*)?\s*$")
_TF_PREAMBLE = re.compile(r"^(Graph execution error:|Detected at node |<stack traces unavailable>|"
                          r"\d+ root error\(s\) found|\[\[|File \"|Traceback \(most recent call last\))")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # Keras colours its layer errors on a terminal


def _tf_message(text: str) -> str:
    """The first meaningful line of a TensorFlow error: the op's own message."""
    for line in _TF_PREFIX.sub("", text).splitlines():
        root = re.match(r"\s*\(\d+\) [A-Z_]+: ", line)  # "  (0) INVALID_ARGUMENT: " of a root error
        if root:
            line = line[root.end():]
        elif not line.strip() or line[:1].isspace() or _TF_PREAMBLE.match(line):
            continue
        return _TF_SUFFIX.sub("", line).strip() or line.strip()
    return " ".join(text.split())


def _python_message(text: str) -> str:
    """A Python error's first paragraph on one line, without terminal colours; Keras's
    "Exception encountered when calling X.call()." skipped for the paragraph that says what."""
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", _ANSI.sub("", text))]
    paragraphs = [p for p in paragraphs if p]
    said = [p for p in paragraphs if not p.startswith("Exception encountered when calling")]
    return (said or paragraphs or [""])[0]


_FILE_LINE = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
_LIBRARY = tuple(os.path.realpath(sysconfig.get_paths()[k]) + os.sep for k in ("stdlib", "purelib", "platlib"))
_KIT = os.path.dirname(os.path.dirname(os.path.realpath(__file__))) + os.sep


def is_library(filename: str) -> bool:
    """Whether a file is the standard library's or an installed package's, not the user's."""
    return os.path.realpath(filename).startswith(_LIBRARY)


def user_place(e: BaseException) -> str:
    """``mymod.py:21 in py``: the innermost place in the user's own code that an error names, from the
    message (TensorFlow quotes a ``py_function``'s traceback) or else the traceback; '' when none."""
    frames = [(f.filename, f.lineno, f.name) for f in traceback.extract_tb(e.__traceback__)]

    def users(found):
        return [(f, n, fn) for f, n, fn in found if not f.startswith("<")
                and not os.path.basename(f).startswith("__autograph_generated")
                and not is_library(f) and not os.path.realpath(f).startswith(_KIT)]

    user = users([(f, int(n), fn) for f, n, fn in _FILE_LINE.findall(str(e))]) or users(frames)
    if not user:
        return ""
    f, n, fn = user[-1]
    return f"{os.path.basename(f)}:{n} in {fn}"


def describe_error(e: BaseException) -> str:
    """An exception as one line of at most 300 characters, its type first, and the user's code it names:
    ``InvalidArgumentError: Input is empty.`` (TensorFlow's wrapping dropped), ``ValueError: bad file``
    (Python raised inside the pipeline), else the first paragraph."""
    name = type(e).__name__
    text = str(e)
    autograph = re.search(r"in user code:.*?\n\s*([A-Za-z_][\w.]*(?:Error|Exception)): ([^\n]*)\s*$", text, re.S)
    if autograph:  # autograph's "in user code:" block: the error it ends with is the message
        name, text = autograph.group(1).rsplit(".", 1)[-1], autograph.group(2)
    elif type(e).__module__.startswith("tensorflow"):
        text = _tf_message(getattr(e, "message", None) or text)
        python = re.search(r"(?:^|: )([A-Za-z_][\w.]*(?:Error|Exception)): (.*)$", text)
        if python:  # Python's own error, raised inside the pipeline: "... Map: ValueError: bad file"
            name, text = python.group(1).rsplit(".", 1)[-1], python.group(2)
    else:
        text = _python_message(text)
    place = user_place(e)
    where = f", at {place}" if place else ""
    if not text:
        return name + where
    return f"{name}: {text[:300]}{'...' if len(text) > 300 else ''}{where}"
