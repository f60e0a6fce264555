"""Baseline: LoRA with peft + the Hugging Face Trainer on a GLM-4.5-Air-architecture model (random weights).

The model is ``Glm4MoeForCausalLM`` from ``Glm4MoeConfig`` with the overrides in ``--config`` (run_all.py
passes the one-GPU shape model_shapes.GLM_1GPU), bf16 weights, SDPA attention. LoRA as the project's ``glm``
recipe: r 16, alpha 32, dropout 0.05 on the attention projections, the dense MLP of layer 0 and the shared
experts; the fused routed experts stay frozen. Gradient checkpointing (non-reentrant), bf16, fused AdamW,
random tokens. Timing as hf_trainer_baseline.py: steps after ``--warmup`` only.

peft 0.21 rewrites the MLP targets of a glm4_moe model into ``target_parameters`` on the routed experts
(peft issue #3711), so that the dense MLP and the shared experts get no adapter. A user who wants the
recipe's adapters must switch that rewrite off, as done here with the trainer's own
``rdmaops_trainer.targets_as_given`` (one workaround for both rows); the number of adapted tensors is
printed and checked against ``--expect-trainable`` so both rows train exactly the same adapters.
"""

from __future__ import annotations

import argparse
import json
import tempfile

import torch
from hf_trainer_baseline import RandomTokens, StepTimer, timed_run_args
from model_shapes import GLM_1GPU, TINY_GLM
from rdmaops_trainer import glm4_moe_active_matmul_params, mfu, targets_as_given, transformer_flops_per_token

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
EXCLUDE = r".*\.mlp\.experts\..*"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=json.dumps(GLM_1GPU), help="Glm4MoeConfig overrides (JSON)")
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--batch", type=int, default=2, help="micro-batch (sequences)")
    ap.add_argument("--accum", type=int, default=2, help="micro-batches per optimizer step")
    ap.add_argument("--steps", type=int, default=12, help="timed optimizer steps")
    ap.add_argument("--warmup", type=int, default=4, help="untimed optimizer steps")
    ap.add_argument("--expect-trainable", type=int, default=0, help="adapted tensors (0: not checked)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true", help="a 2-layer model for a CPU smoke test")
    args = ap.parse_args()
    cpu = args.device == "cpu"
    if not cpu and torch.cuda.device_count() > 1:
        raise SystemExit(f"{torch.cuda.device_count()} GPUs visible: run with CUDA_VISIBLE_DEVICES=0")

    import peft
    from transformers import AutoConfig, AutoModelForCausalLM, Trainer, TrainingArguments

    overrides = TINY_GLM if args.tiny else json.loads(args.config)
    cfg = AutoConfig.for_model("glm4_moe", **overrides)
    cfg.use_cache = False
    torch.manual_seed(0)
    # built where it trains: a 6 B-parameter random init on the CPU would only add minutes before the timing
    with torch.device(args.device):
        model = AutoModelForCausalLM.from_config(
            cfg, dtype=torch.float32 if cpu else torch.bfloat16, attn_implementation="sdpa"
        )
    lcfg = peft.LoraConfig(
        r=16, lora_alpha=32, lora_dropout=0.05, target_modules=TARGETS, exclude_modules=EXCLUDE, bias="none"
    )
    with targets_as_given():  # the workaround for peft #3711, the trainer's own (module docstring)
        model = peft.get_peft_model(model, lcfg)
    trainable = sum(1 for p in model.parameters() if p.requires_grad)
    if args.expect_trainable and trainable != args.expect_trainable:
        raise SystemExit(f"{trainable} trainable tensors, expected {args.expect_trainable}")
    total = args.warmup + args.steps
    timer = StepTimer(args.warmup, cuda=not cpu)
    with tempfile.TemporaryDirectory() as out:
        targs = TrainingArguments(
            output_dir=out,
            per_device_train_batch_size=args.batch,
            gradient_accumulation_steps=args.accum,
            max_steps=total,
            learning_rate=2e-4,
            weight_decay=0.0,
            warmup_steps=2,
            max_grad_norm=1.0,
            bf16=not cpu,
            gradient_checkpointing=True,
            gradient_checkpointing_kwargs={"use_reentrant": False},
            **timed_run_args(cpu),
        )
        ds = RandomTokens(args.batch * args.accum * total, args.seq, cfg.vocab_size)
        trainer = Trainer(model=model, args=targs, train_dataset=ds, callbacks=[timer])
        result = trainer.train()
    tokens = args.batch * args.accum * args.seq * timer.timed_steps
    tok_s = tokens / (timer.t1 - timer.t0)
    fpt = transformer_flops_per_token(
        glm4_moe_active_matmul_params(overrides),
        cfg.num_hidden_layers,
        cfg.num_attention_heads * cfg.head_dim,
        args.seq,
    )
    res = {
        "bench": "hf_peft_trainer",
        "peft": peft.__version__,
        "model": type(model.get_base_model()).__name__,
        "params": sum(p.numel() for p in model.parameters()),
        "trainable_tensors": trainable,
        "trainable_params": sum(p.numel() for p in model.parameters() if p.requires_grad),
        "batch_per_gpu": args.batch,
        "accum": args.accum,
        "seq": args.seq,
        "tokens_per_s_per_gpu": round(tok_s, 1),
        "step_ms": round(1000 * (timer.t1 - timer.t0) / timer.timed_steps, 2),
        "mfu": round(mfu(tok_s, fpt), 4),
        "trainer_train_runtime_s": round(result.metrics["train_runtime"], 2),
        "loss_avg": round(result.metrics.get("train_loss", float("nan")), 4),
        "peak_mem_gib": None if cpu else round(torch.cuda.max_memory_allocated() / 2**30, 2),
    }
    print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
