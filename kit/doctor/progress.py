"""What a diagnosis has measured so far, for the report of one whose budget ended before it did, and
the flag that tells it to wind down (``Budget`` then gives no more time)."""

from __future__ import annotations

#: The running diagnosis's results so far (one diagnosis runs at a time in a process).
SO_FAR: dict = {}
#: Steps begun, in order; the last one unfinished is what the budget cut short.
STEPS: list[str] = []
_STATE = {"cancelled": False}


def start() -> None:
    SO_FAR.clear()
    STEPS.clear()
    _STATE["cancelled"] = False


def step(what: str, **results) -> None:
    """Records results and the step that begins now."""
    SO_FAR.update(results)
    STEPS.append(what)


def ready(seconds: float) -> None:
    """The diagnosis has its first batch and its copy of the model, after ``seconds``: its budget begins now
    (``SO_FAR["ready_at"]``, from which ``cli.bounded`` waits the budget and its margin again)."""
    import time  # noqa: PLC0415

    SO_FAR.update(ready_s=seconds, ready_at=time.monotonic())


def cancel() -> None:
    _STATE["cancelled"] = True


def cancelled() -> bool:
    return _STATE["cancelled"]


#: A loader alone this many times slower than the compute ceiling makes a verdict without the real fit
#: (verdicts.INPUT_BOUND_HEADROOM: the fit cannot run faster than its input).
SLOW_LOADER = 1.3
#: The real fit's steps (past those it skips) a verdict from a fit the budget cut short needs.
CUT_STEPS = 3


def _ceiling() -> tuple[float, str]:
    """The compute ceiling measured so far: this process's (``ceiling_rate``), or the fresh process's
    (``fresh_ceiling_rate``, ``kit.doctor.fresh``) where it is 1.1x faster or more, as ``verdicts.fresh_ceiling``
    takes it; and where it was timed."""
    here, fresh = SO_FAR.get("ceiling_rate") or 0.0, SO_FAR.get("fresh_ceiling_rate") or 0.0
    if fresh >= 1.1 * here and fresh > 0:
        return fresh, " in a fresh process (kit.doctor.fresh)"
    return here, ""


def _fit_so_far() -> tuple[float, int]:
    """Examples/s of the real fit's steps timed so far (``fit_ends``: each round's step ends, batch size and
    the steps it skips), and how many steps that rate rests on."""
    examples, seconds, steps = 0, 0.0, 0
    for ends, size, skip in SO_FAR.get("fit_ends", []):
        kept = list(ends)[max(0, skip - 1):]
        if len(kept) > 1:
            examples, seconds, steps = examples + size * (len(kept) - 1), seconds + kept[-1] - kept[0], steps + len(kept) - 1
    return (examples / seconds if seconds > 0 else 0.0), steps


def verdict_so_far() -> tuple[str, str] | None:
    """``(verdict, summary)`` from what was measured: the verdict where the fits were, else input-bound where
    the loader alone (its rate in ``loader_rate``) ran ``SLOW_LOADER`` times or more slower than the compute
    ceiling (``_ceiling``): a source that slow is what limits the fit, whose own rounds the budget cut short;
    else, where ``CUT_STEPS`` steps or more of the real fit were timed before the budget ended, the verdict
    from their rate against the ceiling, on the thresholds the full one uses. None where neither was measured."""
    if "verdict" in SO_FAR:
        return SO_FAR["verdict"], SO_FAR.get("summary", "")
    loader = SO_FAR.get("loader_rate")
    ceiling, where = _ceiling()
    if loader and ceiling and loader * SLOW_LOADER <= ceiling:
        return "input-bound", (f"the loader alone delivers {loader:,.1f} examples/s, the model alone (one batch "
                               f"replayed from memory{where}) trains {ceiling:,.1f}/s: the fit cannot run faster than its "
                               f"input, {ceiling / loader:,.1f}x under the ceiling at best; the real fit's own rounds "
                               f"were cut short by the budget")
    fit, steps = _fit_so_far()
    if ceiling and fit and steps >= CUT_STEPS:
        from kit.doctor.verdicts import COMPUTE_BOUND_HEADROOM, INPUT_BOUND_HEADROOM  # noqa: PLC0415

        h = ceiling / fit
        verdict = ("input-bound" if h >= INPUT_BOUND_HEADROOM else "compute-bound" if h < COMPUTE_BOUND_HEADROOM
                   else "balanced")
        return verdict, (f"the real fit's {steps} steps timed before the budget ended ran at {fit:,.1f} examples/s, "
                         f"the model alone (one batch replayed from memory{where}) at {ceiling:,.1f}/s: headroom "
                         f"{h:,.2f}x from those steps alone (one round, cut short)")
    return None


def found_lists() -> dict[str, list[dict]]:
    """The findings made before the budget ended (those the rules read off what was measured; the A/B trials
    after them were cut short), ranked and split as ``Diagnosis.as_dict`` gives them: ``findings``,
    ``checked_no_gain``, ``not_measured``."""
    from kit.doctor.findings import table  # noqa: PLC0415
    from kit.doctor.report import rows  # noqa: PLC0415

    df = table(SO_FAR.get("found", []))
    keys = {"findings": "findings", "checked: no gain here": "checked_no_gain", "not measured": "not_measured"}
    return {key: rows(df[df["list"] == name]) for name, key in keys.items()}


def partial() -> str:
    """What was measured (the verdict and summary, the loader's rate) and what was left out, as lines."""
    lines = []
    if "ready_s" in SO_FAR:
        lines.append(f"the first batch and the model's copy took {SO_FAR['ready_s']:,.1f} s before the budget began")
    so_far = verdict_so_far()
    if so_far is not None:
        lines += [f"verdict: {so_far[0]} (measured before the budget ended)", f"  {so_far[1]}"]
    elif "loader" in SO_FAR:
        lines.append(f"measured before the budget ended: {SO_FAR['loader']}; the fits were not measured")
    else:
        lines.append("nothing measured before the budget ended: the first batches took the whole budget")
    for f in SO_FAR.get("findings", []):
        lines.append(f"  {f}")
    if STEPS:
        lines.append(f"left out: {STEPS[-1]} (cut short) and what follows it; a larger --max-seconds measures them")
    return "\n".join(lines)
