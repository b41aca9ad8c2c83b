"""kit.notebook.setup and kit.samples.cached: what every notebook starts with."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kit import samples, util

ROOT = Path(__file__).resolve().parent.parent


def test_version_floors_match_pyproject():
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    floors = {m[1]: m[2] for d in deps if (m := re.match(r"([a-z_-]+)>=([\d.]+)", d))}
    assert {k: floors[k] for k in util.VERSION_FLOORS} == util.VERSION_FLOORS


def test_setup_returns_fast_and_prints_versions_and_gpus():
    code = ("import os, warnings; os.environ['KIT_FAST'] = '1'; import kit.notebook as n; fast = n.setup(); "
            "import plotly.io as pio; print('FAST', fast, os.environ['TF_CPP_MIN_LOG_LEVEL'], pio.renderers.default); "
            "print('filtered', any(f[0] == 'ignore' and f[1] and f[1].pattern == '.*shuffle=True.*' "
            "for f in warnings.filters)); from kit.memory import malloc_setting; "
            "print('kept', malloc_setting()['kept_by_kit'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(Path.home())}).stdout
    lines = out.strip().splitlines()
    assert re.match(r"kit [\d.]+, tensorflow [\d.]+, keras [\d.]+, numpy [\d.]+$", lines[0])
    assert lines[1].startswith("GPUs: ") or lines[1].startswith("No GPU found")
    printed = lines[-3:]  # what the code above printed after setup()'s own lines
    assert printed[0] == "FAST True 2 plotly_mimetype+notebook"
    assert printed[1] == "filtered True"
    glibc = (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    assert printed[2] == f"kept {glibc}"  # freed batch buffers kept mapped (kit.memory), where glibc


def test_setup_warns_about_an_old_version(monkeypatch, capsys):
    import kit.notebook as nb

    monkeypatch.setattr(nb, "VERSION_FLOORS", {"keras": "99.0"})
    with pytest.warns(UserWarning, match=r"keras .* is older than 99.0, the oldest the kit was tested with"):
        nb.setup()
    assert nb._older("3.15.1", "3.15") is False and nb._older("3.9", "3.15") is True


def test_cached_samples_are_made_once_and_reused(tmp_path, capsys):
    csv = samples.cached("spectrogram", files=2, frames_per_file=3, workdir=tmp_path)
    assert csv == tmp_path / "samples" / "spectrogram-files2-frames_per_file3-s0" / "index.csv"
    assert "generating sample data" in capsys.readouterr().out
    mtime = csv.stat().st_mtime_ns
    assert samples.cached("spectrogram", files=2, frames_per_file=3, workdir=tmp_path) == csv
    assert capsys.readouterr().out == "" and csv.stat().st_mtime_ns == mtime  # reused, not rewritten
    seg = samples.cached("segmentation", images=2, size=32, workdir=tmp_path, seed=1)
    assert seg.parent.name == "segmentation-images2-size32-s1" and (seg.parent / "class_dict.csv").exists()
    # the message names the bad case and the known ones
    with pytest.raises(ValueError, match=r"(?=.*'video')(?=.*spectrogram, segmentation)"):
        samples.cached("video", workdir=tmp_path)


def test_a_kernel_shows_no_tensorflow_startup_lines_but_real_errors(monkeypatch):
    """What JupyterLab shows: the raw outputs of a kernel whose first cell is setup() (no
    ``kit.report.clean`` after). TensorFlow's load-time lines, oneDNN's DT_HALF notice and the
    CUDA probes never reach a cell; a line TensorFlow logs at error level and an exception do."""
    import nbformat
    from nbclient import NotebookClient

    from kit import report

    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)  # as a plainly started JupyterLab
    monkeypatch.setenv("KIT_FAST", "1")
    real = "E0000 00:00:1796029931.187428    5561 example.cc:9] a real error stays visible\n"
    noise = "I0000 00:00:1796029920.050937    5561 cudart_stub.cc:31] Could not find cuda drivers\n"
    cell = nbformat.v4.new_code_cell
    nb = nbformat.v4.new_notebook(cells=[
        cell("import kit.notebook\nFAST = kit.notebook.setup()"),
        cell("import tensorflow as tf\n"
             "y = tf.keras.layers.Dense(2, dtype='float16')(tf.zeros((1, 3), tf.float16))  # DT_HALF on oneDNN\n"
             "print(FAST, y.shape)"),
        # C++ writes to fd 2, below sys.stderr: one line that is noise, one that is not
        cell(f"import os, time\nos.write(2, {noise.encode()!r})\nos.write(2, {real.encode()!r})\n"
             "time.sleep(0.3)  # fd 2 reaches the notebook through a pipe"),
        cell("tf.constant([1, 2])[5]", metadata={"tags": ["raises-exception"]}),
    ])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    # ipykernel sends what is written to fd 2 to the notebook except under pytest: as outside it
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT)}}).execute(env=env)

    stderr = ["".join(o.text for o in c.outputs if o.output_type == "stream" and o.name == "stderr")
              for c in nb.cells]
    for text in stderr:
        assert not any(report.is_noise(line) for line in text.splitlines()), text
        for word in ("absl", "oneDNN", "DT_HALF", "cudart", "cuInit", "TF-TRT", "This TensorFlow binary"):
            assert word not in text, text
    assert stderr == ["", "", real, ""]
    assert "".join(o.get("text", "") for o in nb.cells[1].outputs) == "True (1, 2)\n"
    (err,) = [o for o in nb.cells[3].outputs if o.output_type == "error"]
    assert err.ename == "InvalidArgumentError" and "out of bounds" in err.evalue
    page = report.to_html(report.clean(nb))
    assert "a real error stays visible" in page and "InvalidArgumentError" in page


# --------------------------------------------------------------------------- make lab leaves git clean

def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          capture_output=True, text=True, check=True, timeout=120).stdout


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


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")), ids=lambda p: p.name)
def test_a_committed_notebook_passes_the_lab_filter_unchanged(path):
    """What `make lab`'s filter gives git is the file itself: otherwise a saved notebook shows a diff."""
    pytest.importorskip("nbstripout", reason="pip install -e '.[dev]' installs nbstripout")
    filtered = subprocess.run(["sh", str(ROOT / "scripts" / "strip_outputs_filter.sh"), "--clean", sys.executable,
                               str(path)], capture_output=True, check=True, timeout=120).stdout
    assert filtered == path.read_bytes(), (
        f"{path.name} is not as the filter writes it (key order, outputs or metadata); rewrite it with: "
        f"sh scripts/strip_outputs_filter.sh --clean PYTHON {path.relative_to(ROOT)} > tmp && mv tmp ...")
