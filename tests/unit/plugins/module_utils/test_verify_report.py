"""verify.yml's Python: links from mesh plans, rounds of disjoint pairs, ping parsing, thresholds, report."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils import mesh_addressing as ma
from ansible_collections.rdmaops.cluster.plugins.module_utils import rdma_sysfs
from ansible_collections.rdmaops.cluster.plugins.module_utils import verify_report as vr

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
# host_plan takes every pool and name explicitly (the mesh_network role's defaults own them).
POOLS: dict[str, Any] = {
    "link_pool": "192.168.100.0/22",
    "link_prefix": 30,
    "node_pool": "10.255.0.0/24",
    "fabric_subnet": "192.168.200.0/24",
    "nodeaddr_ifname": "nodeaddr0",
}


def mesh_plans(hosts: list[str]) -> dict[str, Any]:
    """Real mesh_network plans: node i reaches peer j over port data<j>."""
    plans = {}
    for host in hosts:
        ports = {peer: f"data{k}" for k, peer in enumerate(hosts) if peer != host}
        interfaces = {
            name: f"02:00:00:00:{hosts.index(host):02x}:{k:02x}" for k, name in enumerate(ports.values())
        }
        plans[host] = ma.host_plan(host, hosts, "mesh", ports=ports, interfaces=interfaces, **POOLS)
    return plans


def switched_plans(hosts: list[str]) -> dict[str, Any]:
    return {
        h: ma.host_plan(
            h, hosts, "switched", fabric_port="fab0", interfaces={"fab0": "02:00:00:00:00:01"}, **POOLS
        )
        for h in hosts
    }


# --------------------------------------------------------------------------- rounds


@pytest.mark.parametrize("n", range(2, 10))
def test_tournament_covers_every_pair_once_without_sharing_a_host(n: int) -> None:
    hosts = [f"n{i}" for i in range(n)]
    rounds = vr.tournament_rounds(hosts)
    pairs = [frozenset(p) for rnd in rounds for p in rnd]
    assert sorted(map(sorted, pairs)) == sorted(map(sorted, map(frozenset, itertools.combinations(hosts, 2))))
    assert len(set(pairs)) == len(pairs)
    for rnd in rounds:
        used = [h for p in rnd for h in p]
        assert len(used) == len(set(used))
    # Optimal: n-1 rounds of n/2 pairs for even n, n rounds of (n-1)/2 for odd n.
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    assert all(len(rnd) == n // 2 for rnd in rounds)


def test_ring_rounds_are_optimal_and_disjoint() -> None:
    for n, expected_rounds in ((2, 1), (3, 3), (4, 2), (5, 3), (6, 2)):
        hosts = [f"n{i}" for i in range(n)]
        plans = mesh_plans(hosts)
        links = vr.links(plans, hosts, "ring")
        assert len(links) == (1 if n == 2 else n)
        rounds = vr.schedule(links, hosts, "ring", "one")
        assert len(rounds) == expected_rounds
        for rnd in rounds:
            used = [h for m in rnd for h in (m["client"], m["server"])]
            assert len(used) == len(set(used))


def test_schedule_both_directions_and_concurrency_cap() -> None:
    hosts = ["a", "b", "c", "d"]
    links = vr.links(mesh_plans(hosts), hosts)
    rounds = vr.schedule(links, hosts, "all_pairs", "both")
    assert len(rounds) == 6
    directed = [(m["client"], m["server"]) for rnd in rounds for m in rnd]
    assert sorted(directed) == sorted(itertools.permutations(hosts, 2))
    # Each round is followed by its mirror image.
    assert [(m["server"], m["client"]) for m in rounds[1]] == [(m["client"], m["server"]) for m in rounds[0]]
    capped = vr.schedule(links, hosts, "all_pairs", "one", max_concurrent=1)
    assert len(capped) == 6 and all(len(r) == 1 for r in capped)


def test_schedule_uses_link_addresses_and_ports() -> None:
    hosts = ["node1", "node2", "node3"]
    plans = mesh_plans(hosts)
    links = vr.links(plans, hosts)
    first = vr.schedule(links, hosts, "all_pairs", "both")[0][0]
    link = next(x for x in plans[first["client"]]["links"] if x["peer"] == first["server"])
    assert first["client_address"] == link["address"]
    assert first["server_address"] == link["peer_address"]
    assert first["client_ifname"] == link["ifname"]
    assert (
        first["label"]
        == f"{first['client']}:{first['client_ifname']} -> {first['server']}:{first['server_ifname']}"
    )
    assert first["link"].count("<->") == 1


def test_switched_links_use_fabric_addresses() -> None:
    hosts = ["s1", "s2", "s3"]
    plans = switched_plans(hosts)
    links = vr.links(plans, hosts)
    assert [(x["a"], x["b"]) for x in links] == [("s1", "s2"), ("s1", "s3"), ("s2", "s3")]
    assert links[0]["a_address"] == plans["s1"]["node_address"]
    assert links[0]["a_ifname"] == "fab0"


def test_role_in_round() -> None:
    hosts = ["a", "b", "c"]
    rnd = vr.schedule(vr.links(mesh_plans(hosts), hosts), hosts, "all_pairs", "one")[0]
    roles = {h: vr.role_in_round(rnd, h)["role"] for h in hosts}
    assert sorted(roles.values()) == ["client", "idle", "server"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: vr.links({}, ["a", "b"]), "no mesh_network plan for a, b"),
        (lambda: vr.links({}, ["a", "a"]), "host 'a' appears twice"),
        (lambda: vr.links(mesh_plans(["a", "b"]), ["a", "b"], "star"), "pattern 'star'"),
        (lambda: vr.schedule([], ["a", "b"], "all_pairs", "sideways"), "directions 'sideways'"),
        (lambda: vr.schedule([], ["a", "b"], "all_pairs", "one", -1), "max_concurrent -1"),
        (lambda: vr.schedule([], ["a", "b"], "all_pairs", "one", "x"), "max_concurrent 'x'"),
    ],
)
def test_bad_plan_input_names_the_value(call: Any, message: str) -> None:
    with pytest.raises(vr.VerifyError, match=message):
        call()


# --------------------------------------------------------------------------- ping, gate, env, collective


def test_parse_real_ping_output() -> None:
    ok = vr.parse_ping((FIXTURES / "ping" / "iputils_20221126_ok.txt").read_text())
    assert ok["transmitted"] == 20 and ok["received"] == 20 and ok["loss_pct"] == 0
    assert ok["samples"] == 20
    assert ok["min_us"] <= ok["median_us"] <= ok["p99_us"] <= ok["max_us"]
    assert 1 < ok["median_us"] < 1000


def test_parse_ping_without_replies() -> None:
    bad = vr.parse_ping((FIXTURES / "ping" / "iputils_20221126_unreachable.txt").read_text())
    assert bad["received"] == 0 and bad["loss_pct"] == 100.0 and bad["median_us"] is None
    with pytest.raises(vr.VerifyError, match="no ping replies"):
        vr.parse_ping("ping: connect: Network is unreachable\n")


def test_gate_without_rdma_device() -> None:
    info = {"rdma_available": False, "rdma_ports": []}
    required = vr.gate(info, "node1", True, True)
    assert required["available"] is False
    assert (
        required["failures"]
        and "no RDMA device (nothing under /sys/class/infiniband)" in required["failures"][0]
    )
    assert "verify_rdma_required: false" in required["failures"][0]
    assert vr.gate(info, "node1", False, True)["failures"] == []


def test_gate_on_real_sysfs_fixture_lists_down_ports() -> None:
    ports = rdma_sysfs.read_ports(str(FIXTURES / "sysfs" / "mlx5_roce"))
    result = vr.gate({"rdma_ports": ports}, "node1", True, True)
    assert result["available"] is True
    assert result["failures"] == [
        "mlx5_1/1: state DOWN, phys_state Disabled (link layer Ethernet, netdev ens1f1np1)"
    ]
    assert "mlx5_0/1 ACTIVE/LinkUp Ethernet" in result["summary"] and "RoCEv2 GID 3" in result["summary"]
    assert vr.gate({"rdma_ports": ports}, "node1", True, ["mlx5_0/1"])["failures"] == []


def test_env_file() -> None:
    text = "# written by nccl_env\nNCCL_IB_DISABLE=1\nexport NCCL_SOCKET_IFNAME='=nodeaddr0'\n\nA=\"b c\"\n"
    assert vr.parse_env_file(text) == {"NCCL_IB_DISABLE": "1", "NCCL_SOCKET_IFNAME": "=nodeaddr0", "A": "b c"}
    with pytest.raises(vr.VerifyError, match="line 2 is not KEY=VALUE"):
        vr.parse_env_file("A=1\nnot an assignment\n")


def test_collective_result() -> None:
    doc = {"backend": "gloo", "world_size": 3, "results": [{"bytes": 8, "busbw_gbps": 1.0}]}
    runs = {
        "n1": {"rc": 0, "stdout": "noise\n" + json.dumps(doc) + "\n", "stderr": ""},
        "n2": {"rc": 0, "stdout": "", "stderr": ""},
    }
    assert vr.collective_result(runs, "n1") == doc
    runs["n2"] = {
        "rc": 124,
        "stdout": "",
        "stderr": "W1122 waiting\ntorch.distributed.DistStoreError: timeout\n",
    }
    failed = vr.collective_result(runs, "n1")
    assert failed["error"] == "n2: timed out: torch.distributed.DistStoreError: timeout"
    assert vr.collective_result({"n1": {"rc": 0, "stdout": "x"}}, "n1")["error"].startswith("n1: no result")


# --------------------------------------------------------------------------- thresholds and report


def measurement(client: str, server: str, gbps: float | None, **extra: Any) -> dict[str, Any]:
    return {
        "client": client,
        "server": server,
        "label": f"{client}:data1 -> {server}:data0",
        "gbps": gbps,
        "line_rate_gbps": 10.0,
        "latency_us": 40.0,
        "tool": "iperf3",
        **extra,
    }


def test_thresholds_validation() -> None:
    assert vr.thresholds(0.8, None, "", 40)["line_rate_gbps"] == 40.0
    for kwargs, message in (
        ({"min_fraction_of_line_rate": 1.5}, r"min_fraction_of_line_rate 1.5 must be in \(0, 1\]"),
        ({"min_gbps": "fast"}, "min_gbps 'fast' is not a number"),
        ({"max_latency_us": -3}, "max_latency_us -3 must be a non-negative number"),
        ({"line_rate_gbps": 0}, "line_rate_gbps 0 is not a line rate"),
        ({"min_busbw_gbps": True}, "min_busbw_gbps True is not a number"),
    ):
        with pytest.raises(vr.VerifyError, match=message):
            vr.thresholds(**kwargs)


def test_throttled_link_fails_naming_it() -> None:
    limits = vr.thresholds(0.5, 1.0, 500)
    slow = measurement("node1", "node2", 0.19)
    assert vr.evaluate_measurement(slow, limits) == [
        "node1:data1 -> node2:data0 0.19 Gb/s < 0.5 x 10 Gb/s (= 5.00 Gb/s)",
        "node1:data1 -> node2:data0 0.19 Gb/s < floor 1 Gb/s",
    ]
    assert vr.evaluate_measurement(measurement("node1", "node2", 9.4), limits) == []
    late = measurement("node1", "node2", 9.4, latency_us=900.0)
    assert vr.evaluate_measurement(late, limits) == ["node1:data1 -> node2:data0 latency 900.0 us > 500 us"]
    detour = measurement("a", "b", 9.4, bytes_sent=10_000_000, port_tx_bytes=120_000, client_ifname="data1")
    assert vr.evaluate_measurement(detour, limits) == [
        "a:data1 -> b:data0: only 120000 of the 10000000 bytes sent left through data1"
        " (the traffic took another path)"
    ]
    direct = measurement("a", "b", 9.4, bytes_sent=10_000_000, port_tx_bytes=10_400_000)
    assert vr.evaluate_measurement(direct, limits) == []
    unknown = measurement("a", "b", 9.4, line_rate_gbps=None)
    assert "line rate is unknown" in vr.evaluate_measurement(unknown, limits)[0]
    broken = measurement("a", "b", None, error="iperf3 client failed (rc 1): unable to connect")
    assert vr.evaluate_measurement(broken, limits) == [
        "a:data1 -> b:data0: iperf3 client failed (rc 1): unable to connect"
    ]


def test_median_line_rate_catches_the_outlier() -> None:
    hosts = ["a", "b", "c"]
    rows = [
        measurement(x, y, 0.2 if (x, y) == ("a", "b") else 4.0 + i / 10)
        for i, (x, y) in enumerate(itertools.permutations(hosts, 2))
    ]
    limits = vr.thresholds(0.5, None, None, "median")
    report = vr.build_report(hosts, rows, limits)
    # Median of 0.2, 4.1, 4.2, 4.3, 4.4, 4.5.
    assert report["line_rate_gbps"] == 4.25
    assert report["failures"] == ["a:data1 -> b:data0 0.20 Gb/s < 0.5 x 4.25 Gb/s (= 2.12 Gb/s)"]
    assert all(r["line_rate_gbps"] == 4.25 for r in report["measurements"])
    assert "Median of this run's links, used as every link's line rate: 4.25 Gb/s." in vr.markdown(report)


def sample_report(slow: bool = False) -> dict[str, Any]:
    hosts = ["node1", "node2", "node3"]
    rows = [
        measurement(a, b, 0.19 if slow and (a, b) == ("node1", "node2") else 9.0)
        for a, b in itertools.permutations(hosts, 2)
    ]
    collective = {
        "backend": "gloo",
        "world_size": 3,
        "dtype": "float32",
        "iters": 10,
        "results": [{"bytes": 1 << 20, "time_ms": 2.0, "algbw_gbps": 4.19, "busbw_gbps": 5.59}],
    }
    gate = {h: {"available": False, "summary": "no RDMA device", "failures": []} for h in hosts}
    return vr.build_report(
        hosts,
        rows,
        vr.thresholds(0.5, None, None, None, 20.0),
        meta={"mode": "tcp", "topology": "mesh", "rounds": 6, "timestamp": "20261122T070000Z"},
        gate=gate,
        reachability={
            "node1": [{"ok": True}, {"ok": False, "error": "node2 node address 10.255.0.2: DF ping failed"}]
        },
        collective=collective,
    )


def test_build_report_collects_every_failure() -> None:
    report = sample_report(slow=True)
    assert report["passed"] is False
    assert report["failures"] == [
        "node1 -> node2 node address 10.255.0.2: DF ping failed",
        "node1:data1 -> node2:data0 0.19 Gb/s < 0.5 x 10 Gb/s (= 5.00 Gb/s)",
        "all-reduce (gloo, 3 ranks) peak bus bandwidth 5.59 Gb/s < floor 20 Gb/s",
    ]
    row = report["measurements"][0]
    assert (row["client"], row["server"], row["fraction_of_line_rate"], row["passed"]) == (
        "node1",
        "node2",
        0.019,
        False,
    )
    grid = vr.matrix(report)
    assert grid[0][0] is None and grid[0][1] == 0.19 and grid[1][0] == 9.0
    text = vr.markdown(report)
    assert "**FAILED**" in text and "| node1:data1 -> node2:data0 | 0.19 | 10 | 2% |" in text
    assert "| 1 MiB | 2.000 | 4.190 | 5.590 |" in text
    json.dumps(report)
    report["meta"]["check_mode"] = True
    assert "**CHECK MODE, nothing measured**" in vr.markdown(report)


def test_write_report_files_and_latest_link(tmp_path: Path) -> None:
    first = vr.write_report(sample_report(), str(tmp_path / "verify-1"), str(tmp_path / "latest"))
    second = vr.write_report(sample_report(slow=True), str(tmp_path / "verify-2"), str(tmp_path / "latest"))
    assert os.readlink(tmp_path / "latest") == "verify-2"
    assert json.loads(Path(second["json"]).read_text())["passed"] is False
    assert Path(first["markdown"]).read_text().startswith("# Fabric verification 20261122T070000Z")
    png = Path(second["heatmap"]).read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000
