"""The measured truth of the real-script corpus (lab/doctor_scripts), with plain Keras: no kit import.

For each script: its data is made (``data.make``), then, over ``--rounds`` interleaved rounds (the order
reversed every other round), three subprocesses, each ``lab/doctor_scripts/epoch_timer.py`` running a
script unchanged as ``__main__``: the original (``<half>/NAME.py``), its fix (``fixes/NAME.py``, where one
exists) and the compute ceiling (the original's first batch replayed from memory to the same compiled
model). Every subprocess wait is bounded (``--timeout``).

From the timer's clocks: the steady epoch time of a fit (epoch start to end, validation included; the
first epoch of the script left out, over all its fit calls) and its steady step time (the training part of the epoch over its steps); for a
custom loop (``LOOP_STEPS_PER_EPOCH``) the time of each pass of that many train_on_batch calls (the first
pass left out) and the median interval between calls. Per script, medians over the rounds:

* ``gain`` = original epoch time / fixed epoch time (null without a fix);
* ``headroom`` = the original's step time / the ceiling's step time; the verdict: >= 1.3 input-bound,
  < 1.1 compute-bound, else balanced (lab/doctor_truth.py's thresholds).

    python -m lab.doctor_scripts.truth [--half dev|heldout|users|heldout2|heldout3|heldout4|heldout5|heldout6|heldout7|heldout8|heldout9|heldout10|heldout11|all] [--only NAME ...] [--rounds 3]
        [--timeout 300] [--data FOLDER] [--out lab/results/doctor_scripts_truth.json]

Writes the JSON (rows by name, merged into an existing file so halves can be measured apart) and a
Markdown table beside it (.md). The heldout2 to heldout11 halves' default --out is a file of their own,
lab/results/doctor_scripts_truth_<half>.json (and .md). The machine may be shared: the load average is recorded.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lab.doctor_scripts import CORPUS, HALVES, LOOP_STEPS_PER_EPOCH
from lab.doctor_scripts import data as data_mod

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
INPUT_BOUND, COMPUTE_BOUND = 1.3, 1.1


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--half", choices=(*HALVES, "all"), default="dev")
    p.add_argument("--only", action="append")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--timeout", type=float, default=300.0, help="seconds each subprocess may run")
    p.add_argument("--data", default=data_mod.DEFAULT)
    p.add_argument("--out", default=None, help="default: lab/results/doctor_scripts_truth.json, or "
                   "doctor_scripts_truth_<half>.json for --half heldout2, heldout3, heldout4, heldout5, heldout6, heldout7, heldout8, heldout9, heldout10 or heldout11 (those halves' truth kept apart)")
    a = p.parse_args(argv)
    if a.rounds < 1 or a.timeout <= 0:
        p.error("--rounds must be >= 1 and --timeout > 0")
    bad = [n for n in a.only or [] if n not in CORPUS]
    if bad:
        p.error(f"--only: unknown script(s) {', '.join(bad)}; known: {', '.join(CORPUS)}")
    halves = {CORPUS[n]["half"] for n in a.only} if a.only else {a.half}
    a.out = a.out or str(default_truth(halves.pop() if len(halves) == 1 else a.half))
    return a


#: halves whose truth is written to a file of their own (measured before any doctor run, kept apart from the
#: shared file the other halves merge into)
SEPARATE = ("heldout2", "heldout3", "heldout4", "heldout5", "heldout6", "heldout7", "heldout8", "heldout9", "heldout10", "heldout11")


def default_truth(half: str) -> Path:
    name = f"doctor_scripts_truth_{half}.json" if half in SEPARATE else "doctor_scripts_truth.json"
    return ROOT / "lab" / "results" / name


def script_path(name: str) -> Path:
    return HERE / CORPUS[name]["half"] / f"{name}.py"


def fix_path(name: str) -> Path | None:
    f = HERE / "fixes" / f"{name}.py"
    return f if f.exists() else None


def run_timer(script: Path, *, ceiling: bool, data: str, timeout: float) -> dict:
    """One timed run of ``script`` in a subprocess: the timer's record, or ``{"error": ...}``."""
    with tempfile.TemporaryDirectory(prefix="doctor-scripts-") as tmp:
        out = Path(tmp) / "times.json"
        cmd = [sys.executable, str(HERE / "epoch_timer.py"), "--out", str(out)]
        if ceiling:
            cmd.append("--ceiling")
        env = dict(os.environ, DOCTOR_SCRIPTS_DATA=data, TF_CPP_MIN_LOG_LEVEL="2")
        t0 = time.perf_counter()
        try:
            proc = subprocess.run([*cmd, str(script)], cwd=ROOT, env=env, capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout:.0f} s"}
        wall = time.perf_counter() - t0
        if proc.returncode != 0 or not out.exists():
            tail = (proc.stderr or "").strip().splitlines()[-1:] or ["no output"]
            return {"error": f"exit {proc.returncode}: {tail[0][:300]}"}
        rec = json.loads(out.read_text())
        rec["subprocess_s"] = wall
        return rec


def steady(rec: dict, loop_steps: int | None) -> dict:
    """Steady epoch and step times (seconds) from a timer record; the first epoch is left out."""
    if loop_steps:
        t = rec["loop_steps"]
        if len(t) < 2 * loop_steps:
            return {"error": f"{len(t)} loop steps, fewer than two passes of {loop_steps}"}
        ends = t[loop_steps - 1::loop_steps]
        epochs = [b - a for a, b in zip(ends, ends[1:])]
        steps = [b - a for a, b in zip(t[loop_steps:], t[loop_steps + 1:])]
        return {"epoch_s": statistics.median(epochs), "step_s": statistics.median(steps), "epochs_s": epochs}
    rows = epochs_of(rec)[1:]
    if not rows:
        return {"error": "fewer than two complete epochs"}
    return {"epoch_s": statistics.median(r[0] for r in rows), "step_s": statistics.median(r[1] for r in rows),
            "epochs_s": [r[0] for r in rows]}


def ceiling_step(rec: dict) -> dict:
    if not rec["fits"] and len(rec.get("loop_steps", [])) > 2:  # an eager GradientTape loop fed its first batch again
        t = rec["loop_steps"][1:]  # the first step traced and built
        return {"step_s": statistics.median(b - a for a, b in zip(t, t[1:])), "batch_size": None}
    steps = [step for _, step in epochs_of(rec)[1:]]
    if not steps:
        return {"error": "no ceiling steps recorded"}
    return {"step_s": statistics.median(steps), "batch_size": rec["fits"][0]["batch_size"]}


def epochs_of(rec: dict) -> list[tuple[float, float]]:
    """(epoch seconds, step seconds) of every complete epoch of every fit call, in order (a script may call
    fit once per epoch)."""
    rows = []
    for fit in rec["fits"]:
        for start, end, train_end in fit["epochs"]:
            n = sum(1 for s in fit["steps"] if start < s <= (train_end or 0))
            if end is not None and n:
                rows.append((end - start, (train_end - start) / n))
    return rows


def verdict(headroom):
    if headroom is None:
        return None
    return "input-bound" if headroom >= INPUT_BOUND else "compute-bound" if headroom < COMPUTE_BOUND else "balanced"


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def run_script(name: str, a) -> dict:
    entry = CORPUS[name]
    data_mod.make(name, a.data)
    loop = LOOP_STEPS_PER_EPOCH.get(name)
    variants = {"original": (script_path(name), False), "ceiling": (script_path(name), True)}
    if fix_path(name):
        variants["fixed"] = (fix_path(name), False)
    per = {v: [] for v in variants}
    errors = []
    t0 = time.time()
    order = list(variants)
    for r in range(a.rounds):
        for v in (order if r % 2 == 0 else order[::-1]):
            path, ceiling = variants[v]
            rec = run_timer(path, ceiling=ceiling, data=a.data, timeout=a.timeout)
            if "error" in rec:
                errors.append(f"{v} round {r}: {rec['error']}")
                continue
            per[v].append(ceiling_step(rec) if ceiling else steady(rec, loop))
            if "error" in per[v][-1]:
                errors.append(f"{v} round {r}: {per[v].pop()['error']}")
            print(f"  {name} round {r} {v}: {per[v][-1] if per[v] else 'error'}", flush=True)
    orig_epoch = med(x["epoch_s"] for x in per["original"])
    orig_step = med(x["step_s"] for x in per["original"])
    fix_epoch = med(x["epoch_s"] for x in per.get("fixed", []))
    ceil_step = med(x["step_s"] for x in per["ceiling"])
    headroom = orig_step / ceil_step if orig_step and ceil_step else None
    heads = [o["step_s"] / c["step_s"] for o, c in zip(per["original"], per["ceiling"])]
    gains = [o["epoch_s"] / f["epoch_s"] for o, f in zip(per["original"], per.get("fixed", []))]
    return {
        "name": name, "half": entry["half"], "source": entry["source"], "kind": entry["kind"], "fix": entry["fix"],
        "codes": list(entry["codes"]), "verdict": verdict(headroom), "headroom": headroom,
        "headroom_rounds": heads, "gain": orig_epoch / fix_epoch if orig_epoch and fix_epoch else None,
        "gain_rounds": gains, "epoch_s": {"original": orig_epoch, "fixed": fix_epoch},
        "step_s": {"original": orig_step, "ceiling": ceil_step,
                   "fixed": med(x["step_s"] for x in per.get("fixed", []))},
        "batch_size": med(x.get("batch_size") for x in per["ceiling"]), "rounds": a.rounds,
        "runs": per, "errors": errors, "seconds": round(time.time() - t0, 1),
        "measured_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "load_average_at_start": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }


def fmt(x, spec=".2f"):
    return "—" if x is None else format(x, spec)


def markdown(doc: dict) -> str:
    lines = ["# The real-script corpus: measured truth", "",
             f"Last written by `python -m lab.doctor_scripts.truth` on {doc['machine']['date']} (each row is "
             "from the invocation that measured it: its time and load average are in the JSON) "
             f"({doc['machine']['cores']} cores, TensorFlow {doc['machine']['tensorflow']}); medians of each "
             "script's rounds, the first epoch left out. Headroom = the original's step time over the compute "
             "ceiling's (its first batch replayed from memory): >= 1.3 input-bound, < 1.1 compute-bound. "
             "Gain = the original's epoch time over the fixed copy's. The machine may be shared.", "",
             "| name | half | source | kind | verdict | headroom | gain of the fix | epoch s (orig / fixed) | "
             "step s (orig / ceiling) | rounds | errors |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in sorted(doc["scripts"].values(), key=lambda r: (HALVES.index(r["half"]), r["name"])):
        repo = r["source"].split("github.com/")[-1].split("/blob/")[0] if "github.com" in r["source"] else r["source"]
        lines.append(f"| {r['name']} | {r['half']} | {repo} | {r['kind']} | {r['verdict'] or '—'} | "
                     f"{fmt(r['headroom'])}x | {fmt(r['gain'])}{'x' if r['gain'] else ''} | {fmt(r['epoch_s']['original'])} / "
                     f"{fmt(r['epoch_s']['fixed'])} | {fmt(r['step_s']['original'], '.3f')} / "
                     f"{fmt(r['step_s']['ceiling'], '.3f')} | {r['rounds']} | {len(r['errors'])} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    a = parse(argv)
    import tensorflow as tf

    names = a.only or [n for n, e in CORPUS.items() if a.half == "all" or e["half"] == a.half]
    out = Path(a.out)
    doc = json.loads(out.read_text()) if out.exists() else {"scripts": {}}
    doc["machine"] = {"uname": " ".join(platform.uname()), "cores": os.cpu_count(),
                      "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                      "tensorflow": tf.__version__, "load_average": list(os.getloadavg())}
    doc["command"] = " ".join(["python -m lab.doctor_scripts.truth", *(argv if argv is not None else sys.argv[1:])])
    doc["thresholds"] = {"input_bound": INPUT_BOUND, "compute_bound": COMPUTE_BOUND}
    for name in names:
        print(f"{name}:", flush=True)
        row = run_script(name, a)
        doc["scripts"][name] = row
        print(f"  -> {row['verdict']} headroom {fmt(row['headroom'])} gain {fmt(row['gain'])} "
              f"errors {row['errors']}", flush=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(doc, indent=1))
        os.replace(tmp, out)
        out.with_suffix(".md").write_text(markdown(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
