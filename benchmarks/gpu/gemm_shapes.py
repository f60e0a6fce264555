"""The GEMMs of one training step of a Qwen2-shaped model, timed one by one against the GPU's best GEMM rate.

    python3 benchmarks/gpu/gemm_shapes.py [--tokens 32768] [--iters 20]

For every Linear of the model (q, k, v, o, gate, up, down in each layer, and the output head) the
three GEMMs of a training step: forward ``x @ W.T``, input gradient ``dy @ W`` and weight gradient
``dy.T @ x``, in bf16 at the row's tokens per micro-batch (16 x 2048 in the qwen1.5b rows). Each is timed
alone (CUDA events, median), and the per-step total (x layers) is set against the same FLOPs at the rate of
an 8192^3 GEMM. Also the fused projections a model could use instead: q, k and v as one (d -> d + 2 kv) and
gate and up as one (d -> 2 ffn). Tells which GEMMs of the FSDP2 row run under the GEMM rate, and what fusing
projections would save.
Prints a table, then one JSON line (run_all.py's row "exp gemm shapes qwen1.5b 1gpu").
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model_shapes import QWEN15B


@dataclass(frozen=True)
class Linear:
    name: str
    fan_in: int
    fan_out: int
    per_step: int  # how many of it one forward runs (layers; 1 for the head)


def qwen2_linears(
    vocab: int, d: int, layers: int, ffn: int, heads: int, kv_heads: int, fused: bool = False
) -> list[Linear]:
    """The model's Linears; ``fused``: q/k/v and gate/up as the single projections a fused model has."""
    kv = kv_heads * (d // heads)
    if fused:
        per_layer = [Linear("qkv", d, d + 2 * kv, layers), Linear("gate_up", d, 2 * ffn, layers)]
    else:
        per_layer = [
            Linear("q", d, d, layers),
            Linear("k", d, kv, layers),
            Linear("v", d, kv, layers),
            Linear("gate", d, ffn, layers),
            Linear("up", d, ffn, layers),
        ]
    shared = [Linear("o", d, d, layers), Linear("down", ffn, d, layers), Linear("head", d, vocab, 1)]
    return per_layer + shared


def gemm_flops(tokens: int, lin: Linear) -> float:
    """FLOPs of one of the three GEMMs of ``lin`` (each is tokens x fan_in x fan_out multiply-adds)."""
    return 2.0 * tokens * lin.fan_in * lin.fan_out


def step_ms(ms: dict[str, dict[str, float]], linears: list[Linear]) -> float:
    """Per-step GEMM milliseconds: each Linear's forward + both gradients, times its count per step."""
    return sum(sum(ms[lin.name].values()) * lin.per_step for lin in linears)


def main() -> None:
    import torch
    import torch.nn.functional as F

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "files" / "trainer"))
    from rdmaops_trainer import median_ms

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=16 * 2048, help="tokens per micro-batch")
    ap.add_argument("--iters", type=int, default=20)
    a = ap.parse_args()
    dev, bf = "cuda", torch.bfloat16
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True

    sq = torch.randn(8192, 8192, device=dev, dtype=bf)
    peak_ms = median_ms(lambda: sq @ sq, 3, a.iters)
    peak = 2.0 * 8192**3 / peak_ms / 1e9  # TFLOP/s

    ms: dict[str, dict[str, float]] = {}
    rows = []
    all_linears = {lin.name: lin for f in (False, True) for lin in qwen2_linears(**QWEN15B, fused=f)}
    for lin in all_linears.values():
        x = torch.randn(a.tokens, lin.fan_in, device=dev, dtype=bf)
        w = torch.randn(lin.fan_out, lin.fan_in, device=dev, dtype=bf)
        dy = torch.randn(a.tokens, lin.fan_out, device=dev, dtype=bf)
        ms[lin.name] = {
            "fwd": median_ms(lambda x=x, w=w: F.linear(x, w), 3, a.iters),
            "dgrad": median_ms(lambda dy=dy, w=w: dy @ w, 3, a.iters),
            "wgrad": median_ms(lambda dy=dy, x=x: dy.t() @ x, 3, a.iters),
        }
        f = gemm_flops(a.tokens, lin)
        for kind, t in ms[lin.name].items():
            rows.append(
                {
                    "linear": lin.name,
                    "gemm": kind,
                    "m_n_k": [a.tokens, lin.fan_out, lin.fan_in],
                    "ms": round(t, 3),
                    "tflops": round(f / t / 1e9, 1),
                    "ms_per_step": round(t * lin.per_step, 2),
                }
            )
        del x, w, dy
    base = qwen2_linears(**QWEN15B)
    fused = qwen2_linears(**QWEN15B, fused=True)
    flops_step = sum(3 * gemm_flops(a.tokens, lin) * lin.per_step for lin in base)
    summary = {
        "tokens": a.tokens,
        "gemm_8192_tflops": round(peak, 1),
        "step_gemm_ms": round(step_ms(ms, base), 2),
        "step_gemm_ms_fused_projections": round(step_ms(ms, fused), 2),
        "step_gemm_ms_at_8192_rate": round(flops_step / peak / 1e9, 2),
        "step_tflops": round(flops_step / step_ms(ms, base) / 1e9, 1),
    }
    print(f"8192^3 GEMM: {peak:.1f} TFLOP/s")
    print(f"{'linear':8} {'gemm':6} {'M x N x K':>22} {'ms':>8} {'TFLOP/s':>8} {'ms/step':>8}")
    for r in rows:
        mnk = "x".join(str(v) for v in r["m_n_k"])
        ms_step = r["ms_per_step"]
        print(f"{r['linear']:8} {r['gemm']:6} {mnk:>22} {r['ms']:8.3f} {r['tflops']:8.1f} {ms_step:8.2f}")
    print(json.dumps({"summary": summary, "rows": rows}))


if __name__ == "__main__":
    main()
