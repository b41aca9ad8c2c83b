"""Start-up noise in notebook output: which lines are noise, dropping them from stderr as they
are written and from a notebook's saved stream outputs.

* ``NOISE`` / ``is_noise``: TensorFlow's start-up lines (the absl banner, ``cuInit ... (303)``,
  ``cudart_stub``, oneDNN's) and Jupyter's "Kernel is running over TCP";
* ``quiet_stderr`` / ``keep_stderr_quiet``: those lines dropped at file descriptor 2 (by a small
  filter process), for a block or for the rest of the process (``kit.notebook.session`` calls the
  latter in a kernel, before TensorFlow loads);
* ``clean``: a notebook's stream outputs with the noise removed and carriage-return updates
  coalesced, so a text progress bar shows its finished state.

Standard library only: ``kit.notebook.session`` uses it in a kernel before TensorFlow loads.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import subprocess
import sys
from contextlib import contextmanager

__all__ = ["NOISE", "is_noise", "quiet_stderr", "keep_stderr_quiet", "clean"]

#: Lines of stream output that are start-up noise, not results. TF_CPP_MIN_LOG_LEVEL does not
#: silence the absl banner nor the lines logged before absl is initialised (TF 2.21).
NOISE = [
    re.compile(r"^WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR"),
    # glog-style INFO/WARNING lines: "I0000 00:00:1796.050937    5561 cudart_stub.cc:31] ..."
    re.compile(r"^[IW]\d{4} [\d:.]+\s+\d+ [\w./-]+:\d+\] "),
    # the CUDA probes' errors on a machine without a usable GPU (other errors stay visible)
    re.compile(r"^E\d{4} [\d:.]+\s+\d+ [\w./-]+:\d+\] .*"
               r"(cuInit|Unable to register cu\w+ factory|CUDA error|cuda drivers"
               r"|computation placer already registered)"),
    # a notice logged at error level whenever float16 runs on a CPU without AVX-512 FP16
    re.compile(r"^E\d{4} [\d:.]+\s+\d+ [\w./-]+:\d+\] oneDNN supports DT_HALF only"),
    re.compile(r"^To enable the following instructions: .* rebuild TensorFlow"),
    re.compile(r"^\[IPKernelApp\] WARNING \| Kernel is running over TCP"),
]

def is_noise(line: str) -> bool:
    """Whether a line of output is start-up noise (``NOISE``)."""
    return any(p.match(line) for p in NOISE)


#: The filter process of ``quiet_stderr``: stdin is the pipe that replaced fd 2, stdout the
#: original stderr, argv[1] the ``NOISE`` patterns as JSON. Standard library only (-I -S).
_FILTER = r"""
import json, os, re, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the command, which then closes the pipe
noise = [re.compile(p) for p in json.loads(sys.argv[1])]
def keep(part):
    line = part.decode("utf-8", "replace")
    return not any(p.match(line) for p in noise)
buf = b""
while chunk := os.read(0, 1 << 16):
    *parts, buf = re.split(rb"(?<=[\r\n])", buf + chunk)
    out = b"".join(p for p in parts if keep(p))
    if out:
        os.write(1, out)
if buf and keep(buf):
    os.write(1, buf)
"""


class _StderrFilter:
    """A pipe in place of file descriptor 2, read by a small process that forwards to the
    original stderr every line that is not ``NOISE``, as it arrives. A process rather than a
    thread: what is written just before a crash (a fatal ``F`` line, then abort) still arrives."""

    def __init__(self):
        sys.stderr.flush()
        self.saved = os.dup(2)
        r, w = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _FILTER, json.dumps([p.pattern for p in NOISE])],
                stdin=r, stdout=self.saved, stderr=self.saved, close_fds=True)
        except BaseException:
            for fd in (r, w, self.saved):
                os.close(fd)
            raise
        os.close(r)
        os.dup2(w, 2)
        os.close(w)

    def close(self, timeout: float) -> None:
        sys.stderr.flush()
        os.dup2(self.saved, 2)  # closes the pipe's last write end here, unless a child holds one
        os.close(self.saved)
        try:
            self.proc.wait(timeout=timeout)  # it has forwarded everything
        except subprocess.TimeoutExpired:
            pass  # a child still writes to the pipe: the filter serves it until it exits


@contextmanager
def quiet_stderr():
    """Drops ``NOISE`` lines written to file descriptor 2 while inside, by Python or by C++
    (TensorFlow logs through absl, below ``sys.stderr``); every other byte passes through.

    A pipe replaces fd 2 and a small process forwards what is not noise to the original
    stderr. Leaving waits at most 5 s for it (a child process may hold the pipe open).
    """
    f = _StderrFilter()
    try:
        yield
    finally:
        f.close(timeout=5)


_kept: _StderrFilter | None = None


def keep_stderr_quiet() -> None:
    """Drops ``NOISE`` lines from file descriptor 2 for the rest of the process (as
    ``quiet_stderr``); a second call does nothing. At exit fd 2 is restored and what is
    in the pipe is forwarded (waiting at most 1 s).

    For a Jupyter kernel, whose fd 2 goes to the notebook: ``kit.notebook.session`` calls it
    before TensorFlow loads, so its start-up lines never reach the cell.
    """
    global _kept
    if _kept is None:
        _kept = _StderrFilter()
        atexit.register(_kept.close, 1.0)



#: Text a carriage return overwrote (a progress bar's earlier states).
_CR = re.compile(r"[^\n]*\r(?=[^\n])")


def _drop_noise(text: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if not is_noise(line))


def clean(nb):
    """Removes start-up noise from stream outputs and coalesces streams (in place).

    Consecutive outputs of one stream are merged and text overwritten by a carriage
    return is dropped, so a text progress bar shows its last state; ``NOISE`` lines are
    removed and outputs left empty are dropped. Returns ``nb``.
    """
    for cell in nb.cells:
        if cell.cell_type != "code" or not cell.get("outputs"):
            continue
        merged = []
        for out in cell.outputs:
            if (out.output_type == "stream" and merged and merged[-1].output_type == "stream"
                    and merged[-1].name == out.name):
                merged[-1].text += out.text
            else:
                merged.append(out)
        kept = []
        for out in merged:
            if out.output_type == "stream":
                out.text = _drop_noise(_CR.sub("", out.text))
                if not out.text.strip():
                    continue
            kept.append(out)
        cell.outputs = kept
    return nb

