"""kit.distribute.through_service: every wait on a dispatcher or its workers is bounded, and its
error says what arrived (issue 13, item 9). With real server processes: test_distribute.py."""

import pytest

from kit.distribute.service import through_service


def _raised_within(seconds, fn, *args, **kwargs):
    """The exception ``fn`` raises, on a thread: a regression that blocks fails the test, never hangs it."""
    import threading

    out = []

    def run():
        try:
            fn(*args, **kwargs)
            out.append(None)
        except Exception as e:  # handed to the test, which checks it
            out.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert out, f"{getattr(fn, '__name__', fn)} still blocked after {seconds} s"
    return out[0]


def test_a_port_that_accepts_but_is_no_dispatcher_is_refused_within_the_timeout():
    """Item 9: a TCP connect was the whole check; a port that accepts connections and never answers
    (a hung process, another program) then blocked the dataset's registration forever."""
    import socket

    import tensorflow as tf


    with socket.socket() as mute:
        mute.bind(("127.0.0.1", 0))
        mute.listen()
        port = mute.getsockname()[1]
        error = _raised_within(120, through_service, tf.data.Dataset.range(8).batch(4),
                               f"grpc://127.0.0.1:{port}", examples=8, timeout_s=1)
    assert isinstance(error, ValueError)
    assert f"no tf.data service dispatcher answers at 127.0.0.1:{port} (no answer within 1 s)" in str(error)


def test_a_service_without_workers_times_out_and_a_gone_dispatcher_is_named():
    """Item 9: a job no worker serves waited forever. Each wait is now bounded (``timeout_s``): the error
    names the dispatcher and the count, and no reading thread is left; the next epoch first checks that
    the dispatcher still answers. (The same with every worker killed mid-epoch, in real processes:
    test_distribute.py::test_service_every_worker_killed_mid_epoch_raises_within_the_timeout.)"""
    import threading

    import tensorflow as tf

    from kit.distribute import servers as kit_servers

    service = tf.data.experimental.service
    dispatcher = service.DispatchServer(service.DispatcherConfig(port=kit_servers.free_port()))
    address = dispatcher.target.split("://")[1]
    try:
        ds = through_service(tf.data.Dataset.range(8).batch(4), dispatcher.target, examples=8,
                                        timeout_s=1)
        error = _raised_within(120, list, ds)
        assert isinstance(error, tf.errors.UnknownError)
        assert (f"ServiceTimeoutError: no batch from the tf.data service dispatcher at {address} for 1 s: 0 of 8 "
                "examples arrived this epoch") in error.message
        assert not [t for t in threading.enumerate() if t.name.startswith("kit-service")]
    finally:
        dispatcher._stop()
    error = _raised_within(120, list, ds)
    assert isinstance(error, tf.errors.InvalidArgumentError)
    assert f"no tf.data service dispatcher answers at {address}" in error.message
    with pytest.raises(ValueError, match="timeout_s must be a positive number of seconds, got 0"):
        through_service(tf.data.Dataset.range(8).batch(4), dispatcher.target, examples=8, timeout_s=0)


def test_a_service_address_without_a_dispatcher_is_refused_before_the_epoch():
    """Item 9 (part): service= naming an address where no dispatcher listens blocked silently."""
    import tensorflow as tf

    from kit.distribute import servers as kit_servers

    port = kit_servers.free_port()
    with pytest.raises(ValueError, match=rf"no tf.data service dispatcher answers at 127.0.0.1:{port}"):
        through_service(tf.data.Dataset.range(8).batch(4), f"grpc://127.0.0.1:{port}")
