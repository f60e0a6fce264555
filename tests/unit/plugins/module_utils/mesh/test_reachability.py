"""The paths a node probes, their results, the all-pairs table (plugins/module_utils/mesh/reachability.py)."""

from __future__ import annotations

import json

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import host_plan, reachability

from .conftest import PLAN_ARGS, mesh_plans

ROUTE_OK = '[{"dst":"192.168.100.2","dev":"mesh0","prefsrc":"192.168.100.1","flags":[],"uid":0,"cache":[]}]'
ROUTE_MGMT = json.dumps(
    [
        {
            "dst": "10.255.0.3",
            "gateway": "10.99.0.1",
            "dev": "eth0",
            "prefsrc": "10.99.0.10",
            "flags": [],
            "uid": 0,
        }
    ]
)
PING_OK = """PING 10.255.0.2 (10.255.0.2) from 10.255.0.1 : 8972(9000) bytes of data.
8980 bytes from 10.255.0.2: icmp_seq=1 ttl=64 time=0.061 ms
8980 bytes from 10.255.0.2: icmp_seq=2 ttl=64 time=0.045 ms

--- 10.255.0.2 ping statistics ---
2 packets transmitted, 2 received, 0% packet loss, time 201ms
rtt min/avg/max/mdev = 0.045/0.053/0.061/0.008 ms
"""
PING_MTU = """PING 10.255.0.3 (10.255.0.3) 8972(9000) bytes of data.
ping: local error: message too long, mtu=1500

--- 10.255.0.3 ping statistics ---
1 packets transmitted, 0 received, +1 errors, 100% packet loss, time 0ms
"""


def test_path_checks_and_targets() -> None:
    plan = mesh_plans(3)["node1"]
    checks = reachability.path_checks(plan, 9000)
    assert [(c["dst"], c["kind"], c["address"], c["expected_dev"]) for c in checks] == [
        ("node2", "link", "192.168.100.2", "mesh0"),
        ("node2", "node", "10.255.0.2", "mesh0"),
        ("node3", "link", "192.168.100.6", "mesh1"),
        ("node3", "node", "10.255.0.3", "mesh1"),
    ]
    assert {c["size"] for c in checks} == {8972} and checks[1]["source"] == "10.255.0.1"
    targets = reachability.check_targets(["10.99.0.1", ""], plan, 9000)
    assert targets[0] == {"address": "10.99.0.1", "size": 0, "name": "management path to 10.99.0.1"}
    assert len(targets) == 5
    # a failed apply names ports and peers, the way operators think of cabling
    assert [t["name"] for t in targets[1:]] == [
        "node1 mesh0 -> node2 link address",
        "node1 mesh0 -> node2 node address",
        "node1 mesh1 -> node3 link address",
        "node1 mesh1 -> node3 node address",
    ]


def test_verify_results_parse_route_and_ping() -> None:
    plan = mesh_plans(3)["node1"]
    checks = reachability.path_checks(plan, 9000)[:2] + reachability.path_checks(plan, 9000)[3:]
    routes = [
        {"stdout": ROUTE_OK},
        {"stdout": ROUTE_OK.replace("192.168.100.2", "10.255.0.2")},
        {"stdout": ROUTE_MGMT},
    ]
    pings = [
        {"rc": 0, "stdout": PING_OK},
        {"rc": 0, "stdout": PING_OK},
        {"rc": 1, "stdout": PING_MTU, "stderr": ""},
    ]
    res = reachability.verify_results(checks, routes, pings)
    assert res[0]["ok"] and res[0]["dev"] == "mesh0" and res[0]["rtt_ms"] == 0.053
    assert not res[2]["ok"] and res[2]["dev"] == "eth0"
    assert res[2]["error"] == (
        "node3 node address 10.255.0.3: route goes via eth0 instead of mesh1; DF ping of 8972 B failed: "
        "1 packets transmitted, 0 received, +1 errors, 100% packet loss, time 0ms"
    )


PING_2_HOPS = PING_OK.replace("ttl=64", "ttl=63")


def test_a_node_address_on_its_backup_route_is_degraded_not_failed() -> None:
    plan = mesh_plans(3, backups=True)["node1"]
    checks = reachability.path_checks(plan, 9000)
    node3 = next(c for c in checks if (c["dst"], c["kind"]) == ("node3", "node"))
    # node1's backup to node3 goes over node2's cable (mesh0), one hop more
    assert (node3["backup_dev"], node3["backup_path"]) == ("mesh0", ["node1", "node2", "node3"])
    # the node1-node3 cable out: the kernel takes the backup route, the ping crosses node2
    route = {"stdout": ROUTE_OK.replace("192.168.100.2", "10.255.0.3")}
    (res,) = reachability.verify_results([node3], [route], [{"rc": 0, "stdout": PING_2_HOPS}])
    assert res["ok"] and res["degraded"] and res["hops"] == 2
    assert res["note"] == (
        "node3 node address 10.255.0.3 answers over its backup route (node1 -> node2 -> node3, via mesh0): "
        "its direct route via mesh1 is out"
    )
    table = reachability.reachability_table({"node1": [res]}, ["node1", "node2", "node3"])
    assert "ok mesh0 0.05ms 2 hops DEGRADED (backup route)" in table
    assert "DEGRADED node1 -> node3 node address 10.255.0.3 answers over its backup route" in table
    # a route by another port that is not the backup's, or a ping that fails, is still a failure
    wrong = {"stdout": ROUTE_MGMT}
    (res,) = reachability.verify_results([node3], [wrong], [{"rc": 0, "stdout": PING_2_HOPS}])
    assert not res["ok"] and "route goes via eth0 instead of mesh1" in res["error"]
    (res,) = reachability.verify_results([node3], [route], [{"rc": 1, "stdout": PING_MTU, "stderr": ""}])
    assert not res["ok"] and not res.get("degraded")


def ring_plan(host: str, backups: bool) -> dict[str, object]:
    """A 4-node ring as the lab cables it: node i's data1 to node i+1's data0."""
    hosts = ["node1", "node2", "node3", "node4"]
    ports = {h: {hosts[i - 1]: "data0", hosts[(i + 1) % 4]: "data1"} for i, h in enumerate(hosts)}
    return host_plan.host_plan(
        host,
        hosts,
        "mesh",
        ports=ports[host],
        all_ports=ports,
        interfaces={"data0": "", "data1": ""},
        **PLAN_ARGS,
        backups=backups,
    )


def test_a_ring_pair_that_goes_the_long_way_round_is_degraded_not_failed() -> None:
    checks = reachability.path_checks(ring_plan("node1", True), 9000)
    node2 = next(c for c in checks if (c["dst"], c["kind"]) == ("node2", "node"))
    node3 = next(c for c in checks if (c["dst"], c["kind"]) == ("node3", "node"))
    # node1's backup to its neighbour node2 goes round by node4 and node3 (data0)
    assert (node2["backup_dev"], node2["backup_path"]) == ("data0", ["node1", "node4", "node3", "node2"])
    # node1-node2 out: the route takes data0, three hops
    route = {"stdout": ROUTE_OK.replace("192.168.100.2", "10.255.0.2").replace("mesh0", "data0")}
    ping = {"rc": 0, "stdout": PING_OK.replace("ttl=64", "ttl=62")}
    (res,) = reachability.verify_results([node2], [route], [ping])
    assert res["ok"] and res["degraded"] and "(node1 -> node4 -> node3 -> node2, via data0)" in res["note"]
    # node2-node3 out, node1 -> node3 still leaves by data1 (node2 turns it round): its replies cross 4 hops
    route = {"stdout": ROUTE_OK.replace("192.168.100.2", "10.255.0.3").replace("mesh0", "data1")}
    ping = {"rc": 0, "stdout": PING_OK.replace("ttl=64", "ttl=61")}
    (res,) = reachability.verify_results([node3], [route], [ping])
    assert res["ok"] and res["degraded"] and res["hops"] == 4
    assert res["note"] == (
        "node3 node address 10.255.0.3 answers, its replies over 4 hops, not 2: a cable on the route "
        "(node1 -> node2 -> node3) is out and the ring's transit tables send the pair the long way round"
    )
    # without backup routes the same answer is a failure (a ring's pair has one path then)
    plain = reachability.path_checks(ring_plan("node1", False), 9000)
    node3 = next(c for c in plain if (c["dst"], c["kind"]) == ("node3", "node"))
    (res,) = reachability.verify_results([node3], [route], [ping])
    assert not res["ok"] and "the replies crossed 4 hop(s)" in res["error"]


def test_reachability_table() -> None:
    ok = {"ok": True, "dev": "enp1s0f0np0", "expected_dev": "enp1s0f0np0"}
    results = {
        "n1": [
            {"dst": "n2", "kind": "link", **ok, "rtt_ms": 0.03},
            {"dst": "n2", "kind": "node", **ok, "rtt_ms": 0.061},
            {"dst": "n3", "kind": "node", "ok": False, "dev": "eth0", "expected_dev": "enp1s0f1np1"},
        ],
        "n2": [{"dst": "n1", "kind": "link", "ok": False, **{k: ok[k] for k in ("dev", "expected_dev")}}],
    }
    table = reachability.reachability_table(results, ["n1", "n2", "n3"]).splitlines()
    assert table[0].split() == ["from", "\\", "to", "n1", "n2", "n3"]
    assert "ok enp1s0f0np0 0.06ms" in table[1] and "FAIL via eth0 (want enp1s0f1np1)" in table[1]
    assert "FAIL via enp1s0f0np0" in table[2] and "not checked" in table[2]
    assert table[-1] == "1/3 node pairs OK"


def _rails_results() -> dict[str, list[dict[str, object]]]:
    """3 nodes x 2 NICs (the fab lab's shared scheme), node2's data1 without its source rule and both its
    NICs answering ARP for both addresses (arp_ignore 0)."""
    hosts = ["node1", "node2", "node3"]
    out: dict[str, list[dict[str, object]]] = {h: [] for h in hosts}
    for src in hosts:
        for dst in (h for h in hosts if h != src):
            for i in (0, 1):
                rail, port = f"rail{i}", f"data{i}"
                fabric = {"dst": dst, "kind": "fabric", "rail": rail, "expected_dev": port, "rtt_ms": 0.05}
                if (src, i) == ("node2", 1):
                    error = f"node2 data1 (rail1) egress: traffic from 192.168.200.4 to {dst} leaves by data0"
                    error += ", not data1"
                    fabric.update(dev="data0", ok=False, route_ok=False, error=error)
                else:
                    fabric.update(dev=port, ok=True, route_ok=True)
                arp = {"dst": dst, "kind": "arp", "rail": rail, "expected_dev": port, "dev": port, "ok": True}
                if dst == "node2":
                    error = f"node2 {port} 192.168.200.{3 + i} ({rail}) ARP flux: answered by ... when asked"
                    error += f" from {port}"
                    arp.update(ok=False, flux=True, error=error)
                out[src] += [fabric, arp]
    out["node3"][-1] = {**out["node3"][-1], "skipped": "arping is not installed (Debian: iputils-arping)"}
    return out


def test_a_fabric_with_several_rails_gets_one_table_per_rail_and_names_each_nic_once() -> None:
    table = reachability.reachability_table(_rails_results(), ["node1", "node2", "node3"]).splitlines()
    assert table[0] == "rail0" and table[1].split() == ["from", "\\", "to", "node1", "node2", "node3"]
    assert table[2].split() == ["node1", "-", "FAIL", "ARP", "flux", "ok", "data0", "0.05ms"]
    assert table[5] == "4/6 node pairs OK on rail0"
    assert table[6:8] == ["", "rail1"]
    assert "FAIL via data0 (want data1)" in table[10] and table[12] == "2/6 node pairs OK on rail1"
    # under the tables: each NIC's ARP flux once (with who saw it), each wrong egress, who did not ask
    assert table[13:] == [
        "",
        "node2 data0 192.168.200.3 (rail0) ARP flux: answered by ... when asked from data0 (seen from node1, "
        "node3)",
        "node2 data1 192.168.200.4 (rail1) ARP flux: answered by ... when asked from data1 (seen from node1, "
        "node3)",
        "node2 data1 (rail1) egress: traffic from 192.168.200.4 to node1 leaves by data0, not data1",
        "node2 data1 (rail1) egress: traffic from 192.168.200.4 to node3 leaves by data0, not data1",
        "ARP answers not checked from node3: arping is not installed (Debian: iputils-arping)",
    ]


def test_matrices_one_per_rail_or_one() -> None:
    hosts = ["node1", "node2", "node3"]
    rails = reachability.matrices(_rails_results(), hosts)
    assert [(m["rail"], m["pairs_ok"], m["pairs"]) for m in rails] == [("rail0", 4, 6), ("rail1", 2, 6)]
    assert rails[1]["cells"]["node2"]["node1"] == "FAIL via data0 (want data1)"
    assert rails[0]["cells"]["node1"]["node3"] == "ok data0 0.05ms"
    mesh = {"n1": [{"dst": "n2", "kind": "node", "ok": True, "dev": "mesh0", "rtt_ms": 0.061}]}
    assert reachability.matrices(mesh, ["n1", "n2"]) == [
        {"rail": None, "cells": {"n1": {"n2": "ok mesh0 0.06ms"}}, "pairs_ok": 1, "pairs": 1}
    ]
