"""The two kernels the FSDP2 row's profile left to custom code, timed against what the trainer runs now.

    python3 benchmarks/gpu/hopper_kernels.py [--micro 12] [--seq 2048] [--iters 20]

At the Qwen2.5-1.5B shape and one micro-batch of the qwen1_5b recipe (12 x 2048 tokens), forward + backward:

* the MLP (gate, up, SwiGLU, down): torch's compiled version (cuBLAS GEMMs, inductor's SwiGLU kernels, what
  the trainer runs) against quack's (``quack-kernels``, CuTe DSL), whose GEMMs compute the SwiGLU and its
  gradient in their epilogues, so the (tokens x 2 ffn) pre-activation is never re-read by a separate kernel;
* the residual add and RMSNorm: inductor's kernels against ``train.fused_rmsnorm``'s (quack's);
* causal GQA attention: SDPA's cuDNN kernel (the trainer's on Hopper) and FlashAttention-2 against
  FlashAttention-4's Hopper kernels (``flash-attn-4``, CuTe DSL), through torch's own SDPA registry.

Each case prints one JSON line: ms per forward + backward (CUDA events, median), TFLOP/s, and the largest
error of its output and gradients against the float32 reference. A case whose package is missing prints
its reason instead. Needs a Hopper GPU for the CuTe cases.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "files" / "trainer"))
from model_shapes import QWEN15B
from rdmaops_trainer import median_ms  # CUDA events, median; the first calls compile (JIT)


def mlp_flops(tokens: int, d: int, ffn: int) -> float:
    """Forward + backward FLOPs of a SwiGLU MLP: three GEMMs of tokens x d x ffn, each run three times."""
    return 3 * 3 * 2.0 * tokens * d * ffn


def causal_attention_flops(batch: int, heads: int, seq: int, head_dim: int) -> float:
    """Forward + backward FLOPs a causal kernel does: 2 GEMMs forward, 5 backward, half the score matrix."""
    per_gemm = 2.0 * batch * heads * seq * seq * head_dim / 2
    return (2 + 5) * per_gemm


def swiglu_mlp(x: Any, w_gate: Any, w_up: Any, w_down: Any) -> Any:
    """The MLP of Llama-family models, as transformers writes it."""
    import torch.nn.functional as F

    return F.linear(F.silu(F.linear(x, w_gate)) * F.linear(x, w_up), w_down)


def max_rel_err(got: Any, ref: Any) -> float:
    """Largest absolute error over the reference's largest magnitude (bf16 against fp32)."""
    scale = ref.abs().max().item() or 1.0
    return float((got.float() - ref.float()).abs().max().item() / scale)


def fwd_bwd(f: Callable[..., Any], inputs: list[Any], grad_out: Any) -> tuple[Any, list[Any]]:
    import torch

    for t in inputs:
        t.grad = None
    out = f(*inputs)
    grads = torch.autograd.grad(out, inputs, grad_out)
    return out, list(grads)


def errors(
    f: Callable[..., Any], inputs: list[Any], grad_out: Any, ref: tuple[Any, list[Any]]
) -> dict[str, float]:
    out, grads = fwd_bwd(f, inputs, grad_out)
    errs = {"out": max_rel_err(out, ref[0])}
    for i, (g, r) in enumerate(zip(grads, ref[1], strict=True)):
        errs[f"grad{i}"] = max_rel_err(g, r)
    return {k: round(v, 5) for k, v in errs.items()}


def case(
    name: str,
    flops: float,
    f: Callable[..., Any],
    check: tuple[list[Any], Any, Any],
    timed: tuple[list[Any], Any],
    iters: int,
) -> dict[str, Any]:
    """Errors of ``f`` on ``check`` (inputs, output gradient, float32 reference), then its time on ``timed``
    (inputs, output gradient)."""
    row: dict[str, Any] = {"case": name}
    try:
        row["err"] = errors(f, *check)
        ms = median_ms(lambda: fwd_bwd(f, *timed), 3, iters)
    except Exception as e:  # a kernel that refuses the shape is a result too
        row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        return row
    row["ms"] = round(ms, 3)
    if flops:  # memory-bound cases (the norms) give their time alone
        row["tflops"] = round(flops / ms / 1e9, 1)
    return row


def mlp_cases(tokens: int, d: int, ffn: int, iters: int) -> list[dict[str, Any]]:
    import torch

    g = torch.Generator(device="cuda").manual_seed(0)

    def rand(*shape: int, scale: float) -> Any:
        return (torch.randn(*shape, device="cuda", generator=g) * scale).to(torch.bfloat16)

    x = rand(tokens, d, scale=1.0).requires_grad_()
    wg = rand(ffn, d, scale=d**-0.5).requires_grad_()
    wu = rand(ffn, d, scale=d**-0.5).requires_grad_()
    wd = rand(d, ffn, scale=ffn**-0.5).requires_grad_()
    dy = rand(tokens, d, scale=1.0)
    inputs = [x, wg, wu, wd]
    ref32 = [t.detach().float().requires_grad_() for t in inputs]
    ref = fwd_bwd(swiglu_mlp, ref32, dy.float())
    del ref32
    flops = mlp_flops(tokens, d, ffn)
    check, timed = (inputs, dy, ref), (inputs, dy)
    rows = [
        case("mlp torch compiled (cuBLAS + inductor)", flops, torch.compile(swiglu_mlp), check, timed, iters)
    ]
    try:
        from quack.mlp import mlp_func
    except ImportError as e:
        rows.append({"case": "mlp quack", "error": f"not installed: {e}"})
        return rows

    def quack_mlp(x: Any, w_gate: Any, w_up: Any, w_down: Any) -> Any:
        # [gate; up] stacked: quack's concat layout, the gradient splits back through torch.cat
        w1 = torch.cat([w_gate, w_up], dim=0)
        return mlp_func(x, w1, w_down, activation="swiglu", tuned=False, concat_layout=True)

    rows.append(case("mlp quack (SwiGLU in the GEMM epilogues)", flops, quack_mlp, check, timed, iters))
    # the trainer's own ops on quack's GEMMs (train.fused_swiglu): the same plan behind a custom op
    from rdmaops_trainer import stack_gate_up
    from rdmaops_trainer import swiglu_mlp as swiglu_op  # the custom op torch.ops.rdmaops.swiglu_mlp

    def ours(cublas: bool) -> Callable[..., Any]:
        def run(x: Any, w_gate: Any, w_up: Any, w_down: Any) -> Any:
            w1 = stack_gate_up(w_gate, w_up)
            return swiglu_op(x, w1, w_down, cublas)[0]

        return run

    rows.append(case("mlp train.fused_swiglu (the trainer's ops)", flops, ours(False), check, timed, iters))
    # its four GEMMs without an epilogue on cuBLAS (train.fused_swiglu_gemms: cublas)
    name = "mlp train.fused_swiglu, plain GEMMs on cuBLAS"
    rows.append(case(name, flops, ours(True), check, timed, iters))
    return rows


def rms_norm_add(x: Any, residual: Any, weight: Any, eps: float = 1e-6) -> Any:
    """A decoder layer's ``norm(residual + x)``, in transformers' RMSNorm formula."""
    import torch

    h = residual + x
    hf = h.float()
    return weight * (hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + eps)).to(h.dtype)


def norm_cases(tokens: int, d: int, iters: int) -> list[dict[str, Any]]:
    """The residual add and RMSNorm of a decoder layer: inductor's kernels (what the trainer compiles) against
    train.fused_rmsnorm's ops (quack's kernels, the add left to inductor)."""
    import torch

    g = torch.Generator(device="cuda").manual_seed(0)
    x, res = (torch.randn(tokens, d, device="cuda", generator=g).to(torch.bfloat16) for _ in range(2))
    w = (1 + 0.1 * torch.randn(d, device="cuda", generator=g)).to(torch.bfloat16)
    dy = torch.randn(tokens, d, device="cuda", generator=g).to(torch.bfloat16)
    inputs = [t.requires_grad_() for t in (x, res, w)]
    ref = fwd_bwd(rms_norm_add, [t.detach().float().requires_grad_() for t in inputs], dy.float())
    check, timed = (inputs, dy, ref), (inputs, dy)
    rows = [case("norm torch compiled (inductor)", 0, torch.compile(rms_norm_add), check, timed, iters)]
    try:
        import quack.rmsnorm  # noqa: F401
    except ImportError as e:
        rows.append({"case": "norm train.fused_rmsnorm", "error": f"not installed: {e}"})
        return rows
    from rdmaops_trainer import fused_rms_norm

    def ours(x: Any, residual: Any, weight: Any) -> Any:
        return fused_rms_norm(residual + x, weight, 1e-6)

    rows.append(case("norm train.fused_rmsnorm (quack)", 0, torch.compile(ours), check, timed, iters))
    return rows


def attention_cases(
    batch: int, seq: int, heads: int, kv_heads: int, head_dim: int, iters: int
) -> list[dict[str, Any]]:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    g = torch.Generator(device="cuda").manual_seed(1)
    q = torch.randn(
        batch, heads, seq, head_dim, device="cuda", generator=g, dtype=torch.bfloat16
    ).requires_grad_()
    k = torch.randn(
        batch, kv_heads, seq, head_dim, device="cuda", generator=g, dtype=torch.bfloat16
    ).requires_grad_()
    v = torch.randn(
        batch, kv_heads, seq, head_dim, device="cuda", generator=g, dtype=torch.bfloat16
    ).requires_grad_()
    dy = torch.randn(batch, heads, seq, head_dim, device="cuda", generator=g, dtype=torch.bfloat16)
    inputs = [q, k, v]

    def sdpa(q: Any, k: Any, v: Any) -> Any:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

    # errors on the first two sequences against the math kernel in fp32 (the whole batch's fp32 score
    # matrices would take 12 GB); the timing runs the whole micro-batch
    sub = [t[:2].detach().float().requires_grad_() for t in inputs]
    with sdpa_kernel([SDPBackend.MATH]):
        ref_small = fwd_bwd(sdpa, sub, dy[:2].float())

    flops = causal_attention_flops(batch, heads, seq, head_dim)
    rows = []

    def run(name: str, f: Callable[..., Any]) -> None:
        small = [t[:2].detach().clone().requires_grad_() for t in inputs]
        rows.append(case(name, flops, f, (small, dy[:2].contiguous(), ref_small), (inputs, dy), iters))

    def sdpa_with(backend: Any) -> Callable[..., Any]:
        def f(q: Any, k: Any, v: Any) -> Any:
            with sdpa_kernel([backend]):
                return sdpa(q, k, v)

        return f

    run("attention sdpa cuDNN", sdpa_with(SDPBackend.CUDNN_ATTENTION))
    run("attention sdpa flash (FlashAttention-2)", sdpa_with(SDPBackend.FLASH_ATTENTION))
    try:
        from flash_attn.cute import flash_attn_func
    except ImportError as e:
        rows.append({"case": "attention FlashAttention-4", "error": f"not installed: {e}"})
        return rows

    def fa4(q: Any, k: Any, v: Any) -> Any:
        # FlashAttention's (batch, seq, heads, dim) layout: the transposes are views, no copies
        out, _lse = flash_attn_func(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal=True)
        return out.transpose(1, 2)

    run("attention FlashAttention-4 (flash_attn.cute, Hopper kernels)", fa4)
    # torch's own SDPA registry for FA4 (torch.nn.attention.activate_flash_attention_impl)
    try:
        from torch.nn.attention import activate_flash_attention_impl, restore_flash_attention_impl

        activate_flash_attention_impl("FA4")
    except Exception as e:
        rows.append({"case": "attention sdpa flash (FA4 registry)", "error": f"{type(e).__name__}: {e}"})
        return rows
    try:
        run("attention sdpa flash (FA4 registry)", sdpa_with(SDPBackend.FLASH_ATTENTION))
    finally:
        restore_flash_attention_impl()
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--micro", type=int, default=12, help="sequences per micro-batch")
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--only", choices=["mlp", "attention", "norm"], default=None)
    a = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("needs a CUDA GPU", file=sys.stderr)
        return 2
    q = QWEN15B
    head_dim = q["d"] // q["heads"]
    rows: list[dict[str, Any]] = []
    shape = {
        "tokens": a.micro * a.seq,
        "d": q["d"],
        "ffn": q["ffn"],
        "heads": q["heads"],
        "kv_heads": q["kv_heads"],
    }
    print(json.dumps({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, **shape}), flush=True)
    if a.only in (None, "mlp"):
        for row in mlp_cases(a.micro * a.seq, q["d"], q["ffn"], a.iters):
            print(json.dumps(row), flush=True)
            rows.append(row)
    if a.only in (None, "norm"):
        for row in norm_cases(a.micro * a.seq, q["d"], a.iters):
            print(json.dumps(row), flush=True)
            rows.append(row)
    if a.only in (None, "attention"):
        for row in attention_cases(a.micro, a.seq, q["heads"], q["kv_heads"], head_dim, a.iters):
            print(json.dumps(row), flush=True)
            rows.append(row)
    per_step = {r["case"]: round(r["ms"] * q["layers"], 1) for r in rows if "ms" in r}
    print(json.dumps({"ms_per_micro_batch_x_layers": per_step, "layers": q["layers"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
