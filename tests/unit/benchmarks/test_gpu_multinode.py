"""benchmarks/gpu/multinode.py on the CPU side: every row rendered by the train role's own phases, with the
NCCL environment the nccl_env and nccl_mesh_plugin roles compute for a TCP fabric, and the resume check."""

from __future__ import annotations

import json
from pathlib import Path

import multinode as mn
import pytest


def env_file(path: Path) -> dict[str, str]:
    lines = [line for line in path.read_text().splitlines() if line and not line.startswith("#")]
    return dict(line.split("=", 1) for line in lines)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rehearsal")
    mn.render(out, list(mn.ROWS), mn.GPU_XML)
    return out


def test_every_row_gets_a_launch_directory_per_node(rendered: Path) -> None:
    for name, row in mn.ROWS.items():
        meta = json.loads((rendered / mn.slug(name) / "row.json").read_text())
        assert meta["hosts"] == [f"node{i + 1}" for i in range(row["nodes"])]
        assert meta["gpus_per_node"] * row["nodes"] == mn.GPUS
        for host in meta["hosts"]:
            files = {p.name for p in (rendered / mn.slug(name) / host).iterdir()}
            assert {"launch.sh", "nccl.env", "job.env", "recipe.yaml", "supervise.py"} <= files


def test_tcp_settings_are_the_roles_and_the_untuned_row_has_nccls_defaults(rendered: Path) -> None:
    tuned = env_file(rendered / "qwen-2x2-socket" / "node2" / "nccl.env")
    assert tuned["NCCL_IB_DISABLE"] == "1"
    assert (tuned["NCCL_SOCKET_NTHREADS"], tuned["NCCL_NSOCKS_PERTHREAD"]) == ("4", "4")
    untuned = env_file(rendered / "qwen-2x2-socket-untuned" / "node2" / "nccl.env")
    assert "NCCL_SOCKET_NTHREADS" not in untuned and "NCCL_NSOCKS_PERTHREAD" not in untuned
    mesh = env_file(rendered / "qwen-2x2-mesh" / "node1" / "nccl.env")
    assert (mesh["NCCL_NET_PLUGIN"], mesh["NCCL_MESH_TRANSPORT"]) == ("mesh", "tcp")


def test_hsdp_follows_the_fabric_unless_the_row_turns_it_off(rendered: Path) -> None:
    assert env_file(rendered / "qwen-2x2-socket" / "node1" / "job.env")["RDMAOPS_HSDP"] == "1"
    assert "strategy.fsdp2.hsdp is false" in " ".join(
        json.loads((rendered / "qwen-2x2-socket-fsdp2" / "row.json").read_text())["notes"]
    )


def test_launchers_as_train_yml_starts_them(rendered: Path) -> None:
    zero3 = (rendered / "qwen-2x2-zero3" / "node2" / "launch.sh").read_text()
    assert "-m deepspeed.launcher.runner" in zero3 and "--node_rank=1" in zero3
    assert (rendered / "qwen-2x2-zero3" / "node2" / "hostfile").read_text().split() == [
        "node1",
        "slots=2",
        "node2",
        "slots=2",
    ]
    ddp = (rendered / "gpt2-2x2-kill" / "node2" / "launch.sh").read_text()
    assert "-m torch.distributed.run" in ddp and "--node-rank=1" in ddp and "--nproc-per-node=2" in ddp
    resume = (rendered / "gpt2-2x2-kill-resume" / "node1" / "recipe.yaml").read_text()
    assert "resume: auto" in resume


def test_cpu_rows_are_the_tiny_recipe_and_skip_zero3(tmp_path: Path) -> None:
    mn.render(tmp_path, ["qwen 2x2 socket", "qwen 2x2 zero3", "gpt2 2x2 kill"], mn.GPU_XML, cpu=True)
    assert not (tmp_path / "qwen-2x2-zero3").exists()
    recipe = (tmp_path / "gpt2-2x2-kill" / "node1" / "recipe.yaml").read_text()
    assert "device: cpu" in recipe and "name: ddp" in recipe and "checkpoint_every: 10" in recipe


def test_resume_check_compares_every_shared_step() -> None:
    same = mn.resume_check({15: 3.5, 20: 3.25}, {5: 4.0, 10: 3.75, 15: 3.5, 20: 3.25})
    assert same["identical"] and same["steps"] == [15, 20] and same["max_abs_diff"] == 0.0
    off = mn.resume_check({15: 3.5, 20: 3.25}, {15: 3.5, 20: 3.2500025})
    assert not off["identical"] and off["max_abs_diff"] == pytest.approx(2.5e-6)
    assert mn.resume_check({}, {5: 1.0})["first_step"] is None
