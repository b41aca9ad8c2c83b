"""Every bench's config: frozen dataclasses that check themselves and declare each field's
command-line flag (``kit.bench.options.option``). No TensorFlow and no bench module is imported
here, so ``python -m kit bench --help`` builds every subcommand from these alone.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from pathlib import Path

import numpy as np

from kit.bench.options import check_names, check_one_of, check_positive, counts, option, optional_int, optional_path
from kit.cases import registry
from kit.spectrogram.transfer import check_options
from kit.util import check_int, non_negative_int, positive_float, positive_int, size_arg

_SPECTROGRAM = registry.scale_of("spectrogram")  # the users' scale, declared by the case
_ROUNDS = "interleaved rounds: each measures every variant once, in turn (default {})"


def _variants(case: str) -> dict[str, str]:
    """The loader variants of ``case``, through the registry (which loads the cases in their order)."""
    return registry.get(case).variants()


@dataclass(frozen=True)
class SpectrogramConfig:
    """What ``run`` measures.

    Attributes:
        data: index CSV; the default bench data if None.
        variants: names from ``VARIANTS`` (a sequence or a comma-separated string; None: all,
            ``grain`` only where the peers extra is installed).
        batch_size: the global batch; None takes the user's 256, or one that fits the data (``plan``).
        rounds: interleaved rounds.
        num_batches: the fewest timed batches per variant per round (fewer when an epoch holds fewer).
        round_seconds: the least time per variant per round: a round reads on, epoch after epoch,
            until it has both.
        warmup: untimed batches before each timed round (fewer when an epoch holds fewer).
        epoch_examples: the epoch to project to (column ``epoch_s_<N>``): 1,000,000 (the
            user's) by default, the index's own size when ``data`` is given.
        generator_seconds: per-round time cap for the Python-bound variants.
        limit_seconds: how long each limit (``kit.bench.limits``) is read, before and after the rounds.
        workdir: where stores are built (the kit cache if None).
        cold: each store evicted from the page cache before each timed round of the variants that
            read it, and a ``disk_read`` limit read cold (``kit.bench.limits.Cold``); its rounds then
            read ``num_batches`` batches, not sized by time, so that none reads past its epoch into
            pages it brought in itself.
    """

    data: Path | None = option(None, "index CSV (default: generate 200 files x 100 frames, 20,000 frames)", type=Path)
    _: KW_ONLY
    variants: tuple[str, ...] | None = option(None, "comma-separated subset of the variants")
    batch_size: int | None = option(None, f"the global batch (default {_SPECTROGRAM.global_batch}, or smaller to fit "
                                          "--data)", type=positive_int)
    # Rounds sized by time: at least 1 s a variant a round (a fast loader's 20 batches lasted a few tens
    # of ms, which one hiccup of another process moved by a tenth or more), 6 rounds: about a minute for
    # the fast variants; how steady three runs were on a shared 2-core machine: results/NOTES.md, issue 56.
    rounds: int = option(6, _ROUNDS.format(6), type=positive_int)
    num_batches: int = option(20, "the fewest timed batches per variant per round", flag="--batches",
                              type=positive_int)
    round_seconds: float = option(1.0, "the least time per variant per round (default 1); a round reads on, epoch "
                                       "after epoch, until it has both", type=positive_float)
    warmup: int = option(2, "untimed batches before each round", type=non_negative_int)
    epoch_examples: int | None = option(None, f"project epoch times to N examples (default {_SPECTROGRAM.examples:,}; "
                                              "with --data, the index's size)", type=positive_int, metavar="N")
    generator_seconds: float = option(3.0, "time cap per round for the Python-bound variants (default 3)",
                                      type=positive_float)
    limit_seconds: float = option(0.3, "how long each of this machine's limits is read, before and after the "
                                       "rounds (default 0.3)", type=positive_float)
    workdir: Path | None = option(None, "where stores are built (kit cache)", type=Path)
    cold: bool = option(False, "read the stores cold: each store's files evicted from the page cache before each "
                               "timed round of its variants (rounds of --batches batches, not sized by time), and a "
                               "disk_read limit read cold; where the files' file system keeps them in memory "
                               "(tmpfs), the run says why it cannot", action="store_true")

    def __post_init__(self):
        optional_path(self, "data", "workdir")
        check_names(self, "variants", _variants("spectrogram"))
        if not isinstance(self.cold, bool):
            raise ValueError(f"cold must be True or False, got {self.cold!r}")
        optional_int("batch_size", self.batch_size)
        optional_int("epoch_examples", self.epoch_examples)
        check_int("rounds", self.rounds)
        check_int("num_batches", self.num_batches)
        check_int("warmup", self.warmup, 0)
        check_positive("round_seconds", self.round_seconds)
        check_positive("generator_seconds", self.generator_seconds)
        check_positive("limit_seconds", self.limit_seconds)


@dataclass(frozen=True)
class TransferConfig:
    """What ``run`` measures: the options of ``kit.spectrogram.compare_transfer``, which it runs.

    Attributes:
        frames: use only the first ``frames`` rows of the data (None: all).
        data: index CSV; the spectrogram bench's default data (20,000 frames) if None.
        batch_size: the user's global batch (256), for every path.
        rounds: interleaved rounds.
        batches: training batches of (a) and of (b) timed per round.
        head_epochs: epochs of (c) timed per round.
        loader: the loader of (b), or ``"auto"``: the fastest of ``kit.spectrogram.transfer.CANDIDATES``.
        weights: a backbone weights file (random weights if None).
        alpha: the backbone's width multiplier (1.0: YAMNet's size).
        workdir: where stores and the (temporary) feature cache go.
    """

    frames: int | None = option(None, "use the first N frames of the data (default: all; 20,000 of the default data)",
                                type=positive_int, kw_only=True)
    data: Path | None = option(None, "index CSV (default: the spectrogram bench's data, 200 files x 100 frames)",
                               type=Path)
    _: KW_ONLY
    batch_size: int = option(256, "examples per batch (default 256, the user's global batch)", type=positive_int)
    rounds: int = option(2, "interleaved rounds of (a), (b) and (c) (default 2)", type=positive_int)
    batches: int = option(4, "training batches of (a) and (b) timed per round (they are slow)", type=positive_int)
    head_epochs: int = option(5, "epochs of (c) timed per round", type=positive_int)
    loader: str = option("auto", "the loader of (b) (default: the fastest of memmap, in_memory)")
    weights: Path | None = option(None, "backbone .weights.h5 (default: random weights)", type=Path)
    alpha: float = option(1.0, "backbone width multiplier (1.0: YAMNet's size)", type=float)
    workdir: Path | None = option(None, "where stores go (kit cache)", type=Path)

    def __post_init__(self):
        optional_path(self, "data", "weights", "workdir")
        # The checks of the function the bench runs (no TensorFlow until it runs), so that both say the same.
        check_options(frames=self.frames, batch_size=self.batch_size, rounds=self.rounds, batches=self.batches,
                      head_epochs=self.head_epochs, loader=self.loader, alpha=self.alpha)


#: The segmentation bench's default data: pairs, and their size.
SEGMENTATION_IMAGES, SEGMENTATION_SIZE = 192, 512
#: Segmentation variants whose one pair costs tens of ms: capped in seconds per round, not batches.
SEGMENTATION_SLOW = ("sequence", "sequence_workers", "tfdata_naive")


@dataclass(frozen=True)
class SegmentationConfig:
    """What ``run`` measures.

    Attributes:
        data: index CSV; the default bench data if None.
        palette: ``class_dict.csv``; the one next to ``data`` if None.
        variants: names from ``VARIANTS`` (a sequence or a comma-separated string; None:
            all, ``dali`` only where DALI is installed).
        batch_size: pairs per batch.
        size: target size (one int or ``(height, width)``).
        rounds: interleaved rounds.
        num_batches: the fewest timed batches per variant per round.
        seconds: the least time per variant per round: a round reads on, epoch after epoch, until
            it has both.
        slow_seconds: per-round time cap of the variants in ``SLOW`` (a round stops at the first
            batch past it, even short of ``seconds``).
        warmup: untimed batches before each timed round.
        one_hot: every variant delivers one-hot masks instead of class ids.
        ignore_label: the palette's ignore label.
        profile: also measure what each stage costs per pair (``profile``, ``pipeline_costs``).
        workdir: where stores are built (the kit cache if None).
    """

    data: Path | None = option(None, f"index CSV image,label (default: generate {SEGMENTATION_IMAGES} pairs of "
                                     f"{SEGMENTATION_SIZE}x{SEGMENTATION_SIZE})", type=Path)
    palette: Path | None = option(None, "class_dict.csv (default: next to the index)", type=Path)
    _: KW_ONLY
    variants: tuple[str, ...] | None = option(None, "comma-separated subset of the variants")
    batch_size: int = option(8, "pairs per batch (default 8)", type=positive_int)
    size: int | tuple[int, int] = option(SEGMENTATION_SIZE, "SIZE or HEIGHTxWIDTH (default 512)", type=size_arg)
    # Rounds sized by time, as the spectrogram bench's: at least 3 s a variant a round (the slow variants
    # read a few batches of 8 pairs in it), 6 rounds (results/NOTES.md, issue 56).
    rounds: int = option(6, _ROUNDS.format(6), type=positive_int)
    num_batches: int = option(2, "the fewest timed batches per variant per round (default 2)", flag="--batches",
                              type=positive_int)
    seconds: float = option(3.0, "the least time per variant per round (default 3); a round reads on, epoch after "
                                 "epoch, until it has both", type=positive_float)
    slow_seconds: float = option(8.0, f"time cap per round for {', '.join(SEGMENTATION_SLOW)} (default 8)",
                                 type=positive_float)
    warmup: int = 2
    one_hot: bool = option(False, "every variant delivers one-hot masks", action="store_true")
    ignore_label: int | None = option(None, "the palette's ignore label (e.g. 255)", type=int)
    profile: bool = option(False, "also print what each stage costs per pair", action="store_true")
    workdir: Path | None = option(None, "where stores are built (kit cache)", type=Path)

    def __post_init__(self):
        optional_path(self, "data", "palette", "workdir")
        check_names(self, "variants", _variants("segmentation"))
        size = tuple(self.size) if isinstance(self.size, (list, tuple)) else self.size
        parts = size if isinstance(size, tuple) else (size,)
        if len(parts) not in (1, 2) or any(isinstance(p, bool) or not isinstance(p, (int, np.integer)) or p <= 0
                                           for p in parts):
            raise ValueError(f"size must be a positive int or (height, width), got {self.size!r}")
        object.__setattr__(self, "size", size)
        for name in ("batch_size", "rounds", "num_batches"):
            check_int(name, getattr(self, name))
        check_int("warmup", self.warmup, 0)
        check_positive("seconds", self.seconds)
        check_positive("slow_seconds", self.slow_seconds)
        optional_int("ignore_label", self.ignore_label, 0)


#: The scaling bench's models.
SCALING_MODELS = {
    "conv": "a small conv net (compute per example grows with --width)",
    "head": "a Dense head on pooled frames, like training a head on frozen features",
}
#: Where the scaling bench's replicas go (``kit.distribute.make_strategy``).
SCALING_DEVICES = ("auto", "gpu", "cpu")


@dataclass(frozen=True)
class ScalingConfig:
    """What ``run`` measures.

    Attributes:
        replicas: the replica counts to compare.
        variant: a ``tf.data`` loader variant of the spectrogram case.
        csv: the spectrogram index (default: the embedded sample, or a generated one
            of at least 8 global batches when the embedded one is smaller).
        per_replica_batch: examples per replica per step (global = this x replicas).
        steps: timed training steps per count per round.
        rounds: interleaved rounds.
        model: ``"conv"`` (a small conv net) or ``"head"`` (a Dense head on pooled frames:
            little compute per example, like training a head on frozen features).
        width: filter multiplier of the conv model (wider: more compute per example).
        devices: ``auto``, ``gpu`` or ``cpu`` (see ``kit.distribute.make_strategy``).
        workdir: where a generated index and the stores go (the kit cache if None).
        seed: of a generated index, the loaders' order and the model.
    """

    replicas: tuple[int, ...] = option((1, 2), "comma-separated replica counts (default 1,2)", parse=counts)
    variant: str = option("in_memory", "tf.data loader variant (default in_memory)")
    csv: Path | None = option(None, "spectrogram index CSV (default: the embedded sample, or a generated one when "
                                    "the batches need more)")
    per_replica_batch: int = option(32, "examples per replica per step; the global batch is this x replicas "
                                        "(default 32)", type=positive_int)
    steps: int = option(20, "timed training steps per count per round (default 20)", type=positive_int)
    rounds: int = option(3, "interleaved rounds over the replica counts (default 3)", type=positive_int)
    model: str = option("conv", "; ".join(f"{k}: {v}" for k, v in SCALING_MODELS.items()),
                        choices=tuple(SCALING_MODELS))
    width: int = option(1, "filter multiplier of the conv model", type=positive_int)
    devices: str = option("auto", "auto: GPUs when present, else the CPU split into logical devices (default auto)",
                          choices=SCALING_DEVICES)
    workdir: Path | None = None
    seed: int = 0

    def __post_init__(self):
        replicas = (self.replicas,) if isinstance(self.replicas, int) else tuple(self.replicas)
        if not replicas:
            raise ValueError(f"replicas must name at least one count, got {self.replicas!r}")
        object.__setattr__(self, "replicas", tuple(check_int("replicas", r) for r in replicas))
        optional_path(self, "csv", "workdir")
        check_one_of("model", self.model, tuple(SCALING_MODELS))
        variants = _variants("spectrogram")
        if self.variant not in variants or self.variant == "pydataset":
            raise ValueError(f"the scaling bench takes a tf.data variant of "
                             f"{', '.join(v for v in variants if v != 'pydataset')}, got {self.variant!r} "
                             f"(a PyDataset goes to model.fit as is)")
        for name in ("per_replica_batch", "steps", "rounds", "width"):
            check_int(name, getattr(self, name))
        check_one_of("devices", self.devices, SCALING_DEVICES)
        check_int("seed", self.seed, 0)


@dataclass(frozen=True)
class CompareConfig:
    """What ``run`` measures.

    Attributes:
        fast: the embedded samples, small batches and few steps (a demonstration in
            seconds, for CI); otherwise the benches' default data at the users' batches.
        replicas: replica counts of the compute rows (the largest splits the CPU into
            logical devices when there is no GPU, so call ``run`` before TensorFlow starts).
        rounds: interleaved rounds, loaders and models alike.
        spectrogram_csv, segmentation_csv: index CSVs instead of the defaults.
        alpha: the audio backbone's width (1.0: YAMNet's size).
        workdir: where stores and the feature cache go (the kit cache if None).
    """

    fast: bool = option(False, "the embedded samples, seconds in all", action="store_true")
    replicas: tuple[int, ...] = option((1, 2), "comma-separated replica counts of the compute rows", parse=counts)
    rounds: int = option(2, "interleaved measuring rounds, loaders and models alike (default 2)", type=positive_int)
    spectrogram_csv: Path | None = None
    segmentation_csv: Path | None = None
    alpha: float = option(1.0, "audio backbone width (1.0: YAMNet's size)", type=float)
    workdir: Path | None = None

    def __post_init__(self):
        replicas = (self.replicas,) if isinstance(self.replicas, int) else tuple(self.replicas)
        if not replicas or any(isinstance(r, bool) or not isinstance(r, (int, np.integer)) or r < 1
                               for r in replicas):
            raise ValueError(f"replicas must be positive counts, got {self.replicas!r}")
        object.__setattr__(self, "replicas", tuple(int(r) for r in replicas))
        optional_path(self, "spectrogram_csv", "segmentation_csv", "workdir")
        check_int("rounds", self.rounds)
        check_positive("alpha", self.alpha)


@dataclass(frozen=True)
class LoadersConfig:
    """What ``run`` measures: every variant of ``case`` (or ``variants``) over the index CSV ``data``
    (default: the case's embedded samples), ``rounds`` interleaved rounds of ``batches`` batches.
    Its command is ``bench CASE`` (``case`` has no flag); the help of ``--batch-size`` names the
    case's batch (``default_batch``)."""

    case: str
    data: Path | None = option(None, "index CSV (default: the case's embedded samples)", type=Path)
    variants: tuple | str | None = option(None, "comma-separated variants (default: every one)")
    batch_size: int | None = option(None, "examples per batch (default: the case's, {default_batch})",
                                    type=positive_int)
    rounds: int = option(3, _ROUNDS.format(3), type=positive_int)
    batches: int = option(10, "timed batches per variant per round (default 10)", type=positive_int)

    def __post_init__(self):
        known = registry.get(self.case).variants()  # an unknown case: one error naming the known ones
        optional_path(self, "data")
        if isinstance(self.variants, str):
            object.__setattr__(self, "variants", tuple(v.strip() for v in self.variants.split(",") if v.strip()))
        unknown = [v for v in self.variants or () if v not in known]
        if unknown:
            raise ValueError(f"unknown variant(s) {', '.join(unknown)}; choose from {', '.join(known)}")
        optional_int("batch_size", self.batch_size)
        check_int("rounds", self.rounds)
        check_int("batches", self.batches)

