"""The verify role's phases (module_utils/verify/phase.py; actions verify_check, _gate, _plan, _summary)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import host_plan
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify import phase

from ...conftest import FIXTURE_DIR, ROOT

# The mesh_network role's own defaults, passed explicitly as the role does.
ROLE_DEFAULTS = yaml.safe_load((ROOT / "roles/mesh_network/defaults/main.yml").read_text())
POOLS: dict[str, Any] = {
    key: ROLE_DEFAULTS[f"mesh_network_{key}"]
    for key in ("link_pool", "link_prefix", "node_pool", "fabric_subnet", "nodeaddr_ifname")
}
GOOD = {
    "mode": "auto",
    "pattern": "all_pairs",
    "directions": "both",
    "integers": {"verify_duration": "5", "verify_port": 5201},
    "thresholds": {"min_fraction_of_line_rate": 0.5, "line_rate_gbps": "median", "min_gbps": 1},
    "hosts": ["node1", "node2"],
    "topology": "mesh",
}


def test_check_passes_good_settings_and_returns_the_thresholds() -> None:
    out = phase.check(GOOD)
    assert out["errors"] == [] and out["plan"]["thresholds"]["line_rate_gbps"] == "median"


def test_check_names_every_bad_setting_in_the_role_s_words() -> None:
    bad = {
        **GOOD,
        "mode": "fast",
        "integers": {"verify_duration": "0", "verify_port": "x", "verify_parallel": 2},
        "thresholds": {"min_fraction_of_line_rate": 2},
        "hosts": ["node1"],
        "topology": "",
    }
    assert phase.check(bad)["errors"] == [
        "verify_mode 'fast' (auto|rdma|tcp), verify_pattern 'all_pairs' (all_pairs|ring), verify_directions "
        "'both' (both|one): one of them is not allowed",
        "must be positive integers: verify_duration=0, verify_port=x",
        "verify thresholds: min_fraction_of_line_rate 2 must be in (0, 1]",
        "verify needs at least two nodes (got 1) and mesh_network_topology mesh or switched (got ''): "
        "run it on an inventory that site.yml addressed",
    ]


def test_check_names_bad_health_settings() -> None:
    bad = {**GOOD, "health": "strict", "health_thresholds": {"rdma_rate_gbps": "400"}}
    assert phase.check(bad)["errors"] == [
        "verify_health: 'strict' must be one of fail, warn, off",
        "verify_health_thresholds: rdma_rate_gbps: '400' is a str, expected int or float",
    ]


def test_gate_fails_naming_the_node() -> None:
    params = {"host": "node1", "port_info": {"rdma_ports": []}, "rdma_required": True, "require_active": True}
    out = phase.gate({**params, "sysfs_root": "/sys"})
    assert out["errors"][0].startswith(
        "node1: no RDMA device (nothing under /sys/class/infiniband); RDMA is required"
    )
    relaxed = phase.gate({**params, "rdma_required": False, "sysfs_root": "/sys"})
    assert relaxed["errors"] == [] and relaxed["plan"]["available"] is False


def plans_of(ports: dict[str, dict[str, Any]]) -> dict[str, Any]:
    hosts = list(ports)
    out = {}
    for h in hosts:
        interfaces = {p: "" for v in ports[h].values() for p in (v if isinstance(v, list) else [v])}
        out[h] = host_plan.host_plan(
            h, hosts, "mesh", ports=ports[h], all_ports=ports, interfaces=interfaces, **POOLS
        )
    return out


def plan_params(ports: dict[str, dict[str, Any]], host: str = "node1", **extra: Any) -> dict[str, Any]:
    return {
        "host": host,
        "hosts": list(ports),
        "plans": plans_of(ports),
        "pattern": "all_pairs",
        "directions": "both",
        "max_concurrent": 0,
        "socket_ifname": "nodeaddr0",
        "env_file": "",
        **extra,
    }


def test_plan_measures_each_cable_of_rails_in_its_own_round() -> None:
    rails = {"node1": {"node2": ["data0", "data1"]}, "node2": {"node1": ["data0", "data1"]}}
    out = phase.plan_phase(plan_params(rails))
    assert out["errors"] == []
    assert [x["label"] for x in out["plan"]["links"]] == [
        "node1:data0 <-> node2:data0",
        "node1:data1 <-> node2:data1",
    ]
    assert [[m["label"] for m in rnd] for rnd in out["plan"]["rounds"]] == [
        ["node1:data0 -> node2:data0"],
        ["node2:data0 -> node1:data0"],
        ["node1:data1 -> node2:data1"],
        ["node2:data1 -> node1:data1"],
    ]
    assert [[p["role"] for p in parts] for parts in out["plan"]["parts"]] == [
        ["client"],
        ["server"],
        ["client"],
        ["server"],
    ]


def test_plan_of_a_ring_measures_its_cables_only() -> None:
    hosts = ["node1", "node2", "node3", "node4"]
    ring = {h: {hosts[i - 1]: "data0", hosts[(i + 1) % 4]: "data1"} for i, h in enumerate(hosts)}
    out = phase.plan_phase(plan_params(ring, "node3", directions="one"))
    assert len(out["plan"]["links"]) == 4
    assert all(len(rnd) <= 2 for rnd in out["plan"]["rounds"]) and len(out["plan"]["rounds"]) == 2
    assert [len(parts) for parts in out["plan"]["parts"]] == [1, 1]


def test_plan_environment_takes_the_env_file_over_the_sockets() -> None:
    env = "# written by nccl_env\nNCCL_SOCKET_IFNAME=data0\nNCCL_IB_TC=104\n"
    mesh = {"node1": {"node2": "data0"}, "node2": {"node1": "data0"}}
    out = phase.plan_phase(plan_params(mesh, env_file=env))
    assert out["plan"]["collective_env"] == {
        "GLOO_SOCKET_IFNAME": "nodeaddr0",
        "NCCL_SOCKET_IFNAME": "data0",
        "NCCL_IB_TC": "104",
    }
    rails = phase.plan_phase(plan_params(mesh, socket_ifname="data0,data1"))["plan"]["collective_env"]
    assert rails == {"GLOO_SOCKET_IFNAME": "data0", "NCCL_SOCKET_IFNAME": "data0,data1"}
    bad = phase.plan_phase(plan_params(mesh, env_file="not an assignment"))
    assert bad["errors"] == ["environment file line 1 is not KEY=VALUE: 'not an assignment'"]


def test_plan_without_the_mesh_plans_is_an_error() -> None:
    params = plan_params({"node1": {"node2": "data0"}, "node2": {"node1": "data0"}}, plans={})
    assert phase.plan_phase(params)["errors"] == [
        "no mesh_network plan for node1, node2 (did mesh_network run on them?)"
    ]


def test_summary_of_the_all_reduce_and_nothing_else() -> None:
    doc = {"backend": "gloo", "world_size": 2, "results": [{"bytes": 1024, "time_ms": 1.0}]}
    runs = {"node1": {"rc": 0, "stdout": "warming up\n" + json.dumps(doc)}, "node2": {"rc": 0, "stdout": ""}}
    out = phase.summary(
        {"master": "node1", "runs": runs, "qos_roce": None, "qos_switches": [], "qos_hosts": {}}
    )
    assert out == {"errors": [], "plan": {"collective": doc, "qos": None, "affinity": None}}
    failed = {"node1": {"rc": 0, "stdout": ""}, "node2": {"rc": 124, "stderr": "killed"}}
    params = {"master": "node1", "runs": failed, "qos_roce": None, "qos_switches": [], "qos_hosts": {}}
    assert phase.summary(params)["plan"]["collective"] == {
        "error": "node2: timed out: killed",
        "results": [],
    }
    none = phase.summary(
        {"master": "node1", "runs": None, "qos_roce": None, "qos_switches": [], "qos_hosts": {}}
    )
    assert none["plan"] == {"collective": None, "qos": None, "affinity": None}


def test_summary_of_the_gpu_to_nic_affinity_in_the_nodes_order() -> None:
    smi = (FIXTURE_DIR / "nvidia-smi-topo" / "asus-esc8000a-e12-4gpu-4nic.txt").read_text()
    params = {
        "master": "node2",
        "runs": None,
        "qos_roce": None,
        "qos_switches": [],
        "qos_hosts": {},
        "gpu_topology": {"node2": {"rc": 0, "stdout": smi}, "node1": {"rc": 127, "stdout": ""}},
        "nccl_envs": {"node2": {"NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1"}},
    }
    section = phase.summary(params)["plan"]["affinity"]
    assert list(section["nodes"]) == ["node2", "node1"] and section["nodes"]["node1"]["state"] == "absent"
    assert [g["nccl_relation"] for g in section["nodes"]["node2"]["gpus"]] == ["NODE", "NODE", "SYS", "SYS"]
    assert [w.split("'")[0] for w in section["warnings"]] == ["node2: GPU2", "node2: GPU3"]
    assert section["notes"] == ["no nvidia-smi on node1 (no GPU driver there): no GPU-to-NIC affinity"]


@pytest.mark.parametrize("missing", ["node1", "node9"])
def test_summary_without_the_master_s_run_is_an_error(missing: str) -> None:
    runs = {"node2": {"rc": 0, "stdout": ""}}
    out = phase.summary(
        {"master": missing, "runs": runs, "qos_roce": None, "qos_switches": [], "qos_hosts": {}}
    )
    assert out["errors"] == [f"no all-reduce run recorded for the master {missing!r}"]
