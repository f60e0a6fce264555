"""GPT-2's MLP, forward + backward at the recipe's micro-batch: train.fused_mlp's cuBLASLt epilogues against
the unfused MLP, eager and compiled.

    python3 benchmarks/gpu/mlp_epilogue.py [--tokens 65536] [--iters 30]

Prints, then one JSON line (run_all.py's row "exp mlp epilogue 1gpu"):
* the GELU cuBLASLt computes, against torch's tanh and erf forms of its own GELU input (max abs difference);
* each variant's error against an fp32 reference of the same weights and inputs (relative Frobenius norm of
  the output, the input gradient and each weight gradient);
* ms per forward + backward (CUDA events, median of ``--iters``), the input and its gradient in bf16 as in the
  recipe's bf16 residual stream;
* ms of each epilogue GEMM against the torch GEMM + elementwise kernel it replaces, and of every cuBLASLt
  candidate the heuristic offered for each shape (``CublasLt`` keeps the fastest).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import cast

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "files" / "trainer"))
from rdmaops_trainer import (
    MLP,
    GPTConfig,
    cublaslt_candidate_ms,
    cublaslt_plan_linear_dgelu,
    cublaslt_run,
    gelu_linear,
    linear_dgelu,
    median_ms,
)


def rel(got: torch.Tensor, want: torch.Tensor) -> float:
    return float((got.float() - want.float()).norm() / want.float().norm())


def pass_of(
    mod: torch.nn.Module, x: torch.Tensor, dy: torch.Tensor, autocast: bool
) -> dict[str, torch.Tensor]:
    mod.zero_grad(set_to_none=True)
    xi = x.detach().requires_grad_(True)
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
        y = mod(xi)
    y.backward(dy.to(y.dtype))
    assert xi.grad is not None
    out = {"y": y.detach(), "dx": xi.grad}
    out.update(
        {n.removeprefix("_orig_mod."): p.grad for n, p in mod.named_parameters() if p.grad is not None}
    )
    return out


def timed(fn: Callable[[], object], iters: int) -> float:
    return median_ms(fn, 3, iters)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=65536, help="micro-batch x sequence (64 x 1024)")
    ap.add_argument("--embd", type=int, default=768)
    ap.add_argument("--iters", type=int, default=30)
    a = ap.parse_args()
    dev = torch.device("cuda")
    torch.manual_seed(0)
    plain = MLP(GPTConfig(n_embd=a.embd)).to(dev)
    fused = MLP(GPTConfig(n_embd=a.embd)).to(dev)
    fused.load_state_dict(plain.state_dict())
    fused.fused = True
    x = torch.randn(a.tokens, a.embd, device=dev).bfloat16()
    dy = torch.randn(a.tokens, a.embd, device=dev).bfloat16()

    # which GELU: cuBLASLt's output against torch's two forms applied to the GELU input it wrote
    xs = torch.randn(256, a.embd, device=dev, dtype=torch.bfloat16)
    h, pre = gelu_linear(xs, fused.c_fc.weight.bfloat16(), fused.c_fc.bias.bfloat16())
    gelu = {
        form: float((h.float() - F.gelu(pre.float(), approximate=form)).abs().max())
        for form in ("tanh", "none")
    }
    print(f"GELU of cuBLASLt vs torch, max abs difference: {gelu}", flush=True)

    ref = pass_of(plain, x.float(), dy.float(), autocast=False)
    variants: dict[str, torch.nn.Module] = {
        "unfused eager": plain,
        "unfused compiled": cast(torch.nn.Module, torch.compile(plain)),
        "fused eager": fused,
        "fused compiled": cast(torch.nn.Module, torch.compile(fused)),
    }
    errors, ms = {}, {}
    for name, mod in variants.items():
        got = pass_of(mod, x, dy, autocast=True)
        errors[name] = {k: round(rel(got[k], ref[k]), 5) for k in ref}
        ms[name] = round(timed(functools.partial(pass_of, mod, x, dy, autocast=True), a.iters), 3)
        print(f"{name}: {ms[name]} ms per forward + backward; relative error {errors[name]}", flush=True)
    ops = per_gemm(a, fused, x, dy)
    # every cuBLASLt candidate the heuristic offered, in its order (the first is its own choice)
    tuned = {shape: [round(t, 3) for t in ms] for shape, ms in cublaslt_candidate_ms().items()}
    print(f"candidates (ms, heuristic order): {tuned}", flush=True)
    out = {"tokens": a.tokens, "gelu_max_abs_diff": gelu, "mlp_ms": ms, "rel_err": errors}
    print(json.dumps({**out, "op_ms": ops, "candidates_ms": tuned}))


def per_gemm(a: argparse.Namespace, mod: MLP, x: torch.Tensor, dy: torch.Tensor) -> dict[str, float]:
    """Each epilogue GEMM against the torch GEMM + elementwise kernel it replaces."""
    w, b = mod.c_fc.weight.bfloat16(), mod.c_fc.bias.bfloat16()
    wp = mod.c_proj.weight.bfloat16()
    pre = gelu_linear(x, w, b)[1]
    hidden = w.size(0)
    bgrad = cublaslt_plan_linear_dgelu(a.tokens, hidden, wp.size(0), bgrad=True)
    dpre, dbias = torch.empty_like(pre), torch.empty(hidden, device=x.device, dtype=x.dtype)
    ops: dict[str, Callable[[], object]] = {
        "fc forward: addmm (torch)": lambda: torch.addmm(b, x, w.t()),
        "fc forward: addmm + GELU (torch)": lambda: F.gelu(torch.addmm(b, x, w.t()), approximate="tanh"),
        "fc forward: GELU_AUX_BIAS": lambda: gelu_linear(x, w, b),
        "proj dgrad: mm (torch)": lambda: dy @ wp,
        "proj dgrad: mm + GELU backward + bias sum (torch)": lambda: torch.ops.aten.gelu_backward(
            dy @ wp, pre, approximate="tanh"
        ).sum(0),
        "proj dgrad: DGELU + bias sum (torch)": lambda: linear_dgelu(dy, wp, pre).sum(0),
        "proj dgrad: DGELU_BGRAD": lambda: cublaslt_run(bgrad, wp, dy, dpre, dbias, pre),
    }
    result = {}
    for name, fn in ops.items():
        result[name] = round(timed(fn, a.iters), 3)
        print(f"{name}: {result[name]} ms", flush=True)
    return result


if __name__ == "__main__":
    main()
