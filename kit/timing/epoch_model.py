"""The epoch-time model: ``epoch = examples / min(loader_rate, replicas x compute_rate x efficiency(replicas))``.

Every view that states an epoch time computes it here, so they cannot disagree. ``Scaling`` is the
one home of the efficiency: 1 at one replica, measured where measured, elsewhere Amdahl's law
fitted to the measured points (labelled assumed). No TensorFlow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np
import pandas as pd

from kit import results
from kit.cases import registry
from kit.util import check_int, format_duration


@dataclass(frozen=True)
class Scaling:
    """Scaling efficiency against the replica count (speed-up over one replica / replicas): build it
    with ``Scaling.measured({1: 1.0, 2: 0.54})``, ``Scaling.constant(0.9)`` or ``Scaling.linear()``.

    Attributes:
        points: the measured ``(replicas, efficiency)`` pairs above one replica, ascending.
        serial: Amdahl's serial share fitted to ``points`` (0: linear), used where not measured.
        assumed: a constant efficiency assumed above one replica (``constant``), or None.
        source: where the points come from (carried into the basis).
    """

    points: tuple[tuple[int, float], ...] = ()
    serial: float = 0.0
    assumed: float | None = None
    source: str = ""

    @classmethod
    def linear(cls) -> "Scaling":
        return cls(source="linear scaling")

    @classmethod
    def constant(cls, efficiency: float) -> "Scaling":
        """An assumed efficiency at every replica count above one (1 at one replica)."""
        e = float(efficiency)
        if not 0 < e <= 1:
            raise ValueError(f"efficiency must be in (0, 1], got {efficiency!r}")
        return cls(assumed=e, source=f"efficiency {e:.2f} assumed")

    @classmethod
    def measured(cls, points: Mapping[int, float], *, source: str = "measured") -> "Scaling":
        """From measured efficiencies per replica count; elsewhere Amdahl's law, 1 / (1 + s (n - 1)),
        its serial share s the least-squares fit of ``1/e - 1 = s (n - 1)``. An efficiency above 1
        (noise) is taken as 1."""
        pts = []
        for n, e in sorted((int(n), e) for n, e in points.items()):
            if n < 1:
                raise ValueError(f"replica counts must be >= 1, got {n!r}")
            if e is None or not np.isfinite(e) or e <= 0:
                continue
            if n > 1:
                pts.append((n, float(min(1.0, e))))
        if pts:
            x = np.array([n - 1 for n, _ in pts], float)
            y = np.array([1 / e - 1 for _, e in pts], float)
            serial = float(np.clip((x * y).sum() / (x * x).sum(), 0.0, 1.0))
        else:
            serial = 0.0
        return cls(points=tuple(pts), serial=serial, source=source)

    def efficiency(self, replicas) -> np.ndarray | float:
        """The efficiency at ``replicas`` (a count or an array of counts)."""
        n = np.asarray(replicas)
        if (n < 1).any():
            raise ValueError(f"replicas must be >= 1, got {n.min()!r}")
        if self.assumed is not None:
            e = np.where(n == 1, 1.0, self.assumed)
        else:
            e = 1.0 / (1.0 + self.serial * (n - 1))
            for m, v in self.points:
                e = np.where(n == m, v, e)
        return float(e) if np.ndim(e) == 0 else e

    def basis(self, replicas: int) -> str:
        """How the efficiency at ``replicas`` was obtained: exact, measured or assumed."""
        replicas = int(replicas)
        if replicas == 1:
            return "exact: one replica"
        if self.assumed is not None:
            return f"assumed: {self.source}"
        if replicas in dict(self.points):
            return f"measured ({self.source})"
        if not self.points:
            return "assumed: linear scaling (nothing measured above one replica)"
        counts = ", ".join(str(n) for n, _ in self.points)
        return (f"assumed: Amdahl's law fitted to the efficiency measured at {counts} replicas "
                f"(serial share {self.serial:.2f}; {self.source})")

    def kind(self, replicas) -> np.ndarray:
        """Per count: ``"exact"`` (one replica), ``"measured"`` or ``"assumed"``."""
        n = np.atleast_1d(np.asarray(replicas))
        measured = np.isin(n, [m for m, _ in self.points]) if self.assumed is None else np.zeros(n.shape, bool)
        return np.where(n == 1, "exact", np.where(measured, "measured", "assumed"))

    def __str__(self) -> str:
        if self.assumed is not None:
            return f"{self.assumed:.2f} assumed above 1 replica"
        if not self.points:
            return "linear (nothing measured above 1 replica)"
        pts = ", ".join(f"{e:.2f} at {n}" for n, e in self.points)
        return f"measured {pts}; Amdahl serial share {self.serial:.2f} elsewhere"


def as_scaling(value) -> Scaling:
    """A ``Scaling`` from a ``Scaling``, a number (a constant assumed above one replica) or None (linear)."""
    if isinstance(value, Scaling):
        return value
    if value is None:
        return Scaling.linear()
    v = float(value)
    return Scaling.linear() if v == 1.0 else Scaling.constant(v)


@dataclass(frozen=True)
class EpochEstimate:
    """The epoch time of one configuration and what bounds it."""

    examples: int
    replicas: int
    loader_rate: float
    compute_rate: float
    efficiency: float
    seconds: float
    bound: str  # "input" or "compute"
    loader_basis: str = ""
    compute_basis: str = ""
    efficiency_basis: str = ""

    @property
    def examples_per_s(self) -> float:
        return min(self.loader_rate, self.compute_capacity)

    @property
    def compute_capacity(self) -> float:
        """What the replicas together could train per second, fed instantly."""
        return self.replicas * self.compute_rate * self.efficiency

    @property
    def headroom(self) -> float:
        """Loader rate over compute capacity: above 1 the loader keeps up."""
        return self.loader_rate / self.compute_capacity

    @property
    def regime(self) -> str:
        """One line: which side bounds the epoch and what that means for more replicas."""
        if self.bound == "input":
            return (f"input-bound: the loader delivers {self.loader_rate:,.0f} examples/s, "
                    f"{self.compute_capacity / self.loader_rate:,.1f}x less than {self.replicas} "
                    f"replica(s) could train; more GPUs will not help")
        return (f"compute-bound: {self.replicas} replica(s) train {self.compute_capacity:,.0f} examples/s, "
                f"the loader could deliver {self.headroom:,.1f}x that")

    def __str__(self) -> str:
        eff = f"; efficiency {self.efficiency:.2f}, {self.efficiency_basis}" if self.efficiency_basis else ""
        return (f"{format_duration(self.seconds)} per epoch of {self.examples:,} examples, {self.regime} "
                f"(loader: {self.loader_basis or 'basis not given'}; "
                f"compute: {self.compute_basis or 'basis not given'}{eff})")


def compute_rate_from_step(step_ms: float, batch: int) -> float:
    """Examples/s one replica trains, from "my step takes ``step_ms`` ms at batch ``batch``"."""
    if not step_ms > 0:
        raise ValueError(f"step_ms must be positive, got {step_ms!r}")
    check_int("batch", batch)
    return batch / (step_ms / 1e3)


def _check_rate(name: str, value) -> float:
    value = float(value)
    if not value > 0:  # also refuses NaN
        raise ValueError(f"{name} must be a positive rate in examples/s, got {value!r}")
    return value


def epoch_estimate(examples: int, *, loader_rate: float, compute_rate: float, replicas: int = 1,
                   efficiency: "float | Scaling | None" = None, loader_basis: str = "",
                   compute_basis: str = "") -> EpochEstimate:
    """The epoch time of one configuration, from the loader's and the model's measured rates.

    Args:
        examples: examples per epoch.
        loader_rate: examples/s the loader alone delivers at the global batch.
        compute_rate: examples/s one replica trains with its input in memory.
        replicas: devices training in sync.
        efficiency: a ``Scaling``, a number assumed above one replica, or None (linear).
        loader_basis, compute_basis: how each rate was obtained (carried into the result).

    Returns:
        An ``EpochEstimate``: seconds, ``bound`` (``"input"`` when the loader is slower than the
        replicas together, else ``"compute"``) and the bases.
    """
    check_int("examples", examples)
    check_int("replicas", replicas)
    loader_rate = _check_rate("loader_rate", loader_rate)
    compute_rate = _check_rate("compute_rate", compute_rate)
    scaling = as_scaling(efficiency)
    eff = float(scaling.efficiency(replicas))
    capacity = replicas * compute_rate * eff
    bound = "input" if loader_rate < capacity else "compute"
    return EpochEstimate(int(examples), int(replicas), loader_rate, compute_rate, eff,
                         examples / min(loader_rate, capacity), bound, loader_basis, compute_basis,
                         scaling.basis(replicas))


def epoch_table(configs: pd.DataFrame, *, examples, replicas=1, compute_rate=None,
                efficiency=None) -> pd.DataFrame:
    """``epoch_estimate`` over a table of configurations, vectorised.

    Args:
        configs: one row per configuration: ``loader_rate`` and ``compute_rate`` (per replica,
            examples/s), a ``scaling`` column of ``Scaling`` (else an ``efficiency`` column assumed
            above one replica, else linear); other columns are kept.
        examples, replicas: one number or a sequence each, crossed (one row per combination).
        compute_rate: per-replica compute rate for every row, overriding the column.
        efficiency: overrides every row's scaling (a ``Scaling`` or a number assumed above one replica).

    Returns:
        ``configs``' columns plus ``examples``, ``replicas``, ``efficiency``,
        ``efficiency_kind`` (exact, measured, assumed), ``compute_capacity``,
        ``examples_per_s``, ``epoch_s``, ``bound`` and ``headroom``.
    """
    d = configs.copy()
    if compute_rate is not None:
        d["compute_rate"] = _check_rate("compute_rate", compute_rate)
    for col in ("loader_rate", "compute_rate"):
        if col not in d.columns:
            raise ValueError(f"configs needs a {col!r} column (examples/s), has {list(configs.columns)}")
        bad = ~(pd.to_numeric(d[col], errors="coerce") > 0)
        if bad.any():
            raise ValueError(f"{col} must be a positive rate; row {d.index[bad][0]!r} has "
                             f"{d.loc[bad, col].iloc[0]!r}")
    if efficiency is not None:
        d["scaling"] = [as_scaling(efficiency)] * len(d)
    elif "scaling" in d.columns:
        d["scaling"] = [as_scaling(s) for s in d["scaling"]]
    elif "efficiency" in d.columns:  # one efficiency per row, assumed above one replica
        d["scaling"] = [as_scaling(e) for e in d["efficiency"]]
    else:
        d["scaling"] = [Scaling.linear()] * len(d)
    grid = pd.MultiIndex.from_product([np.atleast_1d(examples), np.atleast_1d(replicas)],
                                      names=["examples", "replicas"]).to_frame(index=False)
    for name in ("examples", "replicas"):
        if (grid[name] < 1).any():
            raise ValueError(f"{name} must be >= 1, got {grid[name].min()!r}")
    out = d.drop(columns=[c for c in ("efficiency",) if c in d.columns]).merge(grid, how="cross")
    out["efficiency"] = [float(s.efficiency(int(r))) for s, r in zip(out["scaling"], out["replicas"])]
    out["efficiency_kind"] = [str(s.kind(int(r))[0]) for s, r in zip(out["scaling"], out["replicas"])]
    out["compute_capacity"] = out["replicas"] * out["compute_rate"] * out["efficiency"]
    out["examples_per_s"] = np.minimum(out["loader_rate"], out["compute_capacity"])
    out["epoch_s"] = out["examples"] / out["examples_per_s"]
    out["bound"] = np.where(out["loader_rate"] < out["compute_capacity"], "input", "compute")
    out["headroom"] = out["loader_rate"] / out["compute_capacity"]
    return out


def best_next_change(table: pd.DataFrame, current) -> dict | None:
    """The row of ``table`` (``epoch_table`` rows at one ``examples``) that shortens the epoch most
    against the row labelled ``current``: ``{"change", "from_s", "to_s", "gain", "row",
    "efficiency_kind"}`` (``change`` names what differs: loader, replicas), or None."""
    cur = table.loc[current]
    faster = table[table["epoch_s"] < cur["epoch_s"]]
    if faster.empty:
        return None
    best = faster.loc[faster["epoch_s"].idxmin()]
    what = []
    for col, label in (("variant", "loader"), ("replicas", "replicas")):
        if col in table.columns and best[col] != cur[col]:
            what.append(f"{label} {cur[col]} -> {best[col]}")
    return {"change": ", ".join(what) or "another configuration", "from_s": float(cur["epoch_s"]),
            "to_s": float(best["epoch_s"]), "gain": float(cur["epoch_s"] / best["epoch_s"]),
            "row": best.name, "efficiency_kind": best.get("efficiency_kind", "")}


def user_scale() -> dict:
    """The users' scale each registered case declares: ``{case: {"examples", "replicas", "global_batch"}}``."""
    return {c.name: c.scale.as_dict() for c in registry.cases() if c.scale is not None}


def saved(ledger: pd.DataFrame, machine_label: str | None = None) -> pd.DataFrame:
    """The latest full (not ``--fast``) comparison in a ledger (``kit.results.load``),
    from the machine ``machine_label`` (None: the latest of each machine); empty when none."""
    d = ledger[ledger["bench"] == "compare"] if "bench" in ledger.columns else ledger.iloc[:0]
    if "fast" in d.columns:
        d = d[~d["fast"].eq(True)]
    if machine_label is not None:
        d = d[d["machine_label"] == machine_label]
    return results.latest(d, "compare") if not d.empty else d


def configurations(rates: pd.DataFrame, *, efficiency: float | None = None) -> pd.DataFrame:
    """Pairs each loader with its case's model: the input of ``epoch_table``.

    Args:
        rates: rows of one comparison run (``kind`` loader and compute), e.g. one machine's
            ``kit.results.latest(ledger, "compare")``.
        efficiency: an efficiency to assume above one replica (None: the measured ones).

    Returns:
        One row per loader: ``case``, ``unit`` (what one example is), ``variant``, ``model``,
        ``loader_rate``, ``compute_rate`` (one replica's), ``scaling`` (a ``Scaling`` from the
        measured efficiencies), the rounds' spread, ``loader_basis``, ``compute_basis``.
    """
    loaders = rates[rates["kind"] == "loader"]
    compute = rates[rates["kind"] == "compute"]
    out = []
    for r in loaders.itertuples():
        if r.case not in registry.names():
            continue
        model = registry.get(r.case).model_for(r.variant)  # the model this case's loader feeds
        c = compute[(compute["case"] == r.case) & (compute["variant"] == model)].sort_values("replicas")
        if c.empty:
            continue
        if efficiency is not None:
            scaling = Scaling.constant(efficiency)
        else:
            devices = c.iloc[-1].get("devices", "") if "devices" in c.columns else ""
            # a count without an efficiency (NaN) is skipped, as Scaling.measured skips None
            scaling = Scaling.measured({int(n): (math.nan if e is None or pd.isna(e) else float(e))
                                        for n, e in zip(c["replicas"], c["efficiency"])},
                                       source=f"{model} on {devices or 'this machine'}")
        out.append({"case": r.case, "unit": registry.unit(r.case), "variant": r.variant, "model": model, "loader_rate": r.examples_per_s,
                    "loader_round_min": getattr(r, "round_min", None), "loader_round_max": getattr(r, "round_max", None),
                    "compute_rate": float(c.iloc[0]["per_replica_examples_per_s"]), "scaling": scaling,
                    # the rounds' spread: one replica's, and the efficiency's at the largest count
                    "compute_round_min": _get(c.iloc[0], "round_min"), "compute_round_max": _get(c.iloc[0], "round_max"),
                    "efficiency_min": _get(c.iloc[-1], "efficiency_min"),
                    "efficiency_max": _get(c.iloc[-1], "efficiency_max"),
                    "loader_examples": getattr(r, "examples", None),
                    "loader_basis": r.basis, "compute_basis": c.iloc[0]["basis"]})
    return pd.DataFrame(out)


def _get(row, column):
    value = row.get(column) if hasattr(row, "get") else None
    return None if value is None or pd.isna(value) else float(value)


def headline(table: pd.DataFrame) -> str:
    """One line for the index page: the slowest and the fastest loader's projected epoch, from
    ``epoch_table`` rows of one case at one size and replica count."""
    t = table.set_index("variant")
    case, examples, replicas = t["case"].iloc[0], int(t["examples"].iloc[0]), int(t["replicas"].iloc[0])
    slowest, fastest = t["epoch_s"].idxmax(), t["epoch_s"].idxmin()

    def num(v, column):
        x = pd.to_numeric(t[column], errors="coerce").get(v) if column in t.columns else None
        return x if x is not None and x > 0 else None

    def spread(v):
        """The epoch over the slowest and the fastest round of whichever side bounds it."""
        if t.loc[v, "bound"] == "input":
            lo, hi = num(v, "loader_round_min"), num(v, "loader_round_max")
        else:
            lo, hi = num(v, "compute_round_min"), num(v, "compute_round_max")
            if lo is not None and hi is not None and t.loc[v, "efficiency_kind"] == "measured" and replicas > 1:
                e_lo, e_hi = num(v, "efficiency_min"), num(v, "efficiency_max")
                if e_lo is None or e_hi is None:
                    return ""
                lo, hi = lo * e_lo, hi * e_hi
            if lo is not None and hi is not None:
                eff = 1.0 if t.loc[v, "efficiency_kind"] == "measured" and replicas > 1 else t.loc[v, "efficiency"]
                loader = t.loc[v, "loader_rate"]
                lo, hi = min(loader, replicas * lo * eff), min(loader, replicas * hi * eff)
        if lo is None or hi is None:
            return ""
        return f" (rounds {format_duration(examples / hi)}-{format_duration(examples / lo)})"

    line = (f"{case}, {examples:,} {registry.unit(case)} on {replicas} replica(s): "
            f"{slowest} {format_duration(t.loc[slowest, 'epoch_s'])}{spread(slowest)} -> {fastest} "
            f"{format_duration(t.loc[fastest, 'epoch_s'])}{spread(fastest)} per epoch "
            f"({t.loc[slowest, 'epoch_s'] / t.loc[fastest, 'epoch_s']:,.0f}x)")
    if replicas > 1 and "efficiency_kind" in t.columns:
        line += f", scaling efficiency {t.loc[fastest, 'efficiency']:.2f} ({t.loc[fastest, 'efficiency_kind']})"
    return line


def sample(rates: pd.DataFrame, case: str | None = None) -> str:
    """How much each loader's rate in ``rates`` (one ``run``) was measured on, in a few words."""
    loaders = rates[(rates["kind"] == "loader") & ((rates["case"] == case) if case else True)]
    n = pd.to_numeric(loaders["examples"], errors="coerce").dropna()
    return f"each loader timed on {int(n.min()):,}-{int(n.max()):,} examples" if len(n) else "rates of unknown size"
