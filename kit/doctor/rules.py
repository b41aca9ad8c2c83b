"""The rules on measured numbers that make findings: read amplification, PyDataset workers and the GIL, Python in
the pipeline, the frozen prefix, small steps, epoch-start stalls, memory growth (the verdict: ``verdicts``)."""

from __future__ import annotations

import math

import numpy as np

from kit.doctor.findings import NOISE, Finding, Measured
from kit.doctor.graph import _BATCH_OPS, _PASSIVE_OPS, _SHUFFLE_OPS, fn_label
from kit.doctor.sources import is_pydataset
from kit.doctor.verdicts import INPUT_BOUND_HEADROOM, headroom

#: Read amplification worth reporting: this many times the example bytes, and at least this many
#: surplus bytes read in the measured window.
AMPLIFICATION_FACTOR = 4.0
AMPLIFICATION_MIN_BYTES = 1 << 20
#: Threads a PyDataset waiting on files can usefully run (beyond them the disk is the limit).
IO_WORKERS = 4


def cores_available(cores: int, busy: float, load: float) -> float:
    """Cores a parallel loader could use without a model: this machine's, less what other processes keep
    busy (the load average beyond this loader's cores), at least one."""
    others = max(0.0, load - busy) if math.isfinite(load) else 0.0
    return float(min(cores, max(1.0, cores - others)))


def parallel(cores: int, busy: float, load: float, model_cores: float | None = None) -> tuple[float, float, str]:
    """What more parallel loader work could give: ``(cores available, gain, basis)``; with a model, less
    the cores its step keeps busy."""
    if model_cores is not None and math.isfinite(model_cores):
        free = max(0.0, cores - model_cores)
        basis = (f"the loader alone kept {busy:.2f} of {cores} CPU cores busy and the model's step "
                 f"{model_cores:.2f}; more loader threads can use the {free:.1f} the step leaves")
    else:
        free = cores_available(cores, busy, load)
        basis = (f"the loader kept {busy:.2f} of {cores} CPU cores busy; parallel work can use the "
                 f"{free:.1f} the rest of the machine leaves free (load average {load:.1f})")
    return free, max(1.0, free / max(busy, 1e-3)) if busy >= 0.5 else max(1.0, float(IO_WORKERS)), basis


def predicted(m: Measured, low: float, high: float) -> tuple[float, float, float]:
    """A predicted gain range ``(expected, low, high)``, each capped by the headroom; expected is the
    range's geometric middle."""
    lo, hi = m.cap(max(1.0, low)), m.cap(max(1.0, high))
    return math.sqrt(lo * hi), lo, hi


def frozen_backbone(prefix: list, fits: dict, *, head_rate: float | None, why: str,
                    augmented: str = "", epoch_batches: int | None = None) -> Finding:
    """The frozen ``prefix``'s finding: ``head_rate``, the rest trained on the prefix's output, over the
    real fit (None: not measured, ``why``); ``augmented`` says what draws random numbers ahead of it;
    ``epoch_batches``: the head was timed in epochs that long, each start paid, as the real fit reads its source."""
    params = sum(int(np.prod(w.shape)) for layer in prefix for w in layer.weights)
    names = f"{prefix[0].name}" + (f" .. {prefix[-1].name}" if len(prefix) > 1 else "")
    evidence = f"{len(prefix)} frozen layer(s) ({names}, {params:,} weights) run on every step"
    code = "augment_before_frozen_backbone" if augmented else "frozen_backbone_recomputed"
    if augmented:
        evidence += f", behind random augmentation ({augmented})"
    if head_rate is None:
        reason = why if why.startswith("skipped") else f"the model does not split into frozen part + head ({why})"
        return Finding(code, evidence, math.nan, f"not measured: {reason}", status="predicted")
    gain = head_rate / fits["fit_examples_per_s"]
    caveat = (" once the augmentation is dropped or moved after the backbone (cached features are fixed)"
              if augmented else "")
    return Finding(
        code,
        f"{evidence}; the rest trains at {head_rate:,.1f} examples/s on their cached output, the whole model "
        f"at {fits['ceiling_examples_per_s']:,.1f}/s on the same batch",
        gain,
        "predicted: the layers after the frozen part trained on its output held in memory (a feature cache read "
        f"through from_tensor_slices, batch and prefetch{f', in epochs of {epoch_batches:,} batches as your fit reads its source, each start paid' if epoch_batches else ''}), "
        f"over the real fit{caveat}; the one-off extraction pass is not counted",
        status="predicted", gain_low=min(gain, headroom(fits)), gain_high=gain)


#: Reading the bytes (from the page cache, timed here) under this share of the loader's time cannot be
#: what it waits on.
READ_SHARE = 0.25


def read_amplification(loader: dict, example_bytes: float, m: Measured,
                       profiled: float = math.nan) -> tuple[float | None, list[Finding]]:
    """Bytes read per example over the example's bytes: ``(factor or None, findings)``. Predicted only
    where reading takes at least ``READ_SHARE`` of the loader's time (or the loader waits on storage):
    reading ``k`` times less saves ``share * (1 - 1/k)`` of it; else 'not measured'. ``profiled``: the
    share of a Python loader's time profiled in calls reading whole files (``np.load``, ``file.read``),
    which counts opening and parsing too."""
    per_example = max(loader.get("rchar_per_example", 0.0), loader.get("read_bytes_per_example", 0.0))
    if not (per_example and example_bytes):
        return None, []
    k = per_example / example_bytes
    surplus = (per_example - example_bytes) * loader.get("window_examples", 0)
    if not (k >= AMPLIFICATION_FACTOR and surplus >= AMPLIFICATION_MIN_BYTES):
        return k, []
    read_s = loader.get("read_s_per_example", 0.0)
    share = min(0.95, m.loader_rate * read_s / max(1.0, m.cores_busy))
    cold = loader.get("read_bytes_per_example", 0.0) >= 0.5 * per_example and m.io_wait
    evidence = (f"{per_example / 1e3:,.1f} kB read per example of {example_bytes / 1e3:,.1f} kB, {k:,.1f}x, "
                f"from /proc/self/io; reading that much from the page cache takes {read_s * 1e3:,.2f} ms here, "
                f"{share:.0%} of the loader's time")
    if math.isfinite(profiled) and profiled > share:
        share = min(0.95, profiled)
        evidence += f"; profiled, the calls that read whole files (np.load, file.read) take {share:.0%} of it"
    fix = ("open each file once and slice it: np.load(path, mmap_mode='r')[i]; or convert it once: "
           "python -m kit convert spectrogram --to memmap, for frames in .npy files")
    if share < READ_SHARE and not cold:
        return k, [Finding("read_amplification", evidence, math.nan,
                           f"not measured: the bytes do not prove it, reading them is {share:.0%} of the "
                           f"loader's time; opening or parsing a file per example may still cost, which "
                           f"the doctor cannot time without rewriting the code",
                           status="unmeasured", fix=fix)]
    saved = share * (1 - 1 / k) if not cold else 1 - 1 / k
    loader_gain = 1 / max(0.05, 1 - saved)
    gain, low, high = predicted(m, min(loader_gain, 1 + saved / 2), loader_gain)
    return k, [Finding(
        "read_amplification", evidence + ("; read from storage while the loader's cores idle" if cold else ""),
        m.end_to_end(loader_gain) if math.isfinite(m.end_to_end(loader_gain)) else gain,
        m.cap.explain(f"predicted: reading {k:,.1f}x less saves {saved:.0%} of the loader's time, the loader "
                      f"{loader_gain:,.2f}x faster"), status="predicted", gain_low=low, gain_high=high, fix=fix)]


def pydataset_workers(source, m: Measured) -> list[Finding]:
    """A ``keras.utils.PyDataset`` with one worker: a predicted range, from what the loader waits on
    (files: threads overlap the waits; CPU: the cores the model's step leaves)."""
    if not is_pydataset(source):
        return []
    workers = getattr(source, "workers", 1) or 1
    if workers > 1:
        return []
    if m.io_wait:
        low, high = 2.0, float(IO_WORKERS)
        why = (f"the loader alone kept {m.cores_busy:.2f} cores busy: it waits (on files) more than it "
               f"computes, and {IO_WORKERS} threads overlap {IO_WORKERS} waits")
        fix = f"super().__init__(workers={IO_WORKERS}, use_multiprocessing=False) in your PyDataset (threads: it waits on files)"
    else:
        free = m.free_cores() if m.model_cores is not None else m.parallel_gain * m.cores_busy
        low, high = 1.0, max(1.0, (m.cores_busy + free) / max(m.cores_busy, 1e-3))
        why = (f"the loader alone kept {m.cores_busy:.2f} cores busy computing; the model's step "
               f"keeps {m.model_cores or 0.0:.2f} of {m.cores}: more workers can use {free:.1f}")
        batch_s = m.batch_size / m.loader_rate if m.loader_rate > 0 else math.nan
        if math.isfinite(m.transfer_s) and m.transfer_s > 0 and math.isfinite(batch_s):
            # Processes send each batch back pickled; the training process unpickles them one at a time.
            sent = batch_s / m.transfer_s
            high = max(1.0, min(high, sent))
            why += (f"; a batch takes {1e3 * batch_s:,.1f} ms to make and {1e3 * m.transfer_s:,.2f} ms to pickle and "
                    f"unpickle, so processes deliver at most {sent:,.1f}x")
            if sent < NOISE:
                why += ": sending the batches back costs what making them does, processes cannot help"
        fix = (f"super().__init__(workers={max(2, int(m.cores))}, use_multiprocessing=True) in your PyDataset "
               "(processes: __getitem__ computes in Python)")
    gain, lo, hi = predicted(m, low, high)
    return [Finding(
        "pydataset_single_worker",
        f"workers={workers}, use_multiprocessing={getattr(source, 'use_multiprocessing', False)}; "
        f"{m.cores_busy:.2f} of {m.cores} cores busy", gain, m.cap.explain(f"predicted: {why}"),
        status="predicted", gain_low=lo, gain_high=hi, fix=fix)]


def python_source(graph: dict | None, m: Measured, places: dict | None = None) -> list[Finding]:
    """Python feeding a tf.data pipeline (``from_generator``, ``py_function``, ``numpy_function``): it
    holds the GIL. Predicted from the loader without its Python (``python_share``), kept between what
    threads on the free cores give and the whole headroom; untimed, the range's geometric middle."""
    if graph is None:
        return []
    chain = graph["chain"]
    caches = [i for i, n in enumerate(chain) if n.op in ("CacheDataset", "CacheDatasetV2")]
    after = caches[-1] + 1 if caches else 0  # Python behind a cache() runs in the first epoch only
    where = [n for n in chain[after:] if n.name in graph["python"]]
    if not where:
        return []
    place = (places or {}).get(where[0].name, "")
    labels = [("from_generator" if "GeneratorDataset" in graph["ops"][n.name] else f".map({fn_label(graph, n)})")
              for n in where]
    if m.io_wait:
        return [Finding("python_in_pipeline", f"Python called from {', '.join(labels)}: the loader keeps "
                        f"{m.cores_busy:.2f} of {m.cores} cores busy, its Python mostly waits", math.nan,
                        "not measured: Python that waits, on files, the network or a sleep, would wait as long "
                        "in graph ops; reading in parallel is the fix, measured where the doctor could apply it",
                        status="unmeasured", where=place)]
    if not math.isfinite(m.cap.factor) and m.parallel_gain < NOISE:
        return [Finding("python_in_pipeline", f"Python called from {', '.join(labels)}", math.nan,
                        "not measured: no model given, and the free cores give more threads nothing, so "
                        "the gain of doing this work in tf.data ops has no bound to predict from",
                        status="unmeasured", where=place)]
    parallel = any(n.op.startswith("Parallel") for n in where)
    gil = gil_bound(m, threads=parallel)
    low = max(NOISE, m.parallel_gain) if gil else m.parallel_gain
    high = m.cap.factor if math.isfinite(m.cap.factor) else max(low, m.parallel_gain)
    share = python_share(m, parallel=parallel)
    replayed = math.isfinite(m.batching_rate) and m.batching_rate > 0
    without = (max(1.0, m.batching_rate / m.loader_rate) if replayed
               else 1 / (1 - share) if math.isfinite(share) else math.nan)  # the loader without its Python
    if math.isfinite(without) and not math.isfinite(m.cap.factor):
        high = max(high, without)
    gain, lo, hi = predicted(m, low, high)
    basis = (f"predicted: from what threads on the free cores give, {m.parallel_basis}, to the whole headroom, "
             "the Python work replaced by tf.data ops or a store the graph reads")
    if math.isfinite(without):
        gain = min(hi, max(lo, m.cheaper_input(without)))
        timed = (f"the loader only batches, which runs at {m.batching_rate:,.1f} examples/s on one example "
                 f"replayed, {without:,.2f}x the loader's rate" if replayed else
                 f"{share:.0%} of the loader's time timed in the calls, the loader runs {without:,.2f}x faster")
        basis = (f"predicted: without its Python, {timed}; the tf.data ops doing its work instead cost some of it "
                 f"back, down to what threads on the free cores give: {m.parallel_basis}")
    if gil:
        how = (f"the Python runs on parallel threads yet the loader keeps {m.cores_busy:.2f} of {m.cores} cores "
               f"busy: the GIL lets one thread run Python at a time")
    else:
        how = f"the loader keeps {m.cores_busy:.2f} of {m.cores} cores busy running it"
    if math.isfinite(share):
        how += (f"; its Python takes {1e3 * m.python_cores / m.loader_rate:,.2f} ms of CPU per example, {share:.0%} "
                "of the loader's time")
    return [Finding(
        "python_in_pipeline", f"Python called from {', '.join(labels)}: {how}", gain, m.cap.explain(basis),
        status="predicted", gain_low=lo, gain_high=hi, where=place,
        fix="do the work in tf.data ops, tf.io.read_file, tf.io.decode_*, tf.image.*, tf.strings.*, mapped with "
            "num_parallel_calls=tf.data.AUTOTUNE, or convert the data once into a store the graph reads: TFRecord")]


def _scalar_slices(node) -> bool:
    """Whether a chain node is ``from_tensor_slices`` of scalars (file names, labels): no work of its own."""
    if node.op != "TensorSliceDataset" or "output_shapes" not in node.attr:
        return False
    shapes = node.attr["output_shapes"].list.shape
    return bool(shapes) and all(not s.unknown_rank and not s.dim for s in shapes)


def python_is_the_loader(graph: dict | None) -> bool:
    """Whether the pipeline's Python is its source, or is mapped over file names or labels sliced from memory,
    and everything after it only batches, shuffles or passes elements on: without it the loader would only
    batch (``loader.batching_rate``)."""
    if graph is None or not graph["python"]:
        return False
    chain = graph["chain"]
    first = next(i for i, n in enumerate(chain) if n.name in graph["python"])
    upstream_ok = all(not graph["ops"][n.name] and (n.op in {"TensorDataset", "RangeDataset"} or _scalar_slices(n))
                      for n in chain[:first])
    return upstream_ok and all(n.op in _BATCH_OPS | _SHUFFLE_OPS | _PASSIVE_OPS for n in chain[first + 1:])


def python_share(m: Measured, *, parallel: bool) -> float:
    """The share of the loader's time its Python takes, at most 0.95 (NaN where none was timed): the
    pipeline's threads inside its Python at once (``loader.python_seconds``) over the threads that could
    run it (one, or the cores for a parallel map). Where the Python is the loader, what batching alone
    (``Measured.batching_rate``) leaves of the loader's time, at most 0.99."""
    if math.isfinite(m.batching_rate) and m.batching_rate > 0 and m.loader_rate > 0:
        return min(0.99, max(0.0, 1 - m.loader_rate / m.batching_rate))  # the loader is its Python and a batch
    if not (math.isfinite(m.python_threads) and m.python_threads > 0):
        return math.nan
    return min(0.95, m.python_threads / (max(1, m.cores) if parallel else 1))


#: A loader running Python on several threads that keeps at most this many cores busy is held by the GIL.
GIL_CORES = 1.3


def gil_bound(m: Measured, *, threads: bool) -> bool:
    """Whether the loader's Python is held by the GIL: on several ``threads`` and two or more cores, the
    loader computes (not waits) on at most ``GIL_CORES``."""
    return threads and m.cores >= 2 and not m.io_wait and m.cores_busy <= GIL_CORES


def pydataset_gil(source, m: Measured) -> list[Finding]:
    """A ``keras.utils.PyDataset`` whose thread workers keep about one core busy: its ``__getitem__``
    holds the GIL; vectorising it can help."""
    if not is_pydataset(source):
        return []
    workers = getattr(source, "workers", 1) or 1
    if workers <= 1 or getattr(source, "use_multiprocessing", False) or not gil_bound(m, threads=True):
        return []
    if m.cap.factor < INPUT_BOUND_HEADROOM:
        return []  # the fit is not waiting on this loader: its GIL is not what limits training
    high = m.cap.factor if math.isfinite(m.cap.factor) else float(m.cores)
    gain, lo, hi = predicted(m, NOISE, high)
    return [Finding(
        "python_in_pipeline",
        f"{workers} thread workers keep {m.cores_busy:.2f} of {m.cores} cores busy: __getitem__ holds the GIL",
        gain, m.cap.explain("predicted: from a little to the whole headroom, __getitem__ vectorised over the "
                            "batch so that NumPy, not Python, does the per-example work"),
        status="predicted", gain_low=lo, gain_high=hi,
        fix="vectorise __getitem__: one NumPy call over the whole batch instead of a Python loop per example; "
            "more threads cannot help, processes only on cores the model's step leaves")]


def time_split(loader: dict, m: Measured, graph: dict | None, source) -> str:
    """Where the loader's time goes, in a line, split as DS-Analyzer splits it: fetching (bytes read per
    example and what reading them costs) against preparation (the cores it keeps busy; for Python,
    GIL-bound work against waiting on I/O)."""
    rchar = loader.get("rchar_per_example", 0.0)
    storage = loader.get("read_bytes_per_example", 0.0)
    read_s = loader.get("read_s_per_example", 0.0)
    share = min(1.0, m.loader_rate * read_s / max(1.0, m.cores_busy)) if read_s else 0.0
    fetch = (f"fetching {rchar / 1e3:,.1f} kB per example, {storage / 1e3:,.1f} kB of it from storage"
             + (f", reading about {share:.0%} of the loader's time" if read_s else ""))
    python = is_pydataset(source) or callable(source) and not hasattr(source, "element_spec") or bool(
        graph and graph["python"])
    threads = (is_pydataset(source) and (getattr(source, "workers", 1) or 1) > 1
               and not getattr(source, "use_multiprocessing", False)) or bool(
        graph and any(n.op.startswith("Parallel") for n in graph["chain"] if n.name in graph["python"]))
    if m.io_wait and rchar < 1024 and not python:
        prep = f"preparation keeps {m.cores_busy:.2f} of {m.cores} cores busy: light work, no files read"
    elif m.io_wait:
        prep = (f"the loader keeps {m.cores_busy:.2f} of {m.cores} cores busy: it mostly waits, on I/O or a "
                "sleep, which more threads overlap")
    elif python and gil_bound(m, threads=threads):
        prep = (f"preparation is Python on {m.cores_busy:.2f} of {m.cores} cores though it runs on several threads: "
                "GIL-bound, more threads cannot spread it, processes or vectorising can")
    elif python and not threads and m.cores_busy <= GIL_CORES:
        prep = (f"preparation is Python on one thread, {m.cores_busy:.2f} of {m.cores} cores busy: threads spread "
                "only the part that releases the GIL (NumPy, OpenCV, file reads), processes spread all of it")
    else:
        prep = f"preparation keeps {m.cores_busy:.2f} of {m.cores} cores busy"
    share = python_share(m, parallel=threads)
    if math.isfinite(share):
        prep += (f"; the Python the graph calls takes {1e3 * m.python_cores / m.loader_rate:,.2f} ms of CPU per "
                 f"example, {share:.0%} of the loader's time")
    return f"where the loader's time goes: {fetch}; {prep}"


#: A model step under this many milliseconds on replayed batches has its per-step overhead measured.
SMALL_STEP_MS = 25.0


def steps_per_execution(fits: dict, loader_rate: float, per_execution: int, gain: float, rounds: list) -> list[Finding]:
    """``steps_per_execution``: the compute ceiling measured with ``per_execution`` steps per call into
    the graph over one (``gain``, its ``rounds``); end to end, what the fit gets once the ceiling rises,
    the loader alone bounding it: ``min(L, C g) / min(L, C)``."""
    if not (math.isfinite(gain) and fits):
        return []
    C, F = fits["ceiling_examples_per_s"], fits["fit_examples_per_s"]
    now = min(loader_rate, C)
    end = min(loader_rate, C * gain) / now if now > 0 else math.nan
    end = min(end, max(1.0, C * gain / F)) if F > 0 else end
    spread = f", rounds {min(rounds):.2f}-{max(rounds):.2f}x" if len(rounds) > 1 else ""
    basis = (f"measured: the model on one batch replayed from memory, compiled with steps_per_execution="
             f"{per_execution} against 1, interleaved: {gain:.2f}x{spread}; end to end the loader alone "
             f"({loader_rate:,.1f}/s) bounds it")
    if loader_rate < C:
        basis += ": the input fixes come first"
    steady = len(rounds) < 2 or min(rounds) > 1.0  # every round gained: not one lucky round
    gained = end >= NOISE and steady
    return [Finding("steps_per_execution", f"the model's step is small: its ceiling rises {gain:.2f}x with "
                    f"{per_execution} steps per call into the graph", end, basis,
                    status="predicted" if gained else "no gain", measured_on="the compute ceiling" if gained else "",
                    gain_low=min(rounds) if len(rounds) > 1 else math.nan,
                    gain_high=max(rounds) if len(rounds) > 1 else math.nan, loader_gain=gain,
                    fix=f"model.compile(..., steps_per_execution={per_execution})")]


#: The least share of an epoch its start's stall must take to be reported.
STALL_SHARE = 0.05


def epoch_start_stall(fits: dict) -> list[Finding]:
    """Each epoch's first batch waited for against the steady steps (``measure.epoch_starts``): iterator
    re-creation, a shuffle buffer filling, worker start-up. Reported where it is ``STALL_SHARE`` of an
    epoch or more (at least two epoch starts seen)."""
    starts, steady, per_epoch = fits.get("epoch_start_waits") or [], fits.get("steady_wait_s"), fits.get("steps_per_epoch")
    F, batch = fits.get("fit_examples_per_s"), fits.get("batch_size")
    if len(starts) < 2 or not (steady is not None and math.isfinite(steady)) or not (per_epoch and math.isfinite(per_epoch)):
        return []
    stall = max(0.0, float(np.median(starts)) - steady)
    step_s = (batch / F) if F and batch else math.nan
    epoch_s = per_epoch * step_s if math.isfinite(step_s) else math.nan
    share = stall / epoch_s if epoch_s and math.isfinite(epoch_s) else math.nan
    if not (math.isfinite(share) and share >= STALL_SHARE):
        return []
    gain = 1 / (1 - min(share, 0.9))
    return [Finding(
        "epoch_start_stall", f"each epoch's first batch waited {1e3 * float(np.median(starts)):,.0f} ms (median of "
        f"{len(starts)}) against {1e3 * steady:,.1f} ms for a steady step: {share:.0%} of a {epoch_s:,.1f} s epoch",
        gain, f"predicted: an epoch without its start's stall, {share:.0%} shorter", status="predicted",
        gain_low=1 + (gain - 1) / 2, gain_high=gain)]


#: Host memory growth worth reporting: at least this many MB an epoch, over at least this many epoch ends
#: after the first (caches and buffers fill in the first), each higher than the one before.
GROWTH_MB = 16.0
GROWTH_ENDS = 3


def available_mb() -> float:
    """The memory this machine has available now (MB; Linux's MemAvailable), NaN where unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 1e3
    except OSError:
        pass
    return math.nan


def memory_growth(fits: dict, *, available: float | None = None) -> list[Finding]:
    """This process's resident memory at the timed fits' epoch ends (``rss_runs``, one list per fit
    call), each fit's first left out: a ``memory_growth`` finding where,
    within the fits, it rose at every end by ``GROWTH_MB`` an epoch or more (``GROWTH_ENDS`` ends in all),
    with how many epochs until the memory available now runs out at that rate. Growth between fit calls
    is not counted: the doctor's own fits leave memory behind there, which the user's one fit does not."""
    runs = [[float(x) for x in r][1:] for r in fits.get("rss_runs") or []]
    steps = np.array([b - a for r in runs for a, b in zip(r, r[1:])])
    ends = [x for r in runs for x in r]
    if len(steps) < GROWTH_ENDS - 1:
        if "rss_runs" not in fits:  # no fit timed (no model): nothing to say
            return []
        per = fits.get("steps_per_epoch")
        long = (f" (an epoch is {per:,.0f} steps)" if isinstance(per, (int, float)) and math.isfinite(per) else "")
        return [Finding(
            "memory_growth", f"{GROWTH_ENDS} epoch ends within one fit are needed after its first; the doctor's fits "
            f"reached {max([len(r) for r in runs] or [0])}{long}", math.nan,
            "not measured: the epochs are too long for the budget (a larger --max-seconds reads more of them)",
            status="unmeasured")]
    per_epoch = float(steps.mean())
    if not (per_epoch >= GROWTH_MB and (steps > 0).all()):
        return []
    left = available_mb() if available is None else available
    runs_out = (f"; at this rate the {left:,.0f} MB available now run out in about {left / per_epoch:,.0f} epochs"
                if math.isfinite(left) else "")
    return [Finding(
        "memory_growth", f"this process's memory rose {per_epoch:,.0f} MB an epoch at each of {len(ends)} epoch "
        f"ends within the doctor's fits (each fit's first left out), from {ends[0]:,.0f} to {ends[-1]:,.0f} MB"
        f"{runs_out}", math.nan,
        "measured: resident memory at the doctor's timed fits' epoch ends", status="measured")]


def _nested(layer):
    """The layers inside ``layer``, outermost first (Keras 3's own walk where it has one)."""
    walk = getattr(layer, "_flatten_layers", None)
    if walk is not None:
        return list(walk(include_self=False, recursive=True))
    out = []
    for sub in getattr(layer, "layers", []):
        out += [sub, *_nested(sub)]
    return out


def frozen_layers_that_train(model) -> list[Finding]:
    """A ``frozen_layer_trains`` finding for each outermost layer of the user's ``model`` marked
    ``trainable=False`` whose weights are among the model's trainable weights (fit updates them): Keras 3
    applies ``trainable=False`` given to a ``Sequential``'s constructor before the layers are added."""
    trained = {id(v) for v in model.trainable_weights}
    found: list[Finding] = []
    reported: set[int] = set()
    for layer in _nested(model):
        if layer.trainable is not False or id(layer) in reported:
            continue
        inside = _nested(layer)
        reported.update(id(x) for x in inside)
        train = [v for v in layer.weights if id(v) in trained]
        if not train:
            continue
        found.append(Finding(
            "frozen_layer_trains", f"{layer.name!r} is marked trainable=False, yet {len(train)} of its "
            f"{len(layer.weights)} weights are among the model's trainable weights: fit updates them, and the step "
            "computes their gradients", math.nan,
            "read from the model: its trainable weights against the layer's trainable flag", status="measured",
            fix=f"{layer.name}.trainable = False once its layers are built (not Sequential([...], trainable=False)), "
                "then compile again"))
    return found
