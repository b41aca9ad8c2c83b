"""Scores ``python -m kit doctor run`` on the real-script corpus (lab/doctor_scripts) against its truth.

For each script (``--half``, ``--only``): its data is made, then

    .venv/bin/python -m kit doctor run --max-seconds S --json OUT.json lab/doctor_scripts/<half>/NAME.py

runs as a subprocess (timeout S + 90 s; its wall time, exit code and last stderr line recorded). From
OUT.json: ``verdict`` and ``findings`` (rank order; each with code, status, list, kind, where,
expected_gain). The top three are the first three findings whose ``kind`` is not "symptom" and whose
``list`` is "findings". Scores per script: verdict right (against the truth's, ``--truth``); precision of
the top three (right = in CORPUS ``codes``; ``tolerated`` codes skipped, neither right nor wrong; none
judged: null); recall (any of ``codes`` in the top three; null where the script has no codes); adapter
lines (0: the doctor ran the script unchanged). A failed run, a timeout or an unreadable JSON is a scored
failure: verdict wrong, recall 0, precision null.

    python -m lab.doctor_scripts.score [--half dev|heldout|users|heldout2|heldout3|heldout4|heldout5|heldout6|heldout7|heldout8|heldout9|heldout10|heldout11] [--only NAME ...] [--max-seconds 30]
        [--truth lab/results/doctor_scripts_truth.json (heldout2 to heldout11: doctor_scripts_truth_<half>.json)] [--data FOLDER] [--out lab/results/doctor_scripts_<half>]
        [--rescore OUT.json]   (recompute the scores from a run's stored reports: nothing run again)

Writes OUT.json and OUT.md. No kit import: the doctor runs in its own process.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lab.doctor_scripts import CORPUS, HALVES
from lab.doctor_scripts import data as data_mod
from lab.doctor_scripts.truth import COMPUTE_BOUND, INPUT_BOUND, default_truth

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
TOP = 3


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--half", choices=HALVES, default="dev")
    p.add_argument("--only", action="append")
    p.add_argument("--max-seconds", type=float, default=30.0)
    p.add_argument("--truth", default=None, help="default: lab/results/doctor_scripts_truth.json, or "
                   "doctor_scripts_truth_<half>.json for --half heldout2 to heldout11")
    p.add_argument("--data", default=data_mod.DEFAULT)
    p.add_argument("--out", default=None)
    p.add_argument("--python", default=str(ROOT / ".venv" / "bin" / "python"))
    p.add_argument("--rescore", default=None, metavar="OUT.json",
                   help="recompute the scores and OUT.md from a run's OUT.json with the current CORPUS and truth "
                        "(no doctor run)")
    a = p.parse_args(argv)
    bad = [n for n in a.only or [] if n not in CORPUS]
    if bad:
        p.error(f"--only: unknown script(s) {', '.join(bad)}")
    if a.max_seconds <= 0:
        p.error(f"--max-seconds must be positive, got {a.max_seconds}")
    a.out = a.out or str(ROOT / "lab" / "results" / f"doctor_scripts_{a.half}")
    a.truth = a.truth or str(default_truth(a.half))
    return a


def top_findings(report: dict, n: int = TOP) -> list[dict]:
    """The first ``n`` findings that are causes: not symptoms, on the main list."""
    out = []
    for f in report.get("findings") or []:
        if f.get("kind") == "symptom" or f.get("list", "findings") != "findings":
            continue
        out.append(f)
        if len(out) == n:
            break
    return out


def band(truth_row: dict | None) -> list[str]:
    """The truth band: the verdicts the truth's own rounds reach (``headroom_rounds``), the lowest and the
    highest round left out where there are five or more. Decided before heldout5 was scored (issue 55): a
    doctor verdict in the band is counted apart from the strict score (the median's verdict), never instead."""
    heads = sorted(h for h in (truth_row or {}).get("headroom_rounds") or [] if h is not None)
    if len(heads) >= 5:
        heads = heads[1:-1]
    order = ("compute-bound", "balanced", "input-bound")
    seen = {"input-bound" if h >= INPUT_BOUND else "compute-bound" if h < COMPUTE_BOUND else "balanced" for h in heads}
    if seen:  # the band is contiguous: from the lowest verdict reached to the highest
        lo, hi = min(order.index(v) for v in seen), max(order.index(v) for v in seen)
        seen = set(order[lo:hi + 1])
    verdict = (truth_row or {}).get("verdict")
    return [v for v in order if v in seen or v == verdict]


#: Codes true wherever the doctor lists them, and no script's one fix: ``generator_malloc`` is itself an A/B
#: of the real fit (TensorFlow's malloc thresholds against the process's own), listed only where it gained.
ALWAYS_TOLERATED = ("generator_malloc",)


def score(report: dict | None, entry: dict, true_verdict: str | None, truth_band: list[str] | None = None) -> dict:
    """Scores one doctor report (None: the run failed) against a CORPUS entry, the true verdict and its band."""
    codes, tolerated = set(entry["codes"]), set(entry["tolerated"]) | set(ALWAYS_TOLERATED)
    truth_band = truth_band or ([true_verdict] if true_verdict else [])
    if report is None:
        return {"verdict": None, "verdict_right": False, "band_right": False, "top": [], "precision": None,
                "recall": 0.0 if codes else None, "right": 0, "wrong": 0, "skipped": 0}
    top = [f.get("code") for f in top_findings(report)]
    right = sum(c in codes for c in top)
    skipped = sum(c in tolerated and c not in codes for c in top)
    wrong = len(top) - right - skipped
    judged = right + wrong
    return {"verdict": report.get("verdict"),
            "verdict_right": (report.get("verdict") == true_verdict) if true_verdict else None,
            "band_right": (report.get("verdict") in truth_band) if truth_band else None,
            "top": top, "precision": right / judged if judged else None,
            "recall": (1.0 if right else 0.0) if codes else None,
            "right": right, "wrong": wrong, "skipped": skipped}


def run_doctor(name: str, a) -> tuple[dict | None, dict]:
    script = HERE / CORPUS[name]["half"] / f"{name}.py"
    with tempfile.TemporaryDirectory(prefix="doctor-scripts-score-") as tmp:
        out = Path(tmp) / "report.json"
        cmd = [a.python, "-m", "kit", "doctor", "run", "--max-seconds", f"{a.max_seconds:g}", "--json", str(out),
               str(script.relative_to(ROOT))]
        env = dict(os.environ, DOCTOR_SCRIPTS_DATA=a.data)
        t0 = time.perf_counter()
        info = {"command": " ".join(cmd[1:]), "exit_code": None, "stderr_tail": "", "wall_s": None}
        try:
            proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                                  timeout=a.max_seconds + 90)
            info["exit_code"] = proc.returncode
            info["stderr_tail"] = ((proc.stderr or "").strip().splitlines() or [""])[-1][:300]
        except subprocess.TimeoutExpired:
            info["stderr_tail"] = f"timed out after {a.max_seconds + 90:.0f} s"
        info["wall_s"] = round(time.perf_counter() - t0, 1)
        if info["exit_code"] != 0 or not out.exists():
            return None, info
        try:
            return json.loads(out.read_text()), info
        except json.JSONDecodeError as e:
            info["stderr_tail"] = f"unreadable JSON: {e}"
            return None, info


def totals(rows: list[dict]) -> dict:
    def mean(key):
        xs = [r[key] for r in rows if r.get(key) is not None]
        return statistics.mean(xs) if xs else None
    verdicts = [r["verdict_right"] for r in rows if r.get("verdict_right") is not None]
    banded = [r["band_right"] for r in rows if r.get("band_right") is not None]
    right = sum(r["right"] for r in rows)
    judged = right + sum(r["wrong"] for r in rows)
    return {"scripts": len(rows), "failures": sum(r["report"] is None for r in rows),
            "verdicts_right": sum(verdicts), "verdicts_judged": len(verdicts),
            "verdicts_in_band": sum(banded), "verdicts_band_judged": len(banded),
            "precision_pooled": right / judged if judged else None, "precision_mean": mean("precision"),
            "recall_mean": mean("recall"), "adapter_lines_total": sum(r["adapter_lines"] or 0 for r in rows)}


def fmt(x, spec=".2f"):
    return "—" if x is None else format(x, spec)


def markdown(doc: dict) -> str:
    t = doc["totals"]
    lines = [f"# The doctor on the real-script corpus: the {doc['half']} half", "",
             f"Written by `{doc['command']}` on {doc['date']}"
             + (f" (rescored {doc['rescored']} with the current CORPUS)" if doc.get("rescored") else "")
             + f". Truth: `{doc['truth']}`. Top three = the first "
             "three findings that are causes (not symptoms, on the main list); tolerated codes are skipped.", "",
             f"Verdicts right: {t['verdicts_right']} of {t['verdicts_judged']} (in the truth's band: "
             f"{t.get('verdicts_in_band', '—')} of {t.get('verdicts_band_judged', '—')}); precision of the top three "
             f"(pooled): {fmt(t['precision_pooled'])}; recall (mean): {fmt(t['recall_mean'])}; failed runs: "
             f"{t['failures']} of {t['scripts']}; adapter lines: {t['adapter_lines_total']}.", "",
             "| name | true verdict (band) | doctor verdict | top three | right / wrong / skipped | precision | recall | "
             "exit | wall s | adapter lines | last stderr line |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in doc["rows"]:
        tail = r["run"]["stderr_tail"].replace("|", "/")[:120] if r["report"] is None else ""
        lines.append(f"| {r['name']} | {r['true_verdict'] or '—'} ({', '.join(r.get('truth_band') or []) or '—'}) | "
                     f"{r['verdict'] or '—'} | "
                     f"{', '.join(r['top']) or '—'} | {r['right']} / {r['wrong']} / {r['skipped']} | "
                     f"{fmt(r['precision'])} | {fmt(r['recall'])} | {r['run']['exit_code']} | "
                     f"{fmt(r['run']['wall_s'], '.1f')} | {fmt(r['adapter_lines'], 'd')} | {tail} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    a = parse(argv)
    truth = {}
    if Path(a.truth).exists():
        truth = json.loads(Path(a.truth).read_text()).get("scripts", {})
    if a.rescore:
        doc = json.loads(Path(a.rescore).read_text())
        for row in doc["rows"]:
            entry, true_verdict = CORPUS[row["name"]], (truth.get(row["name"]) or {}).get("verdict")
            truth_band = band(truth.get(row["name"]))
            row.update(codes=list(entry["codes"]), tolerated=list(entry["tolerated"]), true_verdict=true_verdict,
                       truth_band=truth_band, **score(row["report"], entry, true_verdict, truth_band))
        doc.update(totals=totals(doc["rows"]), rescored=datetime.datetime.now(datetime.timezone.utc)
                   .isoformat(timespec="seconds"))
        write(doc, Path(a.out))
        return 0
    names = a.only or [n for n, e in CORPUS.items() if e["half"] == a.half]
    rows = []
    for name in names:
        data_mod.make(name, a.data)
        report, info = run_doctor(name, a)
        true_verdict = (truth.get(name) or {}).get("verdict")
        truth_band = band(truth.get(name))
        row = {"name": name, "half": CORPUS[name]["half"], "codes": list(CORPUS[name]["codes"]),
               "tolerated": list(CORPUS[name]["tolerated"]), "true_verdict": true_verdict, "truth_band": truth_band,
               "run": info, "report": None if report is None else {"verdict": report.get("verdict"),
                                                                    "findings": report.get("findings")},
               "adapter_lines": 0 if report is not None else None,
               **score(report, CORPUS[name], true_verdict, truth_band)}
        rows.append(row)
        print(f"{name}: exit {info['exit_code']} verdict {row['verdict']} (true {true_verdict}) top {row['top']}",
              flush=True)
    doc = {"half": a.half, "command": "python -m lab.doctor_scripts.score " + " ".join(argv if argv is not None else sys.argv[1:]),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "truth": a.truth, "max_seconds": a.max_seconds, "rows": rows, "totals": totals(rows)}
    write(doc, Path(a.out))
    return 0


def write(doc: dict, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    os.replace(tmp, out.with_suffix(".json"))
    out.with_suffix(".md").write_text(markdown(doc))


if __name__ == "__main__":
    sys.exit(main())
