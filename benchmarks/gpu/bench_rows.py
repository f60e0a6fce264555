"""The rows of run_all.py: every benchmark's name, command, GPUs and FLOPs per token, core and experiments.

A row's MFU comes from tokens/s per GPU and its FLOPs per token (rdmaops_trainer's count, the shapes in
model_shapes.py). Rows named "exp ..." are experiments. The order here is the order of ``--list``; the most
important rows run first.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
TRAINER_SRC = REPO / "files" / "trainer"
sys.path[:0] = [str(HERE), str(TRAINER_SRC)]
from model_shapes import GLM_1GPU, QWEN15B, TINY_GLM  # noqa: E402
from rdmaops_trainer import (  # noqa: E402
    GLM_AIR,
    glm4_moe_active_matmul_params,
    gpt2_matmul_params,
    qwen2_matmul_params,
    transformer_flops_per_token,
)


@dataclass
class Run:
    name: str
    cmd: list[str]
    gpus: int
    fpt: float  # FLOPs per token for MFU
    trainer_dir: Path | None = None  # the trainer's output_dir (metrics.jsonl)
    pair: str = ""  # the 1-GPU row this row's scaling is measured against
    info: dict[str, Any] = field(default_factory=dict)
    fallback: Run | None = None  # run instead when this one fails (e.g. out of memory)
    env: dict[str, str] = field(default_factory=dict)  # extra environment of this row's processes
    skip: int | None = None  # trainer steps left out of the rate (None: --trainer-skip)


def torchrun(nproc: int) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}"]


def profiled(r: Run, steps_at: int, profile_steps: int) -> Run:
    """The trainer row ``r`` run under profile_trainer.py, which profiles its optimizer steps
    [steps_at, steps_at + profile_steps) and prints one PROFILE line."""
    prof = [
        str(HERE / "profile_trainer.py"),
        "--steps-at",
        str(steps_at),
        "--profile-steps",
        str(profile_steps),
    ]
    launcher = torchrun(r.gpus) if r.gpus > 1 else [sys.executable]
    r.cmd = [*launcher, *prof, "--", *r.cmd[r.cmd.index("--recipe") :]]
    return r


def gpt2_fpt(seq: int, tiny: bool) -> float:
    if tiny:
        return transformer_flops_per_token(gpt2_matmul_params(50304, 64, 2), 2, 64, seq)
    return transformer_flops_per_token(gpt2_matmul_params(50304), 12, 768, seq)


def trainer_run(
    a: argparse.Namespace,
    name: str,
    recipe: str,
    gpus: int,
    sets: list[str],
    fpt: float,
    pair: str = "",
    fallback: list[str] | None = None,
) -> Run:
    run_dir = Path(tempfile.mkdtemp(prefix="bench-", dir=a.scratch))
    fixed = [
        f"train.output_dir={run_dir}",
        "train.plot=false",
        "train.eval_every=0",
        "train.checkpoint_every=0",
        f"train.log_every={a.trainer_log_every}",
        f"cluster.procs_per_node={gpus}",
        f"cluster.device={a.device}",
    ]
    args = ["-m", "rdmaops_trainer", "--recipe", recipe]
    for s in [*fixed, *sets]:  # the row's own sets win
        args += ["--set", s]
    cmd = [*torchrun(gpus), *args] if gpus > 1 else [sys.executable, *args]
    run = Run(name, cmd, gpus, fpt, trainer_dir=run_dir, pair=pair, info={"recipe": recipe, "sets": sets})
    if fallback:
        run.fallback = trainer_run(a, name, recipe, gpus, [*sets, *fallback], fpt, pair)
    return run


def build_runs(a: argparse.Namespace) -> list[Run]:
    seq, mb, tiny = a.seq, a.batch, a.tiny
    fpt = gpt2_fpt(seq, tiny)
    small = ["--tiny"] if tiny else []
    common = ["--batch", str(mb), "--seq", str(seq), "--device", a.device, *small]
    mini = [str(HERE / "minimal_gpt2.py"), *common, "--steps", str(a.steps), "--warmup", str(a.warmup)]
    # the recipe's own batch: 512 sequences (524,288 tokens) per optimizer step, as nanoGPT / llm.c
    gb = a.recipe_global_batch
    acc1, acc2 = max(1, gb // mb), max(1, gb // (2 * mb))
    mini_acc = [str(HERE / "minimal_gpt2.py"), *common, "--steps", str(a.acc_steps), "--warmup", "3"]
    hf = [str(HERE / "hf_trainer_baseline.py"), *common]
    hf += ["--steps", str(a.hf_steps), "--warmup", str(a.hf_warmup)]
    py = sys.executable
    runs = [
        Run("minimal_gpt2 1gpu", [py, *mini], 1, fpt),
        Run("minimal_gpt2 2gpu ddp", [*torchrun(2), *mini], 2, fpt, pair="minimal_gpt2 1gpu"),
        Run("hf_trainer 1gpu bf16", [py, *hf], 1, fpt),
        Run("hf_trainer 1gpu bf16+compile", [py, *hf, "--compile"], 1, fpt),
    ]
    g = ["data.kind=synthetic", "tokenizer.kind=byte", f"data.seq_len={seq}", "train.warmup_steps=2"]
    if tiny:
        g += ["model.config.n_layer=2", "model.config.n_embd=64", "model.config.n_head=4"]
        g += [f"model.config.block_size={seq}"]
    # the baseline's micro-batch, one micro-batch per optimizer step and GPU
    st = [f"train.steps={a.trainer_steps}", f"train.micro_batch_size={mb}"]
    # the recipe's own batch and micro-batch (gradient accumulation); about 0.5-1 s per step: a log (and
    # sync) every 2 steps costs nothing measurable
    st_acc = [
        f"train.steps={a.acc_trainer_steps}",
        "train.log_every=2",
        f"train.micro_batch_size={a.recipe_micro}",
    ]
    runs += [
        trainer_run(a, "trainer gpt2 ddp 1gpu", "gpt2", 1, [*g, *st, f"train.global_batch_size={mb}"], fpt),
        trainer_run(
            a,
            "trainer gpt2 ddp 2gpu",
            "gpt2",
            2,
            [*g, *st, f"train.global_batch_size={2 * mb}"],
            fpt,
            pair="trainer gpt2 ddp 1gpu",
        ),
        trainer_run(
            a, f"trainer gpt2 ddp 1gpu gb{gb}", "gpt2", 1, [*g, *st_acc, f"train.global_batch_size={gb}"], fpt
        ),
        trainer_run(
            a,
            f"trainer gpt2 ddp 2gpu gb{gb}",
            "gpt2",
            2,
            [*g, *st_acc, f"train.global_batch_size={gb}"],
            fpt,
            pair=f"trainer gpt2 ddp 1gpu gb{gb}",
        ),
    ]
    # Qwen2.5-1.5B shape, 2 GPUs
    q = dict(QWEN15B)
    qs = [f"data.seq_len={a.qwen_seq}", f"train.steps={a.qwen_steps}", "train.warmup_steps=2"]
    # steps take about a second: a log (sync) every few steps costs nothing measurable
    qs += [f"train.log_every={a.qwen_log_every}"]

    def acc(n: int) -> list[str]:
        """A global batch of n micro-batches (--qwen-micro each, times --qwen-accum) over the row's GPUs."""
        return [f"train.global_batch_size={a.qwen_micro * n * a.qwen_accum}"]

    qs += [f"train.micro_batch_size={a.qwen_micro}", *acc(2)]
    # if the large micro-batch does not fit, the row is run again at micro 4 (same global batch)
    fb = [f"train.micro_batch_size={max(1, a.qwen_micro // 2)}"]
    if tiny:
        q.update({"d": 64, "layers": 2, "ffn": 128, "heads": 4, "kv_heads": 2, "vocab": 1024})
        qs += ["model.config.hidden_size=64", "model.config.num_hidden_layers=2"]
        qs += ["model.config.intermediate_size=128", "model.config.num_attention_heads=4"]
        qs += ["model.config.vocab_size=1024"]
    if a.device == "cpu":
        qs.append("train.precision=auto")  # ZeRO-3 bf16 needs CUDA
    qfpt = transformer_flops_per_token(qwen2_matmul_params(**q), q["layers"], q["d"], a.qwen_seq)
    fsdp2 = [*qs, "strategy.name=fsdp2", "train.compile=true", *a.qwen_set]  # per-block torch.compile
    # ZeRO-3 with every decoder layer as one ZeRO-3 unit (leaf_blocks, the default) and each layer's forward
    # compiled, like the FSDP2 row; a 200M-element prefetch bucket (about 4 Qwen layers; DeepSpeed's default
    # 5e7 is about one) measured 33.6% MFU against 16% in the first (eager, per-Linear) runs
    z3eager = [*qs, "strategy.name=zero3", "strategy.zero3.prefetch_bucket_size=200000000"]
    zero3 = [*z3eager, "train.compile=true", *a.qwen_set]
    runs.append(trainer_run(a, "trainer qwen1.5b fsdp2 2gpu", "qwen1_5b", 2, fsdp2, qfpt, fallback=fb))
    runs.append(trainer_run(a, "trainer qwen1.5b zero3 2gpu", "qwen1_5b", 2, zero3, qfpt, fallback=fb))
    eager = [*qs, "strategy.name=fsdp2", "train.compile=false", *a.qwen_set]
    runs.append(trainer_run(a, "exp trainer qwen1.5b fsdp2 2gpu eager", "qwen1_5b", 2, eager, qfpt))
    for strat, sets in (("zero3", zero3), ("fsdp2", fsdp2)):
        r = trainer_run(
            a, f"exp profile qwen1.5b {strat} 2gpu", "qwen1_5b", 2, [*sets, "train.steps=8"], qfpt
        )
        runs.append(profiled(r, 6, 2))

    # FSDP2's compute alone: the same model and micro-batch on one GPU (one shard, no communication), so what
    # holds the 2-GPU row under 60% MFU can be told apart from what the second GPU adds (H200: 141 GB)
    one = [*fsdp2, *acc(1)]
    runs.append(trainer_run(a, "exp trainer qwen1.5b fsdp2 1gpu", "qwen1_5b", 1, one, qfpt))
    r = trainer_run(a, "exp profile qwen1.5b fsdp2 1gpu", "qwen1_5b", 1, [*one, "train.steps=8"], qfpt)
    runs.append(profiled(r, 6, 2))
    # levers on the FSDP2 row (the recipe fuses the head and the loss, train.fused_loss): the loss unfused as
    # before, 2 or 4 micro-batches per optimizer step (the optimizer, and on 2 GPUs the reduce-scatter, once
    # per step), micro-batch 24, the reduce-scatter in bf16 (2 GPUs only); ZeRO-3 with and without the fused
    # loss on one GPU (its runtime's own costs without the second GPU's communication)
    runs.append(Run("exp gemm shapes qwen1.5b 1gpu", [py, str(HERE / "gemm_shapes.py")], 1, qfpt))
    unf = ["train.fused_loss=false"]
    micro24 = [
        f"train.micro_batch_size={a.qwen_micro * 3 // 2}",
        f"train.global_batch_size={a.qwen_micro * 3 // 2}",
    ]
    for label, sets in (
        ("unfusedloss", unf),
        ("unfusedloss accum2", [*unf, *acc(2)]),
        ("accum2", acc(2)),
        ("accum4", acc(4)),
        ("micro24", micro24),
    ):
        runs.append(
            trainer_run(a, f"exp trainer qwen1.5b fsdp2 1gpu {label}", "qwen1_5b", 1, [*one, *sets], qfpt)
        )
    bfr = ["strategy.fsdp2.reduce_dtype=bfloat16"]
    for label, sets in (
        ("unfusedloss", unf),
        ("bf16reduce", bfr),
        ("accum2", acc(4)),
        ("bf16reduce accum2", [*bfr, *acc(4)]),
    ):
        runs.append(
            trainer_run(a, f"exp trainer qwen1.5b fsdp2 2gpu {label}", "qwen1_5b", 2, [*fsdp2, *sets], qfpt)
        )
    runs.append(
        trainer_run(a, "exp trainer qwen1.5b zero3 2gpu unfusedloss", "qwen1_5b", 2, [*zero3, *unf], qfpt)
    )
    z3one = [*zero3, *acc(1)]
    runs.append(trainer_run(a, "exp trainer qwen1.5b zero3 1gpu", "qwen1_5b", 1, z3one, qfpt))
    runs.append(
        trainer_run(a, "exp trainer qwen1.5b zero3 1gpu unfusedloss", "qwen1_5b", 1, [*z3one, *unf], qfpt)
    )
    z3exp = {
        "eager": [*z3eager, "train.compile=false"],
        "eager per-linear": [*z3eager, "train.compile=false", "strategy.zero3.leaf_blocks=false"],
        "micro8": [*zero3, "train.micro_batch_size=8", *acc(2)],
        "persist1e6": [*zero3, "strategy.zero3.param_persistence_threshold=1000000"],
    }
    for label, sets in z3exp.items():
        runs.append(trainer_run(a, f"exp trainer qwen1.5b zero3 2gpu {label}", "qwen1_5b", 2, sets, qfpt))
    for pf in (50_000_000, 500_000_000):
        sets = [*zero3, f"strategy.zero3.prefetch_bucket_size={pf}"]
        runs.append(
            trainer_run(a, f"exp trainer qwen1.5b zero3 2gpu prefetch{pf:.0e}", "qwen1_5b", 2, sets, qfpt)
        )
    runs += h100_qwen_runs(a, qs, fsdp2, zero3, qfpt, tiny)
    # experiments: only when --only names them
    runs += [
        Run(
            "exp minimal_gpt2 2gpu ddp no-optimize-ddp",
            [*torchrun(2), *mini, "--no-optimize-ddp"],
            2,
            fpt,
            pair="minimal_gpt2 1gpu",
        ),
        Run(
            "exp minimal_gpt2 2gpu ddp bucket200",
            [*torchrun(2), *mini, "--bucket-mb", "200"],
            2,
            fpt,
            pair="minimal_gpt2 1gpu",
        ),
        Run(f"exp minimal_gpt2 1gpu gb{gb}", [py, *mini_acc, "--accum", str(acc1)], 1, fpt),
        Run(
            f"exp minimal_gpt2 2gpu ddp gb{gb}",
            [*torchrun(2), *mini_acc, "--accum", str(acc2)],
            2,
            fpt,
            pair=f"exp minimal_gpt2 1gpu gb{gb}",
        ),
        trainer_run(
            a,
            f"exp trainer gpt2 ddp 2gpu gb{gb} optimize-ddp",
            "gpt2",
            2,
            [*g, *st_acc, f"train.global_batch_size={gb}", "strategy.ddp.optimize_ddp=true"],
            fpt,
            pair=f"trainer gpt2 ddp 1gpu gb{gb}",
        ),
    ]
    for label, extra in (("", []), (" optimize-ddp", ["strategy.ddp.optimize_ddp=true"])):
        runs.append(
            trainer_run(
                a,
                f"exp trainer gpt2 ddp 2gpu gb{gb} micro{mb}{label}",
                "gpt2",
                2,
                [*g, *st_acc, f"train.global_batch_size={gb}", f"train.micro_batch_size={mb}", *extra],
                fpt,
                pair=f"exp trainer gpt2 ddp 1gpu gb{gb} micro{mb}",
            )
        )
    micro_sets = [*g, *st_acc, f"train.global_batch_size={gb}", f"train.micro_batch_size={mb}"]
    # inductor's coordinate-descent tuning of the generated kernels' launch parameters (longer compile)
    cdt = {"TORCHINDUCTOR_COORDINATE_DESCENT_TUNING": "1"}
    gb_sets = [*g, *st_acc, f"train.global_batch_size={gb}"]
    for n in (1, 2):
        r = trainer_run(a, f"exp trainer gpt2 ddp {n}gpu gb{gb} cdt", "gpt2", n, gb_sets, fpt)
        r.env, r.pair = cdt, ("" if n == 1 else f"exp trainer gpt2 ddp 1gpu gb{gb} cdt")
        runs.append(r)
    # the strong baseline at the recipe's micro-batch (the trainer's gb rows use it)
    mini_rm = [str(HERE / "minimal_gpt2.py"), "--batch", str(a.recipe_micro), *common[2:]]
    mini_rm += ["--steps", str(a.steps), "--warmup", str(a.warmup)]
    runs.append(Run(f"exp minimal_gpt2 1gpu micro{a.recipe_micro}", [py, *mini_rm], 1, fpt))
    runs += [
        trainer_run(a, f"exp trainer gpt2 ddp 1gpu gb{gb} micro{mb}", "gpt2", 1, micro_sets, fpt),
        trainer_run(
            a,
            "exp trainer gpt2 ddp 2gpu bucket200",
            "gpt2",
            2,
            [*g, *st, f"train.global_batch_size={2 * mb}", "strategy.ddp.bucket_cap_mb=200"],
            fpt,
            pair="trainer gpt2 ddp 1gpu",
        ),
    ]
    runs += glm_runs(a)
    # the SDPA kernel: cuDNN's fused attention first (train.attention), against the rows above
    cud = ["train.attention=cudnn"]
    runs.append(trainer_run(a, f"exp trainer gpt2 ddp 1gpu gb{gb} cudnn", "gpt2", 1, [*gb_sets, *cud], fpt))
    r = trainer_run(a, f"exp trainer gpt2 ddp 2gpu gb{gb} cudnn", "gpt2", 2, [*gb_sets, *cud], fpt)
    r.pair = f"exp trainer gpt2 ddp 1gpu gb{gb} cudnn"
    runs.append(r)
    for strat, sets in (("fsdp2", fsdp2), ("zero3", zero3)):
        runs.append(
            trainer_run(a, f"exp trainer qwen1.5b {strat} 2gpu cudnn", "qwen1_5b", 2, [*sets, *cud], qfpt)
        )
    m24 = ["train.micro_batch_size=24", "train.global_batch_size=48"]
    runs.append(
        trainer_run(
            a, "exp trainer qwen1.5b fsdp2 2gpu cudnn micro24", "qwen1_5b", 2, [*fsdp2, *cud, *m24], qfpt
        )
    )
    # larger micro-batches (fewer, bigger kernels; 29 GiB at 64) and inductor's max-autotune (Triton GEMM
    # templates timed against cuBLAS per shape; minutes of compile)
    m128 = [*gb_sets, "train.micro_batch_size=128"]
    runs.append(trainer_run(a, f"exp trainer gpt2 ddp 1gpu gb{gb} micro128", "gpt2", 1, m128, fpt))
    # float8 matmuls in every block's Linear layer (torchao; train.float8) at the recipe's micro-batch and at
    # 128: a different numerics, reported beside the bf16 rows, never the recipe's default
    f8 = ["train.float8=true"]
    runs.append(trainer_run(a, f"exp trainer gpt2 ddp 1gpu gb{gb} float8", "gpt2", 1, [*gb_sets, *f8], fpt))
    runs.append(
        trainer_run(a, f"exp trainer gpt2 ddp 1gpu gb{gb} micro128 float8", "gpt2", 1, [*m128, *f8], fpt)
    )
    # the gpt2 recipe makes the head + cross-entropy one step with the Triton kernel (train.fused_loss); these
    # rows turn it off to compare. CUDA graphs: train.cuda_graphs, inductor's cudagraph trees replay forward
    # and backward, no per-kernel launches.
    # bf16res: the residual stream in bf16 (train.bf16_residual), not autocast's fp32
    nofl = ["train.fused_loss=false"]
    cg = ["train.cuda_graphs=true", "train.fused_mlp=false"]  # the two are refused together
    bres = ["train.bf16_residual=true"]
    # fusedmlp: bias + GELU and their gradients in cuBLASLt's GEMM epilogues (train.fused_mlp)
    fmlp = ["train.fused_mlp=true"]
    for label, sets in (
        ("unfused", [*gb_sets, *nofl]),
        ("micro128 unfused", [*m128, *nofl]),
        ("cudagraphs", [*gb_sets, *cg]),
        ("unfused cudagraphs", [*gb_sets, *nofl, *cg]),
        ("bf16res", [*gb_sets, *bres]),
        ("micro128 bf16res", [*m128, *bres]),
        ("fp32res", [*gb_sets, "train.bf16_residual=false"]),
        ("fusedmlp", [*gb_sets, *fmlp]),
        ("micro128 fusedmlp", [*m128, *fmlp]),
        ("unfusedmlp", [*gb_sets, "train.fused_mlp=false"]),
        ("micro128 unfusedmlp", [*m128, "train.fused_mlp=false"]),
    ):
        runs.append(trainer_run(a, f"exp trainer gpt2 ddp 1gpu gb{gb} {label}", "gpt2", 1, sets, fpt))
    # the residual stream's dtype on a loss that falls (the generated corpus, byte tokens; the random tokens
    # of the throughput rows teach nothing): 300 steps of 64 sequences, fp32 and bf16 stream side by side
    conv = ["data.kind=generated", "data.generated_docs=80000", "tokenizer.kind=byte", f"data.seq_len={seq}"]
    conv += ["train.global_batch_size=64", "train.micro_batch_size=64", "train.steps=300"]
    conv += ["train.warmup_steps=30", "train.log_every=10", "train.eval_every=50"]
    # (the MLP unfused, as the recipe was when these two rows were first run)
    for label, flag in (("fp32res", "false"), ("bf16res", "true")):
        sets = [*conv, f"train.bf16_residual={flag}", "train.fused_mlp=false"]
        runs.append(trainer_run(a, f"exp converge gpt2 1gpu {label}", "gpt2", 1, sets, fpt))
    runs.append(trainer_run(a, "exp converge gpt2 1gpu fusedmlp", "gpt2", 1, [*conv, *fmlp], fpt))
    # the fused MLP alone: GELU form, errors against fp32, ms per forward + backward (no trainer)
    runs.append(Run("exp mlp epilogue 1gpu", [py, str(HERE / "mlp_epilogue.py")], 1, fpt))
    r = trainer_run(a, f"exp trainer gpt2 ddp 1gpu gb{gb} max-autotune", "gpt2", 1, gb_sets, fpt)
    r.env = {"TORCHINDUCTOR_MAX_AUTOTUNE": "1"}
    runs.append(r)
    profile_rows: tuple[tuple[str, list[str]], ...] = (
        ("", []),
        (" cudnn", cud),
        (" unfused", nofl),
        (" bf16res", bres),
        (" cudagraphs", cg),
        (" fusedmlp", fmlp),
    )
    for label, extra in profile_rows:
        r = trainer_run(
            a, f"exp profile gpt2 1gpu gb{gb}{label}", "gpt2", 1, [*gb_sets, *extra, "train.steps=6"], fpt
        )
        runs.append(profiled(r, 4, 1))
    if a.gpus < 2:
        runs = [r for r in runs if r.gpus == 1]
    # most important first: a run cut by --budget loses the least
    first = ["minimal_gpt2 1gpu", "trainer gpt2 ddp 1gpu", "trainer gpt2 ddp 2gpu", "minimal_gpt2 2gpu ddp"]
    first += ["trainer qwen1.5b fsdp2 2gpu", "trainer qwen1.5b zero3 2gpu"]
    first += [f"trainer gpt2 ddp 1gpu gb{gb}", f"trainer gpt2 ddp 2gpu gb{gb}"]
    return sorted(runs, key=lambda r: first.index(r.name) if r.name in first else len(first))


def glm_runs(a: argparse.Namespace) -> list[Run]:
    """GLM-4.5-Air architecture at a one-GPU shape, LoRA + bf16 + gradient checkpointing.

    The project's trainer (recipe glm, FSDP2 on one GPU) against peft + the Hugging Face Trainer: same model,
    same adapters, same batch.
    """
    shape = TINY_GLM if a.tiny else GLM_1GPU
    c = {**GLM_AIR, **shape}
    layers, first = c["num_hidden_layers"], c["first_k_dense_replace"]
    # LoRA tensors (A and B): 4 attention projections per layer, 3 dense MLP projections in the first
    # layers, 3 per shared expert in the others
    expect = 2 * (4 * layers + 3 * first + 3 * c["n_shared_experts"] * (layers - first))
    seq, micro, accum = a.glm_seq, a.glm_micro, a.glm_accum
    fpt = transformer_flops_per_token(
        glm4_moe_active_matmul_params(shape), layers, c["num_attention_heads"] * c["head_dim"], seq
    )
    sets = [
        "model.path=null",
        "model.init=random",
        "model.model_type=glm4_moe",
        f"model.config={json.dumps(shape)}",
        "tokenizer.kind=byte",
        "tokenizer.path=null",
        "data.kind=synthetic",
        "data.eval_path=null",
        f"data.seq_len={seq}",
        f"train.micro_batch_size={micro}",
        f"train.global_batch_size={micro * accum}",
        f"train.steps={a.glm_steps}",
        "train.warmup_steps=2",
        f"train.log_every={a.glm_log_every}",
        f"lora.expected_trainable_tensors={expect}",
        "cluster.nodes=1",
    ]
    if a.device == "cpu":
        sets += ["train.precision=auto", "model.dtype=float32"]
    base = [
        str(HERE / "hf_peft_baseline.py"),
        "--seq",
        str(seq),
        "--batch",
        str(micro),
        "--accum",
        str(accum),
    ]
    base += ["--steps", str(a.glm_hf_steps), "--warmup", str(a.glm_hf_warmup), "--device", a.device]
    base += ["--expect-trainable", str(expect), *(["--tiny"] if a.tiny else [])]
    runs = [
        trainer_run(a, "trainer glm-arch lora 1gpu", "glm", 1, sets, fpt),
        trainer_run(
            a, "exp trainer glm-arch lora 1gpu cudnn", "glm", 1, [*sets, "train.attention=cudnn"], fpt
        ),
        # the recipe compiles its blocks; the eager trainer for comparison
        trainer_run(a, "exp trainer glm-arch lora 1gpu eager", "glm", 1, [*sets, "train.compile=false"], fpt),
        trainer_run(
            a, "exp trainer glm-arch lora 1gpu fusedloss", "glm", 1, [*sets, "train.fused_loss=true"], fpt
        ),
    ]
    for r in runs:
        r.skip = a.glm_skip
    return [*runs[:1], Run("hf_peft glm-arch lora 1gpu", [sys.executable, *base], 1, fpt), *runs[1:]]


def h100_qwen_runs(
    a: argparse.Namespace, qs: list[str], fsdp2: list[str], zero3: list[str], fpt: float, tiny: bool
) -> list[Run]:
    """The Qwen rows at micro-batches that fit an 80 GB H100 (2x H100, calls 33-34 of issue 15): FSDP2 with
    the fused loss peaks near 84 GiB per GPU at micro 16 (93.1 unfused in call 18), so micro 12; ZeRO-3 at
    micro 8 and 12. "accum4": four micro-batches per GPU per optimizer step (FSDP2 reduce-scatters and steps
    once per four); those rows run 14 steps with a rate window every 2 after step 6, about as long as 25
    single-micro-batch steps. "expseg": the allocator's expandable segments (train.expandable_segments, on in
    the recipe since call 34; calls 33-34 set PYTORCH_CUDA_ALLOC_CONF in the row's environment instead); the
    other rows here turn them off. "recipe": the qwen1_5b recipe's own batch and settings (micro 12, accum 4,
    expandable segments, ZeRO-3's 200M prefetch bucket)."""
    fm, zm, zm2 = (3, 2, 4) if tiny else (12, 8, 12)

    def micro(m: int, n: int) -> list[str]:
        return [f"train.micro_batch_size={m}", f"train.global_batch_size={2 * m * n}"]

    long = ["train.steps=14", "train.log_every=2"]
    bfr = ["strategy.fsdp2.reduce_dtype=bfloat16"]
    off = ["train.expandable_segments=false"]
    # (label, sets, accum rows: 14 steps, a rate window every 2 after step 6)
    rows: list[tuple[str, list[str], bool]] = [
        (f"fsdp2 2gpu micro{fm}", [*fsdp2, *micro(fm, 1), *off], False),
        (f"fsdp2 2gpu micro{fm} accum4", [*fsdp2, *micro(fm, 4), *off], True),
        (f"fsdp2 2gpu micro{fm} accum4 bf16reduce", [*fsdp2, *micro(fm, 4), *bfr, *off], True),
        (f"zero3 2gpu micro{zm} accum1", [*zero3, *micro(zm, 1), *off], False),
        (f"zero3 2gpu micro{zm} accum4", [*zero3, *micro(zm, 4), *off], True),
        # the block compile as before call 33: DeepSpeed's linear inside the graph, 8 blocks compiled
        (
            f"zero3 2gpu micro{zm} accum4 memlinear",
            [*zero3, *micro(zm, 4), "strategy.zero3.memory_efficient_linear=true", *off],
            True,
        ),
        # gradient buckets of about one Qwen layer (46.8 M) instead of 500 M: the last bucket's
        # reduce-scatter, exposed after the backward, is a tenth as large
        (
            f"zero3 2gpu micro{zm} accum4 rb5e7",
            [*zero3, *micro(zm, 4), "strategy.zero3.reduce_bucket_size=50000000", *off],
            True,
        ),
        (f"fsdp2 2gpu micro{zm} accum4", [*fsdp2, *micro(zm, 4), *off], True),
        (f"zero3 2gpu micro{zm2} accum4", [*zero3, *micro(zm2, 4), *off], True),
        (f"fsdp2 2gpu micro{fm} accum4 expseg", [*fsdp2, *micro(fm, 4)], True),
        (f"zero3 2gpu micro{zm2} accum4 expseg", [*zero3, *micro(zm2, 4)], True),
    ]
    # the recipe as it ships: only the sequence length, the step count and the strategy set
    own = [x for x in qs if not x.startswith(("train.micro_batch_size=", "train.global_batch_size="))]
    rows += [(f"{s} 2gpu recipe", [*own, f"strategy.name={s}"], True) for s in ("fsdp2", "zero3")]
    # levers on the FSDP2 recipe (calls 35-37): 8 micro-batches per step; FlashAttention-2 instead of cuDNN's;
    # inductor's coordinate-descent tuning of its Triton kernels (RMSNorm, SwiGLU, rotary, the adds: the
    # part of the step that is neither GEMM nor attention)
    fs = [*own, "strategy.name=fsdp2"]
    rows += [
        ("fsdp2 2gpu recipe accum8", [*fs, *micro(fm, 8)], True),
        ("fsdp2 2gpu recipe flash", [*fs, "train.attention=flash"], True),
        # the gradients reduced (and, over the micro-batches, accumulated unsharded) in bf16: no fp32 adds
        ("fsdp2 2gpu recipe bf16reduce", [*fs, *bfr], True),
        # reduce-scatter after every micro-batch, the shards accumulated: no unsharded fp32 accumulation adds
        ("fsdp2 2gpu recipe rsevery", [*fs, "strategy.fsdp2.reduce_every_micro_batch=true"], True),
        ("fsdp2 2gpu recipe cdtune", fs, True),
        # the recipe's compute alone on one GPU (no communication): 4 micro-batches of 12 per step (needs more
        # than an 80 GB H100 has: the whole optimizer state on one card, call 36)
        ("fsdp2 1gpu recipe", [*fs, f"train.global_batch_size={fm * 4}"], True),
    ]
    # the SwiGLU in quack's GEMM epilogues (train.fused_swiglu; quack-kernels carried to the machine), alone
    # and with the bf16 reduce; micro-batch 16 where the card has the memory (H200: 141 GB)
    fsw = ["train.fused_swiglu=true"]
    m16 = 4 if tiny else 16
    rows += [
        ("fsdp2 2gpu recipe fusedswiglu", [*fs, *fsw], True),
        ("fsdp2 2gpu recipe fusedswiglu bf16reduce", [*fs, *fsw, *bfr], True),
        (f"fsdp2 2gpu recipe micro{m16}", [*fs, *micro(m16, 4)], True),
        (f"fsdp2 2gpu recipe micro{m16} fusedswiglu bf16reduce", [*fs, *micro(m16, 4), *fsw, *bfr], True),
        (f"fsdp2 2gpu recipe micro{m16} fusedswiglu", [*fs, *micro(m16, 4), *fsw], True),
    ]
    # larger micro-batches still (H200): fewer, larger kernels per optimizer step (32: about 130 GiB)
    for m in (20, 24, 28, 32) if not tiny else (5, 6, 7, 8):
        rows += [
            (f"fsdp2 2gpu recipe micro{m} fusedswiglu", [*fs, *micro(m, 4), *fsw], True),
            (f"fsdp2 2gpu recipe micro{m} fusedswiglu bf16reduce", [*fs, *micro(m, 4), *fsw, *bfr], True),
        ]
    # the recipe's 48 sequences per GPU per step as 2 micro-batches of 24: one accumulation of the gradients
    # instead of 3, larger GEMMs
    m24 = 6 if tiny else 24
    rows += [
        (
            f"fsdp2 2gpu recipe micro{m24} accum2 fusedswiglu bf16reduce",
            [*fs, *micro(m24, 2), *fsw, *bfr],
            True,
        ),
        ("zero3 2gpu recipe fusedswiglu", [*own, "strategy.name=zero3", *fsw], True),
    ]
    # two levers on the best rows (fused SwiGLU, bf16 reduce; the recipe's micro-batch, 24 and 32): the
    # RMSNorm layers through quack's kernels (train.fused_rmsnorm, also alone on the recipe), and the fused
    # MLP's four GEMMs without an epilogue on cuBLAS instead of quack (train.fused_swiglu_gemms)
    fnorm = ["train.fused_rmsnorm=true"]
    m32 = 8 if tiny else 32
    best = {"": [], **{f" micro{m}": micro(m, 4) for m in (m24, m32)}}
    rows.append(("fsdp2 2gpu recipe fusednorm", [*fs, *fnorm], True))
    cublas = ["train.fused_swiglu_gemms=cublas"]
    levers = {"fusednorm": fnorm, "cublasgemm": cublas, "cublasgemm fusednorm": [*cublas, *fnorm]}
    for tag, extra in levers.items():
        rows += [
            (f"fsdp2 2gpu recipe{mb} fusedswiglu bf16reduce {tag}", [*fs, *sets, *fsw, *bfr, *extra], True)
            for mb, sets in best.items()
        ]
    envs = {"fsdp2 2gpu recipe cdtune": {"TORCHINDUCTOR_COORDINATE_DESCENT_TUNING": "1"}}
    # NCCL's kernels hold SMs while the GEMMs of the backward run beside them (the last micro-batch's
    # reduce-scatters): fewer CTAs per collective leave more SMs to the GEMMs. NCCL prints its channels and
    # the variables it read ("ncclinfo": the same row with NCCL's defaults, printed)
    info = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,ENV"}
    cta_envs = {
        "ncclinfo": {},
        **{f"ctas{n}": {"NCCL_MAX_CTAS": str(n)} for n in (4, 8, 16)},
        "ctaeff": {"NCCL_CTA_POLICY": "1"},  # NCCL_CTA_POLICY_EFFICIENCY: the fewest CTAs that keep its rate
    }
    for base, sets in (
        (f"fsdp2 2gpu recipe micro{m24} fusedswiglu bf16reduce", [*fs, *micro(m24, 4), *fsw, *bfr]),
        ("fsdp2 2gpu recipe", fs),
    ):
        for tag, env in cta_envs.items():
            rows.append((f"{base} {tag}", sets, True))
            envs[f"{base} {tag}"] = {**info, **env}
    runs = []
    for label, sets, accum in rows:
        gpus = 1 if " 1gpu " in label else 2
        r = trainer_run(
            a, f"exp trainer qwen1.5b {label}", "qwen1_5b", gpus, [*sets, *(long if accum else [])], fpt
        )
        r.skip = 6 if accum and not tiny else None
        r.env = envs.get(label, {})
        runs.append(r)
    # every GEMM of the recipe's micro-batch (12 x 2048 tokens) timed alone on this GPU
    gemm = [sys.executable, str(HERE / "gemm_shapes.py"), "--tokens", str(fm * a.qwen_seq)]
    runs.append(Run(f"exp gemm shapes qwen1.5b 1gpu micro{fm}", gemm, 1, fpt))
    for label, sets in (
        (f"zero3 2gpu micro{zm} accum4", [*zero3, *micro(zm, 4), *off]),
        (f"fsdp2 2gpu micro{fm} accum4", [*fsdp2, *micro(fm, 4), *off]),
        ("fsdp2 2gpu recipe", fs),
        ("fsdp2 2gpu recipe fusedswiglu", [*fs, *fsw]),
        ("fsdp2 2gpu recipe fusedswiglu fusednorm", [*fs, *fsw, *fnorm]),
        (f"fsdp2 2gpu recipe micro{m32} fusedswiglu bf16reduce", [*fs, *micro(m32, 4), *fsw, *bfr]),
    ):
        r = trainer_run(a, f"exp profile qwen1.5b {label}", "qwen1_5b", 2, [*sets, "train.steps=5"], fpt)
        runs.append(profiled(r, 4, 1))
    return runs
