"""The slurm role's phases: check (inventory and settings), plan (what nodes declare, the files), config
(one slurm.conf everywhere, restart or reconfigure)."""

from __future__ import annotations

from typing import Any

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.slurm import phase

from .test_config import HW

HOSTS = ["node1", "node2", "node3"]
GROUPS = {"all": HOSTS, "cluster": HOSTS, "slurm_controller": ["node1"], "switches": ["sw1"]}
TRAIN = [{"name": "train", "group": "cluster", "default": True}]


def _check(**over: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "controllers": ["node1"],
        "nodes": HOSTS,
        "inventory_hosts": HOSTS,
        "play_hosts": HOSTS,
        "running_hosts": HOSTS,
        "controller_group": "slurm_controller",
        "partitions": TRAIN,
        "groups": GROUPS,
        "cgroup": "auto",
        "check_timeout": 60,
        "kill_wait": "10",
        "cluster_name": "rdmaops",
        "health_check_interval": 300,
        "health_check_node_state": "ANY",
        "health_thresholds": {},
        "health_severity": {},
        "health_sources": {},
    }
    args.update(over)
    return phase.check(args)


def test_check_passes_the_lab_inventory_and_names_the_controller() -> None:
    assert _check() == {
        "errors": [],
        "plan": {
            "controller": "node1",
            "cgroup": "auto",
            "health_check_interval": 300,
            "health_check_node_state": "ANY",
        },
    }
    # Jinja's `string | lower` of a YAML true
    assert _check(cgroup=True)["plan"]["cgroup"] == "true"


@pytest.mark.parametrize(
    ("over", "wanted"),
    [
        ({"controllers": []}, "no Slurm controller: inventory group 'slurm_controller' is empty"),
        (
            {"controllers": ["node1", "node2"]},
            "two or more Slurm controllers in group 'slurm_controller': node1, node2",
        ),
        ({"play_hosts": ["node2", "node3"]}, "the Slurm controller node1 is not in this run"),
        ({"nodes": []}, "no Slurm nodes: the compute group is empty or missing"),
        ({"play_hosts": ["node1", "node2"]}, "Slurm nodes left out of this run (--limit?): node3"),
        # node2 failed in an earlier play of site.yml (its apt stalled): named, not a template error later
        (
            {"running_hosts": ["node1", "node3"]},
            "Slurm hosts that failed or were unreachable earlier in this run: node2 (their errors are above)",
        ),
        ({"running_hosts": ["node2", "node3"]}, "earlier in this run: node1 (their errors"),
        (
            {"partitions": [{"name": "gpu", "group": "switches"}]},
            "sw1 of group 'switches' are not Slurm nodes",
        ),
        ({"cgroup": "maybe"}, "slurm_cgroup must be auto, true or false (got 'maybe')"),
        ({"check_timeout": "1m"}, "slurm_check_timeout must be whole seconds (got '1m')"),
        ({"kill_wait": -1}, "slurm_kill_wait must be whole seconds (got '-1')"),
        (
            {"cluster_name": "Big Cluster"},
            "slurm_cluster_name must be 1-40 lower-case letters, digits, _ and - (got 'Big "
            "Cluster')",
        ),
    ],
)  # fmt: skip
def test_check_names_each_bad_value(over: dict[str, Any], wanted: str) -> None:
    errors = _check(**over)["errors"]
    assert any(wanted in e for e in errors), errors


def test_check_of_every_host_still_running_passes() -> None:
    assert _check(running_hosts=HOSTS)["errors"] == []


def test_check_reports_every_error_at_once() -> None:
    errors = _check(controllers=[], cgroup="x", kill_wait="y")["errors"]
    assert len(errors) == 3


CONTAINER = {
    "usable": False,
    "why": "the node is a container (systemd-nspawn): its cgroups belong to the host",
}


def _summary(host: str, **over: Any) -> dict[str, Any]:
    node: dict[str, Any] = {
        "hardware": {**HW, "NodeName": host},
        "memory_mib": 24036,
        "gpus": 0,
        "gpu_files": [],
        "cgroup": CONTAINER,
        "declared_memory": "",
        "declared_gpus": "",
        "addr": f"10.98.0.1{host[-1]}",
    }
    node.update(over)
    return node


def _plan(hosts: dict[str, dict[str, Any]] | None = None, **over: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "controller": "node1",
        "compute": HOSTS,
        "hosts": hosts or {h: _summary(h) for h in HOSTS},
        "partitions": TRAIN,
        "groups": GROUPS,
        "cgroup": "auto",
        "version": [22, 5, 8],
    }
    args.update(over)
    return phase.plan(args)


def test_plan_of_the_lab_nodes() -> None:
    out = _plan()
    plan = out["plan"]
    assert out["errors"] == [] and plan["config_possible"] is True
    assert plan["controller"] == {"host": "node1", "name": "node1", "addr": "10.98.0.11"}
    assert plan["node_lines"][1] == (
        "NodeName=node2 NodeAddr=10.98.0.12 CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 "
        "ThreadsPerCore=1 RealMemory=24036 State=UNKNOWN"
    )
    assert plan["partition_lines"] == [
        "PartitionName=train Nodes=node1,node2,node3 Default=YES MaxTime=INFINITE State=UP"
    ]
    assert plan["use_cgroup"] is False and plan["cgroup_why"] == CONTAINER["why"]
    assert plan["gres_lines"] == [] and plan["version"] == [22, 5, 8]


def test_plan_gres_lines_take_the_declared_gpus_in_minor_order() -> None:
    hosts = {h: _summary(h) for h in HOSTS}
    hosts["node2"].update(gpus=4, declared_gpus=2, gpu_files=["/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2"])
    plan = _plan(hosts)["plan"]
    assert plan["gres_lines"] == [
        "NodeName=node2 Name=gpu File=/dev/nvidia0",
        "NodeName=node2 Name=gpu File=/dev/nvidia1",
    ]
    assert plan["node_lines"][1].endswith("Gres=gpu:2 State=UNKNOWN")


def test_plan_before_slurmd_is_installed_checks_only() -> None:
    hosts = {h: _summary(h, hardware=None) for h in HOSTS}
    out = _plan(hosts)
    assert out["errors"] == [] and out["plan"]["config_possible"] is False and out["plan"]["node_lines"] == []
    # the controller's name falls back to its inventory name
    assert out["plan"]["controller"]["name"] == "node1"
    hosts["node2"]["declared_memory"] = 30000
    (err,) = _plan(hosts)["errors"]
    assert err.startswith("node2: slurm_real_memory 30000 MiB is above what the node has (24036 MiB)")


def test_plan_names_every_node_that_cannot_use_required_cgroups() -> None:
    hosts = {h: _summary(h) for h in HOSTS}
    hosts["node3"]["declared_gpus"] = 2
    errors = _plan(hosts, cgroup="true")["errors"]
    assert errors[0] == "node3: slurm_gpus 2 declared but nvidia-smi finds 0 GPU(s) there"
    assert errors[1:] == [
        f"slurm_cgroup is true but {h} cannot use cgroup plugins: {CONTAINER['why']}" for h in HOSTS
    ]


def test_plan_uses_cgroups_where_every_node_can() -> None:
    usable = {"usable": True, "why": "cgroup v2 with cpuset and memory"}
    hosts = {h: _summary(h, cgroup=usable) for h in HOSTS}
    assert _plan(hosts)["plan"]["use_cgroup"] is True
    hosts["node2"]["cgroup"] = CONTAINER
    plan = _plan(hosts)["plan"]
    assert plan["use_cgroup"] is False and plan["cgroup_why"] == f"{usable['why']}; {CONTAINER['why']}"
    assert _plan(hosts, cgroup="false")["plan"]["use_cgroup"] is False


def test_plan_of_a_controller_that_is_no_compute_node() -> None:
    hosts = {h: _summary(h) for h in HOSTS}
    hosts["head"] = _summary("head", hardware=None, addr="10.98.0.5")
    plan = _plan(hosts, controller="head")["plan"]
    assert plan["controller"] == {"host": "head", "name": "head", "addr": "10.98.0.5"}
    assert plan["config_possible"] is True and len(plan["node_lines"]) == 3
    assert _plan({"node1": _summary("node1")}, compute=["node1", "node2"])["errors"] == [
        "no facts noted for node2"
    ]


CONF = "ClusterName=rdmaops\nProctrackType=proctrack/linuxproc\nNodeName=node1 CPUs=2 RealMemory=24036\n"


def test_config_judges_each_host_and_refuses_a_file_that_differs() -> None:
    lower = CONF.replace("24036", "20000")
    out = phase.config(
        {"texts": {h: lower for h in HOSTS}, "current": {"node1": CONF, "node2": lower, "node3": None}}
    )
    assert out["errors"] == []
    actions = out["plan"]["actions"]
    assert actions["node1"] == {"action": "reconfigure", "why": ["node node1 changed"]}
    assert actions["node2"]["action"] == "none"
    assert actions["node3"] == {"action": "restart", "why": ["no slurm.conf yet"]}
    texts = {"node1": CONF, "node2": CONF.replace("rdmaops", "other"), "node3": lower}
    (err,) = phase.config({"texts": texts, "current": {}})["errors"]
    assert err == (
        "slurm.conf would differ on node2, node3 from node1's: a slurm_ variable set per host (host_vars) "
        "that must be the same for the cluster?"
    )


def test_check_health_program_settings() -> None:
    assert _check(health_check_interval="")["plan"]["health_check_interval"] == 0
    assert _check(health_check_interval=0)["plan"]["health_check_interval"] == 0
    assert _check(health_check_node_state="idle,cycle")["plan"]["health_check_node_state"] == "IDLE,CYCLE"
    errors = _check(
        health_check_interval="5m",
        health_check_node_state="ANY,BUSY",
        health_thresholds={"gpu_count": "8"},
        health_severity={"host.clock_sync": "maybe"},
    )["errors"]
    assert errors == [
        "slurm_health_check_interval must be whole seconds, 0 or empty to disable (got '5m')",
        "slurm_health_check_node_state: BUSY not one of ALLOC, ANY, CYCLE, IDLE, MIXED, NONDRAINED_IDLE "
        "(comma-separated)",
        "slurm_health_thresholds: gpu_count: '8' is a str, expected int",
        "slurm_health_severity.host.clock_sync: 'maybe' must be one of fail, warn, off",
    ]
