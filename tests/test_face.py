"""The public face (issues 42 and 53): ``kit``'s names and each subpackage's ``__all__``; notebooks use
nothing else, never a module inside a subpackage, reach a bench only through ``kit.run_bench`` (never
``kit.bench`` itself), and ``import kit`` stays light. Every name a face lists is declared where mypy
and editors see it, and all the ``__all__`` lists together stay short."""

import ast
import importlib
import json
import pkgutil
import subprocess
import sys
import types
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
    """``kit`` itself, a subpackage, or a module directly in ``kit`` that ``kit`` lists (``kit.plots``);
    never a module inside a subpackage (its package's ``__init__`` re-exports the names)."""
    parts = module_name.split(".")
    if parts == ["kit"]:
        return True
    return len(parts) == 2 and parts[0] == "kit" and (parts[1] in _subpackages() or parts[1] in kit.__all__)


def _module_named(parent: str, name: str) -> str | None:
    """The module that ``from parent import name`` gives (a submodule, or a face name bound to a
    module, as ``kit.features`` once was), or None for anything else."""
    value = getattr(importlib.import_module(parent), name, None)
    if value is None:
        return f"{parent}.{name}" if _is_module(f"{parent}.{name}") else None
    return value.__name__ if isinstance(value, types.ModuleType) else None


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
                    module = _module_named(node.module, a.name) if a.name in face else None
                    if a.name not in face or module is not None and not _public_module(module):
                        out.append(f"cell {n}: from {node.module} import {a.name}")
                    if module is not None:
                        bound[a.asname or a.name] = module
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
                module = _module_named(bound[base], node.attr)
                if module is not None and not _public_module(module) \
                        or module is None and node.attr not in _face_of(bound[base]):
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


def test_the_checker_finds_a_module_below_a_package_face(tmp_path):
    """A module inside a subpackage is the kit's own, even where its package once listed it: its
    package's ``__init__`` re-exports what a notebook calls."""
    path = _notebook(tmp_path, ["from kit.spectrogram import ladder\n", "import kit.segmentation.profile\n"],
                     ["from kit import spectrogram, plots\n", "spectrogram.order.epoch_rows\n",
                      "plots.throughput\n", "spectrogram.make_loader\n"],
                     ["from kit.models.unet import unet\n", "import kit.notebook\n", "kit.notebook.explorer\n"])
    assert sorted(reaches(path)) == ["cell 0: from kit.spectrogram import ladder",
                                     "cell 0: import kit.segmentation.profile",
                                     "cell 1: spectrogram.order",
                                     "cell 2: from kit.models.unet import ...",
                                     "cell 2: kit.notebook.explorer"]


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


def test_every_listed_name_of_a_subpackage_exists_and_is_no_module():
    """A subpackage lists names (``spectrogram.make_loader``), never one of its modules."""
    for pkg in _subpackages():
        module = importlib.import_module(f"kit.{pkg}")
        missing = [n for n in getattr(module, "__all__", ()) if not hasattr(module, n)]
        assert missing == [], pkg
        modules = [n for n in getattr(module, "__all__", ()) if isinstance(getattr(module, n), types.ModuleType)]
        assert modules == [], pkg


#: The most names all the ``__all__`` lists under kit/ may hold together (issue 53: about 650 once).
MAX_LISTED = 250


def _literal_all(path: Path) -> list[str] | None:
    """``__all__`` of the module at ``path``, read from its source (no import): a list of strings,
    ``*NAME`` of a tuple or list assigned at the module's top resolved; None where it has none."""
    tree = ast.parse(path.read_text())
    constants = {t.id: node.value for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                 and node.value is not None
                 for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(t, ast.Name)}
    if "__all__" not in constants:
        return None
    value = constants["__all__"]
    if isinstance(value, ast.Call):  # list(NAME): the keys of a dict, the items of a tuple
        return list(ast.literal_eval(constants[value.args[0].id]))
    names = []
    for item in value.elts:
        if isinstance(item, ast.Starred):
            names.extend(ast.literal_eval(constants[item.value.id]))
        else:
            names.append(ast.literal_eval(item))
    return names


def test_all_the_lists_together_stay_short():
    """Each module's ``__all__`` is what the kit's users call through it; a name only the kit's own
    packages use is imported from the module that defines it and listed nowhere."""
    sizes = {str(p.relative_to(ROOT)): len(names) for p in sorted((ROOT / "kit").rglob("*.py"))
             if (names := _literal_all(p)) is not None}
    assert sum(sizes.values()) <= MAX_LISTED, \
        f"{sum(sizes.values())} names listed, at most {MAX_LISTED}: " + ", ".join(f"{p} {n}" for p, n in sizes.items())


def _declared(path: Path) -> dict[str, ast.stmt]:
    """The names a module binds at its top, and those it imports in an ``if TYPE_CHECKING:`` block
    (what mypy and an editor see of a name its ``__getattr__`` loads on first use)."""
    out: dict[str, ast.stmt] = {}
    for node in ast.parse(path.read_text()).body:
        body = [node]
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            body = node.body
        for stmt in body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                out.update({(a.asname or a.name).split(".")[0]: stmt for a in stmt.names})
            elif isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
                out[stmt.name] = stmt
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                for t in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                    if isinstance(t, ast.Name):
                        out[t.id] = stmt
    return out


def _type_checking_imports(path: Path) -> dict[str, tuple[str, str]]:
    """name -> (module, attribute) of each ``from MODULE import ATTRIBUTE as name`` of the module's
    ``if TYPE_CHECKING:`` block."""
    out = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom), ast.unparse(stmt)
                out.update({a.asname or a.name: (stmt.module, a.name) for a in stmt.names})
    return out


def test_every_face_name_is_declared_for_type_checkers():
    """kit/__init__.py imports each name of ``kit.__all__`` in its ``if TYPE_CHECKING:`` block, from
    the module that ``kit`` loads it from on first use: mypy and editors see what ``kit.measure`` is."""
    declared = _type_checking_imports(ROOT / "kit" / "__init__.py")
    assert sorted(declared) == sorted(kit.__all__)
    for name, (module, attr) in declared.items():
        found = importlib.import_module(module)
        value = getattr(found, attr) if hasattr(found, attr) else importlib.import_module(f"{module}.{attr}")
        assert getattr(kit, name) is value, name
        exec(f"from kit import {name}", {})  # importable as a name, not only an attribute


def test_every_subpackage_name_is_declared_for_type_checkers():
    """A name a subpackage lists is bound in its ``__init__``, or (loaded on first use, to keep the
    package light) imported in its ``if TYPE_CHECKING:`` block."""
    for pkg in _subpackages():
        init = ROOT / "kit" / pkg / "__init__.py"
        undeclared = sorted(set(_literal_all(init) or ()) - set(_declared(init)))
        assert undeclared == [], f"kit.{pkg}"
