"""DeepSpeed ZeRO-3 on CPU (gloo, 2-3 processes through the real CLI): trains, agrees with FSDP2, resumes
exactly from its own checkpoints, and resumes on another world size through DeepSpeed's universal checkpoint.

Runs: the ZeRO-3 and FSDP2 references (8 steps, checkpoints at 4 and 8), then two resumes from the reference's
step-4 checkpoint (copied, step 8 removed), on 2 and on 3 processes.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import (
    assert_close,
    eval_losses,
    free_port,
    losses,
    python_code,
    records,
    run_trainer,
    tiny_args,
    trainer_env,
)
from rdmaops_trainer.config import RecipeError, load_recipe
from rdmaops_trainer.strategies.zero3 import ds_config, saved_dp_world_size

# FSDP2 and ZeRO-3 run the same fp32 arithmetic with different reduction orders
AGREE = 1e-4
# a resume replays the identical computation
EXACT = 1e-6


def _args(out: Path, nproc: int, strategy: str) -> list[str]:
    sets = [f"strategy.name={strategy}", "train.eval_every=4", "train.checkpoint_every=4"]
    return tiny_args(out, nproc, *sets)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("zero3-runs")


@pytest.fixture(scope="module")
def zero3_ref(runs: Path) -> Path:
    out = runs / "zero3"
    run_trainer(2, *_args(out, 2, "zero3"))
    return out


@pytest.fixture(scope="module")
def fsdp2_ref(runs: Path) -> Path:
    out = runs / "fsdp2"
    run_trainer(2, *_args(out, 2, "fsdp2"))
    return out


def _resume_copy(ref: Path, dst: Path) -> Path:
    """The reference run as it was after step 4: its step-4 checkpoint and nothing later."""
    shutil.copytree(ref / "checkpoints" / "step_00000004", dst / "checkpoints" / "step_00000004")
    return dst


def test_ds_config_from_recipe() -> None:
    r = load_recipe("qwen14b")
    cfg = ds_config(r, dp_size=24, cuda=True)
    z = cfg["zero_optimization"]
    assert z["stage"] == 3 and z["overlap_comm"] is True
    assert z["reduce_bucket_size"] == 26214400
    assert z["stage3_prefetch_bucket_size"] == 600000000
    assert z["stage3_param_persistence_threshold"] == 51200
    assert "offload_optimizer" not in z and "offload_param" not in z
    assert cfg["bf16"] == {"enabled": True}
    # 48 sequences per step over 24 ranks at 1 per micro-batch
    assert cfg["train_micro_batch_size_per_gpu"] == 1 and cfg["gradient_accumulation_steps"] == 2
    assert cfg["gradient_clipping"] == 1.0

    tiny = load_recipe("tiny", ["strategy.name=zero3", "strategy.zero3.offload_optimizer=true"])
    cpu = ds_config(tiny, dp_size=3, cuda=False)
    assert cpu["bf16"] == {"enabled": False}
    assert cpu["zero_optimization"]["offload_optimizer"] == {"device": "cpu", "pin_memory": False}
    assert cpu["gradient_accumulation_steps"] == 12 // (2 * 3)


def test_ds_config_rejects_bad_values() -> None:
    with pytest.raises(RecipeError, match=r"train.precision: 'bf16' with strategy zero3 needs CUDA"):
        ds_config(load_recipe("tiny", ["strategy.name=zero3", "train.precision=bf16"]), 3, cuda=False)
    with pytest.raises(RecipeError, match=r"strategy.zero3.reduce_bucket_size: 0 must be > 0"):
        bad = load_recipe("tiny", ["strategy.name=zero3", "strategy.zero3.reduce_bucket_size=0"])
        ds_config(bad, 3, cuda=False)
    with pytest.raises(RecipeError, match=r"not a multiple of train.micro_batch_size 2 \* 5"):
        ds_config(load_recipe("tiny", ["strategy.name=zero3"]), 5, cuda=False)
    with pytest.raises(
        RecipeError, match=r"train.compile: true with strategy zero3 needs .*leaf_blocks: true"
    ):
        sets = ["strategy.name=zero3", "train.compile=true", "strategy.zero3.leaf_blocks=false"]
        ds_config(load_recipe("tiny", sets), 3, cuda=False)
    with pytest.raises(RecipeError, match=r"train.compile: true with strategy zero3 and lora.enabled"):
        sets = [
            "strategy.name=zero3",
            "train.compile=true",
            "lora.enabled=true",
            "lora.target_modules=[c_fc]",
        ]
        ds_config(load_recipe("tiny", sets), 2, cuda=False)


def _memory_efficient_linear(*sets: str) -> bool:
    recipe = load_recipe("qwen1_5b", ["strategy.name=zero3", *sets])
    return bool(ds_config(recipe, dp_size=2, cuda=True)["zero_optimization"]["memory_efficient_linear"])


def test_deepspeeds_linear_is_off_when_blocks_are_compiled() -> None:
    assert load_recipe("qwen1_5b").train.compile
    assert _memory_efficient_linear() is False
    assert _memory_efficient_linear("train.compile=false") is True  # DeepSpeed's default
    assert _memory_efficient_linear("strategy.zero3.memory_efficient_linear=true") is True
    assert (
        _memory_efficient_linear("train.compile=false", "strategy.zero3.memory_efficient_linear=false")
        is False
    )


# deepspeed.initialize with the trainer's ds_config on one gloo rank: does DeepSpeed replace F.linear?
_LINEAR_PROBE = """
import sys, torch, torch.distributed as dist
from rdmaops_trainer.config import load_recipe
from rdmaops_trainer.strategies.zero3 import _use_accelerator, ds_config
dist.init_process_group("gloo", rank=0, world_size=1)
_use_accelerator(False)
import deepspeed, deepspeed.ops
deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False
linear = torch.nn.functional.linear
recipe = load_recipe("tiny", ["strategy.name=zero3", *sys.argv[1:]])
model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 4))
config = ds_config(recipe, dp_size=1, cuda=False)
deepspeed.initialize(model=model, optimizer=torch.optim.AdamW(model.parameters()), config=config)
print("F.linear:", "deepspeed" if torch.nn.functional.linear is not linear else "torch")
"""


@pytest.mark.parametrize(("compile_", "expected"), [("true", "torch"), ("false", "deepspeed")])
def test_deepspeed_leaves_torchs_linear_in_compiled_blocks(compile_: str, expected: str) -> None:
    """DeepSpeed's replacement reads each weight's ZeRO id inside the compiled graph; torch 2.11 guarded on
    it and recompiled every block until its limit (8 of Qwen2.5-1.5B's 28 layers compiled, call 33)."""
    env = trainer_env()
    env.update(
        RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port())
    )
    out = python_code(_LINEAR_PROBE, f"train.compile={compile_}", env=env, timeout=180)
    assert f"F.linear: {expected}" in out, out[-2000:]


def test_zero3_trains_with_falling_loss(zero3_ref: Path) -> None:
    curve = losses(zero3_ref)
    assert sorted(curve) == list(range(1, 9))
    assert curve[8] < curve[1] - 0.5, curve
    start = records(zero3_ref, "start")[0]
    assert start["strategy"] == "zero3" and start["world_size"] == 2
    # counted from DeepSpeed's full sizes, not the (empty outside a gather) partitioned tensors
    assert start["trainable_params"] == start["params"] > 0
    # DeepSpeed's own checkpoint layout, 2 data-parallel ranks
    tag = zero3_ref / "checkpoints" / "step_00000008" / "zero3"
    assert saved_dp_world_size(tag) == 2
    assert (tag / "zero_pp_rank_1_mp_rank_00_optim_states.pt").is_file()


def test_zero3_agrees_with_fsdp2(zero3_ref: Path, fsdp2_ref: Path) -> None:
    z, f = losses(zero3_ref), losses(fsdp2_ref)
    for step in range(1, 9):
        assert abs(z[step] - f[step]) <= AGREE, f"step {step}: zero3 {z[step]!r} vs fsdp2 {f[step]!r}"
    ze = {r["step"]: r["eval_loss"] for r in records(zero3_ref, "eval")}
    fe = {r["step"]: r["eval_loss"] for r in records(fsdp2_ref, "eval")}
    assert sorted(ze) == [4, 8] and all(abs(ze[s] - fe[s]) <= AGREE for s in ze), (ze, fe)
    zn = {r["step"]: r["grad_norm"] for r in records(zero3_ref)}
    fn = {r["step"]: r["grad_norm"] for r in records(fsdp2_ref)}
    assert all(abs(zn[s] - fn[s]) <= AGREE * max(1.0, fn[s]) for s in zn), (zn, fn)


def test_zero3_with_the_fused_loss_gives_the_same_run(zero3_ref: Path, runs: Path) -> None:
    """train.fused_loss under ZeRO-3: the head's weight, registered as an external parameter of the root, is
    gathered for the root's forward and its gradient reduced with the rest: the same losses as without."""
    out = runs / "zero3-fused-loss"
    run_trainer(2, *_args(out, 2, "zero3"), "--set", "train.fused_loss=true")
    assert_close(losses(out), losses(zero3_ref), EXACT * 10, range(1, 9))
    assert_close(eval_losses(out), eval_losses(zero3_ref), EXACT * 10, range(4, 9, 4))


def test_zero3_per_linear_hooks_give_the_same_run_as_leaf_blocks(zero3_ref: Path, runs: Path) -> None:
    """leaf_blocks changes when parameters are gathered (per block, not per Linear), not the arithmetic."""
    out = runs / "zero3-per-linear"
    run_trainer(
        2, *tiny_args(out, 2, "strategy.name=zero3", "train.eval_every=4", "strategy.zero3.leaf_blocks=false")
    )
    assert_close(losses(out), losses(zero3_ref), EXACT, range(1, 9))


def test_zero3_compiled_blocks_with_checkpointing_match_eager(zero3_ref: Path, runs: Path) -> None:
    """train.compile compiles each leaf block's forward with DeepSpeed's hooks outside the graph: one graph
    for the blocks and one for the loss, no graph break, the same losses as the eager run; activation
    checkpointing (the block recomputed in the backward, parameters gathered again) on top."""
    out = runs / "zero3-compiled"
    sets = [
        "strategy.name=zero3",
        "train.eval_every=4",
        "train.compile=true",
        "train.gradient_checkpointing=true",
    ]
    run_trainer(2, *tiny_args(out, 2, *sets))
    assert_close(losses(out), losses(zero3_ref), AGREE, range(1, 9))
    assert sorted(eval_losses(out)) == [4, 8]
    assert_close(eval_losses(out), eval_losses(zero3_ref), AGREE, range(4, 9, 4))
    end = records(out, "end")[0]
    assert end["compiled_graphs"] >= 2 and end["graph_breaks"] == 0, end
    assert end["recompile_limit_hits"] == [], end


def test_zero3_resume_is_exact(zero3_ref: Path, runs: Path) -> None:
    out = _resume_copy(zero3_ref, runs / "zero3-resume")
    run_trainer(2, *_args(out, 2, "zero3"))
    assert records(out, "start")[0]["start_step"] == 4
    ref, got = losses(zero3_ref), losses(out)
    assert sorted(got) == [5, 6, 7, 8]
    for step in got:
        assert abs(got[step] - ref[step]) <= EXACT, f"step {step}: {got[step]!r} vs {ref[step]!r}"


def test_zero3_resume_on_three_processes_via_universal_checkpoint(zero3_ref: Path, runs: Path) -> None:
    out = _resume_copy(zero3_ref, runs / "zero3-resume-3")
    run_trainer(3, *_args(out, 3, "zero3"))
    start = records(out, "start")[0]
    assert start["start_step"] == 4 and start["world_size"] == 3
    # converted once from the 2-rank checkpoint by DeepSpeed's ds_to_universal
    universal = out / "checkpoints" / "step_00000004" / "zero3_universal" / "zero"
    assert (universal / "optimizer_state.pt").is_file()
    assert any((p / "exp_avg_sq.pt").is_file() for p in universal.iterdir() if p.is_dir())
    ref, got = losses(zero3_ref), losses(out)
    assert sorted(got) == [5, 6, 7, 8]
    for step in got:
        assert abs(got[step] - ref[step]) <= AGREE, f"step {step}: {got[step]!r} vs {ref[step]!r}"


def test_zero3_as_one_plain_process(tmp_path: Path) -> None:
    """`python -m rdmaops_trainer` without torchrun: no LOCAL_RANK, which DeepSpeed requires, is set."""
    out = tmp_path / "one"
    args = tiny_args(out, 1, "strategy.name=zero3", "train.steps=2", "train.warmup_steps=1")
    proc = subprocess.run(
        [sys.executable, "-m", "rdmaops_trainer", *args],
        env=trainer_env(),
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(losses(out)) == [1, 2]
