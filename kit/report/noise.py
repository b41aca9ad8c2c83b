"""Start-up noise in notebook output (``NOISE``: TensorFlow's start-up lines, Jupyter's "Kernel is
running over TCP"), dropped at file descriptor 2 as it is written (``quiet_stderr``,
``keep_stderr_quiet``) and from a notebook's saved stream outputs (``clean``). Standard library only:
a kernel uses it before TensorFlow loads.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import subprocess
import sys
from contextlib import contextmanager

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
    """A pipe in place of file descriptor 2, read by a small process that forwards to the original
    stderr every line that is not ``NOISE``. A process, not a thread: what is written just before a
    crash still arrives."""

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
    """Drops ``NOISE`` lines written to file descriptor 2 while inside, by Python or by C++; every
    other byte passes through. Leaving waits at most 5 s for the filter (a child may hold the pipe)."""
    f = _StderrFilter()
    try:
        yield
    finally:
        f.close(timeout=5)


_kept: _StderrFilter | None = None


def keep_stderr_quiet() -> None:
    """Drops ``NOISE`` lines from file descriptor 2 for the rest of the process (as ``quiet_stderr``;
    a second call does nothing); at exit fd 2 is restored, waiting at most 1 s for the filter."""
    global _kept
    if _kept is None:
        _kept = _StderrFilter()
        atexit.register(_kept.close, 1.0)


#: Text a carriage return overwrote (a progress bar's earlier states).
_CR = re.compile(r"[^\n]*\r(?=[^\n])")


def _drop_noise(text: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if not is_noise(line))


def clean(nb):
    """Merges consecutive outputs of one stream, drops text a carriage return overwrote (a progress
    bar shows its last state) and ``NOISE`` lines, and outputs left empty (in place; returns ``nb``)."""
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

