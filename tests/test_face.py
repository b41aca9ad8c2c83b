"""The public face (issue 42): ``kit``'s names and each subpackage's ``__all__``; notebooks use
nothing else, reach a bench only through ``kit.run_bench`` (never ``kit.bench`` itself), and
``import kit`` stays light."""

import ast
import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import kit

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _subpackages() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(kit.__path__) if m.ispkg)


def _face_of(module_name: str) -> set[str]:
    """What a notebook may take from a kit module: ``kit``'s names, a subpackage's ``__all__``."""
    if module_name == "kit":
        return set(kit.__all__) | set(_subpackages())
    module = importlib.import_module(module_name)
    return set(getattr(module, "__all__", ()))


def _public_module(module_name: str) -> bool:
    """``kit`` itself, a subpackage, or a module that ``kit`` or its package lists by name."""
    if module_name == "kit" or module_name.count(".") == 1 and module_name.split(".")[1] in _subpackages():
        return True
    parent, _, name = module_name.rpartition(".")
    return name in _face_of(parent)


def _cells(path: Path):
    for n, cell in enumerate(json.loads(path.read_text())["cells"]):
        if cell["cell_type"] == "code":
            src = "".join(cell["source"])
            src = "\n".join("" if line.lstrip().startswith(("!", "%")) else line for line in src.splitlines())
            yield n, ast.parse(src)


def reaches(path: Path) -> list[str]:
    """Every use in a notebook of a kit name outside the face, as ``cell N: what``."""
    bound: dict[str, str] = {}  # a local name -> the kit module it is
    out = []
    for n, tree in _cells(path):
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name == "kit.bench" or a.name.startswith("kit.bench."):
                        out.append(f"cell {n}: import {a.name} (call kit.run_bench)")
                    if a.name.startswith("kit"):
                        if not _public_module(a.name):
                            out.append(f"cell {n}: import {a.name}")
                        bound[a.asname or a.name] = a.name
                        if a.asname is None:
                            bound["kit"] = "kit"  # import kit.notebook binds kit as well
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kit"):
                if node.module == "kit.bench" or node.module.startswith("kit.bench.") \
                        or node.module == "kit" and any(a.name == "bench" for a in node.names):
                    out.append(f"cell {n}: from {node.module} import ... bench (call kit.run_bench)")
                    continue
                if not _public_module(node.module):
                    out.append(f"cell {n}: from {node.module} import ...")
                    continue
                face = _face_of(node.module)
                for a in node.names:
                    if a.name not in face:
                        out.append(f"cell {n}: from {node.module} import {a.name}")
                    full = f"{node.module}.{a.name}"
                    if a.name in _subpackages() and node.module == "kit" or _is_module(full):
                        bound[a.asname or a.name] = full
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                base = _dotted(node.value)
                if base not in bound:
                    continue
                if node.attr.startswith("__"):  # kit.__file__, kit.__version__: every module has them
                    continue
                if bound[base] == "kit" and node.attr == "bench":
                    out.append(f"cell {n}: {base}.bench (call kit.run_bench)")
                    continue
                full = f"{bound[base]}.{node.attr}"
                if _is_module(full) and not _public_module(full) or not _is_module(full) \
                        and node.attr not in _face_of(bound[base]):
                    out.append(f"cell {n}: {base}.{node.attr}")
    return out


def _is_module(name: str) -> bool:
    """Whether ``name`` (``kit.a.b``) is a module: its parent is a package that holds it."""
    parent, _, _ = name.rpartition(".")
    if not name.startswith("kit") or not hasattr(importlib.import_module(parent), "__path__"):
        return False
    return importlib.util.find_spec(name) is not None


def _dotted(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebooks_use_only_the_public_face(path):
    assert reaches(path) == []


def _notebook(tmp_path, *cells):
    """A notebook of code cells, each a list of source lines."""
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": [{"cell_type": "code", "source": lines} for lines in cells]}))
    return path


def test_the_checker_finds_a_reach_into_a_bench_module(tmp_path):
    path = _notebook(tmp_path, ["from kit.bench import scale\n", "scale.run()\n"],
                     ["from kit import timing\n", "timing.rates.cpu_used\n", "timing.nothing_here\n"])
    assert sorted(reaches(path)) == ["cell 0: from kit.bench import ... bench (call kit.run_bench)",
                                     "cell 1: timing.nothing_here", "cell 1: timing.rates"]


def test_a_notebook_reaches_a_bench_through_kit_run_bench_only(tmp_path):
    """Notebooks 04-07 once imported kit.bench for its run(); kit.run_bench is the one entry."""
    path = _notebook(tmp_path, ["from kit import bench\n", "bench.run('compare')\n"],
                     ["import kit.notebook\n", "kit.bench.run('compare')\n", "kit.run_bench('compare')\n"])
    assert reaches(path) == ["cell 0: from kit import ... bench (call kit.run_bench)",
                             "cell 1: kit.bench (call kit.run_bench)"]
    assert kit.run_bench is kit.bench.run


def test_every_face_name_resolves_and_import_kit_stays_light():
    for name in kit.__all__:
        assert getattr(kit, name) is not None, name
    code = "import sys, kit; kit.plots; kit.results; print('tensorflow' in sys.modules, 'keras' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
    assert 15 <= len(kit.__all__) <= 30


def test_every_listed_name_of_a_subpackage_exists():
    for pkg in _subpackages():
        module = importlib.import_module(f"kit.{pkg}")
        missing = [n for n in getattr(module, "__all__", ()) if not hasattr(module, n)
                   and importlib.util.find_spec(f"kit.{pkg}.{n}") is None]
        assert missing == [], pkg
