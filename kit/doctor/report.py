"""What ``diagnose`` returns: the ``Diagnosis``, and how it shows as text, HTML and JSON."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

import pandas as pd

from kit.doctor.findings import SYMPTOMS, fmt_gain


@dataclass
class Diagnosis:
    """What ``diagnose`` found.

    Attributes:
        verdict: ``"input-bound"``, ``"compute-bound"`` or ``"balanced"`` (with a model);
            ``"loader only"`` without one.
        summary: the verdict in a sentence, with the measured rates.
        rates: the measured numbers (examples/s of loader, ceiling and fit; input share;
            cores busy; bytes read per example ...).
        findings: one row per finding, ranked by ``expected_gain``: ``code``,
            ``evidence``, ``fix``, ``expected_gain``, ``basis``.
        pipeline: the tf.data ops from source to output, where the source is tf.data.
        trace_dir: where the profiler trace went, if one was recorded.
    """

    verdict: str
    summary: str
    rates: dict
    findings: pd.DataFrame
    pipeline: list = field(default_factory=list)
    trace_dir: str | None = None

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

    def as_dict(self) -> dict:
        return {"verdict": self.verdict, "summary": self.summary, "rates": self.rates,
                "findings": self.findings.to_dict(orient="records"), "pipeline": self.pipeline,
                "trace_dir": self.trace_dir}

    def __str__(self) -> str:
        lines = [f"verdict: {self.verdict}", f"  {self.summary}"]
        if self.pipeline:
            lines.append(f"  tf.data pipeline: {' -> '.join(self.pipeline)}")
        if self.findings.empty:
            lines.append("no findings")
        for i, r in enumerate(self.findings.itertuples(index=False), start=1):
            lines.append(f"{i}. {r.code}: expected gain {fmt_gain(r.expected_gain)} ({r.basis})")
            lines.append(f"   evidence: {r.evidence}")
            lines.append(f"   fix: {r.fix}")
        if self.trace_dir:
            lines.append(f"profiler trace: {self.trace_dir} (tensorboard --logdir {self.trace_dir})")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        table = self.findings.assign(expected_gain=self.findings["expected_gain"].map(fmt_gain))
        parts = [f"<p><b>verdict: {html.escape(self.verdict)}</b>: {html.escape(self.summary)}</p>"]
        if self.pipeline:
            parts.append(f"<p>tf.data pipeline: <code>{html.escape(' → '.join(self.pipeline))}</code></p>")
        parts.append(table.to_html(index=False, escape=True) if len(table) else "<p>no findings</p>")
        if self.trace_dir:
            parts.append(f"<p>profiler trace: <code>{html.escape(self.trace_dir)}</code></p>")
        return "\n".join(parts)
