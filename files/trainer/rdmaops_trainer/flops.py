"""FLOPs per trained token and MFU: the one count behind the trainer's logged MFU and every benchmark's.

FLOPs per trained token: 6 * N (forward + backward over the matmul parameters N: every weight but lookup
tables, a tied head once, routed experts by the share of them a token passes through) + 12 * layers * d_attn
* seq for the attention scores and values (PaLM appendix B, nanoGPT; the full score matrix, although a causal
kernel skips half). ``flops_per_token`` counts the parameters of a built model; the ``*_matmul_params``
formulas give N from a shape alone (the benchmarks' rows; the tests hold them to real models).
MFU = FLOPs per token x tokens/s / (peak x GPUs), with the dense bf16 tensor-core peak of the GPU.

Only the functions that take a model or a device import torch: the formulas load anywhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from torch import nn

# dense bf16 tensor-core peak per GPU, FLOP/s (vendor datasheets, without sparsity)
PEAK_BF16_FLOPS: dict[str, float] = {
    "H200": 989e12,
    "H100 SXM": 989e12,
    "H100 80GB HBM3": 989e12,
    "H100 NVL": 835e12,
    "H100 PCIe": 756e12,
    "H100": 989e12,
    "GH200": 989e12,
    "B200": 2250e12,
    "A100": 312e12,
    "L40S": 362e12,
    "A10G": 70e12,
}
# the peak of every benchmark row's MFU: the H100 SXM's and the H200's (same chip and clocks)
H100_H200_BF16_PEAK = PEAK_BF16_FLOPS["H100 SXM"]


def peak_flops(device: torch.device, dtype: torch.dtype) -> float | None:
    """Peak for MFU: bf16 tensor cores on a known GPU; None on CPU, fp32 or an unknown GPU."""
    import torch

    if device.type != "cuda" or dtype != torch.bfloat16:
        return None
    name = torch.cuda.get_device_name(device)
    for key, value in PEAK_BF16_FLOPS.items():  # ordered most specific first
        if key in name:
            return value
    return None


def mfu(
    tokens_per_s: float, flops_per_token: float, peak: float = H100_H200_BF16_PEAK, gpus: int = 1
) -> float:
    """Model FLOPs utilisation of ``gpus`` GPUs that train ``tokens_per_s`` tokens per second together."""
    return flops_per_token * tokens_per_s / (peak * gpus)


def transformer_flops_per_token(n_matmul: float, layers: int, d_attn: int, seq: int) -> float:
    """6 * N + 12 * layers * d_attn * seq (d_attn: heads x head dim)."""
    return 6.0 * n_matmul + 12.0 * layers * d_attn * seq


# --------------------------------------------------------------------------- N from a shape


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


# GLM-4.5-Air: Glm4MoeConfig's defaults, spelled out for the FLOP count (which leaves out biases and norms)
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
    """Matmul weights one token passes through in a Glm4Moe model of GLM-4.5-Air's shape with ``cfg``'s keys
    changed: attention, the dense MLP of the first layers, the router, top-k routed experts and the shared
    ones, the untied lm_head (no biases, no norms; the input embedding is a lookup)."""
    c = {**GLM_AIR, **cfg}
    d, hd = c["hidden_size"], c["head_dim"]
    attn = d * c["num_attention_heads"] * hd * 2 + 2 * d * c["num_key_value_heads"] * hd
    dense = 3 * d * c["intermediate_size"]
    expert = 3 * d * c["moe_intermediate_size"]
    moe = d * c["n_routed_experts"] + (c["num_experts_per_tok"] + c["n_shared_experts"]) * expert
    layers, first = c["num_hidden_layers"], c["first_k_dense_replace"]
    return layers * attn + first * dense + (layers - first) * moe + c["vocab_size"] * d


# --------------------------------------------------------------------------- N from a built model


def count_params(model: nn.Module) -> int:
    seen: set[int] = set()
    total = 0
    for p in model.parameters():
        if id(p) not in seen:  # tied weights once
            seen.add(id(p))
            # deepspeed.zero.Init leaves partitioned params empty and records the real size in ds_numel
            total += int(getattr(p, "ds_numel", p.numel()))
    return total


def _lookup_only_params(hf: Any) -> int:
    """A transformers model's input embedding table when it is not also the lm_head: a lookup, no matmul
    FLOPs."""
    inp, out = hf.get_input_embeddings(), hf.get_output_embeddings()
    if inp is None or (out is not None and out.weight is inp.weight):
        return 0
    return int(getattr(inp.weight, "ds_numel", inp.weight.numel()))


def flops_per_token(model: nn.Module, seq_len: int) -> float:
    """Training FLOPs per token of a model of ``models`` (GPT-2, or a transformers model behind
    ``HFCausalLM``): 6 * (active matmul) params + attention.

    Lookup tables (GPT-2's positions, an untied input embedding) do no matmul and are left out.
    """
    from .models import GPT, HFCausalLM

    if isinstance(model, GPT):
        c = model.config
        n_gpt = count_params(model) - model.wpe.weight.numel()
        return transformer_flops_per_token(n_gpt, c.n_layer, c.n_embd, seq_len)
    cfg = getattr(model, "config", None)
    n = float(count_params(model)) - (_lookup_only_params(model.hf) if isinstance(model, HFCausalLM) else 0)
    if cfg is None:
        return 6.0 * n
    experts = getattr(cfg, "n_routed_experts", None) or getattr(cfg, "num_experts", None)
    top_k = getattr(cfg, "num_experts_per_tok", None)
    if experts and top_k:
        routed = sum(p.numel() for name, p in model.named_parameters() if ".experts." in name)
        n -= routed * (1.0 - top_k / experts)
    layers = getattr(cfg, "num_hidden_layers", 0)
    heads = getattr(cfg, "num_attention_heads", 0)
    head_dim = getattr(cfg, "head_dim", None) or (getattr(cfg, "hidden_size", 0) // max(heads, 1))
    return transformer_flops_per_token(n, layers, heads * head_dim, seq_len)
