"""The doctor's vocabulary: the codes and their fixes, the typed ``Finding``, what rules read, the ranking."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

#: code -> (what it means, the fix with the kit call or notebook that teaches it)
CODES = {
    "input_bound": (
        "the training step waits for input",
        "Apply the input findings below, top first; the model's own rate is the ceiling they can "
        "reach. Notebook 01 shows the wait with kit.timing.StepTimer.",
    ),
    "compute_bound": (
        "the loader keeps up; the model's step is the limit",
        "Speed up the step, not the loader: mixed precision, jit_compile=True, a larger batch, "
        "more devices (notebook 04); a frozen backbone runs once in a feature cache (notebook 07).",
    ),
    "python_in_pipeline": (
        "Python code inside the tf.data graph",
        "Move the Python work into tf.data ops, or convert the data once into a store the graph "
        "reads (python -m kit convert, kit.spectrogram.make_loader('memmap'|'tfrecord', ...); "
        "notebooks 02-03). from_generator/py_function/numpy_function run one at a time under the GIL.",
    ),
    "serial_map": (
        "Dataset.map without num_parallel_calls",
        "ds.map(f, num_parallel_calls=tf.data.AUTOTUNE) (notebook 02's ladder).",
    ),
    "map_before_batch": (
        "a per-example map before batch",
        "Batch first, then map a function written for the whole batch: ds.batch(B).map(f_batched, "
        "num_parallel_calls=tf.data.AUTOTUNE) (notebook 02's 'vectorise' rung; the kit's tfrecord "
        "variant parses whole batches).",
    ),
    "serial_interleave": (
        "Dataset.interleave without num_parallel_calls",
        "ds.interleave(f, cycle_length=..., num_parallel_calls=tf.data.AUTOTUNE) (notebook 03's "
        "TFRecord reader).",
    ),
    "no_prefetch": (
        "the pipeline does not end with prefetch",
        "End the pipeline with .prefetch(tf.data.AUTOTUNE), so the next batch is prepared while the "
        "model trains on this one (notebook 02).",
    ),
    "read_amplification": (
        "far more bytes read than the examples hold",
        "Read each file once per epoch, not once per example: memory-map it (np.load(path, "
        "mmap_mode='r')) or convert once (python -m kit convert spectrogram --to memmap|tfrecord; "
        "notebooks 01 and 03).",
    ),
    "small_shuffle_buffer": (
        "an example shuffle buffer much smaller than the dataset",
        "Shuffle row ids (cheap) over the whole dataset before reading, or raise the buffer towards "
        "the dataset size; shuffle file order too (the kit's loaders shuffle ids: kit.epochs).",
    ),
    "pydataset_single_worker": (
        "a keras.utils.PyDataset with one worker",
        "PyDataset(workers=<CPU cores>, use_multiprocessing=True) when __getitem__ is Python-bound "
        "(notebook 06: the sequence_workers variant); or move the work into tf.data.",
    ),
    "frozen_backbone_recomputed": (
        "frozen layers recomputed on every step",
        "Run the frozen layers once into a feature cache and train the rest from it: "
        "kit.features.extract_features + kit.features.train_head (notebook 07); valid while the "
        "frozen part stays frozen and examples are not augmented.",
    ),
}

#: Codes that name the symptom (what limits the step) rather than a cause: listed first.
SYMPTOMS = ("input_bound", "compute_bound")

#: The columns of ``Diagnosis.findings``, one row per ``Finding``.
COLUMNS = ("code", "evidence", "fix", "expected_gain", "basis")


@dataclass(frozen=True)
class Finding:
    """One finding: what was found, the measured number that shows it, and what its fix should give.

    Attributes:
        code: one of ``CODES``.
        evidence: the measured number that shows it.
        expected_gain: the factor the fix should give (NaN: not measured).
        basis: how that factor was obtained.
    """

    code: str
    evidence: str
    expected_gain: float
    basis: str

    def __post_init__(self):
        if self.code not in CODES:
            raise ValueError(f"code must be one of {', '.join(CODES)}, got {self.code!r}")
        gain = float(self.expected_gain) if self.expected_gain is not None else math.nan
        object.__setattr__(self, "expected_gain", gain)

    @property
    def meaning(self) -> str:
        """What the code means, in a few words."""
        return CODES[self.code][0]

    @property
    def fix(self) -> str:
        """The change, with the kit call or notebook that teaches it."""
        return CODES[self.code][1]

    def row(self) -> dict:
        """The finding as a row of ``Diagnosis.findings`` (``COLUMNS``)."""
        return {"code": self.code, "evidence": self.evidence, "fix": self.fix,
                "expected_gain": self.expected_gain, "basis": self.basis}


@dataclass(frozen=True)
class Cap:
    """The most an input fix can give: the compute ceiling over the real fit (no cap without a model).

    Attributes:
        factor: the cap on any expected gain.
        basis: how the cap was obtained, appended to the basis of each capped gain.
    """

    factor: float = math.inf
    basis: str = ""

    def __call__(self, gain: float) -> float:
        return min(gain, self.factor)

    def explain(self, text: str) -> str:
        """``text`` with the cap's basis appended (unchanged without a cap)."""
        return f"{text}; {self.basis}" if self.basis else text


@dataclass(frozen=True)
class Measured:
    """The measured numbers of one run that the rules read.

    Attributes:
        batch_size: examples in the first batch.
        loader_rate: examples/s of the loader alone.
        cores: CPU cores this process may run on.
        cores_busy: the cores the loader alone kept busy.
        parallel_gain: what parallel work could give on the cores left free.
        parallel_basis: how ``parallel_gain`` was obtained.
        fit_rate: examples/s of the real fit (None without a model).
        ceiling_rate: examples/s of the model on one batch replayed from memory (None without a model).
        cap: the cap on input gains.
    """

    batch_size: int
    loader_rate: float
    cores: int
    cores_busy: float
    parallel_gain: float
    parallel_basis: str
    fit_rate: float | None = None
    ceiling_rate: float | None = None
    cap: Cap = Cap()


def table(findings: list[Finding]) -> pd.DataFrame:
    """The findings as a DataFrame (``COLUMNS``): the symptom first, then by expected gain, not
    measured last; ties in the order of ``CODES``."""
    df = pd.DataFrame([f.row() for f in findings], columns=list(COLUMNS))
    if len(df):
        order = {c: i for i, c in enumerate(CODES)}
        df["_symptom"] = df["code"].isin(SYMPTOMS)
        df["_rank"] = df["code"].map(order)
        df["_gain"] = df["expected_gain"].fillna(-1.0)
        df = df.sort_values(["_symptom", "_gain", "_rank"], ascending=[False, False, True])
        df = df.drop(columns=["_symptom", "_rank", "_gain"]).reset_index(drop=True)
    return df


def fmt_gain(g: float) -> str:
    """A gain as text: ``2.5x``, ``120x``, or ``not measured``."""
    if g is None or not math.isfinite(g):
        return "not measured"
    return f"{g:,.1f}x" if g < 100 else f"{g:,.0f}x"
