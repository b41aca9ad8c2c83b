"""The doctor's vocabulary: the codes and their fixes, the typed ``Finding``, what rules read, the ranking."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

#: code -> (what it means, its kind, the general fix and where the kit teaches it: "learn more").
#: Kinds: ``symptom`` (what limits the step), ``correctness`` (the data the model sees is wrong),
#: ``speed``, ``order`` (shuffle quality), ``memory`` (the run's memory, not its speed). A finding's ``fix`` is the change in the user's own code.
CODES = {
    "input_bound": (
        "the training step waits for input, or shares its CPU with the loader", "symptom",
        "Apply the input findings below, top first; the model's own rate is the ceiling they can "
        "reach. Notebook 01 shows the wait with kit.timing.StepTimer.",
    ),
    "compute_bound": (
        "the loader keeps up; the model's step is the limit", "symptom",
        "Speed up the step, not the loader: mixed precision, jit_compile=True, a larger batch, "
        "more devices (notebook 04); a frozen backbone runs once in a feature cache (notebook 07).",
    ),
    "random_before_cache": (
        "a random op before cache(): every epoch sees the first epoch's random draws", "correctness",
        "Cache what is deterministic (decoded, resized) and augment after the cache: "
        "ds.map(decode).cache().map(augment) (notebook 02).",
    ),
    "shuffle_before_cache": (
        "shuffle() before cache(): the order freezes after the first epoch", "correctness",
        "Cache first, then shuffle: ds.map(decode).cache().shuffle(n) (notebook 02).",
    ),
    "frozen_layer_trains": (
        "a layer marked trainable=False whose weights still train", "correctness",
        "Set backbone.trainable = False after its layers are built, then compile: Keras 3 applies trainable= "
        "given to a Sequential's constructor before its layers are added, so they train; model.summary() then "
        "counts them as non-trainable (notebook 07 freezes a backbone this way).",
    ),
    "python_in_pipeline": (
        "Python in the input pipeline: a generator, py_function or numpy_function, or a PyDataset's "
        "__getitem__ holding the GIL on thread workers", "speed",
        "Move the Python work into tf.data ops (tf.io.read_file, tf.io.decode_*, tf.image.*), or "
        "convert the data once into a format the graph reads (TFRecord; notebooks 02-03). "
        "from_generator/py_function/numpy_function run under the GIL.",
    ),
    "compute_once": (
        "deterministic work (decoding, features) computed again for every batch of every epoch", "speed",
        "Compute it once and train from the result: save the features (np.save, read back with "
        "np.load(mmap_mode='r')), convert to a store (python -m kit convert, notebook 03), or tf.data's "
        ".cache() after the deterministic map (notebook 02); augment after it.",
    ),
    "steps_per_execution": (
        "a small step dominated by the per-step overhead of calling into the graph", "speed",
        "model.compile(..., steps_per_execution=N): N steps per call into the compiled graph (Keras's "
        "guide); callbacks then see every Nth batch.",
    ),
    "predict_per_step": (
        "Model.predict called on one batch at every step of a training loop", "speed",
        "model.predict_on_batch(x), or model(x, training=False), for one batch: Model.predict is for "
        "many batches (Keras's guide), and builds a data adapter, callbacks and a progress bar on every call.",
    ),
    "epoch_start_stall": (
        "each epoch starts with a long wait for its first batch", "speed",
        "Keep one iterator across epochs (ds.repeat() with steps_per_epoch), shuffle ids rather than filling "
        "a large example buffer at each epoch's start, and keep PyDataset workers' start-up out of short epochs.",
    ),
    "generator_malloc": (
        "TensorFlow's generator op (how Keras reads a PyDataset or a Python generator) set the process's "
        "malloc thresholds at the fit's first batch: the training step's own large tensors pay page faults "
        "every step", "speed",
        "Train from tf.data without a Python generator: arrays (model.fit(x, y)), a converted store "
        "(python -m kit convert, notebook 03), or tf.data's own reading and decoding ops in a map "
        "(tf.io.read_file, tf.io.decode_png); no from_generator or PyDataset in the process (docs/doctor.md).",
    ),
    "validation_input": (
        "validation_data read as slowly as the training input: its share of each epoch", "speed",
        "Give validation the same input fixes as training (it is read every epoch), or validate every few "
        "epochs (validation_freq=N in fit).",
    ),
    "serial_map": (
        "a map TensorFlow leaves serial", "speed",
        "ds.map(f, num_parallel_calls=tf.data.AUTOTUNE) (notebook 02's ladder). TensorFlow parallelises "
        "stateless maps by itself; a map drawing random numbers or calling Python it leaves serial.",
    ),
    "map_before_batch": (
        "a per-example map that gives the same output on whole batches", "speed",
        "Batch first, then map the whole batch: ds.batch(B).map(f, num_parallel_calls=tf.data.AUTOTUNE) "
        "(notebook 02's 'vectorise' rung).",
    ),
    "serial_interleave": (
        "Dataset.interleave without num_parallel_calls", "speed",
        "ds.interleave(f, cycle_length=..., num_parallel_calls=tf.data.AUTOTUNE) (notebook 03's "
        "TFRecord reader).",
    ),
    "no_prefetch": (
        "no prefetch at the end, and TensorFlow injects none", "speed",
        "End the pipeline with .prefetch(tf.data.AUTOTUNE) (notebook 02).",
    ),
    "options_off": (
        "tf.data's automatic optimisations turned off in the pipeline's options", "speed",
        "Leave tf.data.Options' optimisations and autotune at their defaults (notebook 02).",
    ),
    "no_cache": (
        "decoded data that fits in memory, decoded again every epoch", "speed",
        "ds.map(decode).cache() before shuffle, augmentation and batch (notebook 02); beyond memory, "
        "convert once to a store (notebook 03).",
    ),
    "read_amplification": (
        "far more bytes read than the examples hold", "speed",
        "Read each file once per epoch, not once per example: memory-map it with np.load(path, "
        "mmap_mode='r'), or convert it once (notebooks 01 and 03).",
    ),
    "pydataset_single_worker": (
        "a keras.utils.PyDataset with one worker, or worker processes where threads would do", "speed",
        "super().__init__(workers=N, use_multiprocessing=...) in your PyDataset: threads when it waits "
        "on files, processes when __getitem__ is Python-bound (notebook 06).",
    ),
    "frozen_backbone_recomputed": (
        "frozen layers recomputed on every step", "speed",
        "Run the frozen layers once into a feature cache and train the rest from it (notebook 07: "
        "kit.spectrogram.features.extract_features + train_head); valid while the frozen part stays frozen and "
        "examples are not augmented.",
    ),
    "augment_before_frozen_backbone": (
        "random augmentation computed ahead of a frozen backbone", "speed",
        "A feature cache needs the backbone's input fixed: drop the augmentation (or augment the "
        "features after the backbone), then cache the backbone's output once (notebook 07).",
    ),
    "memory_growth": (
        "host memory growing epoch over epoch: a long run ends out of memory", "memory",
        "Find what keeps each epoch's data: a list or dict appended to in a generator or __getitem__, "
        "batches or tensors kept by a callback or a metric; tracemalloc's snapshots at two epochs' ends "
        "(snapshot.compare_to) name the line. tf.data's .cache() grows in its first epoch only.",
    ),
    "small_shuffle_buffer": (
        "an example shuffle buffer much smaller than the dataset", "order",
        "Shuffle file names or row ids (cheap) over the whole dataset before reading, or raise the "
        "buffer towards the dataset size (the kit's loaders shuffle ids: kit.epochs).",
    ),
}

#: What a finding's gain is: measured here (the fix applied to the fit and timed), predicted (a range from
#: measured numbers; ``measured_on`` names the part the fix itself was timed on, where it was), checked and found to give nothing here, or unmeasured (with the reason).
STATUSES = ("measured", "predicted", "no gain", "unmeasured")

#: The list a diagnosis prints each status in.
LISTS = {"measured": "findings", "predicted": "findings", "no gain": "checked: no gain here",
         "unmeasured": "not measured"}

#: An end-to-end gain under this is within the noise: the fix is listed under "checked: no gain here".
NOISE = 1.1

#: Codes that name the symptom (what limits the step) rather than a cause: listed first.
SYMPTOMS = ("input_bound", "compute_bound")

#: The columns of ``Diagnosis.findings``, one row per ``Finding``.
COLUMNS = ("code", "kind", "status", "list", "where", "evidence", "fix", "expected_gain", "gain_low",
           "gain_high", "loader_gain", "measured_on", "basis", "learn_more")

#: What a predicted gain may rest on, measured: the fix timed on a part of the training, not the fit.
PARTS = ("the loader alone", "the compute ceiling")


@dataclass(frozen=True)
class Finding:
    """One finding: what was found, the measured number that shows it, its fix and what the fix gives."""

    code: str  # one of CODES
    evidence: str  # the measured number (or the op in the pipeline) that shows it
    expected_gain: float  # the end-to-end factor on training (the loader's without a model); NaN: not measured
    basis: str  # how that factor was obtained
    status: str = "measured"  # one of STATUSES
    fix: str = ""  # the change in the user's code (default: the code's general fix)
    gain_low: float = math.nan  # the range of expected_gain: measured rounds, or the prediction's
    gain_high: float = math.nan
    loader_gain: float = math.nan  # the fix's gain on the part it was measured on (measured_on), where it differs
    measured_on: str = ""  # a predicted gain measured on a part (one of PARTS), not on the fit; "" otherwise
    where: str = ""  # the place in the user's code (mymod.py:31 load_image), where known
    rewrite: object = field(default=None, compare=False, repr=False)  # the rewrite.Rewrite that applied it

    def __post_init__(self):
        if self.code not in CODES:
            raise ValueError(f"code must be one of {', '.join(CODES)}, got {self.code!r}")
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}, got {self.status!r}")
        for name in ("expected_gain", "gain_low", "gain_high", "loader_gain"):
            value = getattr(self, name)
            object.__setattr__(self, name, float(value) if value is not None else math.nan)
        if not self.fix:
            object.__setattr__(self, "fix", CODES[self.code][2])
        if self.measured_on and (self.measured_on not in PARTS or self.status == "measured"):
            raise ValueError(f"measured_on must be one of {', '.join(PARTS)} on a gain not measured on the fit, "
                             f"got {self.measured_on!r} with status {self.status!r}")

    @property
    def applied(self) -> bool:
        """The fix was timed, on the fit or on a part of it, and gained: ``Diagnosis.fixed`` applies it."""
        return self.status == "measured" or (self.status == "predicted" and bool(self.measured_on))

    @property
    def meaning(self) -> str:
        """What the code means, in a few words."""
        return CODES[self.code][0]

    @property
    def kind(self) -> str:
        """``symptom``, ``correctness``, ``speed``, ``order`` or ``memory``."""
        return CODES[self.code][1]

    @property
    def learn_more(self) -> str:
        """The code's general fix, with the kit call or notebook that teaches it."""
        return CODES[self.code][2]

    def row(self) -> dict:
        """The finding as a row of ``Diagnosis.findings`` (``COLUMNS``)."""
        return {c: LISTS[self.status] if c == "list" else getattr(self, c) for c in COLUMNS}


@dataclass(frozen=True)
class Cap:
    """The most an input fix can give: the compute ceiling over the real fit (no cap without a model)."""

    factor: float = math.inf
    basis: str = ""  # how the cap was obtained, appended to the basis of each capped gain

    def __call__(self, gain: float) -> float:
        return min(gain, self.factor)

    def explain(self, text: str) -> str:
        """``text`` with the cap's basis appended (unchanged without a cap)."""
        return f"{text}; {self.basis}" if self.basis else text


@dataclass(frozen=True)
class Measured:
    """The measured numbers of one run that the rules read (None or NaN: not measured)."""

    batch_size: int  # examples in the first batch
    loader_rate: float  # examples/s of the loader alone
    cores: int  # CPU cores this process may run on
    cores_busy: float  # the cores the loader alone kept busy
    parallel_gain: float  # what parallel work could give on the cores left free
    parallel_basis: str
    fit_rate: float | None = None  # examples/s of the real fit
    ceiling_rate: float | None = None  # examples/s of the model on one batch replayed from memory
    cap: Cap = Cap()
    model_cores: float | None = None  # the cores the model's own step kept busy
    example_bytes: float = 0.0  # one example as delivered
    python_cores: float = math.nan  # the cores the Python the graph calls kept busy, the loader alone
    python_threads: float = math.nan  # the pipeline's threads inside that Python at once, on average
    batching_rate: float = math.nan  # examples/s of the pipeline's batching alone on one example replayed
    transfer_s: float = math.nan  # seconds to pickle and unpickle one batch: what processes pay to send it back

    @property
    def headroom(self) -> float:
        """The compute ceiling over the real fit (inf without a model): what any input fix can give."""
        return self.cap.factor

    @property
    def io_wait(self) -> bool:
        """The loader alone mostly waits rather than computes: it kept under half a core busy."""
        return self.cores_busy < 0.5

    def end_to_end(self, loader_gain: float) -> float:
        """What a loader ``loader_gain`` times faster gives the fit, ``min(C, L g) / min(C, L)`` capped by the
        headroom (without a model: the loader's gain)."""
        L, C = self.loader_rate, self.ceiling_rate
        if not C or not L or not math.isfinite(loader_gain):
            return loader_gain
        return min(self.headroom, min(C, L * loader_gain) / min(C, L))

    @property
    def shares_cpu(self) -> bool:
        """The model's step leaves under one core free: a cheaper loader still runs on the step's cores."""
        return self.model_cores is not None and math.isfinite(self.model_cores) and self.cores - self.model_cores < 1

    def cpu_shared(self, loader_gain: float) -> float:
        """What a loader ``loader_gain`` times cheaper gives a fit whose step and loader take turns on the
        CPU: ``H / (1 + (H - 1) / g)``, the loader's share of each step cut ``g`` times (capped by the headroom)."""
        H = self.headroom
        if not math.isfinite(H) or not math.isfinite(loader_gain) or loader_gain <= 0:
            return self.end_to_end(loader_gain)
        return min(H, H / (1 + (H - 1) / loader_gain))

    def cheaper_input(self, loader_gain: float) -> float:
        """What a loader ``loader_gain`` times cheaper gives the fit, capped by the headroom: where the step
        leaves under a core free (``shares_cpu``), the loader taking less of the CPU it shares
        (``cpu_shared``); otherwise the larger of that and the step waiting less (``end_to_end``)."""
        if self.shares_cpu:
            return self.cpu_shared(loader_gain)
        return max(self.end_to_end(loader_gain), self.cpu_shared(loader_gain))

    def cheaper_range(self, low: float, high: float) -> tuple[float, float]:
        """The range of ``cheaper_input`` over loader gains ``low``-``high``: from the loader and the step
        taking turns on the CPU at ``low`` to the larger of that and the step waiting less at ``high``."""
        return self.cpu_shared(low), max(self.end_to_end(high), self.cpu_shared(high))

    def free_cores(self) -> float:
        """Cores left for more loader work while the model trains (at least none)."""
        return max(0.0, self.cores - (self.model_cores or 0.0) - self.cores_busy)


def table(findings: list[Finding]) -> pd.DataFrame:
    """The findings as a DataFrame (``COLUMNS``): the symptom, correctness, speed measured, then measured on
    a part and predicted for the fit, then predicted (each by its gain), order, then 'no gain' and 'not measured'; ties in the order of ``CODES``."""
    return rank(pd.DataFrame([f.row() for f in findings], columns=list(COLUMNS)))


def rank(df: pd.DataFrame) -> pd.DataFrame:
    """Findings rows (``Finding.row``) in the order ``table`` gives them."""
    if len(df):
        order = {c: i for i, c in enumerate(CODES)}
        kinds = {"symptom": 0, "correctness": 1, "speed": 2, "order": 3, "memory": 3}
        lists = {"no gain": 4, "unmeasured": 5}
        # speed: measured on the fit, then measured on a part and predicted for the fit, then predicted
        df["_group"] = [lists.get(st, kinds[k] + ((0.25 if on else 0.5) if k == "speed" and st == "predicted" else 0.0))
                        for k, st, on in zip(df["kind"], df["status"], df["measured_on"].fillna(""))]
        df["_rank"] = df["code"].map(order)
        df["_gain"] = df["expected_gain"].fillna(-1.0)
        df = df.sort_values(["_group", "_gain", "_rank"], ascending=[True, False, True])
        df = df.drop(columns=["_group", "_rank", "_gain"]).reset_index(drop=True)
    return df


def fmt_gain(g: float) -> str:
    """A gain as text: ``2.5x``, ``120x``, or ``not measured``."""
    if g is None or not math.isfinite(g):
        return "not measured"
    return f"{g:,.1f}x" if g < 100 else f"{g:,.0f}x"
