"""kit.notebook: setup (what every notebook starts with) and the headline line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kit import notebook
from kit.report import noise as report_noise

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_setup_returns_fast_and_prints_versions_and_gpus():
    code = ("import os, warnings; os.environ['KIT_FAST'] = '1'; import kit.notebook as n; fast = n.setup(); "
            "import plotly.io as pio; print('FAST', fast, os.environ['TF_CPP_MIN_LOG_LEVEL'], pio.renderers.default); "
            "print('filtered', any(f[0] == 'ignore' and f[1] and f[1].pattern == '.*shuffle=True.*' "
            "for f in warnings.filters)); import sys; print('malloc', 'kit.system.memory' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(Path.home())}).stdout
    lines = out.strip().splitlines()
    assert re.match(r"kit [\d.]+, tensorflow [\d.]+, keras [\d.]+, numpy [\d.]+$", lines[0])
    assert lines[1].startswith("GPUs: ") or lines[1].startswith("No GPU found")
    printed = lines[-3:]  # what the code above printed after setup()'s own lines
    assert printed[0] == "FAST True 2 plotly_mimetype"
    assert printed[1] == "filtered True"
    assert printed[2] == "malloc False"  # the kit leaves the C allocator as a learner's own script has it


def test_setup_warns_about_an_old_version(monkeypatch, capsys):
    import kit.notebook.session as nb

    monkeypatch.setattr(nb, "VERSION_FLOORS", {"keras": "99.0"})
    with pytest.warns(UserWarning, match=r"keras .* is older than 99.0, the oldest the kit was tested with"):
        nb.setup()
    assert nb._older("3.15.1", "3.15") is False and nb._older("3.9", "3.15") is True


@pytest.mark.slow
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
        assert not any(report_noise.is_noise(line) for line in text.splitlines()), text
        for word in ("absl", "oneDNN", "DT_HALF", "cudart", "cuInit", "TF-TRT", "This TensorFlow binary"):
            assert word not in text, text
    assert stderr == ["", "", real, ""]
    assert "".join(o.get("text", "") for o in nb.cells[1].outputs) == "True (1, 2)\n"
    (err,) = [o for o in nb.cells[3].outputs if o.output_type == "error"]
    assert err.ename == "InvalidArgumentError" and "out of bounds" in err.evalue
    page = report.to_html(report_noise.clean(nb))
    assert "a real error stays visible" in page and "InvalidArgumentError" in page


def test_headline_is_marked_in_fast_mode_only(monkeypatch, capsys):
    monkeypatch.setenv("KIT_FAST", "1")
    line = notebook.headline("memmap: 12,345 frames/s", sample="200 frames")
    assert line == ("memmap: 12,345 frames/s [FAST MODE: 200 frames; a demonstration, not a measurement "
                    "at scale]")
    assert capsys.readouterr().out == line + "\n"
    monkeypatch.delenv("KIT_FAST")
    assert notebook.headline("memmap: 12,345 frames/s", sample="200 frames") == "memmap: 12,345 frames/s"
