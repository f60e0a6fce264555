"""verify_link end to end against a real iperf3 server on loopback (no root, no lab)."""

from __future__ import annotations

import shutil
import socket
import subprocess

import pytest

from ansible_collections.rdmaops.cluster.plugins.modules import verify_link

from ..conftest import RunModule

pytestmark = pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 is not installed (make deps)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_measures_bandwidth_and_counts_the_port(run_module: RunModule) -> None:
    port = free_port()
    server = subprocess.Popen(["iperf3", "-s", "-1", "-p", str(port)], stdout=subprocess.DEVNULL)
    try:
        out = run_module(
            verify_link,
            server="127.0.0.1",
            port=port,
            interface="lo",
            duration=1,
            ping_count=0,
            line_rate_gbps=40,
            connect_timeout=10,
        )
    finally:
        server.kill()
        server.wait()
    assert out["error"] is None, out
    assert out["gbps"] > 0 and out["line_rate_gbps"] == 40
    # What iperf3 sent went through lo (plus its control connection and anything else on lo). Not all of it
    # to the byte: iperf3 counts what it wrote to the socket, and on a loaded 2-core machine the counter read
    # right after the client ends was once 0.007% short (2,898,978,772 of 2,899,181,568 bytes).
    assert out["bytes_sent"] > 0 and out["port_tx_bytes"] >= 0.99 * out["bytes_sent"]
    assert out["command"][:3] == ["iperf3", "-c", "127.0.0.1"]


def test_unreachable_server_is_an_error_not_a_crash(run_module: RunModule) -> None:
    out = run_module(
        verify_link,
        server="127.0.0.1",
        port=free_port(),
        interface="lo",
        ping_count=0,
        connect_timeout=1,
    )
    assert not out.get("failed")
    assert out["gbps"] is None and "iperf3 client failed" in out["error"]


def test_bad_arguments(run_module: RunModule) -> None:
    out = run_module(verify_link, server="127.0.0.1", interface="lo", duration=0)
    assert out["failed"] is True and out["msg"] == "duration must be a positive integer, got 0"


def test_check_mode_measures_nothing(run_module: RunModule) -> None:
    out = run_module(verify_link, server="192.0.2.1", interface="lo", _ansible_check_mode=True)
    assert out["gbps"] is None and out["error"] is None and out["command"][0] == "iperf3"
