"""Measures the ground truth of the pipeline doctor's corpus with plain Keras and tf.data (issue 44): no
``kit`` import anywhere, so the truth does not depend on the code it judges.

For each case of the corpus (``--corpus heldout``: tests/doctor_corpus_heldout, ``dev``:
tests/doctor_corpus) it makes the case's data, then fits, with plain ``model.fit(source,
steps_per_epoch=..., epochs=1)``, these variants:

* ``slow``: ``case.slow(folder)`` under ``case.model()``;
* one per planted speed code (the codes whose fix has a speed: not the correctness, order and
  structural codes, ``STRUCTURAL``): ``case.fixed(folder, code)`` under ``case.fixed_model(code)`` where
  the case has one, else a fresh ``case.model()``;
* ``all``, where more than one speed code is planted: ``case.fixed(folder)`` (every fix);
* ``replayed``, the compute ceiling: the slow model fitted on the slow pipeline's first batch replayed
  from memory (``tf.data.Dataset.from_tensors(batch)``, unbatched and batched again so that its batch
  dimension is unknown as the real pipeline's, cached, ``.repeat()``), so the step never waits for input.

Each variant is first warmed up (one full epoch of its source, which compiles the step and fills any
cache, then a short probe fit that sizes its steps per round to about ``--seconds``, at least
``--min-steps``). Then the variants are fitted in turn, A, B, C, ..., over ``--rounds`` rounds (the order
reversed every other round, so a drift in the machine's load weighs on all alike). Within each fit the
first ``SKIP`` steps are left out of the timing (the iterator's start, the prefetch buffers filling):
a Keras callback takes the clock at the end of each step. A tf.data source is fitted repeated
(``source.repeat()``); a ``keras.utils.PyDataset`` for part of an epoch, or for as many whole epochs
as the steps need where it is shorter (the epochs' ends then timed too, as in training).

The ratio of a variant is its examples/s over the slow fit's examples/s in the same round; reported
as the median over the rounds with its spread (the lowest and the highest round).

The verdict, from the compute ceiling: ``input-bound`` when the replayed batch trains >= 1.3x faster
than the slow fit (median), ``compute-bound`` when < 1.1x, else ``balanced``. Each planted speed code's
measured gain is its fixed twin's ratio; a code whose median gain is under 1.3x is flagged
(``below_threshold``): the corpus rule is that each planted bottleneck costs >= 1.3x.

    python -m lab.doctor_truth [--corpus heldout|dev] [--only NAME ...] [--rounds 5]
        [--seconds 2] [--min-steps 12] [--data FOLDER] [--out lab/results/doctor_truth_<corpus>.json]

The JSON written (``--out``) has:

* ``corpus``: "heldout" or "dev"; ``command``: the command line; ``settings``: rounds, seconds,
  min_steps, skip (steps left out at the start of each fit), thresholds ``input_bound`` (1.3) and
  ``compute_bound`` (1.1);
* ``machine``: ``uname``, ``cores``, ``cores_usable``, ``load_average_at_start`` and
  ``load_average_at_end`` (1, 5 and 15 minutes), ``date``, ``tensorflow`` and ``keras`` versions, and
  ``shared`` (a note: the machine may be shared with other work, so timings are noisy);
* ``cases``: one row per case, with
  ``case`` (the module's name), ``source`` (its SOURCE), ``domain`` (its DOMAIN, null in the dev half),
  ``planted``, ``tolerated``, ``measured_codes`` (the planted codes timed), ``declared_verdict`` (the
  case's VERDICT), ``true_verdict`` (measured, as above; null on an error), ``verdict_confirmed``
  (declared == true), ``verdict_by_input_fix`` (the dev script's rule, for comparison: input-bound when
  the all-fixed twin gives >= 1.3x, or with no input fix the replayed batch does; compute-bound when
  both are < 1.1x; else balanced), ``x_replayed`` and ``x_replayed_spread`` ([lowest, highest]),
  ``x_all_fixed`` and ``x_all_fixed_spread`` (the all-fixed twin, or the single planted code's twin;
  null with none planted), ``measured_gain`` ({code: median ratio}), ``measured_spread`` ({code:
  [lowest, highest]}), ``below_threshold`` (planted codes whose median gain is < 1.3x),
  ``ratios_per_round`` ({variant: [ratio of each round]}), ``rates`` ({variant: median examples/s}),
  ``steps`` ({variant: timed steps per fit}), ``batch_size`` ({variant: examples per step}),
  ``load_average_at_start`` (1 minute, as the case began), ``seconds`` (the case's wall time) and
  ``error`` (null, or the exception's first line: the run goes on).

A Markdown table of the same rows is written beside the JSON (``.md``).
"""

from __future__ import annotations

import argparse
import datetime
import gc
import importlib
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

INPUT_BOUND = 1.3
COMPUTE_BOUND = 1.1
SKIP = 2  # steps left out at the start of each timed fit
#: Planted codes with no speed of their own to time (correctness, order, structure).
STRUCTURAL = ("random_before_cache", "shuffle_before_cache", "small_shuffle_buffer", "augment_before_frozen_backbone")
SYMPTOMS = ("input_bound", "compute_bound")
CORPORA = {"heldout": "doctor_corpus_heldout", "dev": "doctor_corpus"}
SHARED = ("the machine may be shared with other work while this runs (load average recorded): timings are noisy; "
          "the ratios are interleaved over rounds to weigh drift alike")


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--corpus", choices=sorted(CORPORA), default="heldout")
    p.add_argument("--only", action="append", help="a case to run (repeatable); all by default")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds (at least 3 for a spread)")
    p.add_argument("--seconds", type=float, default=2.0, help="seconds of fitting per variant per round")
    p.add_argument("--min-steps", type=int, default=12, help="timed steps per fit at least")
    p.add_argument("--max-steps", type=int, default=400, help="timed steps per fit at most")
    p.add_argument("--data", default=str(Path(tempfile.gettempdir()) / "kit-doctor-corpus-truth"),
                   help="where the cases' generated data goes (kept: make_data is idempotent)")
    p.add_argument("--out", default=None, help="the JSON (default lab/results/doctor_truth_<corpus>.json)")
    a = p.parse_args(argv)
    if a.rounds < 1 or a.seconds <= 0 or a.min_steps < 2:
        p.error("--rounds must be >= 1, --seconds > 0, --min-steps >= 2")
    a.out = Path(a.out or ROOT / "lab" / "results" / f"doctor_truth_{a.corpus}.json")
    return a


def corpus(name: str):
    return importlib.import_module(CORPORA[name])


def finite(x):
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def load_average():
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def machine() -> dict:
    import keras
    import tensorflow as tf

    u = platform.uname()
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    return {"uname": " ".join([u.system, u.node, u.release, u.machine]), "cores": os.cpu_count(),
            "cores_usable": usable, "load_average_at_start": load_average(),
            "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "tensorflow": tf.__version__, "keras": keras.__version__, "shared": SHARED}


# --------------------------------------------------------------------------- sources and fits


def is_pydataset(source) -> bool:
    import keras

    return isinstance(source, keras.utils.PyDataset)


def first_batch(source):
    """The source's first batch, as arrays/tensors."""
    if is_pydataset(source):
        return source[0]
    return next(iter(source))


def batch_size(batch) -> int:
    import tensorflow as tf

    x = batch[0] if isinstance(batch, (tuple, list)) else batch
    return int(tf.nest.flatten(x)[0].shape[0])


class StepClock:
    """A Keras callback: the clock at the end of each training step."""

    def __new__(cls):
        import keras

        class _Clock(keras.callbacks.Callback):
            def on_train_begin(self, logs=None):
                self.ends = []

            def on_train_batch_end(self, batch, logs=None):
                self.ends.append(time.perf_counter())

        return _Clock()


class Variant:
    """One source and the model it feeds, fitted again and again (the model keeps training)."""

    def __init__(self, name, source, model, *, replay=False):
        import tensorflow as tf

        self.name, self.model = name, model
        self.pydataset = is_pydataset(source)
        self.base = source
        self.batch = batch_size(first_batch(source)) if not replay else None
        if replay:
            self.batch = batch_size(source)
            # unbatch + batch: the batch dimension unknown, as the real pipeline's (a static one traces
            # another step function, which ran slower here, 0.7x, on one case); cached: from memory.
            one = tf.data.Dataset.from_tensors(tuple(source) if isinstance(source, list) else source)
            self.base = one.unbatch().batch(self.batch).cache()
            self.fit_source = self.base.repeat()
        elif self.pydataset:
            self.fit_source = source
        else:
            self.fit_source = source.repeat()
        self.replay = replay
        self.steps = None

    def fit(self, steps: int) -> float:
        """Fits ``steps`` steps (plus SKIP); the examples/s of the steps after the first SKIP."""
        clock = StepClock()
        if self.pydataset and steps + SKIP > len(self.base):  # whole epochs, as many as the steps take
            self.model.fit(self.fit_source, epochs=math.ceil((steps + SKIP) / len(self.base)), verbose=0,
                           shuffle=False, callbacks=[clock])
        else:
            self.model.fit(self.fit_source, steps_per_epoch=steps + SKIP, epochs=1, verbose=0, shuffle=False,
                           callbacks=[clock])
        ends = clock.ends
        timed = len(ends) - SKIP
        if timed < 1:
            raise RuntimeError(f"{self.name}: only {len(ends)} steps ran")
        return timed * self.batch / (ends[-1] - ends[SKIP - 1])

    def warm_up(self, *, seconds: float, min_steps: int, max_steps: int) -> None:
        """One full epoch of a tf.data source (compiles, fills caches; the replayed batch and a PyDataset:
        a few steps), then a probe that sizes the steps per round."""
        if self.replay:
            self.model.fit(self.fit_source, steps_per_epoch=SKIP + 3, epochs=1, verbose=0, shuffle=False)
        elif self.pydataset:  # no cache to fill: a few steps compile the step
            self.model.fit(self.base, steps_per_epoch=min(len(self.base), SKIP + 3), epochs=1, verbose=0)
        else:
            with warnings.catch_warnings():  # an unknown cardinality: Keras warns as the epoch ends
                warnings.filterwarnings("ignore", message="Your input ran out of data")
                self.model.fit(self.base, epochs=1, verbose=0, shuffle=False)
        rate = self.fit(min_steps)
        per_step = self.batch / rate
        self.steps = int(min(max(math.ceil(seconds / per_step), min_steps), max_steps))


def variants(case, folder, dc_structural=STRUCTURAL) -> tuple[list, list]:
    """The case's variants (slow, each planted speed code, all, replayed) and the timed codes."""
    measured = [c for c in case.PLANTED if c not in dc_structural and c not in SYMPTOMS]
    make_fixed_model = getattr(case, "fixed_model", None)

    def pair(code):
        return case.fixed(folder, code), (make_fixed_model(code) if make_fixed_model else case.model())

    slow_model = case.model()
    out = [Variant("slow", case.slow(folder), slow_model)]
    for code in measured:
        out.append(Variant(code, *pair(code)))
    if len(measured) > 1:
        out.append(Variant("all", *pair(None)))
    out.append(Variant("replayed", first_batch(case.slow(folder)), slow_model, replay=True))
    return out, measured


def verdict_of(x_replayed) -> str | None:
    if x_replayed is None:
        return None
    if x_replayed >= INPUT_BOUND:
        return "input-bound"
    return "compute-bound" if x_replayed < COMPUTE_BOUND else "balanced"


def verdict_by_input_fix(x_input, x_replayed) -> str | None:
    """The dev script's rule (lab/doctor_corpus.py), for comparison."""
    if x_replayed is None:
        return None
    if (x_input is not None and x_input >= INPUT_BOUND) or (x_input is None and x_replayed >= INPUT_BOUND):
        return "input-bound"
    if (x_input is None or x_input < COMPUTE_BOUND) and x_replayed < COMPUTE_BOUND:
        return "compute-bound"
    return "balanced"


def measure(case, folder, args) -> dict:
    runs, measured = variants(case, folder)
    for v in runs:
        v.warm_up(seconds=args.seconds, min_steps=args.min_steps, max_steps=args.max_steps)
    ratios: dict[str, list[float]] = {v.name: [] for v in runs}
    rates: dict[str, list[float]] = {v.name: [] for v in runs}
    for r in range(args.rounds):
        order = runs if r % 2 == 0 else runs[::-1]
        got = {v.name: v.fit(v.steps) for v in order}
        for name, rate in got.items():
            rates[name].append(rate)
            ratios[name].append(rate / got["slow"])

    def med(name):
        return finite(statistics.median(ratios[name]))

    def spread(name):
        return [finite(min(ratios[name])), finite(max(ratios[name]))]

    gains = {c: med(c) for c in measured}
    all_name = "all" if "all" in ratios else (measured[0] if measured else None)
    x_replayed = med("replayed")
    x_all = med(all_name) if all_name else None
    return {"measured_codes": measured, "measured_gain": gains, "measured_spread": {c: spread(c) for c in measured},
            "below_threshold": [c for c, g in gains.items() if g is None or g < INPUT_BOUND],
            "x_replayed": x_replayed, "x_replayed_spread": spread("replayed"),
            "x_all_fixed": x_all, "x_all_fixed_spread": spread(all_name) if all_name else None,
            "true_verdict": verdict_of(x_replayed), "verdict_by_input_fix": verdict_by_input_fix(x_all, x_replayed),
            "ratios_per_round": {k: [round(x, 4) for x in v] for k, v in ratios.items()},
            "rates": {k: finite(statistics.median(v)) for k, v in rates.items()},
            "steps": {v.name: v.steps for v in runs}, "batch_size": {v.name: v.batch for v in runs}}


def run_case(module, name: str, args) -> dict:
    import keras

    case = module.load(name)
    row = {"case": name, "source": case.SOURCE, "domain": getattr(case, "DOMAIN", None),
           "planted": list(case.PLANTED), "tolerated": list(getattr(case, "TOLERATED", ())),
           "declared_verdict": case.VERDICT, "load_average_at_start": (load_average() or [None])[0], "error": None}
    t0 = time.perf_counter()
    try:
        folder = Path(args.data)
        case.make_data(folder)
        row.update(measure(case, folder, args))
    except Exception as e:  # noqa: BLE001  (a broken case is recorded, the run goes on)
        traceback.print_exc()
        text = str(e).strip().splitlines()
        row.update(true_verdict=None, measured_gain={}, error=f"{type(e).__name__}: {text[0] if text else ''}"[:300])
    row["verdict_confirmed"] = row.get("true_verdict") == case.VERDICT
    row["seconds"] = round(time.perf_counter() - t0, 1)
    keras.backend.clear_session()
    gc.collect()
    return row


# --------------------------------------------------------------------------- report


def fmt(x, spec=".2f"):
    return "–" if x is None else format(x, spec)


def markdown(result: dict) -> str:
    m = result["machine"]
    lines = [f"# Ground truth of the doctor's corpus ({result['corpus']} half), plain Keras fits", "",
             f"- date: {m['date']}; TensorFlow {m['tensorflow']}, Keras {m['keras']}",
             f"- machine: `{m['uname']}`, {m['cores']} cores ({m['cores_usable']} usable); load average at start "
             f"{m['load_average_at_start']}, at end {m.get('load_average_at_end')} (1, 5, 15 min)",
             f"- {m['shared']}",
             f"- command: `{result['command']}`", "",
             "| case | domain | planted | declared | true verdict | replayed (spread) | planted code gains (spread) "
             "| all fixed | < 1.3x | load | error |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in result["cases"]:
        rs = c.get("x_replayed_spread") or [None, None]
        gains = ", ".join(f"{k} {fmt(v)}x ({fmt(c['measured_spread'][k][0])}-{fmt(c['measured_spread'][k][1])})"
                          for k, v in c.get("measured_gain", {}).items()) or "–"
        lines.append(f"| {c['case']} | {c.get('domain') or '–'} | {', '.join(c['planted']) or '– (control)'} | "
                     f"{c['declared_verdict']} | {c.get('true_verdict') or '–'}"
                     f"{'' if c.get('verdict_confirmed') else ' (declared not confirmed)'} | "
                     f"{fmt(c.get('x_replayed'))}x ({fmt(rs[0])}-{fmt(rs[1])}) | {gains} | "
                     f"{fmt(c.get('x_all_fixed'))} | {', '.join(c.get('below_threshold', [])) or '–'} | "
                     f"{fmt(c.get('load_average_at_start'))} | {(c.get('error') or '').replace('|', '/')} |")
    lines += ["", "## Sources", ""] + [f"- {c['case']}: {c['source']}" for c in result["cases"]]
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    args = parse(argv)
    module = corpus(args.corpus)
    names = args.only or list(module.CASES)
    for n in names:
        if n not in module.CASES:
            raise SystemExit(f"no case {n!r} in the {args.corpus} half: {', '.join(module.CASES)}")
    result = {"corpus": args.corpus,
              "command": " ".join(["python -m lab.doctor_truth", *(argv if argv is not None else sys.argv[1:])]),
              "settings": {"rounds": args.rounds, "seconds": args.seconds, "min_steps": args.min_steps,
                           "max_steps": args.max_steps, "skip": SKIP, "input_bound": INPUT_BOUND,
                           "compute_bound": COMPUTE_BOUND},
              "machine": machine(), "cases": []}
    for name in names:
        print(f"{name} ...", flush=True)
        row = run_case(module, name, args)
        result["cases"].append(row)
        print(f"  true {row.get('true_verdict')} (declared {row['declared_verdict']}), replayed "
              f"{fmt(row.get('x_replayed'))}x {row.get('x_replayed_spread')}, gains {row.get('measured_gain')} "
              f"{row.get('measured_spread', '')}, below 1.3x {row.get('below_threshold')}, load "
              f"{row['load_average_at_start']}, {row['seconds']} s {row['error'] or ''}", flush=True)
    result["machine"]["load_average_at_end"] = load_average()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(markdown(result))
    print(f"wrote {args.out} and {args.out.with_suffix('.md')}")
    return result


if __name__ == "__main__":
    main()
