"""A loader that is the user's own Python (a generator, a ``PyDataset``'s ``__getitem__``): where its time
goes (profiled, the user's function named with its line), whether it gives the same batches twice, and
the findings: its Python as the cause, and computing its deterministic work once."""

from __future__ import annotations

import cProfile
import itertools
import linecache
import math
import os
import pstats
import time
from dataclasses import dataclass, replace

import numpy as np

from kit.doctor.findings import Finding, Measured
from kit.doctor.rules import predicted
from kit.doctor.run import short
from kit.doctor.sources import _leaves, is_dataset, is_library, is_pydataset

_KIT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: Words in the hot function's source -> the TensorFlow ops that do that work in the graph.
TF_OPS = (
    (("stft", "fft", "mel(", "mel_", "melspectrogram", "librosa", "mfcc", "filterbank", "logmel", "fbank"),
     "tf.signal.stft and tf.signal.linear_to_mel_weight_matrix (audio features in the graph)"),
    (("cv2", "imread", "Image.open", "PIL", "resize", "imdecode", "load_img", "skimage"),
     "tf.io.read_file, tf.io.decode_png/decode_jpeg and tf.image.resize (images in the graph)"),
    (("split(", "tokeni", "lower(", "vocab", "word_index", "texts_to_sequences"),
     "tf.strings ops or keras.layers.TextVectorization (text in the graph)"),
)


def is_python_source(source) -> bool:
    """Whether the loader is the user's Python: a ``PyDataset`` or a function returning a generator."""
    return is_pydataset(source) or (callable(source) and not is_dataset(source))


def _user(filename: str) -> bool:
    return not (filename.startswith("<") or filename == "~" or is_library(filename)
                or os.path.abspath(filename).startswith(_KIT))


def _batches(source):
    """Batches of ``source`` read on this thread (a PyDataset's items in order, its workers left out)."""
    if is_pydataset(source):
        n = source.num_batches if getattr(source, "num_batches", None) is not None else None
        return (source[i] for i in (range(n) if n is not None else itertools.count()))
    return iter(source())


#: Library functions that read whole files, by name and where they live (profiled to time reading).
READS = {("numpy", "load"), ("numpy", "fromfile"), ("numpy", "loadtxt"), ("~", "<method 'read' of '_io.BufferedReader' objects>"),
         ("~", "<method 'read' of '_io.FileIO' objects>"), ("~", "<method 'readinto' of '_io.BufferedReader' objects>")}


@dataclass
class Hot:
    """Where the loader's Python spends its time (``hot_spot``)."""

    where: str = ""  # train.py:57 in compute_logmel: the deepest of the user's functions holding most of it
    share: float = math.nan  # its share of the time profiled
    text: str = ""  # its source, for the ops that could replace it
    reads: float = math.nan  # the share in calls that read whole files (np.load, file.read)
    cpu: float = math.nan  # the profiled thread's CPU time over its wall time: under ~0.3 it mostly waits


def hot_spot(source, *, seconds: float) -> Hot:
    """Profiles the loader's Python for about ``seconds`` on this thread (cProfile): the user's function
    that holds most of the time and is deepest, its share and source, and the share spent reading files."""
    prof = cProfile.Profile()
    it = _batches(source)
    t0, c0 = time.perf_counter(), time.thread_time()
    prof.enable()
    try:
        for _ in range(1000):
            try:
                next(it)
            except StopIteration:
                break
            if time.perf_counter() - t0 >= seconds:
                break
    finally:
        prof.disable()
        close = getattr(it, "close", None)
        if close is not None:
            close()
    total, cpu = time.perf_counter() - t0, time.thread_time() - c0
    hot = hot_from(prof, total)
    if not hot.where:
        return hot
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    reads = sum(v[3] for k, v in stats.items()
                if any(k[2] == fn and (place == "~" and k[0] == "~" or place in k[0]) for place, fn in READS))
    return replace(hot, reads=min(1.0, reads / total), cpu=cpu / total)


def hot_from(prof, total: float) -> Hot:
    """``Hot`` from a profile already taken (``total``: the seconds it covered): the deepest of the user's
    functions holding at least half of what the outermost one holds (comprehensions count as their function's)."""
    if prof is None or total <= 0:
        return Hot()
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    mine = {k: v[3] for k, v in stats.items() if _user(k[0]) and not k[2].startswith("<")}
    if not mine:
        return Hot()
    top = max(mine.values())
    (filename, line, name), cum = min(((k, c) for k, c in mine.items() if c >= 0.5 * top), key=lambda kc: kc[1])
    return Hot(f"{short(filename)}:{line} in {name}", min(1.0, cum / total), _body(filename, line))


def _body(filename: str, line: int, most: int = 60) -> str:
    """The function's body (its def line left out: a name says little of what it does)."""
    first = linecache.getline(filename, line)
    indent = len(first) - len(first.lstrip())
    lines: list[str] = []
    for n in range(line + 1, line + most):
        text = linecache.getline(filename, n)
        if not text:
            break
        if text.strip() and len(text) - len(text.lstrip()) <= indent:
            break
        lines.append(text)
    return "".join(lines)


def growing_line(source, *, batches: int, seconds: float) -> tuple[str, float] | None:
    """The user's line whose allocations, still held, grew most between reads of ``batches`` batches (an
    epoch) on this thread, traced with ``tracemalloc`` over three such reads (the first, where caches fill,
    left out): ``("train.py:31", MB per read)``, or None where nothing of the user's grew; ``TimeoutError``
    where the three reads did not end within ``seconds``."""
    import tracemalloc

    if batches < 1:
        return None
    deadline = time.perf_counter() + seconds
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start(16)
    snapshots = []
    try:
        it = _batches(source)
        for _ in range(3):
            for _ in range(batches):
                try:
                    next(it)
                except StopIteration:  # a generator's epoch ended: the next read starts a new one
                    it = _batches(source)
                    next(it)
                if time.perf_counter() > deadline:
                    raise TimeoutError(f"three reads of {batches} batches took over {seconds:.1f} s")
            snapshots.append(tracemalloc.take_snapshot())
    finally:
        if not tracing:
            tracemalloc.stop()
    grew: dict[str, float] = {}
    for stat in snapshots[-1].compare_to(snapshots[1], "traceback"):
        if stat.size_diff <= 0:
            continue
        frame = next((f for f in reversed(stat.traceback) if _user(f.filename)), None)  # innermost first
        if frame is not None:
            key = f"{short(frame.filename)}:{frame.lineno}"
            grew[key] = grew.get(key, 0.0) + stat.size_diff
    if not grew:
        return None
    where, size = max(grew.items(), key=lambda kv: kv[1])
    return where, size / 1e6 / (len(snapshots) - 2)


def transfer_seconds(batch, *, times: int = 5) -> float:
    """Seconds to pickle and unpickle ``batch`` (the median of ``times``): what a PyDataset's worker
    processes pay to send each batch back to the training process, beyond the copy through the pipe
    (NaN where it cannot be pickled)."""
    import pickle

    spent = []
    try:
        for _ in range(times):
            t0 = time.perf_counter()
            pickle.loads(pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL))
            spent.append(time.perf_counter() - t0)
    except Exception:  # noqa: BLE001  (what cannot be pickled cannot go to processes: said elsewhere)
        return math.nan
    return float(np.median(spent))


def same_batches(source) -> bool | None:
    """Whether two reads give the same first batch (a PyDataset's item 0, or two fresh generators'
    first batches): deterministic work that can be computed once. None where it cannot be read twice."""
    try:
        if is_pydataset(source):
            a, b = source[0], source[0]
        elif callable(source) and getattr(source, "read", None) is None:  # not the one-shot live generator
            a, b = next(iter(source())), next(iter(source()))
        else:
            return None
    except Exception:  # noqa: BLE001  (reading it twice is the user's code: any failure means "unknown")
        return None
    la, lb = _leaves(a), _leaves(b)
    return len(la) == len(lb) and all(np.shape(x) == np.shape(y) and np.array_equal(np.asarray(x), np.asarray(y))
                                      for x, y in zip(la, lb))


def ops_for(text: str) -> str:
    """The TensorFlow ops that would do the work in ``text`` (the hot function's source), '' if none known."""
    return next((ops for words, ops in TF_OPS if any(w in text for w in words)), "")


def findings(source, m: Measured, fits: dict, *, hot: Hot, same: bool | None,
             reads_files: bool = True) -> list[Finding]:
    """The user's Python as the loader: ``python_in_pipeline`` (named with its line) and ``compute_once``.
    Only with a model whose fit waits on this loader (headroom over ``NOISE``), the loader computing.
    ``reads_files``: the loader reads files (where batches differ, only reading and decoding can be kept)."""
    where, share, text = hot.where, hot.share, hot.text
    headroom = m.headroom
    if not fits or not headroom >= 1.1:
        return []  # without a model nothing bounds these gains; with one, the fit does not wait on this loader
    # A loader that mostly waits (files, a network) is the workers' case (rules.pydataset_workers), not its
    # Python's: told by the profiled thread's CPU time, which another process's load does not make look idle.
    try:
        share_of_core = min(1.0, m.cores / max(1.0, os.getloadavg()[0]))  # what a busy thread gets under load
    except (AttributeError, OSError):
        share_of_core = 1.0
    waits = hot.cpu < 0.3 * share_of_core if math.isfinite(hot.cpu) else m.io_wait
    what = "__getitem__" if is_pydataset(source) else "generator"
    profiled = f"{share:.0%} of the time profiled is in {where}" if where else "no function of yours was profiled"
    ops = ops_for(text)
    workers = max(2, m.cores)
    fix_workers = (f"super().__init__(workers={workers}, use_multiprocessing=True) in your PyDataset" if is_pydataset(source)
                   else f"wrap the generator's per-batch work in a keras.utils.PyDataset with workers={workers}, "
                        "use_multiprocessing=True")
    low, high = max(1.0, m.parallel_gain), headroom if math.isfinite(headroom) else max(1.0, m.parallel_gain)
    gain, lo, hi = predicted(m, low, high)
    out = [] if waits else [Finding(
        "python_in_pipeline",
        f"the {what}'s own Python is the loader: it keeps {m.cores_busy:.2f} of {m.cores} cores busy; {profiled}",
        gain, m.cap.explain(f"predicted: from what parallel workers give on the free cores ({m.parallel_basis}) "
                            "to the whole headroom, its work done in TensorFlow ops"),
        status="predicted", gain_low=lo, gain_high=hi, where=where,
        fix=(f"do {where.split(' in ')[-1] if where else 'its work'} in TensorFlow ops: {ops}" if ops else
             "do its work in TensorFlow ops (a tf.data map)") + f"; or {fix_workers}")]
    # Random work beside reading and decoding: the deterministic part may be cached. A loader that reads no
    # file (arrays in memory) has no reading or decoding to keep: its work is the random part, new each epoch.
    if same is False:
        if reads_files and fits and math.isfinite(headroom):
            gain, lo, hi = predicted(m, 1.0, headroom)
            out.append(Finding(
                "compute_once", f"two reads of the first batch differ: random work (augmentation) in the {what}, "
                "beside work that may be the same every epoch (reading, decoding)", gain,
                m.cap.explain("predicted: the deterministic part computed once, the random part each epoch: from "
                              "nothing (the random part is the cost) to the whole headroom (it costs nothing)"),
                status="predicted", gain_low=lo, gain_high=hi, where=where,
                fix="compute the deterministic part once (decode into a store or np.save), and augment after it"))
    elif fits and math.isfinite(headroom):
        rounds = [c / f for c, f in zip(fits.get("ceiling_rounds") or [], fits.get("fit_rounds") or []) if f > 0]
        basis = ("measured: the model trained on batches computed once and replayed from memory, against the "
                 f"real fit: {headroom:,.2f}x" + (f" (rounds {min(rounds):,.2f}-{max(rounds):,.2f}x)" if len(rounds) > 1 else "")
                 + "; read back from a store on disk, a little less")
        if same is None:
            basis += "; not checked that the batches are the same each read (a one-shot generator)"
        fresh = bool(fits.get("ceiling_fresh"))  # the ceiling timed in a process that never read a generator
        if fresh:
            basis += ("; the replay timed in a fresh process that never read a Python generator: the gain needs the "
                      "result read through tf.data (arrays, a store), not a PyDataset or a generator")
        out.append(Finding(
            "compute_once", f"the {what} {'waits for' if waits else 'computes'} the same batches every epoch"
            + (" (two reads of the first batch are equal)" if same else ""),
            headroom, basis, status="measured" if same else "predicted", where=where,
            gain_low=min(rounds) if len(rounds) > 1 else math.nan, gain_high=max(rounds) if len(rounds) > 1 else math.nan,
            fix="compute it once: save the features (np.save, then np.load(mmap_mode='r')), or convert to a store "
                "(python -m kit convert), or tf.data's .cache() after the deterministic work; then train from it"
                + (" through tf.data (model.fit(x, y) on the arrays, or the store's dataset), not a PyDataset" if fresh else "")))
    return out
