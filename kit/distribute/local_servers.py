"""A tf.data service on this machine (``local_service``): a dispatcher and workers, each its own
``python -m kit service`` process, stopped when the ``with`` block ends."""

from __future__ import annotations

import contextlib
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

from kit.distribute.servers import DEFAULT_BIND, WILDCARDS, check_bind, free_port
from kit.util import check_int


@dataclass
class LocalService:
    """A dispatcher and workers on this machine, each a ``python -m kit service`` process."""

    target: str  # grpc://BIND:PORT of the dispatcher, for service=
    dispatcher_port: int
    worker_ports: list[int]  # each worker's fixed port
    processes: list = field(default_factory=list)  # the dispatcher's, then the workers'
    startup_s: float = 120.0
    env: dict | None = None
    bind: str = DEFAULT_BIND  # the address the servers are meant for (--bind)
    ready: list = field(default_factory=list)  # each server's "ready" line, the dispatcher's first

    def start_worker(self, i: int) -> None:
        """(Re)starts worker ``i`` at its port, as a supervisor would, and waits until it serves."""
        proc = _start(["worker", "--dispatcher", f"{self.bind}:{self.dispatcher_port}", "--port",
                       str(self.worker_ports[i]), "--bind", self.bind, "--heartbeat-s", "0.5"], self.env)
        self.processes[1 + i] = proc
        self.ready.append(_wait_ready(proc, self.startup_s))

    def kill_worker(self, i: int) -> None:
        """Kills worker ``i`` (SIGKILL: no goodbye to the dispatcher)."""
        proc = self.processes[1 + i]
        proc.kill()
        proc.wait(30)

    def stop(self) -> None:
        """Stops every process (SIGTERM, then SIGKILL after 30 s)."""
        for proc in self.processes:
            if proc is not None and proc.poll() is None:
                proc.terminate()
        for proc in self.processes:
            if proc is None:
                continue
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(30)


def _start(args: list[str], env: dict | None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kit", "service", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True, env=env)


def _wait_ready(proc: subprocess.Popen, timeout_s: float) -> str:
    """The server's "ready" line, read within ``timeout_s`` (a thread reads, so the wait is bounded)."""
    lines: queue.Queue = queue.Queue()

    def pump():  # reads to the end, so a chatty server never blocks on a full pipe
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    seen: list[str] = []
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            line = lines.get(timeout=max(deadline - time.monotonic(), 0.01))
        except queue.Empty:
            raise RuntimeError(f"a tf.data service server did not start within {timeout_s:.0f} s; it printed:\n"
                               + "".join(seen[-20:])) from None
        if line is None:
            raise RuntimeError(f"a tf.data service server exited ({proc.wait(30)}) before it was ready; it "
                               "printed:\n" + "".join(seen[-20:]))
        seen.append(line)
        if "ready" in line:
            return line.strip()


@contextlib.contextmanager
def local_service(workers: int = 2, *, bind: str = DEFAULT_BIND, startup_s: float = 120.0,
                  env: dict | None = None):
    """A dispatcher and ``workers`` workers on this machine, each its own process: yields a
    ``LocalService`` (``.target`` for ``make_loader(..., service=...)``), every process stopped when
    the block ends. Each wait is bounded by ``startup_s``; ``bind`` is the servers' ``--bind``;
    ``env`` the processes' environment (default: this one's)."""
    check_int("workers", workers)
    if bind.strip() in WILDCARDS:
        raise ValueError(f"local_service needs one address of this machine to reach its servers at, got {bind!r}")
    check_bind(bind, None)
    dport = free_port(bind)
    service = LocalService(f"grpc://{bind}:{dport}", dport, [free_port(bind) for _ in range(workers)],
                           startup_s=startup_s, env=env, bind=bind)
    service.processes = [_start(["dispatcher", "--port", str(dport), "--bind", bind], env)] + [None] * workers
    try:
        service.ready.append(_wait_ready(service.processes[0], startup_s))
        for i in range(workers):
            service.start_worker(i)
        yield service
    finally:
        service.stop()
