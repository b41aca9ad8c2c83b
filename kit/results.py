"""The results ledger: every bench run's rows, with the machine and the time, in one file
(``ledger_path``), so that figures of different days or machines lie side by side.

JSON lines, one per measured row: the bench's row plus ``bench``, ``run_id``, ``time`` (UTC) and
``machine``. Each line is one ``write`` on an ``O_APPEND`` descriptor, so concurrent runs never
interleave within a line; ``load`` skips a torn or foreign line with a warning naming it, and also
reads the bench JSON files that ``--json`` writes, so results copied from another machine compare
directly. Rows an older kit left in ``notebooks/reports/results.jsonl`` are moved into the
project's ledger (``adopt_strays``).
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import uuid
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping

import pandas as pd

from kit.store.folder import default_workdir

__all__ = [
    'this_machine',
    'ledger_path',
    'new_run_id',
    'append',
    'machine_label',
    'load',
    'latest',
]

#: The ledger when ``$KIT_RESULTS`` is not set, relative to the project (``project_root``).
DEFAULT_PATH = Path("reports") / "results.jsonl"
#: Where an older kit's default put the ledger when notebooks ran (relative to the project).
STRAY_PATHS = (Path("notebooks") / "reports" / "results.jsonl",)
#: Keys every ledger row carries; a line without them is not a ledger row.
REQUIRED = ("bench", "run_id", "time", "machine")


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def this_machine() -> dict:
    """What the figures were measured on: host, CPU model and cores, GPUs, versions."""
    info: dict[str, Any] = {"host": platform.node(), "cpu_model": _cpu_model(), "python": platform.python_version(),
                            "platform": platform.platform(), "cpus": os.cpu_count(),
                            "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None}
    try:
        import tensorflow as tf  # keeps kit.results light: TensorFlow (optional there)

        info["tensorflow"] = tf.__version__
        gpus = tf.config.list_physical_devices("GPU")
        info["gpus"] = [d.name for d in gpus]
        info["gpu_names"] = [tf.config.experimental.get_device_details(d).get("device_name", d.name)
                             for d in gpus]
    except ImportError:
        pass
    return info


def project_root() -> Path | None:
    """The checkout holding the kit (its ``pyproject.toml`` names the project ``kit``), or None
    when the kit is installed outside one (site-packages)."""
    root = Path(__file__).resolve().parent.parent
    try:
        text = (root / "pyproject.toml").read_text()
    except OSError:
        return None
    return root if 'name = "kit"' in text else None


def ledger_path() -> Path:
    """The ledger's path: ``$KIT_RESULTS``; else ``reports/results.jsonl`` in the project
    (``project_root``), whatever the working directory; else ``results.jsonl`` in the kit
    cache folder (``$KIT_CACHE`` or ``~/.cache/kit``) when the kit is not in a checkout."""
    env = os.environ.get("KIT_RESULTS")
    if env:
        return Path(env).absolute()
    root = project_root()
    if root is not None:
        return root / DEFAULT_PATH
    return default_workdir() / "results.jsonl"


def _is_ledger_row(obj) -> bool:
    return isinstance(obj, dict) and all(k in obj for k in REQUIRED)


def _first_row(file: Path):
    """The JSON of ``file``'s first line: ``""`` where it is missing or blank, None where not JSON."""
    try:
        with open(file, "rb") as f:
            first = f.readline()
        return json.loads(first) if first.strip() else ""
    except FileNotFoundError:
        return ""
    except ValueError:
        return None


def _is_default(file: Path) -> bool:
    root = project_root()
    return root is not None and Path(file).absolute() == root / DEFAULT_PATH


def adopt_strays(ledger: Path | None = None, *, log=print) -> int:
    """Moves rows an older kit left in ``notebooks/reports/results.jsonl`` into ``ledger`` (the
    project's default ledger only); returns how many. The stray is renamed first, so two processes
    never move it twice; a foreign file is left where it is."""
    root = project_root()
    ledger = Path(ledger) if ledger is not None else ledger_path()
    if root is None or not _is_default(ledger):
        return 0
    moved = 0
    for rel in STRAY_PATHS:
        stray = root / rel
        if not stray.is_file() or not _is_ledger_row(_first_row(stray)):
            continue  # not a ledger the kit wrote: never touched
        claimed = stray.with_name(f"{stray.name}.moving-{os.getpid()}")
        try:
            os.rename(stray, claimed)
        except FileNotFoundError:  # another process took it first
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rows = _read_ledger(claimed)
        lines = [(json.dumps({k: v for k, v in r.items() if k != "source"}, allow_nan=False) + "\n").encode()
                 for r in rows]
        _append_lines(ledger, lines)
        claimed.unlink()
        moved += len(lines)
        log(f"results: moved {len(lines)} row(s) from {stray} (written by an older kit run from notebooks/) "
            f"into {ledger}")
    return moved


def new_run_id() -> str:
    """A fresh run id: the UTC time to the second and a random suffix (sortable, unique)."""
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:8]


def _utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _plain(value):
    """JSON-ready: numpy scalars to Python, NaN and infinities to ``None``."""
    if hasattr(value, "item") and not isinstance(value, (list, dict, str)):
        try:
            value = value.item()
        except (ValueError, TypeError):
            pass
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _check_is_ledger(file: Path) -> None:
    """Refuses to append to an existing file whose first line is not a ledger row."""
    first = _first_row(file)
    if first != "" and not _is_ledger_row(first):
        raise ValueError(f"{file} exists and is not a kit results ledger (its first line is not a "
                         f"ledger row); set KIT_RESULTS to another file")


def append(rows: pd.DataFrame | Iterable[Mapping], *, bench: str, machine: Mapping | None = None,
           run_id: str | None = None, extra: Mapping | None = None, file=None) -> Path:
    """Appends a bench run's rows (a DataFrame or mappings) to the ledger, one JSON line each;
    returns the ledger's path.

    Args:
        bench: the bench's name.
        machine: what it was measured on (``this_machine()`` if None).
        run_id: one id shared by the run's rows (a fresh one if None).
        extra: run-level fields copied into each row that lacks them (nested values dropped,
            except ``config``).
        file: the ledger (default ``ledger_path()``).
    """
    if isinstance(rows, pd.DataFrame):
        rows = rows.to_dict(orient="records")
    if machine is None:
        machine = this_machine()
    file = Path(file) if file is not None else ledger_path()
    run_id = run_id or new_run_id()
    now = _utc_now()
    scalars = {k: v for k, v in (extra or {}).items() if k == "config" or not isinstance(v, (dict, list, tuple))}
    lines = []
    for row in rows:
        obj = {**scalars, **dict(row), "bench": bench, "run_id": run_id, "time": now,
               "machine": dict(machine)}
        lines.append((json.dumps(_plain(obj), allow_nan=False) + "\n").encode())
    if not lines:
        return file
    adopt_strays(file, log=_say)
    _append_lines(file, lines)
    return file


def _say(text: str) -> None:
    print(text, file=sys.stderr)


def _append_lines(file: Path, lines: list[bytes]) -> None:
    if not lines:
        return
    file.parent.mkdir(parents=True, exist_ok=True)
    _check_is_ledger(file)
    fd = os.open(file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        for line in lines:  # one write per complete line: appends never interleave within a line
            written = os.write(fd, line)
            if written != len(line):
                raise OSError(f"short write to {file}: {written} of {len(line)} bytes (disk full?)")
    finally:
        os.close(fd)


def machine_label(machine: Mapping | None) -> str:
    """A short name for a machine block: host, CPU model, cores, GPUs."""
    if not isinstance(machine, Mapping) or not machine:
        return "unknown machine"
    parts = []
    if machine.get("host"):
        parts.append(str(machine["host"]))
    if machine.get("cpu_model"):
        parts.append(str(machine["cpu_model"]))
    cores = machine.get("cpus_usable") or machine.get("cpus")
    if cores:
        parts.append(f"{cores} cores")
    gpus = machine.get("gpus")
    if isinstance(gpus, (list, tuple)):
        names = machine.get("gpu_names") or []
        parts.append(f"{len(gpus)} GPU" + ("" if len(gpus) == 1 else "s")
                     + (f" ({names[0]})" if names else ""))
    if not parts and machine.get("platform"):
        parts.append(str(machine["platform"]))
    return ", ".join(parts)


def _read_ledger(file: Path) -> list[dict]:
    rows = []
    with open(file, "rb") as f:
        for number, raw in enumerate(f, start=1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except ValueError:
                obj = None
            if not (_is_ledger_row(obj) and raw.endswith(b"\n")):
                warnings.warn(f"{file}: line {number} is not a complete ledger row (torn write or foreign "
                              f"text); skipped", stacklevel=3)
                continue
            obj["source"] = str(file)
            rows.append(obj)
    return rows


def _read_bench_json(file: Path) -> list[dict]:
    try:
        obj = json.loads(file.read_text())
    except (ValueError, UnicodeDecodeError):
        obj = None
    if not (isinstance(obj, dict) and isinstance(obj.get("rows"), list) and "bench" in obj):
        warnings.warn(f"{file}: not a kit bench result ({{'bench', 'rows', 'machine'}}); skipped",
                      stacklevel=3)
        return []
    when = datetime.fromtimestamp(file.stat().st_mtime, timezone.utc).isoformat(timespec="seconds")
    extra = {k: v for k, v in obj.items()
             if k not in ("bench", "rows", "machine", "run_id") and (k == "config" or not isinstance(v, (dict, list)))}
    rows = []
    for number, row in enumerate(obj["rows"]):
        if not isinstance(row, dict):
            warnings.warn(f"{file}: row {number} is not an object; skipped", stacklevel=3)
            continue
        rows.append({**extra, **row, "bench": obj["bench"], "run_id": obj.get("run_id") or f"file:{file}",
                     "time": when, "machine": obj.get("machine") or {}, "source": str(file)})
    return rows


def _files(sources) -> list[Path]:
    out = []
    for s in sources:
        p = Path(s)
        if p.is_dir():
            out += sorted(q for q in p.rglob("*") if q.suffix in (".jsonl", ".json") and q.is_file())
        elif p.exists():
            out.append(p)
    return out


def load(path=None) -> pd.DataFrame:
    """Reads ledgers and bench JSON files into one DataFrame, one row per measured row.

    Args:
        path: a ledger (``.jsonl``), a bench JSON file, a folder (every such file under it), or a
            list of these; default the ledger. Missing paths give no rows.

    Returns:
        The rows plus ``bench``, ``run_id``, ``time`` (UTC; a JSON file's modification time),
        ``machine``, ``machine_label`` and ``source`` (the file); empty, with those columns, when
        there is nothing to read.
    """
    sources: list[str | os.PathLike]
    if path is None:
        sources = [ledger_path()]
    elif isinstance(path, (str, os.PathLike)):
        sources = [path]
    else:
        sources = list(path)
    for s in sources:
        if isinstance(s, (str, os.PathLike)) and str(s).endswith(".jsonl") and _is_default(Path(s)):
            adopt_strays(Path(s), log=print)
    rows: list[dict] = []
    files = _files(sources)
    for file in files:  # ledgers first: a bench JSON of a run the ledger holds adds nothing
        if file.suffix == ".jsonl":
            rows += _read_ledger(file)
    seen = {r["run_id"] for r in rows}
    for file in files:
        if file.suffix != ".jsonl":
            rows += [r for r in _read_bench_json(file) if r["run_id"] not in seen]
    columns = ["bench", "run_id", "time", "machine", "machine_label", "source"]
    if not rows:
        return pd.DataFrame(columns=columns)
    df = pd.DataFrame(rows)
    df["machine_label"] = [machine_label(m) for m in df["machine"]]
    df["time"] = pd.to_datetime(df["time"], utc=True, errors="coerce")
    return df.sort_values("time", kind="stable").reset_index(drop=True)


def latest(df: pd.DataFrame, bench: str) -> pd.DataFrame:
    """The rows of the most recent run of ``bench`` on each machine in ``df``."""
    d = df[df["bench"] == bench]
    if d.empty:
        return d
    last = d.groupby("machine_label")["time"].transform("max")
    d = d[d["time"] == last]
    newest_run = d.groupby("machine_label")["run_id"].transform("last")
    return d[d["run_id"] == newest_run].reset_index(drop=True)
