"""The GPU recipes on the clusters users bring: train.yml's two phases (as ``-e render_dir`` runs them) fit
``glm`` and ``qwen14b`` to 1-4 nodes of 4 or 8 GPUs, render every node's launch files, and refuse what cannot
run (too few GPUs for a pipeline, a pinned key the cluster contradicts, a layout whose memory does not fit),
naming what would. Reports are a node's train_preflight result, as benchmarks/gpu/multinode.py renders them
without nodes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.train import gpus, phase

from ...conftest import ROOT
from .test_phase import check_args, plan_args, report

TRAINER = str(ROOT / "files" / "trainer")
MODELS = ROOT / "tests" / "unit" / "fixtures" / "models"
CONFIGS = {
    "glm": json.loads((MODELS / "GLM-4.5-Air.config.json").read_text()),
    "qwen14b": json.loads((MODELS / "Qwen2.5-14B.config.json").read_text()),
}
H100 = 81559  # MiB, nvidia-smi's memory.total of an H100 80GB HBM3
RDMA = {"GLOO_SOCKET_IFNAME": "nodeaddr0", "NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": "=mlx5_0:1"}
TCP = {"GLOO_SOCKET_IFNAME": "nodeaddr0", "NCCL_IB_DISABLE": "1", "NCCL_SOCKET_IFNAME": "=nodeaddr0"}
LAYOUTS = [(1, 8), (2, 4), (2, 8), (4, 8)]


def gpu_reports(
    hosts: list[str], gpus_per_node: int, recipe: str = "", env: dict[str, str] | None = None, mib: int = H100
) -> dict[str, Any]:
    """Every node's report: GPUs, their memory, the fabric; the master read the model's config.json."""
    out = {}
    for host in hosts:
        extra: dict[str, Any] = {"model_config": CONFIGS[recipe]} if recipe in CONFIGS else {}
        out[host] = report(
            host,
            gpus=gpus_per_node,
            gpu_memory_mib=[mib] * gpus_per_node,
            env=env or RDMA,
            rdma_ports=[{"device": "mlx5_0", "port": 1, "active": True, "rate_gbps": 400.0}],
            **extra,
        )
    return out


def phase_two(recipe: str, nodes: int, procs: int, **kw: Any) -> dict[str, Any]:
    hosts = [f"node{i + 1}" for i in range(nodes)]
    c = phase.check(check_args(recipe=recipe, hosts=hosts, **kw.pop("check", {})))
    assert c["errors"] == [], c["errors"]
    reports = kw.pop("reports", None) or gpu_reports(
        hosts, procs, recipe, kw.pop("env", None), kw.pop("mib", H100)
    )
    return phase.plan(plan_args(c["plan"], reports=reports, addresses={}, **kw))


def render(plan: dict[str, Any], out: Path) -> Path:
    """What tasks/render.yml writes: DIR/<job>/<node>/<file> and DIR/<job>/job.json."""
    job_dir = out / plan["job"]
    for host, node in plan["nodes"].items():
        for name, text in node["files"].items():
            (job_dir / host).mkdir(parents=True, exist_ok=True)
            (job_dir / host / name).write_text(text)
    (job_dir / "job.json").write_text(json.dumps(plan["job_record"]))
    return job_dir


def trainer_modules() -> tuple[Any, Any]:
    if TRAINER not in sys.path:
        sys.path.insert(0, TRAINER)
    from rdmaops_trainer import config, layout  # type: ignore[import-not-found]

    return config, layout


@pytest.mark.parametrize("recipe", ["glm", "qwen14b"])
@pytest.mark.parametrize(("nodes", "procs"), LAYOUTS)
def test_gpu_recipes_render_valid_launches_on_the_clusters_users_bring(
    tmp_path: Path, recipe: str, nodes: int, procs: int
) -> None:
    out = phase_two(recipe, nodes, procs)
    assert out["errors"] == [], out["errors"]
    plan = out["plan"]
    job_dir = render(plan, tmp_path)
    world = nodes * procs
    config, layouts = trainer_modules()
    for rank, host in enumerate(plan["order"]):
        launch_sh = (job_dir / host / "launch.sh").read_text()
        assert f"--nnodes={nodes}" in launch_sh and f"--nproc-per-node={procs}" in launch_sh
        assert f"--node-rank={rank}" in launch_sh
        # each node's recipe is the one file, and the trainer takes it on exactly this world size
        recipe_file = job_dir / host / "recipe.yaml"
        assert recipe_file.read_text() == plan["recipe_text"]
        loaded = config.load_recipe(str(recipe_file))
        config.validate(loaded, world_size=world, local_world_size=procs)
        assert (loaded.cluster.nodes, loaded.cluster.procs_per_node) == (nodes, procs)
    split = layouts.BatchLayout.from_recipe(loaded, world)
    assert split.micro_batch_size * split.grad_accum * world == split.global_batch_size
    batch = {"glm": 32, "qwen14b": 48}[recipe]
    if recipe == "qwen14b" and world == 32:  # 48 does not split over 32 ranks: the nearest batch that does
        batch = 64
        assert any(
            n.startswith("train.global_batch_size: 48 -> 64: 48 sequences do not split")
            for n in plan["notes"]
        )
    # the notes name the accumulation, and the memory estimate that fits the GPUs
    assert (
        f"batch: {batch} sequences per step = 1 per micro-batch x {batch // world} accumulation step(s) x "
        f"{world} "
        "data-parallel rank(s)"
    ) in plan["notes"]
    memory = [n for n in plan["notes"] if n.startswith("memory: about ")]
    assert len(memory) == 1 and f"per GPU on {nodes} node(s) x {procs} GPUs, of 74.2 GiB usable" in memory[0]
    assert json.loads((job_dir / "job.json").read_text())["recipe_sha256"] == plan["recipe_sha256"]


def test_glm_under_hsdp_is_estimated_sharded_inside_a_node() -> None:
    # over TCP the launch runs HSDP: the model state is sharded over a node's 4 GPUs, not all 8
    plain = phase_two("glm", 2, 4)["plan"]["notes"]
    hybrid = phase_two("glm", 2, 4, env=TCP)["plan"]["notes"]
    assert any(n.startswith("hsdp: the nodes are joined by TCP") for n in hybrid)

    def gib(notes: list[str]) -> float:
        return float(next(n for n in notes if n.startswith("memory: about ")).split()[2])

    assert gib(hybrid) > gib(plain) + 20


def test_a_layout_that_cannot_fit_is_refused_with_the_smallest_that_would() -> None:
    # qwen14b's full fine-tune on one node of one 80 GB GPU: ZeRO-3 needs the states of 14.8 B parameters
    out = phase_two("qwen14b", 1, 1)
    (error,) = [e for e in out["errors"] if e.startswith("memory:")]
    assert error.startswith("memory: qwen14b on 1 node(s) x 1 GPUs needs about ")
    assert "more than the 74.2 GiB usable of the 81559 MiB of node1's GPUs" in error
    assert "it would fit on 5 nodes of 1 GPUs (about" in error
    assert "-e train_memory_check=warn launches anyway" in error
    # warn: the same words as a note, and the launch planned; off: not estimated
    warned = phase_two("qwen14b", 1, 1, memory_check="warn")
    assert warned["errors"] == [] and any(
        n.startswith("memory: qwen14b on 1 node(s)") for n in warned["plan"]["notes"]
    )
    off = phase_two("qwen14b", 1, 1, memory_check="off")
    assert not any(n.startswith("memory") for n in off["plan"]["notes"])


def test_hsdp_that_cannot_fit_names_plain_fsdp2() -> None:
    # glm on 2 nodes of 2 GPUs over TCP: HSDP holds half the model per GPU; sharded over all 4 it fits
    out = phase_two("glm", 2, 2, env=TCP)
    (error,) = [e for e in out["errors"] if e.startswith("memory:")]
    assert """here with -e '{"recipe_overrides": {"strategy.fsdp2.hsdp": false}}'""" in error


def test_too_few_gpus_for_a_pipeline_is_refused_with_what_would_run() -> None:
    # gpt2-pipeline's 2 stages on 3 nodes of one GPU each: no whole pipelines
    out = phase_two("gpt2-pipeline", 3, 1)
    assert out["errors"] == [
        "recipe gpt2-pipeline: strategy.pipeline.stages: 2 stages need a multiple of 2 ranks (each "
        "data-parallel "
        "replica is a whole pipeline), and the cluster has 3 (3 node(s) x 1); it would run with "
        """-e '{"recipe_overrides": {"strategy.pipeline.stages": 3}}'"""
    ]


def test_a_pinned_key_the_nodes_contradict_is_refused() -> None:
    # procs pinned by hand to 8 on nodes of 4 GPUs: the preflight names the shortfall
    out = phase_two("glm", 2, 4, check={"overrides": {"cluster.procs_per_node": 8}})
    assert out["errors"][0] == (
        "node1: 4 GPU(s) visible, the recipe needs cluster.procs_per_node=8 cuda processes per node "
        "(world size 16 = 2 nodes x 8)"
    )
    # the global batch pinned in the recipe (cluster.pinned) where it does not split: refused by the check,
    # before any node is asked
    pinned = {"cluster.pinned": ["train.global_batch_size"]}
    hosts = ["node1", "node2", "node3", "node4"]
    out = phase.check(check_args(recipe="qwen14b", hosts=hosts, overrides=pinned))
    assert out["errors"] == [
        "recipe qwen14b: train.global_batch_size: 48, pinned (cluster.pinned), but 48 sequences do not split "
        "evenly over 32 data-parallel ranks; it would run with "
        """-e '{"recipe_overrides": {"train.global_batch_size": 64}}' """
        """or -e '{"recipe_overrides": {"train.global_batch_size": 32}}'"""
    ]


def test_nodes_with_different_gpu_counts_run_the_fewest_on_each() -> None:
    hosts = ["node1", "node2"]
    reports = {**gpu_reports(["node1"], 8, "glm"), **gpu_reports(["node2"], 4, "glm")}
    plan = phase_two("glm", 2, 0, reports=reports)["plan"]
    assert "--nproc-per-node=4" in plan["nodes"]["node1"]["command"]
    assert (
        "gpus: node1 have more than 4 GPUs; every node runs 4 processes (the fewest any node has; pin "
        "cluster.procs_per_node to choose)"
    ) in plan["notes"]
    assert gpus.memory_mib(reports, hosts) == (H100, "node1")


def test_cpu_recipes_keep_their_processes_per_node() -> None:
    # the lab's nodes have no GPU: tiny keeps its 1 process per node and follows the hosts
    plan = phase_two("tiny", 4, 0, reports={h: report(h) for h in ["node1", "node2", "node3", "node4"]})[
        "plan"
    ]
    assert plan["launch"]["procs_per_node"] == 1 and plan["launch"]["world_size"] == 4
    assert (
        "train.micro_batch_size: 2 -> 1: 12 sequences per step do not split into micro-batches of 2 over 4 "
        "ranks" in plan["notes"]
    )
    assert not any(n.startswith("memory") for n in plan["notes"])


def test_nvidia_smi_memory_is_read_per_gpu() -> None:
    assert gpus.parse_memory_total("81559\n81559\n[N/A]\n") == [81559, 81559]
    assert gpus.MEMORY_QUERY[1:] == ["--query-gpu=memory.total", "--format=csv,noheader,nounits"]
