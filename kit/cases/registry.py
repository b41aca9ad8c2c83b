"""The case registry: each case declares itself once here, and every consumer iterates it.

A case (``kit.spectrogram``, ``kit.segmentation``, or a third one) is one ``Case``: its name and
units, how to open its index CSV and how to tell one apart, its sample maker and the maker's
options, its loader variants (a module with ``VARIANTS`` and ``make_loader``), the user's pattern
and batch, the users' scale, the model its loaders feed, and the kinds of derived stores it builds.
The samples CLI, the generic loader bench, notebook 05's configurations and explorer, the plots'
units, the doctor's lookup of a kit loader, the cache listing and the demo read it here.

Built-in cases are imported on first use (no TensorFlow at import time). More cases register with
``register(case)``; a module named in ``$KIT_CASES`` (comma-separated) is imported first, so a case
outside the kit (a test's, a user's) reaches the command line too.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

#: The modules that declare the kit's own cases (each calls ``register`` when imported).
BUILTIN = ("kit.spectrogram.case", "kit.segmentation.case")


@dataclass(frozen=True)
class Scale:
    """The users' scale: examples per epoch, replicas and the global batch they train at."""

    examples: int
    replicas: int
    global_batch: int

    def __post_init__(self):
        for name in ("examples", "replicas", "global_batch"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")

    def as_dict(self) -> dict:
        return {"examples": self.examples, "replicas": self.replicas, "global_batch": self.global_batch}


@dataclass(frozen=True)
class SampleOption:
    """One option of a case's sample maker, as ``python -m kit samples CASE`` takes it."""

    name: str                      # the maker's keyword (``frames_per_file``); the flag is ``--frames-per-file``
    type: Callable[[str], Any]
    help: str
    default: Any = None            # None with ``required``: the flag must be given
    required: bool = False
    choices: tuple | None = None


@dataclass(frozen=True)
class Case:
    """What one case is, declared once.

    Attributes:
        name: the case's name on the command line and in results (``"spectrogram"``).
        unit: what one example is, plural (``"frames"``).
        description: one line for ``--help``.
        loaders: the module holding ``VARIANTS`` (name -> one line) and ``make_loader``.
        index_columns: header columns that mark this case's index CSV (all must be present).
        open_index: index CSV path -> the validated index.
        make_loader: ``(variant, csv, index, batch_size=..., **options)`` -> a loader; the one
            uniform way to build a loader of any case from its CSV (a case needing more than
            the index, such as a palette, finds it beside the CSV).
        make_samples: ``(out, *, seed, force, **options)`` -> the index CSV it wrote.
        sample_options: the maker's options beyond ``out``, ``seed`` and ``force``.
        embedded: the committed sample index (``data_samples/``), or None.
        default_variant: the user's own pattern (the doctor's and the benches' baseline).
        default_batch: the user's batch.
        scale: the users' scale (notebook 05 projects to it).
        model_for: variant -> the name of the model that loader feeds (notebook 05 pairs them).
        store_kinds: prefixes of the kinds of derived stores the case builds (the cache's units).
    """

    name: str
    unit: str
    description: str
    loaders: str
    index_columns: frozenset
    open_index: Callable[[Path], Any]
    make_loader: Callable[..., Any]
    make_samples: Callable[..., Path]
    sample_options: tuple = ()
    embedded: Path | None = None
    default_variant: str = ""
    default_batch: int = 32
    scale: Scale | None = None
    model_for: Callable[[str], str] = field(default=lambda variant: "model")
    store_kinds: tuple = ()

    def __post_init__(self):
        if not self.name or not self.name.replace("_", "").isalnum():
            raise ValueError(f"a case's name must be a word, got {self.name!r}")
        if not self.index_columns:
            raise ValueError(f"case {self.name!r} must name the index columns that mark its CSV")

    def variants(self) -> dict[str, str]:
        """The case's loader variants: name -> one line (its module's ``VARIANTS``)."""
        return dict(importlib.import_module(self.loaders).VARIANTS)

    def loader(self, csv: str | os.PathLike, variant: str | None = None, *, batch_size: int | None = None,
               **options):
        """A loader of this case over the index CSV ``csv`` (default: the user's pattern and batch)."""
        csv = Path(csv)
        if not csv.is_file():
            raise FileNotFoundError(f"{csv}: index CSV not found")
        variant = variant or self.default_variant
        known = self.variants()
        if variant not in known:
            raise ValueError(f"variant {variant!r} is not a {self.name} variant; known: {', '.join(known)}")
        return self.make_loader(variant, csv, self.open_index(csv), batch_size=batch_size or self.default_batch,
                                **options)


_CASES: dict[str, Case] = {}
_LOADED: set[str] = set()


def register(case: Case) -> Case:
    """Adds ``case`` to the registry (again under the same name: replaces it). Returns it."""
    if not isinstance(case, Case):
        raise TypeError(f"register takes a kit.cases.Case, got {type(case).__name__}")
    _CASES[case.name] = case
    return case


def _load() -> None:
    extra = tuple(m.strip() for m in os.environ.get("KIT_CASES", "").split(",") if m.strip())
    for module in BUILTIN + extra:
        if module not in _LOADED:
            _LOADED.add(module)
            try:
                importlib.import_module(module)
            except ImportError as e:
                _LOADED.discard(module)
                raise ValueError(f"KIT_CASES names {module!r}, which cannot be imported: {e}") from e


def cases() -> list[Case]:
    """Every registered case, the kit's own first."""
    _load()
    return list(_CASES.values())


def names() -> list[str]:
    return [c.name for c in cases()]


def get(name: str) -> Case:
    """The case called ``name``; an unknown name is one clear error listing the known ones."""
    _load()
    if name not in _CASES:
        raise ValueError(f"unknown case {name!r}; known: {', '.join(_CASES)}")
    return _CASES[name]


def scale_of(name: str) -> Scale:
    """The users' scale that case ``name`` declares; a case that declares none is one clear error."""
    scale = get(name).scale
    if scale is None:
        raise ValueError(f"case {name!r} declares no users' scale (Case.scale)")
    return scale


def for_index(csv: str | os.PathLike) -> Case:
    """The case whose index CSV ``csv`` is, told by its header's columns."""
    csv = Path(csv)
    if not csv.is_file():
        raise FileNotFoundError(f"{csv}: index CSV not found")
    with open(csv, newline="") as f:
        header = {h.strip() for h in f.readline().split(",")}
    matches = [c for c in cases() if c.index_columns <= header]
    if not matches:
        known = "; ".join(f"{c.name} ({','.join(sorted(c.index_columns))})" for c in cases())
        raise ValueError(f"{csv}: its header ({','.join(sorted(header))}) is no known case's index: {known}")
    return max(matches, key=lambda c: len(c.index_columns))  # the most specific


def unit(case: str, default: str = "examples") -> str:
    """What one example of ``case`` is (``"frames"``), or ``default`` for an unknown case."""
    _load()
    c = _CASES.get(case)
    return c.unit if c else default


def unit_of_kind(kind: str, default: str = "items") -> str:
    """What a derived store of ``kind`` (``"spectrogram-memmap"``) counts, by its case's store kinds."""
    for c in cases():
        if any(kind == k or kind.startswith(k + "-") for k in c.store_kinds):
            return c.unit
    return default
