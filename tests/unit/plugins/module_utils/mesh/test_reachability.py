"""The paths a node probes, their results, the all-pairs table (plugins/module_utils/mesh/reachability.py)."""

from __future__ import annotations

import json

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import reachability

from .conftest import mesh_plans

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
