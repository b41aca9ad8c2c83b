"""`make lab` leaves git clean: the notebook filter (scripts/strip_outputs_filter.sh) and the save
hook (scripts/lab_config.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent


def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          capture_output=True, text=True, check=True, timeout=120).stdout


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.filterwarnings("ignore:Overriding existing post_save_hook")  # jupyter_server validates it twice
def test_a_jupyterlab_save_of_a_run_notebook_leaves_git_clean(tmp_path):
    """A notebook saved as JupyterLab 4 saves it after a run, through the Jupyter server's own contents
    manager with `make lab`'s settings (scripts/lab_config.py): git sees the committed bytes."""
    pytest.importorskip("nbstripout", reason="pip install -e '.[dev]' installs nbstripout")
    filemanager = pytest.importorskip("jupyter_server.services.contents.filemanager")
    from traitlets.config import PyFileConfigLoader

    repo, name = tmp_path / "repo", "00_quickstart.ipynb"
    for rel in (".gitattributes", ".gitignore", "scripts/strip_outputs_filter.sh", "scripts/lab_config.py",
                f"notebooks/{name}"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_bytes((ROOT / rel).read_bytes())
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "--no-gpg-sign", "-m", "as committed")
    subprocess.run(["sh", "scripts/strip_outputs_filter.sh", sys.executable], cwd=repo, check=True, timeout=120)
    path = repo / "notebooks" / name
    committed = path.read_bytes()
    nb = json.loads(committed)
    tags = [c["metadata"].get("tags") for c in nb["cells"]]
    assert ["parameters"] in tags and ["headline"] in tags

    # What JupyterLab 4 adds: the kernel's spec and language details, widget state, outputs and counts,
    # cell timings (recordTiming), scrolled/collapsed/hidden views, and the cell Shift+Enter adds last.
    nb["metadata"]["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    nb["metadata"]["language_info"] = {
        "codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py", "mimetype": "text/x-python",
        "name": "python", "nbconvert_exporter": "python", "pygments_lexer": "ipython3", "version": "3.11.7"}
    nb["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {
        "state": {"7f0c": {"model_name": "LayoutModel", "model_module": "@jupyter-widgets/base",
                           "model_module_version": "2.0.0", "state": {}}},
        "version_major": 2, "version_minor": 0}}
    for count, cell in enumerate((c for c in nb["cells"] if c["cell_type"] == "code"), start=1):
        cell["execution_count"] = count
        cell["outputs"] = [
            {"output_type": "stream", "name": "stdout", "text": ["a result\n"]},
            {"output_type": "execute_result", "execution_count": count, "metadata": {},
             "data": {"text/plain": [f"Out[{count}]"]}}]
        cell["metadata"]["execution"] = {"iopub.execute_input": "2026-12-02T09:00:00.000001Z",
                                         "iopub.status.busy": "2026-12-02T09:00:00.000000Z",
                                         "iopub.status.idle": "2026-12-02T09:00:01.000000Z",
                                         "shell.execute_reply": "2026-12-02T09:00:01.000000Z"}
        cell["metadata"].update(scrolled=True, collapsed=False, jupyter={"outputs_hidden": False, "source_hidden": True})
    nb["cells"].append({"cell_type": "code", "execution_count": None, "id": "5e1ec7ed", "metadata": {},
                        "outputs": [], "source": []})
    config = PyFileConfigLoader("lab_config.py", path=str(repo / "scripts")).load_config()
    config.NotebookNotary.db_file, config.NotebookNotary.secret = ":memory:", b"test"  # nothing in ~/.local
    manager = filemanager.FileContentsManager(root_dir=str(repo / "notebooks"), config=config)
    manager.save({"type": "notebook", "format": "json", "content": nb}, name)

    saved = json.loads(path.read_bytes())
    assert saved["metadata"]["kernelspec"]["display_name"] == "Python 3 (ipykernel)" and saved["metadata"]["widgets"]
    assert all(c["outputs"] for c in saved["cells"] if c["cell_type"] == "code" and c["source"])  # on disk
    assert _git(repo, "status", "--porcelain") == ""
    assert _git(repo, "diff", "HEAD", "--stat") == ""
    assert _git(repo, "hash-object", f"notebooks/{name}") == _git(repo, "rev-parse", f"HEAD:notebooks/{name}")

    # A real edit is not hidden: git lists the notebook and shows the edit, nothing else.
    last = [c for c in nb["cells"] if c["cell_type"] == "code" and c["source"]][-1]
    last["source"][-1] += "  # edited"
    manager.save({"type": "notebook", "format": "json", "content": nb}, name)
    assert _git(repo, "status", "--porcelain") == f" M notebooks/{name}\n"
    changed = [line for line in _git(repo, "diff").splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert changed[1:] == ["+    " + json.dumps(last["source"][-1], ensure_ascii=False)] and len(changed) == 2


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb")), ids=lambda p: p.name)
def test_a_committed_notebook_passes_the_lab_filter_unchanged(path):
    """What `make lab`'s filter gives git is the file itself: otherwise a saved notebook shows a diff."""
    pytest.importorskip("nbstripout", reason="pip install -e '.[dev]' installs nbstripout")
    filtered = subprocess.run(["sh", str(ROOT / "scripts" / "strip_outputs_filter.sh"), "--clean", sys.executable,
                               str(path)], capture_output=True, check=True, timeout=120).stdout
    assert filtered == path.read_bytes(), (
        f"{path.name} is not as the filter writes it (key order, outputs or metadata); rewrite it with: "
        f"sh scripts/strip_outputs_filter.sh --clean PYTHON {path.relative_to(ROOT)} > tmp && mv tmp ...")


@pytest.mark.slow
@pytest.mark.skipif(subprocess.run(["git", "--version"], capture_output=True).returncode != 0,
                    reason="needs git")
def test_lab_filter_keeps_an_executed_notebook_out_of_git(tmp_path):
    pytest.importorskip("nbstripout", reason="pip install -e '.[dev]' installs nbstripout")
    root = Path(__file__).resolve().parent.parent
    repo = tmp_path / "repo"
    (repo / "notebooks").mkdir(parents=True)
    (repo / ".gitattributes").write_text((root / ".gitattributes").read_text())
    committed = root / "notebooks" / "00_quickstart.ipynb"
    target = repo / "notebooks" / committed.name
    target.write_bytes(committed.read_bytes())

    def git(*args):
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout

    git("init", "-q")
    git("-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "clean notebook")
    subprocess.run(["sh", str(root / "scripts" / "strip_outputs_filter.sh"), sys.executable], cwd=repo, check=True)
    # What a JupyterLab run saves: outputs, counts, the kernel's language details, cell metadata.
    nb = nbformat.read(target, as_version=4)
    for i, c in enumerate(x for x in nb.cells if x.cell_type == "code"):
        c.execution_count = i + 1
        c.outputs = [nbformat.v4.new_output("stream", name="stdout", text="a result\n" * 50)]
        c.metadata["execution"] = {"iopub.execute_input": "2026-11-30T09:00:00Z"}
        c.metadata["scrolled"] = True
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.7", "mimetype": "text/x-python",
                                    "codemirror_mode": {"name": "ipython", "version": 3},
                                    "file_extension": ".py", "nbconvert_exporter": "python",
                                    "pygments_lexer": "ipython3"}
    nbformat.write(nb, target)
    assert "a result" in target.read_text()  # the file on disk keeps its outputs
    assert git("diff", "--no-textconv", "--stat") == ""  # compared through the clean filter
    # git status lists the file until it is staged (its size differs from the index's); staging
    # it through the filter stages nothing: no output can be committed.
    git("add", "-A")
    assert git("status", "--porcelain") == "" and git("diff", "--cached", "--stat") == ""
