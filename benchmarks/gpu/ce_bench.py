"""The output head + cross-entropy of one GPT-2 micro-batch: compiled (the trainer's default) against
``train.fused_loss`` (rdmaops_trainer/kernels/fused_loss.py, Triton kernel), forward + backward, timed alone.

    python benchmarks/gpu/ce_bench.py                    # 64 x 1024 tokens, d 768, vocabulary 50304, bf16
    python benchmarks/gpu/ce_bench.py --device cpu --rows 256 --vocab 300 --dim 16 --iters 2   # code path

Prints one JSON line: ms per forward + backward of each, their agreement (loss, gradients of the hidden
states and of the weight), and the kernel alone against the compiled cross-entropy on given logits.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "files" / "trainer"))
from rdmaops_trainer import IGNORE_INDEX, ce_rows, linear_cross_entropy, lm_loss


def timed(fn: Callable[[], object], iters: int, device: torch.device) -> float:
    """Milliseconds per call, after two untimed calls (compile, autotune)."""
    for _ in range(2):
        fn()

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    sync()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    sync()
    return 1000 * (time.perf_counter() - t0) / iters


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=64 * 1024, help="tokens per micro-batch")
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--vocab", type=int, default=50304)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--sweep", action="store_true", help="also time the kernel at other launch shapes")
    a = ap.parse_args()
    dev = torch.device(a.device)
    cast = torch.autocast(dev.type, dtype=torch.bfloat16) if dev.type == "cuda" else contextlib.nullcontext()
    gen = torch.Generator(device=dev).manual_seed(0)
    hidden = torch.randn(a.rows, a.dim, device=dev, generator=gen).requires_grad_(True)
    weight = (torch.randn(a.vocab, a.dim, device=dev, generator=gen) * 0.02).requires_grad_(True)
    labels = torch.randint(0, a.vocab, (a.rows,), device=dev, generator=gen)
    compiled = torch.compile(lambda h, w, y: lm_loss(h @ w.t(), y))

    def step(loss_fn: Callable[..., torch.Tensor]) -> torch.Tensor:
        hidden.grad, weight.grad = None, None
        with cast:
            loss = loss_fn(hidden, weight, labels)
        (loss * 0.125).backward()
        return loss.detach()

    out: dict[str, object] = {"rows": a.rows, "dim": a.dim, "vocab": a.vocab, "device": str(dev)}
    loss_c = step(compiled)
    gh_c, gw_c = hidden.grad.clone(), weight.grad.clone()  # type: ignore[union-attr]
    loss_f = step(linear_cross_entropy)
    gh_f, gw_f = hidden.grad, weight.grad
    assert gh_f is not None and gw_f is not None
    out["loss_compiled"], out["loss_fused"] = float(loss_c), float(loss_f)
    out["grad_hidden_max_rel_err"] = float((gh_f - gh_c).abs().max() / gh_c.abs().max())
    out["grad_weight_max_rel_err"] = float((gw_f - gw_c).abs().max() / gw_c.abs().max())
    out["head_loss_ms_compiled"] = round(timed(lambda: step(compiled), a.iters, dev), 3)
    out["head_loss_ms_fused"] = round(timed(lambda: step(linear_cross_entropy), a.iters, dev), 3)

    # the cross-entropy alone on given logits: compiled forward + backward against the one kernel
    logits = (hidden.detach() @ weight.detach().t()).to(torch.bfloat16)
    n_valid = (labels != IGNORE_INDEX).sum()
    ce = torch.compile(lambda x, y: lm_loss(x, y))

    def compiled_ce() -> None:
        x = logits.detach().requires_grad_(True)
        ce(x, labels).backward()

    buf = logits.clone()
    out["ce_ms_compiled"] = round(timed(compiled_ce, a.iters, dev), 3)
    out["ce_ms_kernel"] = round(
        timed(lambda: ce_rows(buf, labels, n_valid, -100, write_grad=True), a.iters, dev), 3
    )
    if a.sweep and dev.type == "cuda":
        from rdmaops_trainer import launch_ce_kernel  # imports Triton

        sweep = {}
        for block in (2048, 4096, 8192, 16384):
            for warps in (4, 8, 16, 32):
                ms = timed(
                    lambda b=block, w=warps: launch_ce_kernel(  # type: ignore[misc]
                        buf, labels, torch.empty(a.rows, device=dev), n_valid, -100, True, block=b, warps=w
                    ),
                    a.iters,
                    dev,
                )
                sweep[f"{block}x{warps}"] = round(ms, 3)
        out["ce_ms_kernel_by_block_x_warps"] = sweep
    if dev.type == "cuda":
        gbytes = 2 * logits.numel() * logits.element_size() / 1e9  # one read and one write of the logits
        out["ce_kernel_tb_per_s_one_read_one_write"] = round(gbytes / out["ce_ms_kernel"], 3)  # type: ignore[operator]
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
