"""Scores the pipeline doctor on a corpus of foreign pipelines (issue 30 item 6; issue 44: two halves).

The corpus is split once: ``--corpus dev`` (tests/doctor_corpus/, the development half the doctor's
rules were written beside) and ``--corpus heldout`` (tests/doctor_corpus_heldout/, new sources written
apart from the doctor, scored only at the end of a change). For each case: the ground truth, measured
with plain Keras fits and no kit code by ``lab/doctor_truth.py`` (read from ``--truth FILE``, or
measured here by that script's own functions); then ``kit.doctor.diagnose`` on the slow pipeline and
on the all-fixed twin, scored: the verdict; the precision and recall of the top three findings that are
causes (not the symptom, not "checked: no gain here", not "not measured"; a case's ``TOLERATED`` codes
are skipped, neither right nor wrong); each planted speed code's predicted over measured end-to-end gain;
the findings left on the fixed twin (false alarms). A doctor crash is a scored failure.

    python -m lab.doctor_corpus [--corpus dev|heldout] [--truth TRUTH.json] [--only NAME]
        [--rounds 5] [--max-seconds S] [--fit-seconds S] [--out lab/results/doctor_corpus_<corpus>] [--data FOLDER]

Writes OUT.json and OUT.md. The true verdict is doctor_truth's: the model's compute ceiling (one batch
replayed from memory) over the slow fit, >= 1.3x input-bound, < 1.1x compute-bound, else balanced.
Measured only: the case's declared verdict is reported beside it, never used in its place.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import doctor_corpus as dc  # noqa: E402  (the shared helpers: kind, measured_codes, fixed_pair)

from lab import doctor_truth  # noqa: E402  (the plain-loop ground truth: it imports no kit code)

CORPORA = {"dev": "doctor_corpus", "heldout": "doctor_corpus_heldout"}



INPUT_BOUND = 1.3  # the all-fixed twin at least this much faster: the slow fit waited on input
COMPUTE_BOUND = 1.1  # below this, fixing the input changes nothing worth the name
TOP = 3


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--corpus", choices=sorted(CORPORA), default="dev",
                   help="dev: the half the rules were written beside; heldout: scored only at the end of a change")
    p.add_argument("--truth", default=None, metavar="TRUTH.json",
                   help="the ground truth written by lab/doctor_truth.py for this corpus; without it, it "
                        "is measured here with that script's plain fits")
    p.add_argument("--only", action="append", help="a case to run (repeatable); all by default")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds of the ground-truth fits")
    p.add_argument("--max-seconds", type=float, default=8.0, help="the doctor's budget per diagnosis")
    p.add_argument("--fit-seconds", type=float, default=2.0,
                   help="ground truth: seconds of fitting per variant, over all rounds")
    p.add_argument("--min-steps", type=int, default=12,
                   help="ground truth: steps each fit trains at least per round (past its seconds if need be; "
                        "a slow step timed a few times carries the fit's start: results/NOTES.md)")
    p.add_argument("--out", default=None, help="OUT.json and OUT.md (default lab/results/doctor_corpus_<corpus>)")
    p.add_argument("--rescore", default=None, metavar="OUT.json",
                   help="recompute the totals and OUT.md from a run's OUT.json (nothing measured again)")
    p.add_argument("--data", default=str(Path(tempfile.gettempdir()) / "kit-doctor-corpus"),
                   help="where the cases' generated data goes (kept: make_data is idempotent)")
    a = p.parse_args(argv)
    if a.rounds < 1:
        p.error(f"--rounds must be positive, got {a.rounds}")
    if a.min_steps < 2:
        p.error(f"--min-steps must be at least 2 (the first step of each fit is left out), got {a.min_steps}")
    if a.max_seconds <= 0 or a.fit_seconds <= 0:
        p.error("--max-seconds and --fit-seconds must be positive")
    a.out = a.out or str(ROOT / "lab" / "results" / f"doctor_corpus_{a.corpus}")
    cases = importlib.import_module(CORPORA[a.corpus]).CASES
    bad = [n for n in a.only or [] if n not in cases]
    if bad:
        p.error(f"--only: not a case of the {a.corpus} corpus: {', '.join(bad)} (cases: {', '.join(cases)})")
    return a


def one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:300]


def finite(x) -> float | None:
    """``x`` as a float, None where it is NaN or missing (JSON has no NaN)."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


# --------------------------------------------------------------------------- ground truth


#: The ground-truth fields a scored row takes from lab/doctor_truth.py's rows.
TRUTH_FIELDS = ("true_verdict", "measured_gain", "measured_spread", "x_replayed", "x_replayed_spread",
                "x_all_fixed", "below_threshold", "rates")


def ground_truth(pkg, name: str, args, truth: dict | None) -> dict:
    """The case's ground truth: its row of ``truth`` (a doctor_truth JSON's cases by name), or measured
    now with doctor_truth's plain fits (``--rounds``, ``--fit-seconds`` per variant and round)."""
    if truth is not None:
        row = truth.get(name)
        if row is None:
            raise ValueError(f"{args.truth} has no case {name!r}")
    else:
        script = doctor_truth
        ns = argparse.Namespace(rounds=args.rounds, seconds=args.fit_seconds, min_steps=args.min_steps,
                                max_steps=400, data=args.data)
        row = script.run_case(pkg, name, ns)
    if row.get("error"):
        return {"true_verdict": None, "measured_gain": {}, "ground_truth_error": row["error"]}
    return {k: row.get(k) for k in TRUTH_FIELDS}


# --------------------------------------------------------------------------- the doctor's answer


def findings(diagnosis) -> list[dict]:
    """The doctor's findings table as rows, ranked, with ``kind`` and ``status`` where it has none."""
    df = diagnosis.findings
    rows = []
    for r in df.to_dict(orient="records"):
        code = r.get("code")
        rows.append({"code": code, "kind": r.get("kind") or dc.kind(code),
                     "status": r.get("status") or "measured", "expected_gain": finite(r.get("expected_gain"))})
    return rows


def causes(rows, case) -> list[dict]:
    """The findings that count for precision: not a symptom, not "no gain", not tolerated by the case."""
    tolerated = getattr(case, "TOLERATED", ())
    return [r for r in rows if r["kind"] != "symptom" and r["status"] not in ("no gain", "unmeasured")
            and r["code"] not in tolerated]


def score(case, truth: dict, rows: list[dict]) -> dict:
    top = causes(rows, case)[:TOP]
    codes = [r["code"] for r in top]
    right = [c in case.PLANTED for c in codes]
    planted = set(case.PLANTED)
    found = {r["code"]: r for r in rows if r["status"] not in ("no gain", "unmeasured")}
    gain_ratio = {}
    for code, measured in truth.get("measured_gain", {}).items():
        predicted = found.get(code, {}).get("expected_gain")
        if predicted is not None and measured:
            gain_ratio[code] = predicted / measured
    return {"top": codes, "top_right": right,
            "precision": sum(right) / len(codes) if codes else None,
            "recall": len(planted & set(codes)) / len(planted) if planted else None,
            "predicted_gain": {c: found[c]["expected_gain"] for c in truth.get("measured_gain", {}) if c in found},
            "gain_ratio": gain_ratio,
            "gain_error": {c: math.exp(abs(math.log(r))) for c, r in gain_ratio.items() if r > 0}}


def run_case(pkg, name: str, args, truth: dict | None = None) -> dict:
    from kit import doctor

    case = pkg.load(name)
    row: dict = {"case": name, "source": case.SOURCE, "planted": list(case.PLANTED),
                 "tolerated": list(getattr(case, "TOLERATED", ())), "declared_verdict": case.VERDICT,
                 "error": None, "fixed_error": None}
    folder = Path(args.data)
    t0 = time.perf_counter()
    try:
        case.make_data(folder)
        row.update(ground_truth(pkg, name, args, truth))
    except Exception as e:  # noqa: BLE001  (a broken case is recorded, the run goes on)
        row.update(true_verdict=None, measured_gain={}, ground_truth_error=one_line(e))
    try:
        d = doctor.diagnose(case.slow(folder), case.model(), max_seconds=args.max_seconds, name=name)
        rows = findings(d)
        row.update(doctor_verdict=d.verdict, summary=d.summary, findings=rows)
    except Exception as e:  # noqa: BLE001  (a doctor crash is a scored failure)
        rows = []
        row.update(doctor_verdict=None, summary=None, findings=[], error=one_line(e))
    row.update(score(case, row, rows))
    if row["error"]:
        row.update(precision=0.0, recall=0.0 if case.PLANTED else None)
    row["verdict_right"] = row["doctor_verdict"] is not None and row["doctor_verdict"] == row["true_verdict"]
    try:
        source, model = dc.fixed_pair(case, folder)
        d = doctor.diagnose(source, model, max_seconds=args.max_seconds, name=f"{name} (fixed)")
        left = causes(findings(d), case)
        row.update(fixed_verdict=d.verdict, fixed_findings=[r["code"] for r in left])
    except Exception as e:  # noqa: BLE001
        row.update(fixed_verdict=None, fixed_findings=[], fixed_error=one_line(e))
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


# --------------------------------------------------------------------------- totals and the report


def totals(cases: list[dict]) -> dict:
    reported = sum(len(c["top"]) for c in cases)
    right = sum(sum(c["top_right"]) for c in cases)
    planted = sum(len(c["planted"]) for c in cases)
    found = sum(len(set(c["planted"]) & set(c["top"])) for c in cases)
    errors = [e for c in cases for e in c["gain_error"].values()]
    measured = [c for c in cases if c.get("true_verdict")]
    return {"cases": len(cases), "verdicts_right": sum(c["verdict_right"] for c in cases),
            "doctor_crashes": sum(bool(c["error"]) for c in cases),
            "doctor_crashes_on_twins": sum(bool(c.get("fixed_error")) for c in cases),
            "precision": right / reported if reported else None, "findings_in_top": reported,
            "recall": found / planted if planted else None, "planted": planted,
            "gain_error_median": statistics.median(errors) if errors else None, "gains_compared": len(errors),
            "fixed_false_alarms": sum(len(c["fixed_findings"]) for c in cases),
            "declared_verdicts_confirmed": sum(c["true_verdict"] == c["declared_verdict"] for c in measured)}


def machine() -> dict:
    """doctor_truth's machine block, its load average the 1-minute figure."""
    m = doctor_truth.machine()
    return {**m, "load_average_at_start": (m["load_average_at_start"] or [None])[0]}


def fmt(x, spec=".2f", none="–"):
    return none if x is None else format(x, spec)


def markdown(result: dict) -> str:
    m, t = result["machine"], result["totals"]
    lines = [f"# The pipeline doctor on the {result.get('corpus', 'dev')} half of its corpus of foreign pipelines", "",
             f"- date: {m['date']}", f"- machine: `{m['uname']}`",
             f"- ground truth: {result.get('truth', 'measured in this run')}",
             f"- cores: {m['cores']} ({m['cores_usable']} usable), load average at start {fmt(m['load_average_at_start'])}",
             f"- command: `{result['command']}`", "",
             "| case | true verdict | doctor | planted | measured gain (fit, fix/slow) | top three "
             "(✓ planted) | predicted / measured | fixed twin: left | error |",
             "|---|---|---|---|---|---|---|---|---|"]
    for c in result["cases"]:
        gains = ", ".join(f"{k} {fmt(v)}x" for k, v in c["measured_gain"].items()) or "–"
        if c.get("x_replayed") is not None:
            gains += f"; replayed batch {fmt(c['x_replayed'])}x"
        top = ", ".join(f"{code}{' ✓' if ok else ' ✗'}" for code, ok in zip(c["top"], c["top_right"])) or "–"
        pm = ", ".join(f"{k} {fmt(c['predicted_gain'].get(k))}/{fmt(c['measured_gain'].get(k))}"
                       for k in c["gain_ratio"]) or "–"
        doctor_v = c["doctor_verdict"] or "crash"
        doctor_v += " ✓" if c["verdict_right"] else " ✗"
        err = c["error"] or c.get("ground_truth_error") or c["fixed_error"] or ""
        lines.append(f"| {c['case']} | {c['true_verdict'] or '–'} | {doctor_v} | {', '.join(c['planted']) or '–'} "
                     f"| {gains} | {top} | {pm} | {', '.join(c['fixed_findings']) or '–'} | {err.replace('|', '/')} |")
    lines += ["", "## Totals", "",
              f"- verdicts right: {t['verdicts_right']} / {t['cases']} (doctor crashes: {t['doctor_crashes']} on the "
              f"planted pipelines, {t.get('doctor_crashes_on_twins', 0)} on the fixed twins)",
              f"- precision of the top three: {fmt(t['precision'])} over {t['findings_in_top']} findings",
              f"- recall of the planted codes in the top three: {fmt(t['recall'])} over {t['planted']} planted",
              f"- predicted / measured gain, median |log ratio| as a factor: {fmt(t['gain_error_median'])} "
              f"over {t['gains_compared']} gains",
              f"- findings left on the all-fixed twins (false alarms): {t['fixed_false_alarms']}",
              f"- declared verdicts confirmed by this run's measurement: {t['declared_verdicts_confirmed']} / {t['cases']}",
              "", "## Sources", ""]
    lines += [f"- {c['case']}: {c['source']}" for c in result["cases"]]
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    args = parse(argv)
    if args.rescore:
        path = Path(args.rescore)
        result = json.loads(path.read_text())
        result["totals"] = totals(result["cases"])
        path.write_text(json.dumps(result, indent=1, default=finite) + "\n")
        path.with_suffix(".md").write_text(markdown(result))
        print(f"rescored {path} and {path.with_suffix('.md')}")
        return result
    pkg = importlib.import_module(CORPORA[args.corpus])
    names = args.only or list(pkg.CASES)
    truth = None
    if args.truth:
        saved = json.loads(Path(args.truth).read_text())
        truth = {r["case"]: r for r in saved["cases"]}
    result = {"machine": machine(), "command": " ".join(["python -m lab.doctor_corpus", *(argv or sys.argv[1:])]),
              "corpus": args.corpus, "truth": args.truth or "measured in this run (lab/doctor_truth.py)",
              "settings": {"rounds": args.rounds, "max_seconds": args.max_seconds, "fit_seconds": args.fit_seconds},
              "cases": []}
    for name in names:
        print(f"{name} ...", flush=True)
        row = run_case(pkg, name, args, truth)
        result["cases"].append(row)
        print(f"  true {row['true_verdict']}, doctor {row['doctor_verdict']}, planted {row['planted']}, "
              f"gains {row['measured_gain']}, top {row['top']} {row['error'] or ''} ({row['seconds']} s)", flush=True)
    result["totals"] = totals(result["cases"])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=1, default=finite) + "\n")
    out.with_suffix(".md").write_text(markdown(result))
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.md')}")
    return result


if __name__ == "__main__":
    main()
