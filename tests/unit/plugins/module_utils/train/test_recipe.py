"""Recipes for playbooks: the trainer_recipe module_utils, and playbooks/recipe.yml via ansible-playbook."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.train.recipe import (
    RecipeResolveError,
    hsdp_decision,
    override_args,
    resolve,
)

from ...conftest import ROOT as REPO

TRAINER = str(REPO / "files" / "trainer")
RECIPES = sorted(p.stem for p in (REPO / "files/trainer/rdmaops_trainer/recipes").glob("*.yaml"))


def test_override_values_keep_their_types() -> None:
    args = override_args({"train.lr": 1e-4, "train.compile": True, "lora.target_modules": ["q", "v"]})
    assert args == ["train.lr=0.0001", "train.compile=true", 'lora.target_modules=["q", "v"]']
    # strings as written: the trainer parses them as YAML, like its own --set
    assert override_args({"tokenizer.path": "/data/tok", "model.path": None, "train.lr": "1e-4"}) == [
        "tokenizer.path=/data/tok",
        "model.path=null",
        "train.lr=1e-4",
    ]
    with pytest.raises(RecipeResolveError, match=r"override key 'train\.lr=1'"):
        override_args({"train.lr=1": 2})


@pytest.mark.parametrize("name", RECIPES)
def test_every_shipped_recipe_resolves_for_its_own_node_count(name: str) -> None:
    # the same files and checks the trainer uses (test_config.py checks them from the trainer's side)
    launch = resolve(TRAINER, name, {})["launch"]
    out = resolve(TRAINER, name, {}, nodes=launch["nodes"])
    assert out["launch"] == launch
    assert launch["world_size"] == launch["nodes"] * launch["procs_per_node"]
    if launch["strategy"] != "pipeline":
        per_step = launch["micro_batch_size"] * launch["grad_accum"] * launch["data_parallel"]
        assert per_step == launch["global_batch_size"]


def test_overrides_reach_the_recipe_and_the_trainer_arguments() -> None:
    out = resolve(
        TRAINER, "tiny", {"train.lr": 2e-3, "cluster.nodes": 2, "train.global_batch_size": 8}, nodes=2
    )
    assert out["recipe"]["train"]["lr"] == 2e-3
    assert out["launch"]["world_size"] == 2
    assert out["launch"]["grad_accum"] == 2  # 8 sequences / (2 per micro-batch * 2 ranks)
    assert out["overrides"] == ["train.lr=0.002", "cluster.nodes=2", "train.global_batch_size=8"]
    # what the overrides set is kept as written (pinned), and nothing else had to change
    assert out["fit"]["sets"] == {} and out["fit"]["pinned"] == ["cluster.nodes", "train.global_batch_size"]


def test_the_layout_is_the_trainers_and_agrees_with_the_launch_plan() -> None:
    # the trainer's BatchLayout as a dict: the same split the ranks will compute on WORLD_SIZE processes
    out = resolve(TRAINER, "tiny", {"cluster.nodes": 2, "train.global_batch_size": 8}, nodes=2)
    launch, layout = out["launch"], out["layout"]
    assert layout == {
        "world_size": 2,
        "pipeline_stages": 1,
        "global_batch_size": 8,
        "micro_batch_size": 2,
        "grad_accum": 2,
        "seq_len": 64,
        "dp_size": 2,
        "pipelined": False,
        "sequences_per_rank": 4,
        "tokens_per_step": 512,
    }
    assert (launch["data_parallel"], launch["grad_accum"]) == (layout["dp_size"], layout["grad_accum"])
    # a pipeline: no accumulation in the launch plan; the layout has the schedule's micro-batches
    out = resolve(TRAINER, "gpt2-pipeline", {"strategy.pipeline.microbatches": 4})
    assert out["launch"]["grad_accum"] is None and out["launch"]["data_parallel"] == 1
    assert (out["layout"]["grad_accum"], out["layout"]["micro_batch_size"]) == (4, 16)
    assert out["layout"]["pipeline_stages"] == 2 and out["layout"]["pipelined"] is True


@pytest.mark.parametrize(
    ("recipe", "overrides", "kwargs", "message"),
    [
        (
            "glm",
            {"cluster.nodes": 2},
            {"nodes": 3},
            "recipe glm: cluster.nodes: 2, pinned (recipe_overrides), but the cluster has 3 node(s): "
            'cluster.nodes=3 runs it there; it would run with -e \'{"recipe_overrides": {"cluster.nodes": '
            "3}}'",
        ),
        (
            "tiny",
            {"train.global_batch_size": 12},
            {"nodes": 8},
            "recipe tiny: train.global_batch_size: 12, pinned (recipe_overrides), but 12 sequences do not "
            "split "
            'evenly over 8 data-parallel ranks; it would run with -e \'{"recipe_overrides": '
            '{"train.global_batch_size": 16}}\' or -e \'{"recipe_overrides": {"train.global_batch_size": '
            "8}}'",
        ),
        (
            "gpt2-pipeline",
            {},
            {"nodes": 1, "procs_per_node": 1},
            "recipe gpt2-pipeline: strategy.pipeline.stages: 2 stages need at least 2 ranks",
        ),
        ("tiny", {"train.lrr": 1}, {}, "recipe tiny: unknown key train.lrr (did you mean train.lr?)"),
        ("tiny", {"train.steps": "ten"}, {}, "train.steps: expected an integer, got 'ten'"),
        ("tiny", {"train.micro_batch_size": 5}, {}, "train.global_batch_size: 12 is not a multiple"),
        (
            "gpt2",
            {},
            {"check_paths": True},
            "recipe gpt2: tokenizer.path: /shared/models/gpt2 does not exist",
        ),
        ("nope", {}, {}, "recipe 'nope' not found (known: glm, glm-tiny, gpt2"),
    ],
)
def test_bad_input_is_named(recipe: str, overrides: dict, kwargs: dict, message: str) -> None:
    with pytest.raises(RecipeResolveError) as err:
        resolve(TRAINER, recipe, overrides, **kwargs)
    assert message in str(err.value)


def test_a_trainer_source_without_the_package_is_named(tmp_path: Path) -> None:
    code = (
        "from ansible_collections.rdmaops.cluster.plugins.module_utils.train.recipe import resolve\n"
        f"resolve({str(tmp_path)!r}, 'tiny', {{}})\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), check=False)
    assert p.returncode != 0
    assert f"trainer_src {tmp_path}: no rdmaops_trainer package there" in p.stderr


@pytest.mark.parametrize(
    ("overrides", "slow", "hybrid", "dtype", "why"),
    [
        # the lab's tiny recipe computes in fp32 on the CPU: the gradients cross the nodes in float32
        ({}, True, True, "float32", "fp32 compute"),
        ({}, False, False, "float32", "fp32 compute"),
        (
            {"cluster.device": "cuda", "train.precision": "auto"},
            True,
            True,
            "bfloat16",
            "strategy.fsdp2.reduce_dtype auto, HSDP: the ",
        ),
        (
            {"cluster.device": "cuda", "train.precision": "auto"},
            False,
            False,
            "float32",
            "strategy.fsdp2.reduce_dtype auto, no HSDP",
        ),
        (
            {"cluster.device": "cuda", "train.precision": "bf16", "strategy.fsdp2.reduce_dtype": "float32"},
            True,
            True,
            "float32",
            "str",
        ),
        ({"strategy.fsdp2.hsdp": False}, True, False, "float32", "fp32 compute"),
    ],
)
def test_the_hsdp_decision_is_the_trainers(
    overrides: dict[str, object], slow: bool, hybrid: bool, dtype: str, why: str
) -> None:
    recipe = resolve(TRAINER, "tiny", overrides)["recipe"]
    decision = hsdp_decision(TRAINER, recipe, slow)
    # the variable's name is the trainer's (rdmaops_trainer/dp_mesh.py), named nowhere else
    sys.path.insert(0, TRAINER)
    from rdmaops_trainer import dp_mesh

    assert decision["env"] == {dp_mesh.HSDP_ENV: "1" if slow else "0"}
    assert (decision["hybrid"], decision["reduce_dtype"]) == (hybrid, dtype)
    assert decision["reduce_why"].startswith(why)


def test_resolving_imports_no_torch() -> None:
    # the controller runs this; it has Ansible and PyYAML, not necessarily torch
    code = (
        "import sys\n"
        "from ansible_collections.rdmaops.cluster.plugins.module_utils.train.recipe import resolve\n"
        f"for name in {RECIPES!r}:\n"
        f"    resolve({TRAINER!r}, name, {{}})\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers', 'deepspeed')))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), check=True)
    assert p.stdout.strip() == "[]"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / ".collections"), env.get("PYTHONPATH", "")])
    env["ANSIBLE_CONFIG"] = str(REPO / "ansible.cfg")
    return env


def _playbook(tmp_path: Path, hosts: int, *extra: str) -> subprocess.CompletedProcess[str]:
    inv = tmp_path / "hosts.yml"
    members = {f"n{i}": {"ansible_connection": "local"} for i in range(1, hosts + 1)}
    inv.write_text(json.dumps({"cluster": {"hosts": members}}))
    ansible = Path(sys.executable).with_name("ansible-playbook")
    cmd = [str(ansible), str(REPO / "playbooks/recipe.yml"), "-i", str(inv), *extra]
    env = _env()
    env["ANSIBLE_CALLBACK_RESULT_FORMAT"] = "json"
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, check=False)


def test_playbook_prints_the_launch_plan_with_the_overrides(tmp_path: Path) -> None:
    p = _playbook(
        tmp_path, 3, "-e", json.dumps({"recipe_overrides": {"train.steps": 50, "train.warmup_steps": 5}})
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "tiny: fsdp2 on 3 x 1 cpu processes (world 3), 12 sequences per step" in p.stdout
    assert "50 steps" in p.stdout
    assert "--recipe tiny --set train.steps=50 --set train.warmup_steps=5" in p.stdout
    assert "changed=0" in p.stdout


def test_playbook_takes_key_value_overrides(tmp_path: Path) -> None:
    # Ansible turns "k=v k=v" into a mapping of strings; the trainer still reads numbers
    p = _playbook(tmp_path, 3, "-e", "recipe_overrides='train.steps=40 train.lr=2e-3'")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "40 steps" in p.stdout
    assert "--set train.steps=40 --set train.lr=2e-3" in p.stdout


def test_playbook_refuses_a_recipe_that_cannot_run_on_the_hosts(tmp_path: Path) -> None:
    # the pipeline's 2 stages on 3 nodes of 1 GPU: no whole pipelines
    p = _playbook(tmp_path, 3, "-e", "recipe=gpt2-pipeline", "-e", "procs_per_node=1", "--check")
    assert p.returncode != 0
    out = " ".join(p.stdout.split())
    assert "recipe gpt2-pipeline: strategy.pipeline.stages: 2 stages need a multiple of 2 ranks" in out
    assert """it would run with -e '{"recipe_overrides": {"strategy.pipeline.stages": 3}}'""" in out.replace(
        "\\", ""
    )


@pytest.mark.parametrize(
    ("hosts", "split", "notes"),
    [
        (
            2,
            "12 sequences per step (2 per micro-batch, 3 accumulation)",
            ["cluster: 2 node(s) x 1 = 2 ranks"],
        ),
        (3, "12 sequences per step (2 per micro-batch, 2 accumulation)", []),
        (4, "12 sequences per step (1 per micro-batch, 3 accumulation)", ["train.micro_batch_size: 2 -> 1"]),
        (
            8,
            "16 sequences per step (2 per micro-batch, 1 accumulation)",
            ["train.global_batch_size: 12 -> 16"],
        ),
    ],
)
def test_tiny_runs_on_the_labs_sizes_without_overrides(
    tmp_path: Path, hosts: int, split: str, notes: list[str]
) -> None:
    # the lab's sizes (make lab-up LAB_NODES=N): train.yml fits the recipe as this playbook does
    p = _playbook(tmp_path, hosts)
    assert p.returncode == 0, p.stdout + p.stderr
    out = " ".join(p.stdout.split())
    assert f"tiny: fsdp2 on {hosts} x 1 cpu processes (world {hosts}), {split}" in out
    for note in notes:
        assert note in out
    fitted = resolve(TRAINER, "tiny", {}, nodes=hosts)
    assert fitted["recipe"]["cluster"]["nodes"] == hosts and fitted["fit"]["notes"][-1].startswith("batch: ")
