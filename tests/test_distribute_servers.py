"""kit.distribute's tf.data service servers: ports, timeouts and bind addresses checked before
serving (issue 13, items 9 and 12)."""

import pytest


def test_service_servers_refuse_ports_and_timeouts_out_of_range():
    """Item 12 (and 9's port rule): port 70000 served on 4464; negative timeouts were accepted."""
    from kit.distribute import servers as kit_servers

    with pytest.raises(ValueError, match="port must be in 1..65535"):
        kit_servers.run_dispatcher(port=70000)
    with pytest.raises(ValueError, match="port must be in 1..65535"):
        kit_servers.run_dispatcher(port=0)
    with pytest.raises(ValueError, match="worker_timeout_s must be positive"):
        kit_servers.run_dispatcher(worker_timeout_s=-1)
    with pytest.raises(ValueError, match="port must be in 1..65535"):
        kit_servers.run_worker(dispatcher="localhost:5000", port=-2)
    with pytest.raises(ValueError, match="heartbeat_s must be positive"):
        kit_servers.run_worker(dispatcher="localhost:5000", heartbeat_s=0)


def test_service_servers_check_their_bind_address_and_port():
    """Item 9: --bind (default 127.0.0.1) must be an address of this machine, the port free there."""
    import socket

    from kit import distribute
    from kit.distribute import servers as kit_servers

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ValueError, match=f"port {port} is already in use on 127.0.0.1"):
            kit_servers.run_dispatcher(port=port)
    with pytest.raises(ValueError, match="'192.0.2.1' is not an address of this machine"):
        kit_servers.run_worker(dispatcher="localhost:5000", bind="192.0.2.1")
    with pytest.raises(ValueError, match="cannot serve the dispatcher at 192.0.2.1:5000 on another machine"):
        kit_servers.run_worker(dispatcher="192.0.2.1:5000")
    with pytest.raises(ValueError, match="needs one address of this machine"):
        with distribute.local_service(1, bind="0.0.0.0"):
            pass
