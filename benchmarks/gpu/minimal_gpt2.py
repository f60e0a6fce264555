"""Strong baseline: a minimal compiled GPT-2 124M training loop.

SDPA attention, torch.compile, bf16 autocast, fused AdamW. Random tokens are drawn on the device, so no input
pipeline is measured. Prints one JSON line with tokens/s per GPU and MFU.
Single GPU: `python minimal_gpt2.py`; DDP: `torchrun --nproc-per-node 2 minimal_gpt2.py`.
`--tiny --device cpu` runs a 2-layer model on the CPU to check the code path.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "files" / "trainer"))
from rdmaops_trainer import mfu, transformer_flops_per_token  # the FLOP count of every row


class Block(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab: int, seq: int, layers: int, d: int, heads: int) -> None:
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.wte.weight  # tied, as in GPT-2
        for name, p in self.named_parameters():
            if p.dim() == 2:  # GPT-2 init; residual projections scaled by depth
                std = 0.02 / math.sqrt(2 * layers) if name.endswith(("proj.weight", "out.weight")) else 0.02
                nn.init.normal_(p, 0.0, std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.reshape(-1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=32, help="micro-batch per GPU (sequences)")
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=60, help="timed steps")
    ap.add_argument("--warmup", type=int, default=15, help="untimed steps (compile + autotune)")
    ap.add_argument(
        "--vocab", type=int, default=50304, help="50257 padded to a multiple of 128, as nanoGPT/llm.c"
    )
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--accum", type=int, default=1, help="micro-batches per optimizer step (DDP: one sync)")
    ap.add_argument("--bucket-mb", type=int, default=25, help="DDP bucket_cap_mb")
    ap.add_argument("--no-optimize-ddp", action="store_true", help="one compiled graph, all-reduce after it")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true", help="2 layers, d=64, for a CPU smoke test")
    args = ap.parse_args()
    layers, d, heads = (2, 64, 4) if args.tiny else (12, 768, 12)

    world, rank = int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("RANK", "0"))
    dev = torch.device(args.device)
    if world > 1:
        torch.distributed.init_process_group("nccl" if dev.type == "cuda" else "gloo")
    if dev.type == "cuda":
        dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(dev)
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    torch.manual_seed(1234 + rank)

    model = GPT(args.vocab, args.seq, layers, d, heads).to(dev)
    n_params = sum(p.numel() for p in model.parameters())
    # matmul parameters: all but the position table (wte counts once, as the tied lm_head matmul)
    n_matmul = n_params - model.wpe.weight.numel()
    train_model: nn.Module = model
    if world > 1:
        train_model = nn.parallel.DistributedDataParallel(
            model, device_ids=[dev] if dev.type == "cuda" else None, bucket_cap_mb=args.bucket_mb
        )
    ddp = train_model if world > 1 else None
    torch._dynamo.config.optimize_ddp = not args.no_optimize_ddp
    if not args.no_compile:
        train_model = torch.compile(train_model)
    opt = torch.optim.AdamW(
        model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=dev.type == "cuda"
    )

    def step() -> torch.Tensor:
        for i in range(args.accum):
            data = torch.randint(0, 50257, (args.batch, args.seq + 1), device=dev)
            last = i == args.accum - 1
            with contextlib.nullcontext() if ddp is None or last else ddp.no_sync():
                with torch.autocast(dev.type, dtype=torch.bfloat16):
                    loss = train_model(data[:, :-1], data[:, 1:])
                (loss / args.accum).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.detach()

    def sync() -> None:
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    for _ in range(args.warmup):
        loss0 = step()
    sync()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    sync()
    dt = time.perf_counter() - t0
    tok_s = args.batch * args.accum * args.seq * args.steps / dt
    fpt = transformer_flops_per_token(n_matmul, layers, d, args.seq)
    res = {
        "bench": "minimal_gpt2",
        "world_size": world,
        "batch_per_gpu": args.batch,
        "accum": args.accum,
        "bucket_mb": args.bucket_mb,
        "optimize_ddp": not args.no_optimize_ddp,
        "seq": args.seq,
        "params": n_params,
        "compiled": not args.no_compile,
        "tokens_per_s_per_gpu": round(tok_s, 1),
        "step_ms": round(1000 * dt / args.steps, 2),
        "flops_per_token": fpt,
        "mfu": round(mfu(tok_s, fpt), 4),
        "loss_first": round(float(loss0), 4),
        "loss_last": round(float(loss), 4),
        "peak_mem_gib": round(torch.cuda.max_memory_allocated(dev) / 2**30, 2)
        if dev.type == "cuda"
        else None,
    }
    if rank == 0:
        print(json.dumps(res), flush=True)
    if world > 1:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
