"""A frozen backbone's head, trained three ways, in one interleaved run: ``compare_transfer``.

* (a) the ``"generator"`` loader (the user's pattern) + frozen backbone + head;
* (b) the fastest loader + frozen backbone + head;
* (c) the head alone on cached backbone features (``kit.spectrogram.features``);
* plus the one-time cost of extracting the features (the backbone over every frame once).

All train the same head (a Dense layer on the 1,024-d embedding of the YAMNet-like
backbone of ``kit.models.audio``) at the same batch size. (a) and (b) are slow, so
each round trains a few batches of them; (c) trains whole epochs. The rounds run
(a), (b), (c) in turn, so a drift of a shared machine hits all three alike. Each
rate is frames trained over seconds timed, summed over the rounds, and projected to
an epoch of 1,000,000 frames; the ``examples`` column is the basis.

Notebook 07 calls ``compare_transfer``; ``python -m kit bench transfer`` (``kit.bench.transfer``)
runs the same function and checks its targets. The module imports TensorFlow and Keras only when
``compare_transfer`` runs, so that the bench's config (``kit.bench.configs``) checks its options with
``check_options`` without them.
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from kit import timing
from kit.cases import registry
from kit.spectrogram.case import default_data
from kit.spectrogram.convert import convert
from kit.spectrogram.index import FrameIndex
from kit.spectrogram.variants import VARIANTS, make_loader
from kit.store.folder import default_workdir
from kit.system.pagecache import warm_page_cache
from kit.util import check_int

#: The epoch the rates are projected to (column ``epoch_s_<EPOCH>``): the users' scale, declared by the case.
EPOCH = registry.scale_of("spectrogram").examples
#: Loaders tried for (b) with ``loader="auto"``; the fastest (loader alone, a short interleaved read) is used.
CANDIDATES = ("memmap", "in_memory")
#: The loaders (b) may be asked to use: every variant but the generator, which is (a).
LOADERS = tuple(v for v in VARIANTS if v != "generator")
#: The scratch folder's prefix under the work folder (``python -m kit cache`` knows a killed run's leftovers by it).
SCRATCH_PREFIX = "bench-transfer-"


def check_options(*, frames=None, batch_size=256, rounds=2, batches=4, head_epochs=5, loader="auto",
                  alpha=1.0, data=None, weights=None, workdir=None) -> None:
    """Raises a ``ValueError`` naming the option and its value where one of ``compare_transfer``'s
    options is bad (``head_epochs must be a positive integer, got 0``)."""
    if frames is not None:
        check_int("frames", frames)
    for name, value in (("batch_size", batch_size), ("rounds", rounds), ("batches", batches),
                        ("head_epochs", head_epochs)):
        check_int(name, value)
    if loader != "auto" and loader not in LOADERS:
        raise ValueError(f"loader must be 'auto' or one of {', '.join(LOADERS)}, got {loader!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.integer, np.floating)) \
            or not alpha > 0 or not math.isfinite(alpha):
        raise ValueError(f"alpha must be a positive number, got {alpha!r}")
    for name, value in (("data", data), ("weights", weights), ("workdir", workdir)):
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise ValueError(f"{name} must be a path, got {value!r}")


def compare_transfer(data=None, *, frames: int | None = None, batch_size: int = 256, rounds: int = 2,
                     batches: int = 4, head_epochs: int = 5, loader: str = "auto", weights=None,
                     alpha: float = 1.0, workdir=None, progress: bool = True, log=print) -> pd.DataFrame:
    """A frozen backbone's head trained three ways in interleaved rounds, (a) generator + backbone, (b) the
    fastest loader + backbone, (c) the head on cached features, and the one-time extraction: one row each.

    The module's docstring says what each path trains and how its rate is measured.

    Args:
        data: index CSV; the default sample data (``default_data``: 200 files x 100 frames) if None.
        frames: use only the first ``frames`` rows of the data (None: all).
        batch_size: the batch of every path (the user's global batch is 256).
        rounds: interleaved rounds of (a), (b) and (c).
        batches: training batches of (a) and of (b) timed per round (they are slow).
        head_epochs: epochs of (c) timed per round.
        loader: the loader of (b), one of ``LOADERS``, or ``"auto"``: the fastest of ``CANDIDATES``.
        weights: a backbone ``.weights.h5`` file (random weights if None).
        alpha: the backbone's width multiplier (1.0: YAMNet's size).
        workdir: where stores and the (temporary) feature cache go (the kit cache if None).
        progress: show the extraction's progress bar.
        log: where progress lines go.

    Returns:
        One row per path (``generator``, the loader of (b), ``feature_cache``) and one for the
        ``extraction``: ``variant``, ``setup``, ``examples_per_s``, ``examples``, ``seconds``, ``basis``,
        ``epoch_s_1000000``, ``x_generator`` and ``x_<b>`` (blank for the extraction: it runs once),
        ``batch_size``. Its ``attrs`` hold what it was measured with: ``backbone`` (its cost, a dict),
        ``fastest_loader`` (the loader of (b)), ``frames``, ``epoch_examples`` and ``data`` (the CSV).

    Raises:
        ValueError: a bad option (named, with its value), or ``frames`` more than the data holds.
    """
    check_options(frames=frames, batch_size=batch_size, rounds=rounds, batches=batches, head_epochs=head_epochs,
                  loader=loader, alpha=alpha, data=data, weights=weights, workdir=workdir)
    csv = Path(data) if data is not None else default_data(workdir=workdir)
    index = _subset(FrameIndex.from_csv(csv), frames)
    n = len(index)
    log(f"data: {csv} ({n:,} frames of {index.frame_shape}, {len(index.files)} files)")
    warm_page_cache(index.files)

    from kit.models import audio  # imports Keras (see the module's docstring)

    backbone = audio.backbone(weights, input_shape=tuple(index.frame_shape) + (1,), alpha=alpha)
    cost = audio.cost(backbone)
    log(f"backbone: {cost}")

    # Stores and loaders are built before any timing.
    loaders, fastest = _loaders(index, batch_size=batch_size, loader=loader, workdir=workdir, log=log)
    steps = min(batches, math.ceil(n / batch_size))
    done, cache = _measure(index, backbone, loaders, fastest, batch_size=batch_size, steps=steps,
                           head_epochs=head_epochs, rounds=rounds, workdir=workdir, progress=progress, log=log)
    df = _table(done, cache, n=n, batch_size=batch_size, rounds=rounds, steps=steps, head_epochs=head_epochs,
                fastest=fastest)
    df.attrs.update(backbone=cost.as_dict(), fastest_loader=fastest, frames=n, epoch_examples=EPOCH, data=str(csv))
    return df


def _subset(index: FrameIndex, frames: int | None) -> FrameIndex:
    if frames is None or frames == len(index):
        return index
    if frames > len(index):
        raise ValueError(f"frames must be at most the data's {len(index):,} frames, got {frames:,}")
    return index.subset(np.arange(frames))


def _loaders(index: FrameIndex, *, batch_size: int, loader: str, workdir, log) -> tuple[dict, str]:
    """The loaders of (a) and (b), keyed by variant (the memmap store the extraction reads built
    too), and the variant (b) uses: the fastest of ``CANDIDATES`` read alone, or the one asked for."""
    n = len(index)
    convert(index, "memmap", workdir=workdir, progress=False)  # what the extraction reads
    candidates = list(CANDIDATES) if loader == "auto" else [loader]
    loaders = {v: make_loader(v, index, batch_size=batch_size, shuffle=True, seed=0, workdir=workdir,
                              progress=False) for v in candidates}
    if len(loaders) > 1:
        probe = timing.compare(loaders, num_batches=min(10, math.ceil(n / batch_size)), warmup=1, rounds=2)
        fastest = str(probe.sort_values("examples_per_s").iloc[-1]["variant"])
        log("loaders alone: " + ", ".join(f"{v} {r:,.0f} frames/s" for v, r in
                                          zip(probe["variant"], probe["examples_per_s"])) + f" -> (b) uses {fastest}")
    else:
        fastest = candidates[0]
    loaders["generator"] = make_loader("generator", index, batch_size=batch_size, shuffle=True, seed=0)
    return loaders, fastest


def _measure(index: FrameIndex, backbone, loaders: dict, fastest: str, *, batch_size: int, steps: int,
             head_epochs: int, rounds: int, workdir, progress: bool, log):
    """Extracts the features into a fresh scratch folder (timed), then trains (a), (b) and (c)
    in interleaved rounds. Returns ``{path: [frames, seconds]}`` summed over the rounds, and the
    feature cache."""
    from kit.models import audio  # imports TensorFlow and Keras (see the module's docstring)
    from kit.spectrogram import features

    n = len(index)
    root = Path(workdir) if workdir is not None else default_workdir()
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=SCRATCH_PREFIX, dir=root) as tmp:
        # A fresh folder, so that the one-time cost is measured on every run.
        log(f"extracting features of {n:,} frames (one time) ...")
        cache = features.extract_features(backbone, index, loader="memmap", batch_size=batch_size,
                                          out=Path(tmp) / "features", workdir=workdir, progress=progress)
        log(f"  {cache}")
        stats = features.embedding_stats(cache)

        def new_head():
            return audio.head(index.num_classes, embedding_dim=cache.dim, standardize=stats, seed=0)

        transfer = audio.compile_classifier(audio.transfer_model(backbone, new_head()))
        head = audio.compile_classifier(new_head(), steps_per_execution=features.DEFAULT_STEPS_PER_EXECUTION)
        cached = features.head_loader(cache, batch_size=batch_size, shuffle=True, seed=0)

        def timed(model, data, **kw):  # (a), (b): the loader's own count; (c): many steps per execution
            return timing.fit(model, data, wait=False, **kw)

        gen = loaders["generator"]
        paths = {
            "generator": lambda: timed(transfer, gen, steps_per_epoch=steps),
            fastest: lambda: timed(transfer, loaders[fastest], steps_per_epoch=steps),
            "feature_cache": lambda: timed(head, cached, epochs=head_epochs),
        }
        log("warming up (tracing each train function once) ...")
        timed(transfer, gen, steps_per_epoch=1)
        timed(transfer, loaders[fastest], steps_per_epoch=1)
        timed(head, cached)
        log(f"measuring {rounds} interleaved rounds: (a) and (b) {steps} batches of {batch_size} each, "
            f"(c) {head_epochs} epochs of {n:,} frames ...")
        done = {k: [0, 0.0] for k in paths}
        for r in range(rounds):
            for name, fit in paths.items():
                df = fit()
                done[name][0] += int(df["examples"].sum())
                done[name][1] += float(df["seconds"].sum())
            log(f"  after round {r + 1}: " + ", ".join(f"{k} {f / s:,.0f} frames/s" for k, (f, s) in done.items()))
    return done, cache


def _table(done: dict, cache, *, n: int, batch_size: int, rounds: int, steps: int, head_epochs: int,
           fastest: str) -> pd.DataFrame:
    """One row per path and one for the extraction: rates, their basis, epoch projections and ratios."""
    setups = {
        "generator": "(a) generator + frozen backbone + head",
        fastest: f"(b) fastest loader ({fastest}) + frozen backbone + head",
        "feature_cache": "(c) head on cached features",
    }
    rows = []
    for name, (f, s) in done.items():
        what = (f"{rounds} rounds x {head_epochs} epochs of {n:,} frames" if name == "feature_cache"
                else f"{rounds} rounds x {steps} batches of {batch_size}")
        rows.append({"variant": name, "setup": setups[name], "examples_per_s": f / s, "examples": f,
                     "seconds": s, "basis": f"{f:,} frames trained ({what})"})
    seconds = cache.seconds  # extracted in this run (a fresh folder), so timed
    rows.append({"variant": "extraction", "setup": "one time: the backbone over every frame, into the cache",
                 "examples_per_s": n / seconds, "examples": n, "seconds": seconds,
                 "basis": f"{n:,} frames extracted (float16, {cache.dim}-d)"})
    df = pd.DataFrame(rows)
    df[f"epoch_s_{EPOCH}"] = EPOCH / df["examples_per_s"]
    for b in ("generator", fastest):
        rate = float(df.loc[df["variant"] == b, "examples_per_s"].iloc[0])
        df[f"x_{b}"] = [None if v == "extraction" else r / rate
                        for v, r in zip(df["variant"], df["examples_per_s"])]
    df["batch_size"] = batch_size
    return df
