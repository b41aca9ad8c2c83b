"""The verdict from the headroom (the compute ceiling over the real fit, measured side by side): its thresholds,
its line and symptom finding, the cap it puts on every input gain, the ceiling timed in a fresh process, and the
basis line with the rounds' spread."""

from __future__ import annotations

import math

from kit.doctor.findings import Cap, Finding

#: Verdict thresholds on the headroom, the compute ceiling over the real fit measured side by side.
INPUT_BOUND_HEADROOM = 1.3
COMPUTE_BOUND_HEADROOM = 1.1


def headroom(fits: dict) -> float:
    """The compute ceiling over the real fit: the rounds' median (``measure_fits``), else the pooled ratio."""
    H = fits.get("headroom", math.nan)
    if isinstance(H, float) and math.isfinite(H):
        return H
    F = fits["fit_examples_per_s"]
    return fits["ceiling_examples_per_s"] / F if F > 0 else math.inf


def cap(fits: dict) -> Cap:
    """The cap on input gains: the compute ceiling over the real fit (none without ``fits``)."""
    if not fits:
        return Cap()
    factor = max(1.0, headroom(fits))
    return Cap(factor, f"at most the headroom, the compute ceiling over the real fit: {factor:,.2f}x")


def beyond(h: float) -> float:
    """The share of a fit's time beyond the model's own step, from the headroom ``h``: ``1 - 1/h``."""
    return max(0.0, 1 - 1 / h) if h > 0 else math.nan


def input_explains(fits: dict, loader_rate: float, loader_cores: float) -> float:
    """The most of the fit's slowdown its input can explain, ``1 / (1 - wait - cpu)``: the steps' wait
    share, and the CPU the loader needs at the fit's rate (its cores busy alone, scaled)."""
    F, share = fits["fit_examples_per_s"], fits["input_share"]
    cpu = F * loader_cores / loader_rate if loader_rate > 0 and math.isfinite(loader_cores) else math.inf
    taken = (share if math.isfinite(share) else 1.0) + cpu
    return 1 / (1 - taken) if taken < 0.9 else math.inf


def verdict(fits: dict, loader_rate: float, loader_cores: float = math.nan) -> tuple[str, str, list[Finding]]:
    """The verdict from the headroom in ``fits`` (``measure.measure_fits``): ``(verdict, summary,
    findings)``. Where the input can explain under ``COMPUTE_BOUND_HEADROOM`` of it (``input_explains``,
    from the loader alone's rate and cores), a headroom under ``INPUT_BOUND_HEADROOM`` is noise or load:
    compute-bound, said so; a larger one stays input-bound, its line saying what the loader explains."""
    F, C, share, L = (fits["fit_examples_per_s"], fits["ceiling_examples_per_s"], fits["input_share"],
                      loader_rate)
    H = headroom(fits)
    if fits.get("fit_from_loader"):  # measure.measure_fits: a loader too slow for the real fit's rounds
        return "input-bound", (
            f"the loader alone delivers {L:,.1f} examples/s, the model alone (one batch replayed from memory) trains "
            f"{C:,.1f}/s: headroom at least {H:,.2f}x; the real fit, which cannot outrun its input, was not timed: "
            f"its fewest steps at the loader's pace outlast the budget's share"), [Finding(
            "input_bound", f"the fit runs at most at {1 / H:.0%} of the compute ceiling (the loader alone {L:,.1f} "
            f"against {C:,.1f} examples/s): the step waits for input", H,
            "compute ceiling over the loader alone, a lower bound: the real fit, at most the loader's rate, not timed")]
    n = len(fits.get("fit_rounds") or [])
    rounds = f", the median of {n} rounds" if n > 1 else ""
    if fits.get("plain"):  # read as Keras reads it: its wait overlaps the step, so the headroom says it
        waited = (f"{beyond(H):.0%} of the fit's time is beyond the model's own step" if H > 1
                  else "no time beyond the model's own step")
        read = " as Keras reads the source"
    else:
        waited, read = f"steps waited for input {share:.0%} of the time", ""
    summary = (f"the fit ran at {F:,.1f} examples/s{read}; the model alone (one batch replayed from memory) at "
               f"{C:,.1f}/s: headroom {H:,.2f}x{rounds}; {waited}; the loader alone delivers {L:,.1f}/s; the "
               f"model's step kept {fits.get('model_cores', math.nan):.1f} cores busy")
    waiting = (f"pulling each batch in turn, steps waited {share:.0%} of the time" if fits.get("plain")
               else f"waiting {share:.0%} of each step")
    explained = input_explains(fits, L, loader_cores)
    # Only a marginal headroom is put down to noise where the input cannot explain it: one past the input-bound
    # threshold is a step slower fed from this source than from memory, whatever the loader alone costs (a
    # heldout9 h5py generator: its fit's steps over twice the replayed step's, the loader alone 100x the fit).
    if COMPUTE_BOUND_HEADROOM <= H < INPUT_BOUND_HEADROOM and explained < COMPUTE_BOUND_HEADROOM:
        return "compute-bound", summary, [Finding(
            "compute_bound", f"{waiting[0].upper() + waiting[1:]} and the loader needs "
            f"{F * loader_cores / L:.2f} cores at the fit's rate: the input explains at most {explained:.2f}x "
            f"of the {H:.2f}x headroom, the rest is the rounds' noise or another process's load",
            max(1.0, L / F), "loader alone over real fit: how much faster the step may get before input limits it")]
    if H >= INPUT_BOUND_HEADROOM:
        how = ("the step waits for input" if share >= 0.5 * (1 - 1 / H)
               else "the loader takes the step's CPU more than it makes it wait" if explained >= COMPUTE_BOUND_HEADROOM
               else f"the loader's own time explains at most {explained:.2f}x of it: the step runs slower fed from "
                    f"this source than from memory (how Keras reads it: a Python generator's path), or another "
                    f"process took the cores")
        return "input-bound", summary, [Finding(
            "input_bound", f"the fit runs at {1 / H:.0%} of the compute ceiling ({F:,.1f} against {C:,.1f} "
            f"examples/s): {how} ({waiting})", H,
            "compute ceiling over real fit, measured side by side")]
    if H < COMPUTE_BOUND_HEADROOM:
        return "compute-bound", summary, [Finding(
            "compute_bound", f"the fit runs at {1 / H:.0%} of the compute ceiling; the loader alone delivers "
            f"{L:,.1f}/s against a fit of {F:,.1f}/s", max(1.0, L / F),
            "loader alone over real fit: how much faster the step may get before input limits it")]
    return "balanced", summary, []


def fresh_ceiling(fits: dict, fresh: dict, loader_rate: float) -> tuple[dict, list[Finding]]:
    """``fits`` with the compute ceiling timed in a fresh process (``kit.doctor.fresh``), where it is
    ``COMPUTE_BOUND_HEADROOM`` or more faster than the one timed here, after TensorFlow's generator op set
    the thresholds: the headroom is then the fresh ceiling over the real fit, and ``generator_malloc`` says
    what the op costs the step (its fix gains up to the fresh ceiling, capped by the loader alone's rate).
    The ceiling timed here stays in ``ceiling_here_examples_per_s``."""
    here, there, F = fits["ceiling_examples_per_s"], fresh["ceiling_examples_per_s"], fits["fit_examples_per_s"]
    fits = {**fits, "ceiling_here_examples_per_s": here, "fresh_ceiling_examples_per_s": there,
            "fresh_ceiling_rounds": list(fresh.get("ceiling_rounds", []))}
    if not (math.isfinite(there) and math.isfinite(here) and there >= COMPUTE_BOUND_HEADROOM * here and F > 0):
        return fits, []
    fits.update(ceiling_examples_per_s=there, ceiling_rounds=list(fresh.get("ceiling_rounds") or [there]),
                headroom=there / F, ceiling_fresh=True)
    reach = min(there, loader_rate) if loader_rate > 0 else there
    gain = max(1.0, reach / F)
    return fits, [Finding(
        "generator_malloc",
        f"the model's step on one batch replayed from memory runs at {there:,.1f} examples/s in a fresh process "
        f"that never read a Python generator, at {here:,.1f}/s in this one once TensorFlow's generator op set "
        f"glibc's malloc thresholds ({there / here:.2f}x); the real fit runs at {F:,.1f}/s", gain,
        f"predicted: the fresh process's compute ceiling, capped by the loader alone ({loader_rate:,.1f}/s), over "
        f"the real fit", status="predicted", gain_low=min(gain, there / here), gain_high=gain)]


def verdict_basis(fits: dict) -> str:
    """The verdict's basis in a line: the ceiling and the fit with their rounds' spread, each round's
    headroom, and a warning where the rounds straddle a threshold."""
    c, f = fits.get("ceiling_rounds") or [], fits.get("fit_rounds") or []
    if not c or not f:
        return ""
    if fits.get("fit_from_loader"):
        return (f"verdict basis: compute ceiling {c[0]:,.1f}/s, one round; the loader alone {f[0]:,.1f}/s, which the "
                f"real fit cannot outrun: headroom at least {headroom(fits):.2f}x; the real fit not timed (its fewest "
                "steps at the loader's pace outlast the budget's share)")
    ratios = [a / b for a, b in zip(c, f) if b > 0]

    def spread(xs):
        return f"{min(xs):,.1f}-{max(xs):,.1f}/s" if len(xs) > 1 else f"{xs[0]:,.1f}/s"

    text = (f"verdict basis: compute ceiling {fits['ceiling_examples_per_s']:,.1f}/s, rounds {spread(c)}; real fit "
            f"{fits['fit_examples_per_s']:,.1f}/s, rounds {spread(f)}; headroom per round "
            + ", ".join(f"{r:.2f}x" for r in ratios) + f", median {headroom(fits):.2f}x")
    if fits.get("plain") and math.isfinite(fits.get("input_share", math.nan)):
        text += (f"; the step timer, pulling each batch in turn (no overlap), saw the steps wait "
                 f"{fits['input_share']:.0%} of the time")
    starts = fits.get("fit_epoch_starts")
    if starts:
        text += f"; the real fit's rounds include {starts} epoch start(s), which your fit pays every epoch"
    elif starts == 0:
        text += ("; no round of the real fit reached an epoch's start (an epoch is longer than a round): what "
                 "each epoch's start costs is not in the headroom")
    if fits.get("ceiling_fresh"):
        text += (f"; the compute ceiling was timed in a fresh process (the script run again to its fit, no generator "
                 f"read there); in this one, after TensorFlow's generator op, {fits['ceiling_here_examples_per_s']:,.1f}/s")
    elif "fresh_ceiling_examples_per_s" in fits:
        text += (f"; in a fresh process (no generator read) the compute ceiling ran at "
                 f"{fits['fresh_ceiling_examples_per_s']:,.1f}/s, not faster than here")
    if fits.get("extra_rounds"):
        text += f"; {fits['extra_rounds']} of the {len(ratios)} rounds run because the first ones straddled a threshold"
    for t in (INPUT_BOUND_HEADROOM, COMPUTE_BOUND_HEADROOM):
        if ratios and min(ratios) < t <= max(ratios):
            text += f"; the rounds straddle the {t}x threshold: a busy machine may tip this verdict"
    return text
