"""ping: the command lines the callers run, and iputils (and busybox) output read back."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import ping

from ...conftest import FIXTURE_DIR as FIXTURES

OK = (FIXTURES / "ping" / "iputils_20221126_ok.txt").read_text()
UNREACHABLE = (FIXTURES / "ping" / "iputils_20221126_unreachable.txt").read_text()

# iputils' output for a don't-fragment ping larger than the local MTU (as in test_mesh_addressing).
DF_TOO_BIG = """PING 10.255.0.3 (10.255.0.3) 8972(9000) bytes of data.
ping: local error: message too long, mtu=1500

--- 10.255.0.3 ping statistics ---
1 packets transmitted, 0 received, +1 errors, 100% packet loss, time 0ms
"""
# Busybox's format, written from the printf strings of its ping.c (no busybox capture in fixtures/).
BUSYBOX = """PING 10.0.0.2 (10.0.0.2): 56 data bytes
64 bytes from 10.0.0.2: seq=0 ttl=64 time=0.101 ms
64 bytes from 10.0.0.2: seq=1 ttl=64 time=0.071 ms

--- 10.0.0.2 ping statistics ---
2 packets transmitted, 2 packets received, 0% packet loss
round-trip min/avg/max = 0.071/0.086/0.101 ms
"""


# --------------------------------------------------------------------------- command lines


def test_argv_of_each_caller() -> None:
    # netplan_apply's probe: one quiet echo, don't-fragment at the payload.
    assert ping.argv("10.0.0.2", wait_s=1, size=8972, quiet=True) == (
        ["ping", "-n", "-q", "-c", "1", "-W", "1", "-M", "do", "-s", "8972", "10.0.0.2"]
    )
    # verify_link's latency: many echoes from the link address.
    assert ping.argv("192.168.100.2", count=50, interval=0.02, wait_s=2, source="192.168.100.1") == (
        ["ping", "-n", "-c", "50", "-i", "0.02", "-W", "2", "-I", "192.168.100.1", "192.168.100.2"]
    )
    # mesh_network's path check: DF at the MTU from the node address.
    check = ping.argv("10.255.0.2", count=2, interval=0.2, wait_s=2, size=8972, source="10.255.0.1")
    assert check[:6] == ["ping", "-n", "-c", "2", "-i", "0.2"]
    assert check[6:] == ["-W", "2", "-M", "do", "-s", "8972", "-I", "10.255.0.1", "10.255.0.2"]
    assert ping.argv("10.0.0.9") == ["ping", "-n", "-c", "1", "10.0.0.9"]


def test_df_payload_fills_the_mtu() -> None:
    assert ping.df_payload(9000) == 8972 and ping.df_payload("1500") == 1472


# --------------------------------------------------------------------------- parsing


def test_parse_iputils_summary_and_replies() -> None:
    ok = ping.parse(OK)
    assert (ok["transmitted"], ok["received"], ok["errors"]) == (20, 20, 0)
    assert len(ok["replies_ms"]) == 20 and ok["replies_ms"][0] == 0.043
    assert (ok["min_ms"], ok["avg_ms"], ok["max_ms"], ok["mdev_ms"]) == (0.038, 0.042, 0.048, 0.003)
    bad = ping.parse(UNREACHABLE)
    assert (bad["transmitted"], bad["received"], bad["errors"]) == (3, 0, 3)
    assert bad["replies_ms"] == [] and bad["avg_ms"] is None
    too_big = ping.parse(DF_TOO_BIG)
    assert (too_big["received"], too_big["errors"], too_big["avg_ms"]) == (0, 1, None)


def test_parse_busybox_and_nothing() -> None:
    box = ping.parse(BUSYBOX)
    assert (box["transmitted"], box["received"], box["errors"]) == (2, 2, 0)
    assert box["replies_ms"] == [0.101, 0.071] and box["avg_ms"] == 0.086 and box["mdev_ms"] is None
    empty = ping.parse("ping: connect: Network is unreachable\n")
    assert empty["transmitted"] is None and empty["replies_ms"] == [] and empty["avg_ms"] is None
    with pytest.raises(ping.PingError, match="must be text, got NoneType"):
        ping.parse(None)  # type: ignore[arg-type]


def test_parse_real_ping_output() -> None:
    ok = ping.rtt_stats(OK)
    assert ok["transmitted"] == 20 and ok["received"] == 20 and ok["loss_pct"] == 0
    assert ok["samples"] == 20
    assert ok["min_us"] <= ok["median_us"] <= ok["p99_us"] <= ok["max_us"]
    assert 1 < ok["median_us"] < 1000


def test_parse_ping_without_replies() -> None:
    bad = ping.rtt_stats(UNREACHABLE)
    assert bad["received"] == 0 and bad["loss_pct"] == 100.0 and bad["median_us"] is None
    with pytest.raises(ping.PingError, match="no ping replies"):
        ping.rtt_stats("ping: connect: Network is unreachable\n")


def test_rtt_stats_of_busybox_output() -> None:
    box = ping.rtt_stats(BUSYBOX)
    assert (box["received"], box["loss_pct"], box["min_us"], box["max_us"]) == (2, 0.0, 71.0, 101.0)


# --------------------------------------------------------------------------- measure


def fake_run(
    monkeypatch: pytest.MonkeyPatch, stdout: str = "", stderr: str = "", exc: Exception | None = None
) -> list[dict[str, Any]]:
    """subprocess.run replaced: records each call, returns the given output (rc 0 with replies)."""
    calls: list[dict[str, Any]] = []

    def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        calls.append({"argv": argv, **kwargs})
        if exc is not None:
            raise exc
        return subprocess.CompletedProcess(argv, 0 if "bytes from" in stdout else 1, stdout, stderr)

    monkeypatch.setattr(ping.subprocess, "run", run)
    return calls


def test_measure_runs_the_latency_ping(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = fake_run(monkeypatch, OK)
    stats, error = ping.measure("127.0.0.1", count=20, interval=0.02, source="127.0.0.1")
    assert error is None and stats is not None and stats["samples"] == 20
    assert calls[0]["argv"] == ping.argv("127.0.0.1", count=20, interval=0.02, wait_s=2, source="127.0.0.1")
    assert calls[0]["timeout"] == pytest.approx(10.4)


def test_measure_reports_why_nothing_came_back(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_run(monkeypatch, UNREACHABLE)
    stats, error = ping.measure("10.123.45.67", count=3, interval=0.2)
    assert stats is not None and stats["loss_pct"] == 100.0
    assert error == "ping 10.123.45.67: no replies (100% loss)"
    fake_run(monkeypatch, "", "ping: connect: Network is unreachable\n")
    assert ping.measure("10.9.9.9", count=1, interval=0.2) == (
        None,
        "ping 10.9.9.9: no ping replies or summary in output: ''",
    )
    fake_run(monkeypatch, exc=subprocess.TimeoutExpired(["ping"], 10.2))
    stats, error = ping.measure("10.9.9.9", count=1, interval=0.2)
    assert (
        stats is None
        and error is not None
        and error.startswith("ping 10.9.9.9: Command '['ping']' timed out")
    )
