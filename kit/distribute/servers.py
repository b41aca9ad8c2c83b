"""The tf.data service servers: ``run_dispatcher`` and ``run_worker``, each serving in this process
until stopped (``python -m kit service dispatcher|worker``), and their addresses (``parse_address``,
``check_bind``, ``free_port``). TensorFlow is imported inside functions only.
"""

from __future__ import annotations

import errno
import ipaddress
import re
import signal
import socket
import time

_ADDRESS = re.compile(r"^(?:(?P<proto>grpc)://)?(?P<host>\[[0-9a-fA-F:]+\]|[A-Za-z0-9_.\-]+):(?P<port>\d{1,5})$")


def parse_address(address: str) -> tuple[str, int]:
    """``"grpc://host:port"`` or ``"host:port"`` -> ``(host, port)``; ValueError otherwise."""
    m = _ADDRESS.match(str(address).strip())
    port = int(m["port"]) if m else -1
    if not m or not 0 < port < 65536:
        raise ValueError(f"expected a service address like grpc://HOST:PORT or HOST:PORT, got {address!r}")
    return m["host"], port


#: The address the servers are meant for unless ``--bind`` says otherwise: this machine only.
DEFAULT_BIND = "127.0.0.1"

#: The addresses that mean every interface.
WILDCARDS = ("0.0.0.0", "::", "[::]")

#: What ``--bind`` can and cannot do (TensorFlow 2.21's servers listen on every interface).
BIND_NOTE = ("TensorFlow 2.21 has no listen-address setting: its tf.data service servers listen on all "
             "interfaces whatever --bind says; --bind is the address the kit checks is this machine's, "
             "advertises and connects to, so on a machine other hosts can reach, keep the port closed to them "
             "(a firewall)")


def _check_port(port: int | None) -> None:
    # TensorFlow keeps the port's low 16 bits: 70000 would quietly serve on 4464.
    if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535):
        raise ValueError(f"port must be in 1..65535 (or None: any free one), got {port!r}")


def _is_loopback(host: str) -> bool:
    host = host.strip("[]")
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(bind: str, port: int | None) -> None:
    """Checks that ``bind`` is an address of this machine and ``port`` is free there (ValueError if not)."""
    host = str(bind).strip().strip("[]")
    if not host:
        raise ValueError("bind must be a host name or an address of this machine (0.0.0.0: all), got ''")
    try:
        infos = socket.getaddrinfo(host, port or 0, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise ValueError(f"bind: cannot resolve {bind!r} ({e.strerror})") from None
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(address)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise ValueError(f"port {port} is already in use on {bind}") from None
            raise ValueError(f"bind: {bind!r} is not an address of this machine ({e.strerror})") from None


def _advertised(bind: str) -> str:
    """The name clients reach a server bound to ``bind`` by."""
    return socket.getfqdn() if bind.strip() in WILDCARDS else bind.strip()


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now (the OS picks it; bind to it soon)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _serve(server, banner: str) -> int:
    """Keeps a started server up until SIGINT/SIGTERM; stops it cleanly."""
    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, stop)
    print(banner, flush=True)
    try:
        while True:  # a Python loop, not server.join(): Ctrl-C and SIGTERM get through
            time.sleep(0.5)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the stop short
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        server.stop()
        print("stopped", flush=True)
    return 0


def run_dispatcher(*, port: int | None = None, bind: str = DEFAULT_BIND, work_dir: str | None = None,
                   worker_timeout_s: float | None = None) -> int:
    """Starts a tf.data service dispatcher in this process and serves until stopped.

    Args:
        port: the port to listen on, 1..65535 (None: any free one, printed).
        bind: the address it is meant for (default ``127.0.0.1``; ``0.0.0.0``: every interface),
            checked to be this machine's (TensorFlow itself listens on all: ``BIND_NOTE``).
        work_dir: keep the dispatcher's journal here (a restarted dispatcher recovers its jobs).
        worker_timeout_s: after how long without a heartbeat a worker counts as lost.
    """
    _check_port(port)
    check_bind(bind, port)
    if worker_timeout_s is not None and not worker_timeout_s > 0:
        raise ValueError(f"worker_timeout_s must be positive, got {worker_timeout_s}")
    import tensorflow as tf  # keeps kit.distribute light: TensorFlow (kit.distribute.service imports it)

    config = tf.data.experimental.service.DispatcherConfig(
        port=port or 0, work_dir=work_dir, fault_tolerant_mode=work_dir is not None,
        worker_timeout_ms=None if worker_timeout_s is None else int(worker_timeout_s * 1000))
    try:
        server = tf.data.experimental.service.DispatchServer(config)
    except (tf.errors.OpError, RuntimeError) as e:
        raise ValueError(f"cannot start a dispatcher on port {port}: {getattr(e, 'message', e)}") from None
    bound = int(server.target.rsplit(":", 1)[1])
    host = _advertised(bind)
    return _serve(server, f"kit service dispatcher: ready at grpc://{host}:{bound} (port {bound}, --bind {bind}); "
                          f"start workers with `python -m kit service worker --dispatcher {host}:{bound}"
                          + (" --bind 0.0.0.0`" if bind.strip() in WILDCARDS else "`")
                          + ("" if bind.strip() in WILDCARDS else f"\nkit service dispatcher: note: {BIND_NOTE}"))


def run_worker(*, dispatcher: str, port: int | None = None, bind: str | None = None, host: str | None = None,
               heartbeat_s: float | None = None) -> int:
    """Starts a tf.data service worker in this process and serves until stopped. Raises ``ValueError``
    for a bad address or port, or a worker meant for this machine only serving another machine's
    dispatcher.

    Args:
        dispatcher: ``HOST:PORT`` of the dispatcher.
        port: the port to listen on, 1..65535 (None: any free one); a fixed one lets a restarted
            worker take over its task.
        bind: the address it is meant for (default: ``host`` if given, else ``127.0.0.1``),
            checked as ``run_dispatcher``'s.
        host: the name clients reach this worker by (default: ``bind``, or this machine's name
            when ``bind`` is every interface).
        heartbeat_s: how often to report to the dispatcher.
    """
    dhost, dport = parse_address(dispatcher)
    _check_port(port)
    bind = bind if bind is not None else host if host is not None else DEFAULT_BIND
    check_bind(bind, port)
    host = host or _advertised(bind)
    if _is_loopback(host) and not _is_local(dhost):
        raise ValueError(f"a worker reached at {host} (--bind {bind}) cannot serve the dispatcher at {dhost}:{dport} "
                         "on another machine: its readers could not reach the worker. Give --bind 0.0.0.0 or "
                         "this machine's address (and --host, the name others reach it by)")
    if heartbeat_s is not None and not heartbeat_s > 0:
        raise ValueError(f"heartbeat_s must be positive, got {heartbeat_s}")
    import tensorflow as tf  # keeps kit.distribute light: TensorFlow (kit.distribute.service imports it)

    config = tf.data.experimental.service.WorkerConfig(
        dispatcher_address=f"{dhost}:{dport}", worker_address=f"{host}:%port%", port=port or 0,
        heartbeat_interval_ms=None if heartbeat_s is None else int(heartbeat_s * 1000))
    server = tf.data.experimental.service.WorkerServer(config, start=False)
    print(f"kit service worker: waiting for dispatcher {dhost}:{dport} ...", flush=True)
    # start() holds the interpreter until the dispatcher answers, however long: let Ctrl-C
    # end the process meanwhile (Python's own handler could not run).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        server.start()
    except (tf.errors.OpError, RuntimeError) as e:
        raise ValueError(f"cannot start a worker on port {port}: {getattr(e, 'message', e)}") from None
    bound = server._address.rsplit(":", 1)[1]
    return _serve(server, f"kit service worker: ready at {host}:{bound} (--bind {bind}), serving dispatcher "
                          f"{dhost}:{dport}"
                          + ("" if bind.strip() in WILDCARDS else f"\nkit service worker: note: {BIND_NOTE}"))


def _is_local(host: str) -> bool:
    """Whether ``host`` names this machine (a loopback address, or one a socket can bind to here)."""
    if _is_loopback(host):
        return True
    try:
        infos = socket.getaddrinfo(host.strip("[]"), 0, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return False
    for family, _, _, _, address in infos:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            try:
                s.bind(address)
                return True
            except OSError:
                continue
    return False
