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


# GLM-4.5-Air's layer (hidden 4096, 96 query / 8 KV heads of 128, experts of 1408, top-8 of the routed experts
# plus one shared, layer 0 dense, vocabulary 151552, untied) with 8 layers and 32 routed experts instead of 46
# and 128: 6.2 B parameters, 2.7 B active per token, so LoRA training fits one 80 GB GPU.
GLM_1GPU = {
    "num_hidden_layers": 8,
    "n_routed_experts": 32,
    # GLM-4.5-Air's config.json values where Glm4MoeConfig's defaults differ (head_dim would be 4096 // 96)
    "head_dim": 128,
    "attention_bias": True,
}
# the CPU smoke test's shape
TINY_GLM = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "moe_intermediate_size": 32,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "vocab_size": 256,
}
# the rest of the shape is Glm4MoeConfig's default (GLM-4.5-Air); spelled out for the FLOP count, which
# leaves out biases and norms
GLM_AIR = {
    "vocab_size": 151552,
    "hidden_size": 4096,
    "intermediate_size": 10944,
    "moe_intermediate_size": 1408,
    "num_attention_heads": 96,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "num_experts_per_tok": 8,
    "n_shared_experts": 1,
    "first_k_dense_replace": 1,
    "num_hidden_layers": 46,
    "n_routed_experts": 128,
}


def glm4_moe_active_matmul_params(cfg: dict[str, int]) -> int:
    """Matmul weights one token passes through in a Glm4Moe model: attention, the dense MLP of the first
    layers, the router, top-k routed experts and the shared ones, the untied lm_head (no biases, no norms;
    the input embedding is a lookup)."""
    c = {**GLM_AIR, **cfg}
    d, hd = c["hidden_size"], c["head_dim"]
    attn = d * c["num_attention_heads"] * hd * 2 + 2 * d * c["num_key_value_heads"] * hd
    dense = 3 * d * c["intermediate_size"]
    expert = 3 * d * c["moe_intermediate_size"]
    moe = d * c["n_routed_experts"] + (c["num_experts_per_tok"] + c["n_shared_experts"]) * expert
    layers, first = c["num_hidden_layers"], c["first_k_dense_replace"]
    return layers * attn + first * dense + (layers - first) * moe + c["vocab_size"] * d


def mfu(tokens_per_s_per_gpu: float, flops_per_token: float) -> float:
    return tokens_per_s_per_gpu * flops_per_token / H100_H200_BF16_PEAK
