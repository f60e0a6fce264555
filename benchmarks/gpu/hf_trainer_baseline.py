"""Baseline: the Hugging Face Trainer on GPT-2 124M from GPT2Config() (random weights, nothing downloaded).

bf16, SDPA attention, fused AdamW, seq 1024, a synthetic dataset of random tokens; `--compile` sets
TrainingArguments(torch_compile=True). Timing: a callback synchronizes the GPU at the end of step `--warmup`
and of the last step and counts only the steps between, so model build, compilation and the first (autotuning)
steps are excluded; the Trainer's own train_runtime, which includes them, is printed beside it.
`--tiny --device cpu` checks the code path on a 2-layer model.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from torch._dynamo.utils import counters
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "files" / "trainer"))
from rdmaops_trainer import (
    gpt2_matmul_params,
    mfu,
    transformer_flops_per_token,
)  # the FLOP count of every row


class RandomTokens(torch.utils.data.Dataset):
    def __init__(self, n: int, seq: int, vocab: int) -> None:
        g = torch.Generator().manual_seed(0)
        self.data = torch.randint(0, vocab, (n, seq), generator=g)

    def __len__(self) -> int:
        return self.data.shape[0]

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.data[i], "labels": self.data[i]}


class StepTimer(TrainerCallback):
    def __init__(self, warmup: int, cuda: bool) -> None:
        self.warmup, self.cuda = warmup, cuda
        self.t0 = self.t1 = 0.0
        self.timed_steps = 0

    def _now(self) -> float:
        if self.cuda:
            torch.cuda.synchronize()
        return time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):  # type: ignore[no-untyped-def]
        if state.global_step == self.warmup:
            self.t0 = self._now()
        elif state.global_step == state.max_steps:
            self.t1 = self._now()
            self.timed_steps = state.global_step - self.warmup


def timed_run_args(cpu: bool) -> dict[str, Any]:
    """The TrainingArguments both HF baselines share: fused AdamW and TF32 as the trainer's rows use, and no
    logging, saving, progress bar or report in the timed loop."""
    return {
        "tf32": None if cpu else True,
        "optim": "adamw_torch_fused",
        "logging_strategy": "no",
        "save_strategy": "no",
        "report_to": "none",
        "disable_tqdm": True,
        "use_cpu": cpu,
        "dataloader_num_workers": 2,
        "dataloader_pin_memory": not cpu,
        "seed": 0,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=60, help="timed steps")
    ap.add_argument("--warmup", type=int, default=15, help="untimed steps")
    ap.add_argument("--compile", action="store_true", help="TrainingArguments(torch_compile=True)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true")
    args = ap.parse_args()
    cpu = args.device == "cpu"
    if not cpu and torch.cuda.device_count() > 1:
        # the Trainer would wrap the model in nn.DataParallel over all visible GPUs and then skip
        # accelerate's torch.compile (seen on a 2-GPU machine): measure one GPU
        raise SystemExit(f"{torch.cuda.device_count()} GPUs visible: run with CUDA_VISIBLE_DEVICES=0")

    cfg = GPT2Config(n_positions=max(1024, args.seq))
    if args.tiny:
        cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, n_positions=args.seq)
    cfg._attn_implementation = "sdpa"
    model = GPT2LMHeadModel(cfg)
    total = args.warmup + args.steps
    timer = StepTimer(args.warmup, cuda=not cpu)
    with tempfile.TemporaryDirectory() as out:
        targs = TrainingArguments(
            output_dir=out,
            per_device_train_batch_size=args.batch,
            max_steps=total,
            learning_rate=6e-4,
            weight_decay=0.1,
            warmup_steps=2,
            bf16=True,
            torch_compile=args.compile,
            **timed_run_args(cpu),
        )
        ds = RandomTokens(args.batch * total, args.seq, cfg.vocab_size)
        trainer = Trainer(model=model, args=targs, train_dataset=ds, callbacks=[timer])
        result = trainer.train()
    graphs = int(counters["stats"]["unique_graphs"])
    if args.compile and graphs == 0:
        raise SystemExit("torch_compile=True but dynamo compiled no graph: the row would not measure compile")
    tok_s = args.batch * args.seq * timer.timed_steps / (timer.t1 - timer.t0)
    fpt = transformer_flops_per_token(
        gpt2_matmul_params(cfg.vocab_size, cfg.n_embd, cfg.n_layer), cfg.n_layer, cfg.n_embd, args.seq
    )
    res = {
        "bench": "hf_trainer_compile" if args.compile else "hf_trainer",
        "batch_per_gpu": args.batch,
        "seq": args.seq,
        "attn": model.config._attn_implementation,
        "optim": str(targs.optim),
        "dropout": cfg.resid_pdrop,
        "dynamo_graphs": graphs,
        "wrapped": type(trainer.model_wrapped).__name__,
        "tokens_per_s_per_gpu": round(tok_s, 1),
        "step_ms": round(1000 * (timer.t1 - timer.t0) / timer.timed_steps, 2),
        "mfu": round(mfu(tok_s, fpt), 4),
        "trainer_train_runtime_s": round(result.metrics["train_runtime"], 2),
        "trainer_tokens_per_s_incl_warmup": round(
            args.batch * args.seq * total / result.metrics["train_runtime"], 1
        ),
        "loss_avg": round(result.metrics.get("train_loss", float("nan")), 4),
        "peak_mem_gib": None if cpu else round(torch.cuda.max_memory_allocated() / 2**30, 2),
    }
    print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
