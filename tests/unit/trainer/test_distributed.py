"""Multi-process CPU runs of the real CLI (gloo): every strategy trains, they agree, resume is exact.

Each run is the tiny recipe for 8 steps (global batch 12 sequences of 64 tokens). Launches are shared through
module-scoped fixtures to keep the suite short.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import assert_close, eval_losses, losses, records, run_trainer, tiny_args, tiny_qwen2_config

# same arithmetic, different reduction order / sharding: fp32 rounding only
AGREE = 1e-5
# a resume on the same world size replays the identical computation
EXACT = 1e-6
# bf16 matmuls and a bf16 residual stream against the fp32 reference (4e-4 at most seen)
BF16 = 2e-3


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("trainer-runs")


@pytest.fixture(scope="module")
def fsdp2_ref(runs: Path) -> Path:
    out = runs / "fsdp2"
    # the reference run goes through torchrun itself, as on the cluster
    run_trainer(
        2, *tiny_args(out, 2, "strategy.name=fsdp2", "train.eval_every=4", "train.plot=true"), torchrun=True
    )
    return out


@pytest.fixture(scope="module")
def fsdp2_interrupted(runs: Path) -> Path:
    """2 processes, checkpoint every 4 steps, killed (stop_after) right after the step-4 checkpoint."""
    out = runs / "fsdp2-interrupted"
    run_trainer(
        2, *tiny_args(out, 2, "strategy.name=fsdp2", "train.checkpoint_every=4", "train.stop_after=4")
    )
    return out


def assert_falls(curve: dict[int, float]) -> None:
    steps = sorted(curve)
    assert steps == list(range(1, 9))
    first, last = curve[steps[0]], curve[steps[-1]]
    assert last < first - 0.5, f"loss did not fall: {curve}"


def test_fsdp2_trains_and_logs(fsdp2_ref: Path) -> None:
    curve = losses(fsdp2_ref)
    assert_falls(curve)
    rec = records(fsdp2_ref)[-1]
    for key in (
        "step",
        "loss",
        "lr",
        "grad_norm",
        "tokens_per_s",
        "tokens_per_s_per_gpu",
        "mfu",
        "peak_mem_gb",
    ):
        assert key in rec
    assert rec["mfu"] is None  # no peak FLOPs for a CPU
    assert rec["tokens_per_s"] > 0
    evals = records(fsdp2_ref, "eval")
    assert [e["step"] for e in evals] == [4, 8]
    assert (fsdp2_ref / "loss.png").stat().st_size > 1000
    # the final step is always checkpointed when checkpointing is on; here it is off
    assert not (fsdp2_ref / "checkpoints").exists()


def test_ddp_with_activation_checkpointing_trains_and_matches_fsdp2(runs: Path, fsdp2_ref: Path) -> None:
    out = runs / "ddp"
    # with activation checkpointing: recomputation changes memory, not the arithmetic
    run_trainer(
        2, *tiny_args(out, 2, "strategy.name=ddp", "train.eval_every=4", "train.gradient_checkpointing=true")
    )
    curve = losses(out)
    assert_falls(curve)
    assert_close(curve, losses(fsdp2_ref), AGREE, range(1, 9))
    assert_close(eval_losses(out), eval_losses(fsdp2_ref), AGREE, range(4, 9, 4))


def test_ddp_compiled_as_one_graph_matches_fsdp2(runs: Path, fsdp2_ref: Path) -> None:
    """The gpt2 recipe's DDP mode: torch.compile of the DDP model with optimize_ddp false (one graph, the
    all-reduce after the backward) trains the same as the eager FSDP2 reference."""
    out = runs / "ddp-compiled"
    sets = [
        "strategy.name=ddp",
        "train.eval_every=4",
        "train.compile=true",
        "strategy.ddp.optimize_ddp=false",
    ]
    run_trainer(2, *tiny_args(out, 2, *sets))
    assert_close(losses(out), losses(fsdp2_ref), AGREE, range(1, 9))
    assert_close(eval_losses(out), eval_losses(fsdp2_ref), AGREE, range(4, 9, 4))
    end = records(out, "end")[0]
    assert end["compiled_graphs"] >= 1
    # the trainer names a function past dynamo's recompile limit (it would run eager unseen): none here
    assert end["recompile_limit_hits"] == [], end


def test_ddp_with_the_fused_loss_matches_fsdp2(runs: Path, fsdp2_ref: Path) -> None:
    """train.fused_loss on 2 compiled DDP ranks: the head's weight gradient, made in the forward, goes through
    DDP's all-reduce with the rest, and the run trains as the FSDP2 reference."""
    out = runs / "ddp-fused-loss"
    sets = ["strategy.name=ddp", "train.eval_every=4", "train.compile=true", "train.fused_loss=true"]
    run_trainer(2, *tiny_args(out, 2, *sets))
    assert_close(losses(out), losses(fsdp2_ref), AGREE, range(1, 9))
    assert_close(eval_losses(out), eval_losses(fsdp2_ref), AGREE, range(4, 9, 4))
    # the fused step ran: dynamo's graph ends where it starts (counted once per frame DDP's wrapper adds)
    assert records(out, "end")[0]["graph_breaks"] >= 1


def test_fsdp2_with_the_fused_loss_matches_fsdp2(runs: Path, fsdp2_ref: Path) -> None:
    """train.fused_loss under FSDP2: the root's forward gathers the tied head weight, the fused forward makes
    its gradient, and FSDP2 reduce-scatters it with the rest: the same run as without."""
    out = runs / "fsdp2-fused-loss"
    run_trainer(2, *tiny_args(out, 2, "strategy.name=fsdp2", "train.eval_every=4", "train.fused_loss=true"))
    assert_close(losses(out), losses(fsdp2_ref), AGREE, range(1, 9))
    assert_close(eval_losses(out), eval_losses(fsdp2_ref), AGREE, range(4, 9, 4))


def test_ddp_with_a_bf16_residual_stream_trains_like_fsdp2(runs: Path, fsdp2_ref: Path) -> None:
    """The gpt2 recipe's settings on 2 compiled DDP ranks: bf16 autocast, the fused loss and the bf16 residual
    stream train as the fp32 FSDP2 reference, to bf16's precision."""
    out = runs / "ddp-bf16-residual"
    sets = ["strategy.name=ddp", "train.compile=true", "train.fused_loss=true", "train.precision=bf16"]
    run_trainer(2, *tiny_args(out, 2, *sets, "train.bf16_residual=true"))
    curve = losses(out)
    assert_falls(curve)
    assert_close(curve, losses(fsdp2_ref), BF16, range(1, 9))


def test_ddp_with_the_mlp_in_gemm_epilogues_matches_fsdp2(runs: Path, fsdp2_ref: Path) -> None:
    """train.fused_mlp on 2 compiled DDP ranks (fp32 on the CPU, where the cuBLASLt plans run in torch ops):
    inductor compiles around the custom ops, and the run trains as the FSDP2 reference to fp32 rounding."""
    out = runs / "ddp-fused-mlp"
    sets = ["strategy.name=ddp", "train.eval_every=4", "train.compile=true", "train.precision=auto"]
    run_trainer(2, *tiny_args(out, 2, *sets, "train.fused_mlp=true"))
    assert_close(losses(out), losses(fsdp2_ref), AGREE, range(1, 9))
    assert_close(eval_losses(out), eval_losses(fsdp2_ref), AGREE, range(4, 9, 4))


def test_pipeline_trains_and_matches_unsplit_model(runs: Path, fsdp2_ref: Path) -> None:
    """2 stages x 1F1B with 3 micro-batches of 4 sequences vs the unsplit model (same init and data)."""
    out = runs / "pipeline"
    sets = ("strategy.name=pipeline", "strategy.pipeline.microbatches=3", "train.eval_every=4")
    run_trainer(2, *tiny_args(out, 2, *sets))
    curve = losses(out)
    assert_falls(curve)
    assert_close(curve, losses(fsdp2_ref), AGREE, range(1, 9))
    # forward-only eval through the stages (send/recv) gives the unsplit model's eval loss
    assert_close(eval_losses(out), eval_losses(fsdp2_ref), AGREE, range(4, 9, 4))


def test_fsdp2_resume_is_exact(fsdp2_interrupted: Path, fsdp2_ref: Path, runs: Path) -> None:
    out = runs / "fsdp2-resumed"
    shutil.copytree(fsdp2_interrupted, out)
    assert sorted(losses(out)) == [1, 2, 3, 4]
    ckpt = out / "checkpoints" / "step_00000004"
    assert (ckpt / "COMPLETE").is_file() and (ckpt / "meta.json").is_file()
    run_trainer(2, *tiny_args(out, 2, "strategy.name=fsdp2", "train.checkpoint_every=4"))
    start = records(out, "start")
    assert [s["start_step"] for s in start] == [0, 4]
    assert_close(losses(out), losses(fsdp2_ref), EXACT, range(1, 9))


def test_fsdp2_resume_on_other_world_size(fsdp2_interrupted: Path, fsdp2_ref: Path, runs: Path) -> None:
    """Saved by 2 ranks, resumed by 3 (uneven shards): DCP reshards; gradient accumulation goes from 3 to 2
    micro-batches per rank so the global batch stays the same. (1 rank works the same way; left out to keep
    the suite short.)"""
    nproc = 3
    out = runs / f"fsdp2-resumed-{nproc}"
    shutil.copytree(fsdp2_interrupted, out)
    run_trainer(nproc, *tiny_args(out, nproc, "strategy.name=fsdp2", "train.checkpoint_every=4"))
    start = records(out, "start")[-1]
    assert start["start_step"] == 4 and start["world_size"] == nproc
    assert_close(losses(out), losses(fsdp2_ref), AGREE, range(5, 9))


# 2 "nodes" of 2 ranks, one micro-batch of 1 sequence at a time (3 per rank and step: the gradient
# accumulation that HSDP and FSDP2 skip syncing for), a checkpoint every 3 steps, 4 steps per launch
TWO_NODES = [
    "cluster.nodes=2",
    "cluster.procs_per_node=2",
    "train.micro_batch_size=1",
    "strategy.name=fsdp2",
    "train.checkpoint_every=3",
    "train.stop_after=4",
]


def test_fsdp2_resumes_as_hsdp_and_back_exactly(runs: Path, fsdp2_ref: Path) -> None:
    """FSDP2 over 4 ranks saves at step 3 and runs step 4; resumed from step 3 as HSDP (strategy.fsdp2.hsdp
    auto with the launcher's RDMAOPS_HSDP=1: shard inside a node, replicate across the two), it computes
    the same step-4 loss bit for bit, trains on to step 7 and saves at 6; resumed from 6 as FSDP2 again (the
    recipe forcing hsdp false over RDMAOPS_HSDP=1), it computes HSDP's step-7 loss bit for bit. The
    checkpoints carry the same tensors whichever mesh wrote or reads them (DCP reshards the DTensors);
    between resumes every loss agrees with the 2-rank FSDP2 run to fp32 rounding."""
    out = runs / "hsdp-chain"

    def launch(hsdp_env: str, *sets: str) -> tuple[dict[int, float], dict[str, object]]:
        run_trainer(4, *tiny_args(out, 4, *TWO_NODES, *sets), nodes=2, env={"RDMAOPS_HSDP": hsdp_env})
        return losses(out), records(out, "start")[-1]

    fsdp2, start = launch("0")
    assert (start["start_step"], start["hsdp"], start["mesh"]) == (0, False, [[0, 1, 2, 3]])
    hsdp, start = launch("1")
    assert (start["start_step"], start["hsdp"], start["mesh"]) == (3, True, [[0, 1], [2, 3]])
    assert start["mesh_from"] == "strategy.fsdp2.hsdp auto, RDMAOPS_HSDP=1"
    assert (start["reduce_dtype"], start["reduce_from"]) == ("float32", "fp32 compute")
    assert hsdp[4] == fsdp2[4]
    back, start = launch("1", "strategy.fsdp2.hsdp=false")
    assert (start["start_step"], start["hsdp"], start["mesh_from"]) == (6, False, "strategy.fsdp2.hsdp false")
    assert back[7] == hsdp[7]
    assert_close(back, losses(fsdp2_ref), AGREE, range(1, 9))


def test_fsdp2_pretrained_hf_model_is_read_by_rank0_and_broadcast(runs: Path) -> None:
    """A transformers checkpoint on disk: rank 1 builds on the meta device and receives rank 0's weights;
    the first loss equals a single-process forward of the same model on the same step-0 batch, and
    training goes on with the gathered parameters kept across the 3 micro-batches of each step."""
    import torch
    from rdmaops_trainer.config import load_recipe
    from rdmaops_trainer.data import StepSampler, load_datasets
    from rdmaops_trainer.models import build_model
    from rdmaops_trainer.tokenizer import ByteTokenizer
    from transformers import AutoModelForCausalLM

    model_dir = runs / "qwen-mini"
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(tiny_qwen2_config()).save_pretrained(model_dir)
    out = runs / "hf-fsdp2"
    sets = ["model.kind=hf", "model.init=pretrained", f"model.path={model_dir}", "model.config={}"]
    # and the FSDP2 communication options (gathered parameters kept across micro-batches): same arithmetic
    sets += ["strategy.fsdp2.reshard_after_forward=false", "strategy.fsdp2.unshard_during_accumulation=true"]
    args = tiny_args(out, 2, "strategy.name=fsdp2", *sets)
    run_trainer(2, *args)
    recipe = load_recipe("tiny", [a for a in args if "=" in a])
    train = load_datasets(recipe, ByteTokenizer(), 300)[0]
    batch = train.batch(StepSampler(len(train), 12, recipe.seed).global_indices(0))
    model = build_model(recipe)
    with torch.no_grad():
        expected = model(batch["input_ids"], batch["labels"]).item()
    curve = losses(out)
    assert abs(curve[1] - expected) <= AGREE, (curve[1], expected)
    assert curve[8] < curve[1] - 0.5
    # train.fused_loss on the transformers model (the decoder's hidden states and its head's weight): the same
    # run, with the head's gradient made in the fused forward and reduce-scattered by FSDP2
    fused = runs / "hf-fsdp2-fused-loss"
    run_trainer(2, *tiny_args(fused, 2, "strategy.name=fsdp2", *sets, "train.fused_loss=true"))
    assert_close(losses(fused), curve, AGREE, range(1, 9))
    # the gradients reduce-scattered after every micro-batch and accumulated as shards: the same sums
    every = runs / "hf-fsdp2-reduce-every"
    run_trainer(
        2, *tiny_args(every, 2, "strategy.name=fsdp2", *sets, "strategy.fsdp2.reduce_every_micro_batch=true")
    )
    assert_close(losses(every), curve, AGREE, range(1, 9))
    # train.fused_swiglu and train.fused_rmsnorm: each MLP and norm through the custom ops (torch ops on the
    # CPU) on FSDP2's gathered weights, the gate and up rows interleaved per call and the gradient split back
    # before the reduce-scatter: the same run
    swiglu = runs / "hf-fsdp2-fused-swiglu"
    fused = ("train.fused_swiglu=true", "train.fused_rmsnorm=true")
    run_trainer(2, *tiny_args(swiglu, 2, "strategy.name=fsdp2", *sets, *fused))
    assert [(r["fused_swiglu_mlps"], r["fused_rmsnorms"]) for r in records(swiglu, "start")] == [(2, 5)]
    assert_close(losses(swiglu), curve, AGREE, range(1, 9))
