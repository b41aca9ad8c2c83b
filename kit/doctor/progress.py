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


def partial() -> str:
    """What was measured (the verdict and summary, the loader's rate) and what was left out, as lines."""
    lines = []
    if "verdict" in SO_FAR:
        lines += [f"verdict: {SO_FAR['verdict']} (measured before the budget ended)", f"  {SO_FAR['summary']}"]
    elif "loader" in SO_FAR:
        lines.append(f"measured before the budget ended: {SO_FAR['loader']}; the fits were not measured")
    else:
        lines.append("nothing measured before the budget ended: the first batches took the whole budget")
    for f in SO_FAR.get("findings", []):
        lines.append(f"  {f}")
    if STEPS:
        lines.append(f"left out: {STEPS[-1]} (cut short) and what follows it; a larger --max-seconds measures them")
    return "\n".join(lines)
