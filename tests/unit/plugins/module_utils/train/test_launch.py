"""train.yml's launch plan: unit names, launcher command lines, overrides, output paths "
"(module_utils/train_launch)."""

from __future__ import annotations

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.train import launch as tl

RESOLVED = {
    "recipe": {
        "model": {"path": None},
        "tokenizer": {"path": "/shared/tok"},
        "data": {"path": "/shared/data/train.jsonl", "eval_path": ""},
    },
    "overrides": ["train.steps=30"],
    "launch": {
        "name": "tiny",
        "strategy": "fsdp2",
        "device": "cpu",
        "nodes": 3,
        "procs_per_node": 1,
        "world_size": 3,
        "steps": 30,
        "output_dir": "runs/tiny",
    },
}
ARGS = {
    "job": "",
    "recipe": "tiny",
    "launcher": "torchrun",
    "resume": "never",
    "venv": "/opt/rdmaops/venv",
    "base_dir": "/shared/train",
    "log_dir": "/var/log/rdmaops",
    "master_port": 29500,
}


def test_torchrun_plan_is_master_first_on_the_node_address() -> None:
    plan = tl.launch_plan(RESOLVED, ["node1", "node2", "node3"], {"node1": "10.255.0.1"}, **ARGS)
    assert plan["job"] == "tiny" and plan["unit"] == "rdmaops-train-tiny.service"
    assert plan["master"] == "node1" and plan["order"] == ["node1", "node2", "node3"]
    assert plan["output_dir"] == "/shared/train/tiny/runs/tiny"
    assert plan["metrics_file"] == "/shared/train/tiny/runs/tiny/metrics.jsonl"
    assert plan["log_file"] == "/var/log/rdmaops/train-tiny.log"
    assert plan["paths"] == [
        {"what": "tokenizer.path", "path": "/shared/tok"},
        {"what": "data.path", "path": "/shared/data/train.jsonl"},
    ]
    argv = plan["nodes"]["node3"]["argv"]
    assert argv[:3] == ["/opt/rdmaops/venv/bin/python", "-m", "torch.distributed.run"]
    assert "--node-rank=2" in argv and "--nnodes=3" in argv and "--max-restarts=0" in argv
    assert "--master-addr=10.255.0.1" in argv and "--master-port=29500" in argv
    assert argv[argv.index("-m", 3) :] == [
        "-m",
        "rdmaops_trainer",
        "--recipe",
        "tiny",
        "--set",
        "train.steps=30",
        "--set",
        "train.resume=never",
    ]
    assert plan["nodes"]["node3"]["command"].startswith(
        "/opt/rdmaops/venv/bin/python -m torch.distributed.run"
    )
    assert plan["hostfile"] == "" and plan["environment"]["RDMAOPS_TRAIN_JOB"] == "tiny"


def test_deepspeed_plan_has_a_hostfile_of_every_node_and_an_explicit_master() -> None:
    plan = tl.launch_plan(
        RESOLVED,
        ["a", "b"],
        {"a": "10.255.0.1"},
        **{**ARGS, "launcher": "deepspeed", "job": "z3", "resume": "latest"},
    )
    assert plan["hostfile"] == "/shared/train/z3/hostfile"
    assert plan["hostfile_text"] == "a slots=1\nb slots=1\n"
    argv = plan["nodes"]["b"]["argv"]
    assert argv[1:4] == ["-m", "deepspeed.launcher.runner", "--no_ssh"]
    assert "--node_rank=1" in argv and "--master_addr=10.255.0.1" in argv
    assert "--hostfile=/shared/train/z3/hostfile" in argv and "--num_nodes=2" in argv
    assert "--no_local_rank" in argv  # the trainer takes LOCAL_RANK from the environment
    i = argv.index("--module")
    assert argv[i + 1 : i + 4] == ["rdmaops_trainer", "--recipe", "tiny"] and argv[-1] == "train.resume=auto"


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"job": "my job"}, "train job name 'my job'"),
        ({"launcher": "mpirun"}, "launcher='mpirun'"),
        ({"resume": "yes"}, "resume='yes'"),
    ],
)
def test_bad_settings_are_named(change: dict, needle: str) -> None:
    with pytest.raises(tl.LaunchError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        tl.launch_plan(RESOLVED, ["a"], {"a": "1.2.3.4"}, **{**ARGS, **change})


def test_deepspeed_refuses_the_pipeline_strategy() -> None:
    pipe = {**RESOLVED, "launch": {**RESOLVED["launch"], "strategy": "pipeline"}}
    with pytest.raises(tl.LaunchError, match="pipeline strategy needs torchrun"):
        tl.launch_plan(pipe, ["a"], {"a": "1.2.3.4"}, **{**ARGS, "launcher": "deepspeed"})


def test_master_without_an_address_is_an_error() -> None:
    with pytest.raises(tl.LaunchError, match="node1: no address"):
        tl.launch_plan(RESOLVED, ["node1"], {}, **ARGS)


def test_shorthands_merge_and_conflicts_are_refused() -> None:
    assert tl.merge_overrides({"train.lr": 1e-4}, {"steps": 12000, "warmup": 100, "lr": ""}) == {
        "train.lr": 1e-4,
        "train.steps": 12000,
        "train.warmup_steps": 100,
    }
    assert tl.merge_overrides({"train.steps": "50"}, {"steps": 50}) == {"train.steps": 50}
    with pytest.raises(tl.LaunchError, match=r"-e steps=10 and recipe_overrides train.steps=20 disagree"):
        tl.merge_overrides({"train.steps": 20}, {"steps": 10})


def test_absolute_output_dir_is_kept() -> None:
    assert tl.resolve_output_dir("/w/job", "/data/out/") == "/data/out"
    assert tl.resolve_output_dir("/w/job/", "runs/x") == "/w/job/runs/x"
