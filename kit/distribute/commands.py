"""``python -m kit service dispatcher|worker``: the tf.data service servers."""

from __future__ import annotations

from kit.distribute.servers import BIND_NOTE, DEFAULT_BIND, run_dispatcher, run_worker
from kit.util import port_number, positive_float


def register(sub) -> None:
    service = sub["root"].add_parser(
        "service", help="tf.data service servers (run each in its own process/machine)")
    ssub = service.add_subparsers(dest="server", required=True, parser_class=type(service))
    d = ssub.add_parser("dispatcher", help="start a dispatcher; serves until Ctrl-C/SIGTERM",
                        description=f"Starts a tf.data service dispatcher. Note: {BIND_NOTE}.")
    d.add_argument("--port", type=port_number, default=None, help="port to listen on, 1..65535 (default: any "
                                                                  "free one, printed)")
    d.add_argument("--bind", default=DEFAULT_BIND,
                   help="the address the dispatcher is for: 127.0.0.1 (default, this machine only), this "
                        "machine's address, or 0.0.0.0 (every interface). Checked and advertised; TensorFlow "
                        "2.21 itself listens on all interfaces (see above)")
    d.add_argument("--work-dir", default=None, help="journal folder: a restarted dispatcher recovers")
    d.add_argument("--worker-timeout-s", type=positive_float, default=None,
                   help="seconds without heartbeat before a worker counts as lost (the dispatcher logs it, "
                        "but TensorFlow 2.21 gives its part of the epoch to no other worker: the reader's "
                        "service_timeout_s bounds that wait)")
    d.set_defaults(func=lambda a: run_dispatcher(port=a.port, bind=a.bind, work_dir=a.work_dir,
                                                 worker_timeout_s=a.worker_timeout_s))
    w = ssub.add_parser("worker", help="start a worker; serves until Ctrl-C/SIGTERM",
                        description=f"Starts a tf.data service worker. Note: {BIND_NOTE}.")
    w.add_argument("--dispatcher", required=True, help="HOST:PORT of the dispatcher")
    w.add_argument("--port", type=port_number, default=None, help="port to listen on, 1..65535 (fixed, so a "
                                                                  "restart takes over the same tasks; default any)")
    w.add_argument("--bind", default=None,
                   help="the address the worker is for (default: --host if given, else 127.0.0.1: this machine "
                        "only; 0.0.0.0: every interface). Checked and advertised; TensorFlow 2.21 itself "
                        "listens on all interfaces (see above)")
    w.add_argument("--host", default=None, help="name clients reach this worker by (default: --bind, or this "
                                                "machine's name with --bind 0.0.0.0)")
    w.add_argument("--heartbeat-s", type=positive_float, default=None, help="seconds between heartbeats")
    w.set_defaults(func=lambda a: run_worker(dispatcher=a.dispatcher, port=a.port, bind=a.bind, host=a.host,
                                             heartbeat_s=a.heartbeat_s))
