"""Pairwise measurement: commands, thresholds, real iperf3 runs over loopback (verify/bandwidth.py)."""

from __future__ import annotations

import os
import shutil
import socket
import threading
from pathlib import Path
from typing import Any

import pytest
from ansible.module_utils import basic

from ansible_collections.rdmaops.cluster.plugins.module_utils.verify import bandwidth as bw
from ansible_collections.rdmaops.cluster.plugins.modules import rdma_bandwidth

from ...conftest import FIXTURE_DIR, RunModule

SYSFS = FIXTURE_DIR / "sysfs"
needs_iperf3 = pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 not installed (make deps)")


def params(**over: Any) -> dict[str, Any]:
    base = {
        "mode": "tcp",
        "test": "write_bw",
        "server": "10.0.0.2",
        "port": 5201,
        "bind_address": None,
        "device": None,
        "ib_port": None,
        "gid_index": None,
        "size": None,
        "duration": 5,
        "iterations": 1000,
        "parallel": 1,
        "timeout": 30,
        "connect_timeout": 5,
    }
    base.update(over)
    return base


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_tcp_commands() -> None:
    assert bw.build_command(params(), "server") == ["iperf3", "-s", "-1", "-J", "-p", "5201"]
    assert bw.build_command(params(bind_address="10.0.0.1", parallel=4), "client") == [
        "iperf3", "-c", "10.0.0.2", "-J", "-p", "5201", "-t", "5", "-P", "4", "-B", "10.0.0.1",
    ]  # fmt: skip


def test_rdma_commands() -> None:
    p = params(mode="rdma", device="mlx5_0", ib_port=1, gid_index=3, size=65536, port=18515)
    assert bw.build_command(p, "server") == [
        "ib_write_bw", "-d", "mlx5_0", "-i", "1", "-p", "18515", "-F", "--report_gbits",
        "-x", "3", "-s", "65536", "-D", "5",
    ]  # fmt: skip
    lat = bw.build_command({**p, "test": "send_lat", "gid_index": None, "size": None}, "client")
    assert lat == [
        "ib_send_lat", "-d", "mlx5_0", "-i", "1", "-p", "18515", "-F", "--report_gbits",
        "-n", "1000", "10.0.0.2",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("over", "role", "match"),
    [
        ({"server": None}, "client", "needs 'server'"),
        ({"mode": "rdma"}, "server", "needs a device"),
        ({"mode": "rdma", "device": "mlx5_0", "test": "atomic_bw"}, "server", "test must be one of"),
        ({"mode": "udp"}, "server", "mode must be rdma or tcp"),
        ({}, "peer", "role must be"),
    ],
)
def test_bad_parameters(over: dict, role: str, match: str) -> None:
    with pytest.raises(bw.BandwidthError, match=match):
        bw.build_command(params(**over), role)


@pytest.mark.parametrize(
    ("measured", "limits", "expected"),
    [
        # below both the line-rate fraction and the floor: each named with pair, number and expectation
        (
            (3.2, None),
            (10, 0.8, 5, None),
            [
                "a -> b: 3.20 Gb/s measured, expected at least 8.00 Gb/s (0.8 x line rate 10 Gb/s)",
                "a -> b: 3.20 Gb/s measured, expected at least 5 Gb/s",
            ],
        ),
        ((9.4, None), (10, 0.8, 5, None), []),
        ((None, 4.83), (None, None, None, 3), ["a -> b: 4.83 us typical latency, expected at most 3 us"]),
        (
            (1.0, None),
            (None, 0.5, None, None),
            ["a -> b: min_fraction_of_line_rate is set but the line rate is unknown"],
        ),
    ],
)
def test_thresholds_name_pair_number_and_expectation(
    measured: tuple[float | None, float | None], limits: tuple[float | None, ...], expected: list[str]
) -> None:
    line_rate, fraction, floor, max_latency = limits
    result = {"gbps": measured[0], "latency_us": measured[1]}
    assert (
        bw.evaluate(
            result,
            label="a -> b",
            line_rate_gbps=line_rate,
            min_fraction_of_line_rate=fraction,
            min_gbps=floor,
            max_latency_us=max_latency,
        )
        == expected
    )


def test_interface_speed(tmp_path: Path) -> None:
    (tmp_path / "class/net/eth0").mkdir(parents=True)
    (tmp_path / "class/net/eth0/speed").write_text("25000\n")
    (tmp_path / "class/net/veth1").mkdir(parents=True)
    (tmp_path / "class/net/veth1/speed").write_text("-1\n")
    assert bw.interface_speed_gbps("eth0", str(tmp_path)) == 25
    assert bw.interface_speed_gbps("veth1", str(tmp_path)) is None
    assert bw.interface_speed_gbps("nope", str(tmp_path)) is None


@needs_iperf3
def test_real_iperf3_pair_over_loopback() -> None:
    port = free_port()
    p = params(server="127.0.0.1", port=port, duration=1, timeout=20)
    server: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: server.update(bw.measure(p, "server")))
    thread.start()
    client = bw.measure(p, "client")
    thread.join(timeout=30)
    assert client["rc"] == 0 and client["parsed"]["complete"]
    assert client["parsed"]["gbps"] > 0
    # The server saw the same stream: same byte count received.
    assert server["parsed"]["bytes_received"] == client["parsed"]["bytes_received"]
    assert bw.numbers("tcp", client["parsed"])["gbps"] == client["parsed"]["gbps"]


@needs_iperf3
def test_server_without_client_is_killed_at_timeout() -> None:
    runner = bw.Runner()
    p = params(port=free_port(), timeout=1)
    with pytest.raises(bw.BandwidthError, match="did not finish within 1 s and was killed"):
        bw.measure(p, "server", runner)
    assert runner.proc is not None
    with pytest.raises(ProcessLookupError):
        os.kill(runner.proc.pid, 0)


@needs_iperf3
def test_client_without_server_retries_then_fails() -> None:
    p = params(server="127.0.0.1", port=free_port(), connect_timeout=2, timeout=10)
    with pytest.raises(bw.BandwidthError, match="Connection refused"):
        bw.measure(p, "client")


def test_module_without_rdma_device(tmp_path: Path, run_module: RunModule) -> None:
    out = run_module(rdma_bandwidth, role="server", mode="rdma", sysfs_root=str(tmp_path))
    assert out["failed"] is True and out["available"] is False
    assert "no RDMA device on" in out["msg"] and "cannot run ib_write_bw" in out["msg"]
    out = run_module(
        rdma_bandwidth, role="server", mode="rdma", sysfs_root=str(tmp_path), rdma_required=False
    )
    assert not out.get("failed") and out["available"] is False


def test_module_discovers_device_and_gid_index(
    monkeypatch: pytest.MonkeyPatch, run_module: RunModule
) -> None:
    monkeypatch.setattr(
        basic.AnsibleModule, "get_bin_path", lambda self, name, required=False: f"/usr/bin/{name}"
    )
    out = run_module(
        rdma_bandwidth,
        role="client",
        mode="rdma",
        server="192.168.100.2",
        sysfs_root=str(SYSFS / "mlx5_roce"),
        _ansible_check_mode=True,
    )
    assert out["command"][:3] == ["ib_write_bw", "-d", "mlx5_0"]
    assert out["command"][out["command"].index("-x") + 1] == "3"
    assert out["msg"] == "check mode: measurement not run"


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ({"role": "client", "mode": "tcp"}, "missing: server"),
        ({"role": "server", "mode": "tcp", "port": 70000}, "port must be at most 65535"),
        ({"role": "server", "mode": "tcp", "duration": 0}, "duration must be a positive integer"),
        (
            {"role": "server", "mode": "tcp", "min_fraction_of_line_rate": 1.5},
            "min_fraction_of_line_rate must be",
        ),
    ],
)
def test_module_rejects_bad_input(run_module: RunModule, args: dict, match: str) -> None:
    out = run_module(rdma_bandwidth, **args)
    assert out["failed"] is True and match in out["msg"]


def test_numbers_from_perftest_outputs() -> None:
    fixtures = FIXTURE_DIR / "perftest"
    sweep = bw.parse_output("rdma", (fixtures / "mlx5_roce_write_bw_gbits_sweep.txt").read_text())
    assert bw.numbers("rdma", sweep) == {"gbps": 196.07, "latency_us": None}
    lat = bw.parse_output("rdma", (fixtures / "cx7_write_lat_rdmacm.txt").read_text())
    assert bw.numbers("rdma", lat) == {"gbps": None, "latency_us": 1.47}
    # A latency server prints no table: no numbers, no crash.
    header_only = (fixtures / "cx7_write_lat_rdmacm.txt").read_text().split(" #bytes")[0]
    assert bw.numbers("rdma", bw.parse_output("rdma", header_only)) == {"gbps": None, "latency_us": None}
