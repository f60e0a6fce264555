"""module_utils/path_probe: a node's path checks in one call (route lookups, then the pings side by side)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import addressing as ma
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import path_probe, ping

# `ip -j route get` and iputils ping output, as on the lab's node1 (tests/unit/fixtures formats).
ROUTE_MESH0 = (
    '[{"dst":"192.168.100.2","dev":"mesh0","prefsrc":"192.168.100.1","flags":[],"uid":0,"cache":[]}]'
)
ROUTE_ETH0 = (
    '[{"dst":"10.255.0.3","gateway":"10.99.0.1","dev":"eth0","prefsrc":"10.99.0.10","flags":[],"uid":0,'
    '"cache":[]}]'
)
PING_OK = """PING 192.168.100.2 (192.168.100.2) 8972(9000) bytes of data.
8980 bytes from 192.168.100.2: icmp_seq=1 ttl=64 time=0.061 ms
8980 bytes from 192.168.100.2: icmp_seq=2 ttl=64 time=0.045 ms

--- 192.168.100.2 ping statistics ---
2 packets transmitted, 2 received, 0% packet loss, time 201ms
rtt min/avg/max/mdev = 0.045/0.053/0.061/0.008 ms
"""
PING_MTU = """PING 10.255.0.3 (10.255.0.3) from 10.255.0.1 : 8972(9000) bytes of data.
ping: local error: message too long, mtu=1500

--- 10.255.0.3 ping statistics ---
1 packets transmitted, 0 received, +1 errors, 100% packet loss, time 0ms
"""


def _checks() -> list[dict[str, Any]]:
    links = ma.mesh_links(["node1", "node2", "node3"], "192.168.100.0/24", 30)
    nodes = ma.node_addresses(["node1", "node2", "node3"], "10.255.0.0/24")
    # node1's plan: the link to node2 and node3's node address, as mesh_path_checks lists them.
    link = next(x for x in links if {x["a"], x["b"]} == {"node1", "node2"})
    return [
        {
            "dst": "node2",
            "kind": "link",
            "address": link["b_ip"] if link["a"] == "node1" else link["a_ip"],
            "expected_dev": "mesh0",
            "size": 8972,
            "source": "",
        },
        {
            "dst": "node3",
            "kind": "node",
            "address": nodes["node3"],
            "expected_dev": "mesh1",
            "size": 8972,
            "source": nodes["node1"],
        },
    ]


class FakeRunner:
    """Answers by command: route lookups and pings from fixtures; records every batch it was given."""

    def __init__(self, routes: dict[str, str], pings: dict[str, tuple[int, str]]) -> None:
        self.routes = routes
        self.pings = pings
        self.batches: list[list[list[str]]] = []

    def __call__(self, commands: Sequence[Sequence[str]], timeout: float) -> list[dict[str, Any]]:
        self.batches.append([list(c) for c in commands])
        out = []
        for argv in commands:
            if argv[0] == "ip":
                address = argv[4]  # ip -j route get ADDRESS [from SOURCE]
                out.append({"rc": 0, "stdout": self.routes[address], "stderr": ""})
            else:
                rc, text = self.pings[argv[-1]]
                out.append({"rc": rc, "stdout": text, "stderr": ""})
        return out


def test_probe_pings_as_the_old_tasks_did_and_all_pings_in_one_batch() -> None:
    checks = _checks()
    runner = FakeRunner(
        {c["address"]: ROUTE_MESH0 for c in checks},
        {c["address"]: (0, PING_OK) for c in checks},
    )
    path_probe.probe(checks, count=2, interval=0.2, wait_s=2, runner=runner)
    # Route lookups one by one, then every ping together.
    assert [len(b) for b in runner.batches] == [1, 1, 2]
    assert runner.batches[0] == [["ip", "-j", "route", "get", checks[0]["address"]]]
    # Count 2, 0.2 s apart, -W 2, the check's DF payload and source, as the role's tasks pinged.
    assert runner.batches[2] == [
        ping.argv(
            c["address"], count=2, interval=0.2, wait_s=2, size=int(c["size"]), source=c["source"] or None
        )
        for c in checks
    ]
    assert runner.batches[2][1][-3:] == ["-I", checks[1]["source"], checks[1]["address"]]


def test_probe_names_a_wrong_route_and_a_failed_ping() -> None:
    checks = _checks()
    runner = FakeRunner(
        {checks[0]["address"]: ROUTE_MESH0, checks[1]["address"]: ROUTE_ETH0},
        {checks[0]["address"]: (0, PING_OK), checks[1]["address"]: (1, PING_MTU)},
    )
    first, second = path_probe.probe(checks, runner=runner)
    assert first["ok"] and first["dev"] == "mesh0" and first["rtt_ms"] == 0.053
    assert not second["ok"] and second["dev"] == "eth0" and second["rtt_ms"] is None
    assert second["error"] == (
        f"node3 node address {checks[1]['address']}: route goes via eth0 instead of mesh1; DF ping of 8972 B "
        "failed: 1 packets transmitted, 0 received, +1 errors, 100% packet loss, time 0ms"
    )


def test_no_checks_runs_nothing() -> None:
    runner = FakeRunner({}, {})
    assert path_probe.probe([], runner=runner) == []
    assert runner.batches == []


@pytest.mark.parametrize(
    ("checks", "named"),
    [
        ("10.0.0.1", "'10.0.0.1' is not a list"),
        (["10.0.0.1"], "path check '10.0.0.1' is not a mapping"),
        ([{"dst": "node2", "address": "10.0.0.2"}], "lacks kind, expected_dev, size"),
    ],
)
def test_bad_checks_are_named(checks: Any, named: str) -> None:
    with pytest.raises(path_probe.PathProbeError, match=named):
        path_probe.probe(checks, runner=FakeRunner({}, {}))


def test_run_parallel_keeps_order_and_reports_what_could_not_run(tmp_path: Path) -> None:
    py = sys.executable
    results = path_probe.run_parallel(
        [
            [py, "-c", "import sys; print('a'); sys.exit(3)"],
            [str(tmp_path / "no-such-command")],
            [py, "-c", "import sys; print('b', file=sys.stderr)"],
            [py, "-c", "import time; time.sleep(30)"],
        ],
        timeout=2,
    )
    assert results[0] == {"rc": 3, "stdout": "a\n", "stderr": ""}
    assert results[1]["rc"] == 127 and "no-such-command" in results[1]["stderr"]
    assert results[2] == {"rc": 0, "stdout": "", "stderr": "b\n"}
    assert results[3]["rc"] == 124 and "no answer within 2 s" in results[3]["stderr"]


def test_run_parallel_runs_side_by_side(tmp_path: Path) -> None:
    # Each command marks itself, then waits for the others' marks: run one after another, the first would
    # wait in vain and exit 1.
    n = 6
    script = (
        "import pathlib, sys, time\n"
        "d = pathlib.Path(sys.argv[1]); (d / sys.argv[2]).touch()\n"
        "end = time.monotonic() + 20\n"
        f"while len(list(d.iterdir())) < {n} and time.monotonic() < end: time.sleep(0.05)\n"
        f"sys.exit(0 if len(list(d.iterdir())) == {n} else 1)\n"
    )
    commands = [[sys.executable, "-c", script, str(tmp_path), str(i)] for i in range(n)]
    assert [r["rc"] for r in path_probe.run_parallel(commands, timeout=30)] == [0] * n


def test_run_parallel_bounds_the_processes_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(path_probe, "MAX_PARALLEL", 2)
    started: list[int] = []
    real_popen = subprocess.Popen

    def popen(argv: list[str], **kwargs: Any) -> Any:
        started.append(len(started))
        return real_popen(argv, **kwargs)

    monkeypatch.setattr(path_probe.subprocess, "Popen", popen)
    results = path_probe.run_parallel([[sys.executable, "-c", f"print({i})"] for i in range(5)], timeout=30)
    assert [r["stdout"] for r in results] == ["0\n", "1\n", "2\n", "3\n", "4\n"]
    assert len(started) == 5


@pytest.mark.skipif(shutil.which("ip") is None or shutil.which("ping") is None, reason="needs ip and ping")
def test_real_route_and_ping_of_loopback() -> None:
    # The host's own iproute2 and ping: the JSON and summary formats the parsers expect.
    argv = ["ping", "-n", "-c", "1", "-W", "1", "127.0.0.1"]
    probe = subprocess.run(argv, capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("ping is not permitted here")
    check = {"dst": "self", "kind": "node", "address": "127.0.0.1", "expected_dev": "lo", "size": 100}
    (result,) = path_probe.probe([check], count=2, interval=0.2, wait_s=1)
    assert result["dev"] == "lo" and result["ok"], json.dumps(result)
    assert isinstance(result["rtt_ms"], float)


def test_a_rails_route_is_looked_up_from_its_own_address() -> None:
    """A switched fabric's rail check: `ip route get` from the rail's address, as its source rule sees it."""
    check = {
        "dst": "gpu01",
        "kind": "fabric",
        "address": "192.168.200.2",
        "expected_dev": "ens1f1np1",
        "size": 8972,
        "source": "192.168.200.6",
        "hops": 1,
        "rail": "rail1",
    }
    route = '[{"dst":"192.168.200.2","dev":"ens1f1np1","prefsrc":"192.168.200.6","table":"101"}]'
    runner = FakeRunner({"192.168.200.2": route}, {"192.168.200.2": (1, PING_MTU)})
    (result,) = path_probe.probe([check], runner=runner)
    assert runner.batches[0] == [["ip", "-j", "route", "get", "192.168.200.2", "from", "192.168.200.6"]]
    assert result["route_ok"] and result["rail"] == "rail1" and not result["ok"]
    assert result["error"].startswith(
        "gpu01 fabric address 192.168.200.2 (rail1, ens1f1np1 from 192.168.200.6): DF ping of 8972 B failed"
    )
