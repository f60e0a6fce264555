"""The train role's two controller phases: the recipe resolved once (check) and the launch planned once from
the preflight reports (plan), through their action plugins too (module_utils/train/phase.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from ansible_collections.rdmaops.cluster.plugins.action.train_check import ActionModule as CheckAction
from ansible_collections.rdmaops.cluster.plugins.action.train_plan import ActionModule as PlanAction
from ansible_collections.rdmaops.cluster.plugins.module_utils.train import order as rank_order
from ansible_collections.rdmaops.cluster.plugins.module_utils.train import phase
from ansible_collections.rdmaops.cluster.plugins.module_utils.train.launch import recipe_digest

from ...conftest import FIXTURE_DIR, ROOT, run_action

TRAINER = str(ROOT / "files" / "trainer")
HOSTS = ["node1", "node2", "node3"]


def check_args(**kw: Any) -> dict[str, Any]:
    args = {
        "recipe": "tiny",
        "overrides": {},
        "steps": "",
        "warmup": "",
        "lr": "",
        "hsdp": "",
        "launcher": "torchrun",
        "job": "",
        "resume": "never",
        "trainer_src": TRAINER,
        "hosts": HOSTS,
        "topology": "mesh",
        "ports": {},
        "venv": "/opt/rdmaops/venv",
        "base_dir": "/shared/train",
        "log_dir": "/var/log/rdmaops",
        "render_dir": "",
        "health": "fail",
        "health_thresholds": {},
        "health_severity": {},
        "health_sources": {},
    }
    args.update(kw)
    return args


def report(host: str, **kw: Any) -> dict[str, Any]:
    """A node's train_preflight result where everything is fine."""
    versions = {
        "python": "3.11.2",
        "torch": "2.13.0+cpu",
        "trainer": "0.1.0",
        "transformers": "4.5",
        "nccl": None,
    }
    rep = {
        "venv": {"path": "/opt/rdmaops/venv", "exists": True},
        "versions": {**versions, "deepspeed": "0.18.0"},
        "gpus": 0,
        "env": {"GLOO_SOCKET_IFNAME": "nodeaddr0"},
        "env_file": "/etc/rdmaops/nccl.env",
        "interfaces": {"nodeaddr0": {"exists": True, "up": True, "ipv4": [f"10.255.0.{host[-1]}"]}},
        "hostname": host,
        "address": f"10.255.0.{host[-1]}",
        "paths": [],
        "listening": [],
        "unit": {},
        "disk": ["/shared", 100.0],
        "checkpoints": {"complete": [], "partial": [], "finished_step": None},
        "shared_marker": True,
        "gpu_topology": {"rc": 127, "stdout": "", "stderr": "nvidia-smi: not found"},
    }
    rep.update(kw)
    return rep


def plan_args(check_plan: dict[str, Any], **kw: Any) -> dict[str, Any]:
    args = {
        "check": check_plan,
        "reports": {h: report(h) for h in HOSTS},
        "addresses": {h: f"10.95.0.{10 + i}" for i, h in enumerate(HOSTS)},
        "master_port": 29500,
        "min_free_gb": 10.0,
        "overwrite": False,
        "sync_data": False,
        "env_file": "/etc/rdmaops/nccl.env",
        "extra_env": {},
        "health": {},
        "health_mode": "off",
        "health_severity": {},
        "hsdp_rdma_below_gbps": 0.0,
        "memory_check": "fail",
    }
    args.update(kw)
    return args


def checked(**kw: Any) -> dict[str, Any]:
    out = phase.check(check_args(**kw))
    assert out["errors"] == [], out["errors"]
    return out["plan"]


def planned(check_plan: dict[str, Any], **kw: Any) -> dict[str, Any]:
    out = phase.plan(plan_args(check_plan, **kw))
    assert out["errors"] == [], out["errors"]
    return out["plan"]


def load_trainer_recipe(path: Path) -> dict[str, Any]:
    sys.path.insert(0, TRAINER)
    from rdmaops_trainer.config import load_recipe  # type: ignore[import-not-found]

    return load_recipe(str(path)).to_dict()


def test_the_recipe_is_resolved_once_into_the_file_every_node_runs(tmp_path: Path) -> None:
    c = checked(steps="40", overrides={"train.log_every": 5}, resume="latest")
    assert c["job"] == "tiny" and c["unit"] == "rdmaops-train-tiny.service" and c["steps"] == 40
    assert c["output_dir"] == "/shared/train/tiny/runs/tiny"
    assert c["events_file"] == "/var/log/rdmaops/train-tiny.events.jsonl"
    plan = planned(c)
    assert plan["recipe_sha256"] == recipe_digest(plan["recipe_text"])
    assert plan["recipe_text"].startswith(
        "# Recipe tiny as train.yml resolved it on the controller (overrides:"
    )
    data = yaml.safe_load(plan["recipe_text"])
    assert (
        data["train"]["steps"] == 40 and data["train"]["log_every"] == 5 and data["train"]["resume"] == "auto"
    )
    # the trainer itself reads the file back to the same recipe, with nothing left to override
    (tmp_path / "recipe.yaml").write_text(plan["recipe_text"])
    assert load_trainer_recipe(tmp_path / "recipe.yaml") == data


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"recipe": "nope"}, "recipe 'nope' not found (known:"),
        (
            {"overrides": {"cluster.nodes": 2}},
            "recipe tiny: cluster.nodes: 2, pinned (recipe_overrides), but the cluster has 3 node(s): "
            'cluster.nodes=3 runs it there; it would run with -e \'{"recipe_overrides": {"cluster.nodes": '
            "3}}'",
        ),
        (
            {"recipe": "gpt2-pipeline", "overrides": {"cluster.procs_per_node": 1}},
            "strategy.pipeline.stages: 2 stages need a multiple of 2 ranks (each data-parallel replica is a "
            "whole "
            "pipeline), and the cluster has 3 (3 node(s) x 1); it would run with "
            '-e \'{"recipe_overrides": {"strategy.pipeline.stages": 3}}\'',
        ),
        (
            {"steps": "10", "overrides": {"train.steps": 20}},
            "-e steps=10 and recipe_overrides train.steps=20 disagree",
        ),
        ({"job": "my job"}, "train job name 'my job'"),
        ({"hsdp": "on", "overrides": {phase.HSDP_KEY: "off"}}, "train_hsdp=on and recipe_overrides"),
        (
            {"recipe": "gpt2-pipeline", "launcher": "deepspeed", "hosts": ["node1"]},
            "pipeline strategy",
        ),
    ],
)
def test_check_names_each_bad_input(kw: dict[str, Any], needle: str) -> None:
    out = phase.check(check_args(**kw))
    assert "plan" not in out and any(needle in e for e in out["errors"]), out["errors"]


@pytest.mark.parametrize(("hsdp", "value"), [("on", True), ("off", False), ("auto", "auto"), ("", "auto")])
def test_check_passes_the_hsdp_choice_as_the_trainers_key(hsdp: str, value: object) -> None:
    recipe = yaml.safe_load(planned(checked(hsdp=hsdp))["recipe_text"])
    assert recipe["strategy"]["fsdp2"]["hsdp"] == value


TCP = {"GLOO_SOCKET_IFNAME": "nodeaddr0", "NCCL_IB_DISABLE": "1", "NCCL_SOCKET_IFNAME": "=nodeaddr0"}
RDMA = {"GLOO_SOCKET_IFNAME": "nodeaddr0", "NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": "=mlx5_0:1"}
MESH_TCP = {**TCP, "NCCL_NET_PLUGIN": "mesh", "NCCL_MESH_TRANSPORT": "tcp"}
MESH_VERBS = {**RDMA, "NCCL_NET_PLUGIN": "mesh", "NCCL_MESH_TRANSPORT": "verbs"}


@pytest.mark.parametrize(
    ("env", "flag", "note"),
    [
        (
            TCP,
            "1",
            "hsdp: the nodes are joined by TCP (NCCL's socket transport, NCCL_IB_DISABLE=1): RDMAOPS_HSDP=1",
        ),
        (MESH_TCP, "1", "hsdp: the nodes are joined by TCP (the Mesh plugin's TCP backend): RDMAOPS_HSDP=1"),
        (RDMA, "0", "hsdp: the nodes are joined by RDMA: RDMAOPS_HSDP=0, plain FSDP2 over every rank"),
        (MESH_VERBS, "0", "hsdp: the nodes are joined by RDMA: RDMAOPS_HSDP=0"),
    ],
)
def test_the_launch_says_hsdp_from_the_fabric(env: dict[str, str], flag: str, note: str) -> None:
    c = checked()
    p = phase.plan(plan_args(c, reports={h: report(h, env=env) for h in HOSTS}))["plan"]
    for node in p["nodes"].values():
        assert f"RDMAOPS_HSDP={flag}" in node["files"]["job.env"].splitlines()
    assert any(n.startswith(note) for n in p["notes"]), p["notes"]
    if flag == "1":  # what crosses the slow link, and in which dtype (tiny computes in fp32 on CPU)
        assert any("gradient all-reduce crosses them, in float32 (fp32 compute)" in n for n in p["notes"])
        reports = {h: report(h, env=env, gpus=1) for h in HOSTS}
        gpu = {"cluster.device": "cuda", "train.precision": "bf16"}
        for extra, said in (
            ({}, "in bfloat16 (strategy.fsdp2.reduce_dtype auto"),
            ({"strategy.fsdp2.reduce_dtype": "float32"}, "in float32 (strategy.fsdp2.reduce_dtype)"),
        ):
            notes = phase.plan(plan_args(checked(overrides={**gpu, **extra}), reports=reports))["plan"][
                "notes"
            ]
            assert any(f"crosses them, {said}" in n for n in notes), notes
    # one node on RDMA among TCP ones: not a TCP job
    mixed = {h: report(h, env=TCP) for h in HOSTS} | {"node2": report("node2", env=RDMA)}
    assert (
        "RDMAOPS_HSDP=0"
        in phase.plan(plan_args(c, reports=mixed))["plan"]["nodes"]["node1"]["files"]["job.env"]
    )


def port(device: str, rate: float, active: bool = True, num: int = 1) -> dict[str, Any]:
    return {"device": device, "port": num, "active": active, "rate_gbps": rate}


FAST = [port("mlx5_0", 400), port("mlx5_1", 400)]
ONE_SLOW = [port("mlx5_0", 400), port("mlx5_1", 25)]
RDMA_NOTE = "hsdp: the nodes are joined by RDMA: RDMAOPS_HSDP=0"


@pytest.mark.parametrize(
    ("node2_ports", "hca", "below", "flag", "note"),
    [
        # one node's port trained at 25 Gb/s: slow RDMA, HSDP, named with node and port
        (
            ONE_SLOW,
            "",
            100,
            "1",
            "hsdp: the nodes are joined by RDMA at 25 Gb/s (node2 mlx5_1/1), below "
            "train_hsdp_rdma_below_gbps=100: RDMAOPS_HSDP=1",
        ),
        # the slow port is one NCCL does not use (NCCL_IB_HCA): not slow
        (ONE_SLOW, "=mlx5_0:1", 100, "0", RDMA_NOTE),
        # ... or excluded with ^
        (ONE_SLOW, "^mlx5_1", 100, "0", RDMA_NOTE),
        # a slow port that is down is not in NCCL's path
        ([port("mlx5_0", 400), port("mlx5_1", 25, active=False)], "", 100, "0", RDMA_NOTE),
        # every port at 200 Gb/s: at or above the threshold
        ([port("mlx5_0", 200)], "", 200, "0", RDMA_NOTE),
        # threshold 0: never
        ([port("mlx5_1", 10)], "", 0, "0", RDMA_NOTE),
        # no RDMA device read (rates unknown): plain FSDP2
        ([], "", 100, "0", RDMA_NOTE),
    ],
)
def test_rdma_below_the_threshold_is_a_slow_link(
    node2_ports: list[dict[str, Any]], hca: str, below: float, flag: str, note: str
) -> None:
    env = {**RDMA, "NCCL_IB_HCA": hca}
    reports = {h: report(h, env=env, rdma_ports=FAST) for h in HOSTS}
    reports["node2"] = report("node2", env=env, rdma_ports=node2_ports)
    p = phase.plan(plan_args(checked(), reports=reports, hsdp_rdma_below_gbps=below))["plan"]
    for node in p["nodes"].values():
        assert f"RDMAOPS_HSDP={flag}" in node["files"]["job.env"].splitlines()
    assert any(n.startswith(note) for n in p["notes"]), p["notes"]


def test_a_forced_hsdp_or_another_strategy_is_said_so() -> None:
    tcp = {h: report(h, env=TCP) for h in HOSTS}
    forced = phase.plan(plan_args(checked(hsdp="off"), reports=tcp))["plan"]
    assert "hsdp: strategy.fsdp2.hsdp is false (-e hsdp=auto follows the fabric)" in forced["notes"]
    zero3 = phase.plan(plan_args(checked(overrides={"strategy.name": "zero3"}), reports=tcp))["plan"]
    assert not any(n.startswith("hsdp:") for n in zero3["notes"])


def test_the_notes_give_each_gpus_nearest_nic_and_say_once_where_nvidia_smi_is_missing() -> None:
    smi = (FIXTURE_DIR / "nvidia-smi-topo" / "h100x8-8nic-sglang-issue-30401.txt").read_text()
    rdma = {"NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1"}
    gpu = {
        "gpu_topology": {"rc": 0, "stdout": smi, "stderr": ""},
        "env": {**rdma, "GLOO_SOCKET_IFNAME": "nodeaddr0"},
    }
    reports = {"node1": report("node1", **gpu), "node2": report("node2"), "node3": report("node3")}
    notes = phase.plan(plan_args(checked(), reports=reports))["plan"]["notes"]
    gpu_notes = [n for n in notes if n.startswith("gpu-nic affinity")]
    assert gpu_notes[0].startswith(
        "gpu-nic affinity on node1: GPU0 mlx5_0 (PIX), GPU1 mlx5_1 (PIX), GPU2 mlx5_2"
    )
    hca = "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1"
    assert gpu_notes[0].endswith(
        f"; GPU2, GPU3, GPU4, GPU5, GPU6, GPU7 have no NIC NCCL uses ({hca}) at PIX/PXB"
    )
    assert gpu_notes[1:5] == [
        f"gpu-nic affinity: warning: node1: GPU{i}'s nearest NIC that NCCL uses ({hca}) is SYS (mlx5_0,"
        f" mlx5_1); its nearest NIC, mlx5_{i} (PIX), is not one NCCL uses"
        for i in (4, 5, 6, 7)
    ]
    assert gpu_notes[5:] == [
        "gpu-nic affinity: no nvidia-smi on node2, node3 (no GPU driver there): no GPU-to-NIC affinity"
    ]


def test_plan_gives_each_node_its_launch_directory_and_the_unit_its_command() -> None:
    c = checked(steps="40")
    out = phase.plan(plan_args(c))
    assert out["errors"] == []
    p = out["plan"]
    assert p["master"] == "node1" and p["master_addr"] == "10.255.0.1" and p["order"] == HOSTS
    n3 = p["nodes"]["node3"]
    assert n3["node_rank"] == 2 and n3["dir"] == "/shared/train/tiny/launch/node3"
    assert set(n3["files"]) == {"launch.sh", "nccl.env", "job.env", "recipe.yaml"}
    assert n3["files"]["recipe.yaml"] == p["recipe_text"]
    job_env = n3["files"]["job.env"].splitlines()
    digest = f"RDMAOPS_RECIPE_SHA256={p['recipe_sha256']}"
    for line in ("MASTER_ADDR=10.255.0.1", "MASTER_PORT=29500", "RDMAOPS_NODE_RANK=2", digest,
                 "RDMAOPS_TRAIN_WORKDIR=/shared/train/tiny"):  # fmt: skip
        assert line in job_env
    assert "GLOO_SOCKET_IFNAME=nodeaddr0" in n3["files"]["nccl.env"].splitlines()
    assert n3["unit_argv"] == [
        "/opt/rdmaops/venv/bin/python", "-I", "/shared/train/tiny/launch/node3/supervise.py",
        "--events", "/var/log/rdmaops/train-tiny.events.jsonl", "--log", "/var/log/rdmaops/train-tiny.log",
        "--", "/bin/bash", "/shared/train/tiny/launch/node3/launch.sh",
    ]  # fmt: skip
    assert n3["command"].endswith(
        "--node-rank=2 --master-addr=10.255.0.1 --master-port=29500 --max-restarts=0 "
        "-m rdmaops_trainer --recipe /shared/train/tiny/launch/node3/recipe.yaml"
    )
    unit_files = n3["unit_files"]
    assert unit_files["/shared/train/tiny/launch/node3/supervise.py"].startswith(
        "# GNU General Public License"
    )
    record = json.loads(unit_files["/shared/train/tiny/job.json"])
    assert record["recipe_sha256"] == p["recipe_sha256"] and record["order"] == HOSTS
    assert record["launch_file"] == "/shared/train/tiny/launch.json"
    assert record["log_file"] == "/var/log/rdmaops/train-tiny.log" and record["launcher"] == "torchrun"


def test_plan_takes_the_inventory_address_when_the_master_reports_none() -> None:
    c = checked()
    reports = {h: report(h) for h in HOSTS}
    reports["node1"] = report("node1", address="", interfaces={})
    p = phase.plan(plan_args(c, reports=reports))["plan"]
    assert p["master_addr"] == "10.95.0.10"


def test_plan_reports_every_preflight_problem_and_plans_nothing() -> None:
    c = checked()
    reports = {h: report(h) for h in HOSTS}
    reports["node2"] = {"unreachable": True, "msg": "ssh: connect timed out\nmore"}
    reports["node3"] = report("node3", listening=[], disk=["/shared", 1.0])
    reports["node1"] = report("node1", listening=[29500])
    out = phase.plan(plan_args(c, reports=reports))
    assert "plan" not in out
    assert any("node2: unreachable (ssh: connect timed out)" in e for e in out["errors"])
    assert any("node3: 1.0 GB free" in e for e in out["errors"])
    assert any("node1: rendezvous port 29500 is already in use" in e for e in out["errors"])


def test_check_refuses_bad_health_settings_naming_them() -> None:
    args = check_args(health="loud", health_thresholds={"host_disk_free_min_gb": 5}, health_severity={"g": 1})
    errors = phase.check(args)["errors"]
    assert "train_health: 'loud' must be one of fail, warn, off" in errors
    wrong = "train_health_thresholds: unknown threshold 'host_disk_free_min_gb'"
    assert any(e.startswith(wrong) for e in errors)
    assert any(e.startswith("train_health_severity: unknown check 'g'") for e in errors)


def health_result(node: str, *findings: dict[str, Any]) -> dict[str, Any]:
    """A node_health result (as registered) with these findings."""
    checks = {"gpu.ecc_volatile": "pass", "host.disk_free": "pass"}
    checks.update({f["check"]: f["severity"] for f in findings})
    return {
        "changed": False,
        "health": {"node": node, "ok": not findings, "findings": [*findings], "checks": checks, "facts": {}},
    }


DISK = {
    "node": "node2",
    "check": "host.disk_free",
    "subject": "/shared/train/tiny/runs/tiny",
    "value": "55.5 GiB",
    "threshold": ">= 1e+05 GiB",
    "severity": "fail",
    "message": "55.5 GiB free for checkpoints on /",
}


def test_plan_health_fail_stops_the_launch_with_the_other_problems() -> None:
    c = checked()
    reports = {h: report(h) for h in HOSTS}
    reports["node3"] = report("node3", disk=["/shared", 1.0])
    health = {h: health_result(h) for h in HOSTS}
    health["node2"] = health_result("node2", DISK)
    out = phase.plan(plan_args(c, reports=reports, health=health, health_mode="fail"))
    assert "plan" not in out
    assert (
        "node2: host.disk_free [fail] /shared/train/tiny/runs/tiny: 55.5 GiB free for checkpoints on / "
        "(value 55.5 GiB, threshold >= 1e+05 GiB)" in out["errors"]
    )
    assert any(e.startswith("node3: 1.0 GB free") for e in out["errors"])


def test_plan_health_warn_and_off_launch() -> None:
    c = checked()
    health = {h: health_result(h) for h in HOSTS}
    health["node2"] = health_result("node2", DISK)
    warned = phase.plan(plan_args(c, health=health, health_mode="warn"))
    assert warned["errors"] == []
    assert any(n.startswith("health: node2: host.disk_free [fail]") for n in warned["plan"]["notes"])
    assert warned["plan"]["health"]["failed_nodes"] == ["node2"]
    off = phase.plan(plan_args(c, health=health, health_mode="off"))
    assert off["errors"] == [] and off["plan"]["health"] is None
    passing = phase.plan(plan_args(c, health={h: health_result(h) for h in HOSTS}, health_mode="fail"))
    assert passing["errors"] == [] and passing["plan"]["health"]["ok"]
    # an unreachable node is named once, by the preflight
    health["node2"] = {"unreachable": True, "msg": "ssh: timed out"}
    reports = {h: report(h) for h in HOSTS}
    reports["node2"] = {"unreachable": True, "msg": "ssh: timed out"}
    out = phase.plan(plan_args(c, reports=reports, health=health, health_mode="fail"))
    assert [e for e in out["errors"] if "node2" in e] == [
        "node2: unreachable (ssh: timed out); bring it back or leave it out with --limit"
    ]


def test_plan_for_slurm_writes_the_batch_script_on_the_resolved_recipe() -> None:
    c = checked(launcher="slurm")
    p = phase.plan(plan_args(c))["plan"]
    assert p["slurm_job_name"] == "rdmaops-tiny" and p["batch_script"] == "/shared/train/tiny/tiny.sbatch"
    text = p["batch_script_text"]
    assert "MASTER_ADDR=10.255.0.1" in text.splitlines()
    assert "--recipe /shared/train/tiny/recipe.yaml" in text
    assert f"export RDMAOPS_RECIPE_SHA256={p['recipe_sha256']}" in text


def test_the_action_plugins_fail_with_every_error_in_one_message() -> None:
    out = run_action(
        CheckAction, check_args(recipe="gpt2-pipeline", overrides={"cluster.procs_per_node": 1}, job="a b")
    )
    assert out["failed"] and "strategy.pipeline.stages: 2 stages need" in out["msg"]
    c = run_action(CheckAction, check_args())["plan"]
    reports = {h: report(h) for h in HOSTS}
    reports["node2"] = report("node2", venv={"path": "/opt/rdmaops/venv", "exists": False})
    out = run_action(PlanAction, plan_args(c, reports=reports))
    assert out["failed"] and out["msg"].startswith(
        "train preflight: 1 problem(s), nothing was launched: node2: no venv"
    )


# Cabled node1 - node3 - node2 - node4 - node1 (the inventory's mesh_network_ports of every host).
RING4 = {
    "node1": {"node3": "data0", "node4": "data1"},
    "node2": {"node3": "data0", "node4": "data1"},
    "node3": {"node1": "data0", "node2": "data1"},
    "node4": {"node2": "data0", "node1": "data1"},
}
RING_HOSTS = ["node1", "node2", "node3", "node4"]


@pytest.mark.parametrize("launcher", ["torchrun", "slurm"])
def test_on_a_ring_the_node_ranks_follow_the_cables(launcher: str) -> None:
    c = checked(hosts=RING_HOSTS, ports=RING4, launcher=launcher)
    order = ["node1", "node3", "node2", "node4"]
    assert c["hosts"] == order and c["master"] == "node1"
    reports = {h: report(h) for h in RING_HOSTS}
    p = phase.plan(plan_args(c, reports=reports, addresses={}))["plan"]
    assert p["order"] == order and p["job_record"]["order"] == order
    assert {h: n["node_rank"] for h, n in p["nodes"].items()} == {
        "node1": 0,
        "node3": 1,
        "node2": 2,
        "node4": 3,
    }
    assert p["notes"][0] == f"rank order: node1, node3, node2, node4, master node1 ({rank_order.RING})"
    if launcher == "slurm":
        assert "ranks node1 node3 node2 node4" in p["batch_script_text"]
    else:
        assert "--node-rank=1 --master-addr=10.255.0.1" in p["nodes"]["node3"]["command"]


def test_a_full_mesh_or_a_switched_fabric_keeps_the_play_order() -> None:
    mesh = {h: {o: f"p{i}" for i, o in enumerate(x for x in HOSTS if x != h)} for h in HOSTS}
    assert checked(ports=mesh)["hosts"] == HOSTS
    assert checked(ports=RING4 | mesh, topology="switched", hosts=HOSTS)["order_note"] == ""
    p = phase.plan(plan_args(checked(ports=mesh)))["plan"]
    assert p["order"] == HOSTS and p["notes"][0].startswith("rank order: the play's host order node1, node2")


def test_an_inconsistent_port_map_is_refused_before_anything_starts() -> None:
    ports = {h: dict(v) for h, v in RING4.items()}
    ports["node4"] = {"node2": "data0"}
    out = phase.check(check_args(hosts=RING_HOSTS, ports=ports))
    assert "plan" not in out and any("mesh_network_ports is inconsistent: node4:" in e for e in out["errors"])
