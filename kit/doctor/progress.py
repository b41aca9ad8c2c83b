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


def cancel() -> None:
    _STATE["cancelled"] = True


def cancelled() -> bool:
    return _STATE["cancelled"]


#: A loader alone this many times slower than the compute ceiling makes a verdict without the real fit
#: (rules.INPUT_BOUND_HEADROOM: the fit cannot run faster than its input).
SLOW_LOADER = 1.3


def verdict_so_far() -> tuple[str, str] | None:
    """``(verdict, summary)`` from what was measured: the verdict where the fits were, else input-bound where
    the loader alone (its rate in ``loader_rate``) ran ``SLOW_LOADER`` times or more slower than the compute
    ceiling's first rounds (``ceiling_rate``): a source that slow is what limits the fit, whose own rounds the
    budget cut short (or the ceiling timed in a fresh process, ``fresh_ceiling_rate``, where faster). None where
    neither was measured."""
    if "verdict" in SO_FAR:
        return SO_FAR["verdict"], SO_FAR.get("summary", "")
    loader, here, fresh = SO_FAR.get("loader_rate"), SO_FAR.get("ceiling_rate"), SO_FAR.get("fresh_ceiling_rate")
    ceiling = max(here or 0.0, fresh or 0.0)
    where = " in a fresh process (kit.doctor.fresh)" if fresh and ceiling == fresh else ""
    if loader and ceiling and loader * SLOW_LOADER <= ceiling:
        return "input-bound", (f"the loader alone delivers {loader:,.1f} examples/s, the model alone (one batch "
                               f"replayed from memory{where}) trains {ceiling:,.1f}/s: the fit cannot run faster than its "
                               f"input, {ceiling / loader:,.1f}x under the ceiling at best; the real fit's own rounds "
                               f"were cut short by the budget")
    return None


def partial() -> str:
    """What was measured (the verdict and summary, the loader's rate) and what was left out, as lines."""
    lines = []
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
