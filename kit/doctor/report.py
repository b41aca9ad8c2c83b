"""What ``diagnose`` returns: the ``Diagnosis``, and how it shows as text, HTML and JSON."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from kit.doctor.findings import NOISE, SYMPTOMS, fmt_gain


@dataclass
class Diagnosis:
    """What ``diagnose`` found."""

    verdict: str  # "input-bound", "compute-bound" or "balanced"; "loader only" without a model
    summary: str  # the verdict in a sentence, with the measured rates
    rates: dict  # the measured numbers
    findings: pd.DataFrame  # one row per finding, ranked (findings.table)
    pipeline: list = field(default_factory=list)  # the tf.data ops from source to output
    trace_dir: str | None = None  # where the profiler trace went, if one was recorded
    fixed: Any = None  # the best measured pipeline: every fix that gained and every correctness fix applied
    changes: list = field(default_factory=list)  # the rewrite.Rewrite s applied in fixed
    tried: list = field(default_factory=list)  # one row per fix tried (check, loader and fit gains, outcome)
    skipped: list = field(default_factory=list)  # what was left out to keep to the time budget

    @property
    def codes(self) -> list[str]:
        """Finding codes, best expected gain first."""
        return list(self.findings["code"])

    @property
    def top(self) -> str | None:
        """The first finding that is a cause, not the symptom (``input_bound``, ``compute_bound``)."""
        rest = [c for c in self.codes if c not in SYMPTOMS]
        return rest[0] if rest else None

    def gain(self, code: str) -> float:
        """The expected gain of ``code`` (NaN if it was not found)."""
        row = self.findings.loc[self.findings["code"] == code, "expected_gain"]
        return float(row.iloc[0]) if len(row) else math.nan

    @property
    def top3(self) -> list[str]:
        """The first three findings that are causes and gave (or are predicted to give) something."""
        rows = self.findings[(self.findings["kind"] != "symptom")
                             & ~self.findings["status"].isin(["no gain", "unmeasured"])]
        return list(rows["code"])[:3]

    def code_change(self, source: str = "your pipeline") -> str:
        """The changes in ``fixed`` as lines to apply to the user's code."""
        if not self.changes:
            return ""
        lines = [f"# The changes the doctor measured on {source}, best first:"]
        lines += [f"#   {r.change}:  {r.snippet}" for r in self.changes]
        return "\n".join(lines)

    def with_finding(self, finding) -> Diagnosis:
        """This diagnosis with one more finding, ranked among the others."""
        from kit.doctor.findings import rank  # noqa: PLC0415

        rows = pd.concat([self.findings, pd.DataFrame([finding.row()])], ignore_index=True)
        return replace(self, findings=rank(rows))

    def as_dict(self) -> dict:
        """The diagnosis as JSON-ready data: the three printed lists (``findings``, ``checked_no_gain``,
        ``not_measured``), each row with its printed ``line``; NaN gains as None."""
        parts = self.lists()
        return {"verdict": self.verdict, "summary": self.summary, "rates": self.rates,
                "findings": rows(parts["findings"]), "checked_no_gain": rows(parts["checked: no gain here"]),
                "not_measured": rows(parts["not measured"]), "pipeline": self.pipeline,
                "trace_dir": self.trace_dir, "changes": [{"code": r.code, "change": r.change, "fix": r.snippet}
                                                         for r in self.changes],
                "tried": self.tried, "skipped": self.skipped}

    def lists(self) -> dict[str, pd.DataFrame]:
        """The findings split as printed: ``findings`` (ranked, the symptom first), ``checked: no gain
        here`` and ``not measured``."""
        col = self.findings["list"] if "list" in self.findings else pd.Series([], dtype=object)
        return {name: self.findings[col == name].reset_index(drop=True)
                for name in ("findings", "checked: no gain here", "not measured")}

    def __str__(self) -> str:
        """The verdict and its basis, one line per finding, then the lists 'checked: no gain here' and
        'not measured'."""
        return self._text(details=False)

    def details(self) -> str:
        """``str(self)`` with each finding's evidence and basis under it."""
        return self._text(details=True)

    def _text(self, *, details: bool) -> str:
        lines = [f"verdict: {self.verdict}", f"  {self.summary}"]
        for key in ("verdict_basis", "time_split", "memory"):
            if self.rates.get(key):
                lines.append(f"  {self.rates[key]}")
        if self.pipeline:
            lines.append(f"  tf.data pipeline: {' -> '.join(self.pipeline)}")
        parts = self.lists()
        if not len(parts["findings"]):
            lines.append("findings: none")
        for title, rows in parts.items():
            if len(rows):
                lines.append(f"{title}:")
            for i, r in enumerate(rows.itertuples(index=False), start=1):
                mark = {"findings": f"{i}.", "checked: no gain here": "-"}.get(title, "?")
                lines.append(f"  {mark} {_line(r)}")
                if details:
                    lines += [f"     evidence: {r.evidence}", f"     basis: {r.basis}"]
        if self.changes:
            lines.append("Diagnosis.fixed applies: " + "; ".join(r.change for r in self.changes))
        if self.skipped:
            lines.append("skipped to keep to the time budget: " + "; ".join(self.skipped))
        if self.trace_dir:
            lines.append(f"profiler trace: {self.trace_dir}, view with tensorboard --logdir {self.trace_dir}")
        if not details and len(self.findings):
            lines.append("each finding's evidence and basis: d.details(), or --details / --json")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        table = self.findings.assign(expected_gain=[_gain_text(r) for r in self.findings.itertuples(index=False)])
        table = table.drop(columns=["gain_low", "gain_high", "loader_gain", "measured_on", "learn_more"])
        parts = [f"<p><b>verdict: {html.escape(self.verdict)}</b>: {html.escape(self.summary)}</p>"]
        if self.pipeline:
            parts.append(f"<p>tf.data pipeline: <code>{html.escape(' → '.join(self.pipeline))}</code></p>")
        parts.append(table.to_html(index=False, escape=True) if len(table) else "<p>no findings</p>")
        if self.changes:
            parts.append("<p><code>Diagnosis.fixed</code> applies: "
                         + html.escape("; ".join(r.change for r in self.changes)) + "</p>")
        if self.skipped:
            parts.append("<p>skipped to keep to the time budget: " + html.escape("; ".join(self.skipped)) + "</p>")
        if self.trace_dir:
            parts.append(f"<p>profiler trace: <code>{html.escape(self.trace_dir)}</code></p>")
        return "\n".join(parts)


def _gain_text(r) -> str:
    """``expected gain 1.8x, rounds 1.6-2.0x``; for a loader fix with a model, the loader's gain beside it."""
    text = f"expected gain {fmt_gain(r.expected_gain)}"
    if spread := _spread(r, fmt_gain):
        text += f", {spread}"
    if math.isfinite(r.loader_gain) and abs(r.loader_gain - r.expected_gain) > 0.005:
        text += f", {getattr(r, 'measured_on', '') or 'the loader alone'} {fmt_gain(r.loader_gain)}"
    return text


def _x(g: float) -> str:
    """A gain near 1 with two decimals (0.97x, 1.04x: the noise shows), a larger one as fmt_gain."""
    return f"{g:.2f}x" if math.isfinite(g) and g < 10 else fmt_gain(g)


def _spread(r, fmt=_x) -> str:
    """``low-high`` where the range shows as two figures (not ``1.27x-1.27x``), else ""."""
    if math.isfinite(r.gain_low) and math.isfinite(r.gain_high) and fmt(r.gain_high) != fmt(r.gain_low):
        return f"{fmt(r.gain_low)}-{fmt(r.gain_high)}"
    return ""


def _what(r) -> str:
    """The gain part of a finding's line (with its spread), a correctness fix's cost, or why nothing was measured."""
    g, spread = r.expected_gain, _spread(r)
    if r.kind == "symptom":
        return f"{_x(g)} headroom" if r.code == "input_bound" else "the model's step is the limit"
    if r.kind == "correctness":
        if not math.isfinite(g):
            return "a correctness fix, its cost not measured"
        if g < 1 / NOISE:
            return f"a correctness fix that costs time: {1 / g:,.2f}x slower, measured"
        return "a correctness fix at no measured cost" if g < NOISE else f"a correctness fix, {_x(g)} faster too"
    if r.status == "unmeasured":
        return r.basis.removeprefix("not measured: ")
    if r.kind == "order":
        return "order quality, not speed"
    if r.kind == "memory":
        return "memory, not speed"
    if not math.isfinite(g):
        return "gain not measured"
    if r.status == "no gain" and r.basis.startswith("TensorFlow already"):
        return r.basis.split(":")[0]
    if r.status == "no gain":
        return f"{_x(g)}{', rounds ' + spread if spread else ''}: within the noise or capped by the model"
    # Measured on a part (the loader alone, or the model on replayed batches), the fit's gain predicted.
    on = getattr(r, "measured_on", "")
    if r.status == "predicted" and on:
        part = getattr(r, "loader_gain", math.nan)
        measured = f" ({on} measured {_x(part)})" if math.isfinite(part) else ""
        return f"{_x(g)} predicted for the fit{', range ' + spread if spread else ''}{measured}"
    if r.status == "measured":
        return f"{_x(g)} measured end to end{', rounds ' + spread if spread else ''}"
    return f"{_x(g)} predicted{', range ' + spread if spread else ''}"


def rows(df: pd.DataFrame) -> list[dict]:
    """Findings rows (``Finding.row``) as JSON-ready data, each with its printed ``line``; NaN gains as None."""
    return [{**{k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in r._asdict().items()},
             "line": _line(r)} for r in df.itertuples(index=False)]


def _line(r) -> str:
    """One finding on one line: code, where in the user's code, the gain, the change."""
    where = f" at {r.where}" if getattr(r, "where", "") else ""
    fix = "" if r.kind == "symptom" or r.status == "unmeasured" else f"; fix: {r.fix}"
    return f"{r.code}{where}: {_what(r)}{fix}"
