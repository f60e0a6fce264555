"""One FLOP count and one peak for every benchmark row, so that MFU figures compare.

Peak: 989 TFLOP/s, the dense bf16 tensor-core rate of the H100 SXM and the H200 (same chip and clocks; NVIDIA
datasheets). FLOPs per trained token: 6 * N (forward + backward over the matmul parameters N, i.e. all
weights but lookup tables; a tied lm_head counts once) + 12 * layers * d_attn * seq for attention scores
and values (PaLM appendix B, nanoGPT; counts the full score matrix although a causal kernel skips half).
"""

from __future__ import annotations

H100_H200_BF16_PEAK = 989e12


def gpt_flops_per_token(n_matmul: int, layers: int, d_attn: int, seq: int) -> float:
    return 6.0 * n_matmul + 12.0 * layers * d_attn * seq


def gpt2_matmul_params(vocab: int = 50257, d: int = 768, layers: int = 12) -> int:
    """GPT-2 weights without the position table (lookup only); wte counts as the tied lm_head."""
    per_layer = (d * 3 * d + 3 * d) + (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d) + 4 * d
    return vocab * d + layers * per_layer + 2 * d


def qwen2_matmul_params(
    vocab: int = 151936,
    d: int = 1536,
    layers: int = 28,
    ffn: int = 8960,
    heads: int = 12,
    kv_heads: int = 2,
) -> int:
    """Qwen2 weights (defaults: Qwen2.5-1.5B); vocab * d once, as the lm_head, tied or not."""
    hd = d // heads
    attn = d * d + d + 2 * (d * kv_heads * hd + kv_heads * hd) + d * d  # q (bias), k/v (bias), o (no bias)
    mlp = 3 * d * ffn
    per_layer = attn + mlp + 2 * d
    return vocab * d + layers * per_layer + d


QWEN15B = {"vocab": 151936, "d": 1536, "layers": 28, "ffn": 8960, "heads": 12, "kv_heads": 2}


def mfu(tokens_per_s_per_gpu: float, flops_per_token: float) -> float:
    return tokens_per_s_per_gpu * flops_per_token / H100_H200_BF16_PEAK
