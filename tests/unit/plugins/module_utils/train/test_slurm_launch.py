"""train.yml's Slurm launcher: the batch script (run for real with stand-in scontrol/srun/python) and the
watcher's reading of `scontrol show job`."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.train import agent as train_agent
from ansible_collections.rdmaops.cluster.plugins.module_utils.train.launch import (
    LaunchError,
    recipe_digest,
    slurm_batch_script,
)

from ...conftest import FIXTURE_DIR

ARGS = {
    "job": "t1",
    "recipe": "tiny",
    "workdir": "/srv/train/t1",
    "python": "/opt/rdmaops/venv/bin/python",
    "nodes": 2,
    "procs_per_node": 2,
    "master_port": 29500,
    "trainer": ["-m", "rdmaops_trainer", "--recipe", "/srv/train/t1/recipe.yaml"],
    "addresses": {"node1": "10.255.0.1", "node2": "10.255.0.2"},
    "environment": {"RDMAOPS_TRAIN_JOB": "t1", "PYTHONUNBUFFERED": "1"},
}


def _fake_bin(tmp: Path, env_file: Path, node: str = "node2", allocation: str = "node2 node1") -> Path:
    """scontrol lists the allocation (node2 first: Slurm's order, not train.yml's); srun runs the command as
    the task on ``node`` (SLURM_NODEID 0: Slurm's first node); python prints."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text(f"#!/bin/sh\nprintf '%s\\n' {allocation}\n")
    (bin_dir / "srun").write_text(
        '#!/bin/bash\nwhile [[ "$1" == --* ]]; do shift; done\n'
        f'export SLURM_NODEID=0 SLURMD_NODENAME={node}\nexec "$@"\n'
    )
    (bin_dir / "python").write_text(
        '#!/bin/sh\necho "rank=$PET_NODE_RANK gloo=$GLOO_SOCKET_IFNAME job=$RDMAOPS_TRAIN_JOB"\n'
        'for a in "$@"; do echo "arg=$a"; done\n'
    )
    env_file.write_text("# nccl.env\nGLOO_SOCKET_IFNAME=nodeaddr0\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    return bin_dir


def _run(tmp: Path, *positional: str, **kw: Any) -> list[str]:
    env_file = tmp / "nccl.env"
    bin_dir = _fake_bin(tmp, env_file, **kw.pop("fake", {}))
    text = slurm_batch_script(**{**ARGS, "python": str(bin_dir / "python"), "env_file": str(env_file), **kw})
    script = tmp / "t1.sbatch"
    script.write_text(text)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_JOB_NODELIST": "node[1-2]",
           "SLURM_JOB_ID": "42"}  # fmt: skip
    proc = subprocess.run(
        ["bash", str(script), *positional], capture_output=True, text=True, env=env, check=True
    )
    return proc.stdout.splitlines()


def test_script_runs_torchrun_with_the_node_rank_and_the_first_node_as_master(tmp_path: Path) -> None:
    out = _run(tmp_path)
    # ranks and master in train.yml's order (node1, node2), whatever order Slurm lists the nodes in
    assert out[0] == "job 42 on node[1-2], master node1 at 10.255.0.1:29500, ranks node1 node2"
    assert out[1] == "rank=1 gloo=nodeaddr0 job=t1"
    args = [line.removeprefix("arg=") for line in out[2:]]
    assert args[:8] == [
        "-m", "torch.distributed.run", "--nnodes=2", "--nproc-per-node=2", "--master-addr=10.255.0.1",
        "--master-port=29500", "--max-restarts=0", "-m",
    ]  # fmt: skip
    assert args[8:] == ["rdmaops_trainer", "--recipe", "/srv/train/t1/recipe.yaml"]


def test_ranks_follow_the_order_given_not_slurms(tmp_path: Path) -> None:
    # a ring cabled node1 - node3 - node2 - node4: train.yml ranks node1, node3, node2, node4
    ring = {"node1": "10.255.0.1", "node3": "10.255.0.3", "node2": "10.255.0.2", "node4": "10.255.0.4"}
    allocation = "node1 node2 node3 node4"
    for node, rank in (("node1", 0), ("node3", 1), ("node2", 2), ("node4", 3)):
        tmp = tmp_path / node
        tmp.mkdir()
        out = _run(tmp, addresses=ring, nodes=4, fake={"node": node, "allocation": allocation})
        assert (
            out[0] == "job 42 on node[1-2], master node1 at 10.255.0.1:29500, ranks node1 node3 node2 node4"
        )
        assert out[1] == f"rank={rank} gloo=nodeaddr0 job=t1"


@pytest.mark.parametrize(
    ("fake", "message"),
    [
        # sbatch by hand on other nodes: Slurm's allocation is not the nodes train.yml ranked
        ({"allocation": "node1 node3"}, "the job's nodes node[1-2] are not the nodes ranked node1 node2"),
        # a task on a node that has no rank
        ({"node": "node9"}, "node9 has no node rank (ranks: node1 node2)"),
    ],
)
def test_nodes_without_a_rank_stop_the_job(tmp_path: Path, fake: dict[str, str], message: str) -> None:
    env_file = tmp_path / "nccl.env"
    bin_dir = _fake_bin(tmp_path, env_file, **fake)
    script = tmp_path / "t1.sbatch"
    script.write_text(
        slurm_batch_script(**{**ARGS, "python": str(bin_dir / "python"), "env_file": str(env_file)})
    )
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_JOB_NODELIST": "node[1-2]",
           "SLURM_JOB_ID": "42"}  # fmt: skip
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 2 and message in proc.stderr and "rank=" not in proc.stdout


def test_script_positional_steps_warmup_lr_override_last(tmp_path: Path) -> None:
    args = [line.removeprefix("arg=") for line in _run(tmp_path, "12000", "100", "2e-5")[2:]]
    assert args[-6:] == [
        "--set",
        "train.steps=12000",
        "--set",
        "train.warmup_steps=100",
        "--set",
        "train.lr=2e-5",
    ]


def test_script_header_and_syntax(tmp_path: Path) -> None:
    text = slurm_batch_script(**{**ARGS, "env_file": "/etc/rdmaops/nccl.env"})
    for line in ("#SBATCH --job-name=rdmaops-t1", "#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=1",
                 "#SBATCH --output=/srv/train/t1/slurm-%j.out"):  # fmt: skip
        assert line in text.splitlines()
    (tmp_path / "s").write_text(text)
    subprocess.run(["bash", "-n", str(tmp_path / "s")], check=True)


@pytest.mark.parametrize("addresses", [{}, {"node1": "10.0.0.1; rm -rf /"}, {"bad name": "10.0.0.1"}])
def test_script_refuses_what_cannot_be_quoted(addresses: dict[str, str]) -> None:
    with pytest.raises(LaunchError, match="launcher=slurm"):
        slurm_batch_script(**{**ARGS, "env_file": "/e", "addresses": addresses})


def test_each_task_checks_the_recipe_digest_on_its_node(tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("name: tiny\n")
    env_file = tmp_path / "nccl.env"
    bin_dir = _fake_bin(tmp_path, env_file)
    args = {
        **ARGS,
        "python": str(bin_dir / "python"),
        "env_file": str(env_file),
        "recipe_file": str(recipe),
        "environment": {**ARGS["environment"], "RDMAOPS_RECIPE_SHA256": recipe_digest("name: tiny\n")},
    }
    script = tmp_path / "t1.sbatch"
    script.write_text(slurm_batch_script(**args))  # type: ignore[arg-type]
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_JOB_NODELIST": "node[1-2]",
           "SLURM_JOB_ID": "42"}  # fmt: skip
    ok = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, check=False)
    assert ok.returncode == 0 and "rank=1 gloo=nodeaddr0 job=t1" in ok.stdout
    recipe.write_text("name: tiny\nseed: 7\n")  # this node's copy differs from what was resolved
    bad = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, check=False)
    assert bad.returncode == 2 and "rank=" not in bad.stdout
    assert f"{recipe} is not the recipe train.yml resolved" in bad.stderr


FIX = FIXTURE_DIR / "slurm"


@pytest.mark.parametrize(
    ("recorded", "state", "phase", "result", "status"),
    [
        ("run", "RUNNING", "running", None, None),
        ("fail", "FAILED", "failed", "failed", "3"),  # the batch script exited 3
        ("cancel", "CANCELLED", "failed", "signal", "15"),  # scancel: ExitCode=0:15
    ],
)
def test_slurm_job_recorded(
    recorded: str, state: str, phase: str, result: str | None, status: str | None
) -> None:
    job = train_agent.parse_scontrol_job((FIX / f"scontrol-show-job-o.{recorded}.txt").read_text())
    assert job["JobState"] == state and job["UserId"] == "root(0)"
    assert train_agent.slurm_phase(job) == phase
    unit = train_agent.slurm_unit(job, job["JobId"])
    assert unit["Id"] == f"slurm job {job['JobId']}" and unit["NodeList"]
    assert unit.get("Result") == result and unit.get("ExecMainStatus") == status


@pytest.mark.parametrize("state", ["PENDING", "COMPLETING", "CONFIGURING"])
def test_slurm_job_states_still_running(state: str) -> None:
    assert train_agent.slurm_phase({"JobState": state}) == "running"
    assert train_agent.slurm_phase({"JobState": "COMPLETED", "ExitCode": "0:0"}) == "succeeded"


def test_slurm_job_gone() -> None:
    # `scontrol show job -o ID` of a purged job: rc 1, "slurm_load_jobs error: Invalid job id specified"
    assert train_agent.slurm_phase({}) == "absent"
    assert train_agent.slurm_unit({}, "7")["LoadState"] == "not-found"
