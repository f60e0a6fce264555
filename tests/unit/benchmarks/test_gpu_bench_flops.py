"""The FLOP count behind every MFU figure in docs/benchmarks.md (the trainer's, rdmaops_trainer's public API):
parameter formulas against real models, at the benchmark rows' shapes (model_shapes.py)."""

from __future__ import annotations

import gemm_shapes as shapes
import minimal_gpt2
import pytest
import rdmaops_trainer as flops
import torch
from model_shapes import GLM_1GPU, QWEN15B


def test_gpt2_formula_matches_the_minimal_model() -> None:
    model = minimal_gpt2.GPT(vocab=1000, seq=32, layers=3, d=48, heads=4)
    n = sum(p.numel() for p in model.parameters()) - model.wpe.weight.numel()
    assert flops.gpt2_matmul_params(1000, 48, 3) == n


def test_gpt2_124m_numbers() -> None:
    # 124M with the 50304-row padded table, 0.855 GFLOP per token at T=1024
    assert flops.gpt2_matmul_params(50304) == 123_689_472
    fpt = flops.transformer_flops_per_token(flops.gpt2_matmul_params(50304), 12, 768, 1024)
    assert fpt == pytest.approx(855.38e6, rel=1e-4)
    # 500k tokens/s on one GPU is 43% of the 989 TFLOP/s peak
    assert flops.mfu(500_000, fpt) == pytest.approx(0.4325, abs=1e-3)


def tiny_qwen2(shape: dict[str, int]) -> torch.nn.Module:
    """A transformers Qwen2 (tied embeddings) of the benchmark scripts' shape keys (those of QWEN15B)."""
    transformers = pytest.importorskip("transformers")
    cfg = transformers.Qwen2Config(
        vocab_size=shape["vocab"],
        hidden_size=shape["d"],
        num_hidden_layers=shape["layers"],
        intermediate_size=shape["ffn"],
        num_attention_heads=shape["heads"],
        num_key_value_heads=shape["kv_heads"],
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    return transformers.Qwen2ForCausalLM(cfg)


def test_qwen2_formula_matches_transformers() -> None:
    shape = {"vocab": 512, "d": 64, "layers": 2, "ffn": 160, "heads": 4, "kv_heads": 2}
    model = tiny_qwen2(shape)
    # tied: the embedding table is the lm_head and counted once
    n = sum(p.numel() for p in model.parameters())
    assert flops.qwen2_matmul_params(**shape) == n


def test_qwen15b_size() -> None:
    # Qwen2.5-1.5B has 1.54B parameters (tied embeddings)
    assert flops.qwen2_matmul_params(**QWEN15B) == 1_543_714_304


def test_glm4_moe_formula_matches_transformers_active_weights() -> None:
    transformers = pytest.importorskip("transformers")
    cfg = transformers.AutoConfig.for_model("glm4_moe", **GLM_1GPU)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(cfg)
    k, e = cfg.num_experts_per_tok, cfg.n_routed_experts
    active = 0.0
    for name, p in model.named_parameters():
        if p.dim() < 2 or name.endswith("embed_tokens.weight"):  # norms, biases, the lookup table
            continue
        active += p.numel() * (k / e if ".mlp.experts." in name else 1.0)
    assert flops.glm4_moe_active_matmul_params(GLM_1GPU) == active
    # the shape of the benchmark row: 6.2 B parameters, 2.7 B of them active per token
    assert sum(p.numel() for p in model.parameters()) == pytest.approx(6.25e9, rel=1e-2)
    assert active == pytest.approx(2.72e9, rel=1e-2)


def test_gemm_shapes_lists_the_linears_of_a_real_qwen2() -> None:
    """gemm_shapes.py times the Linears of a Qwen2 model: the same (fan_in, fan_out) and count as the real one
    has, and the fused projections carry the same weights (so the same FLOPs)."""
    dims = {"vocab": 320, "d": 64, "layers": 3, "ffn": 96, "heads": 4, "kv_heads": 2}
    model = tiny_qwen2(dims)
    real: dict[tuple[int, int], int] = {}
    for m in model.modules():
        if isinstance(m, torch.nn.Linear):
            real[(m.in_features, m.out_features)] = real.get((m.in_features, m.out_features), 0) + 1
    listed: dict[tuple[int, int], int] = {}
    for lin in shapes.qwen2_linears(**dims):
        key = (lin.fan_in, lin.fan_out)
        listed[key] = listed.get(key, 0) + lin.per_step
    assert listed == real
    fused = shapes.qwen2_linears(**dims, fused=True)
    assert {lin.name for lin in fused} == {"qkv", "gate_up", "o", "down", "head"}
    weights = [
        sum(x.fan_in * x.fan_out * x.per_step for x in ls) for ls in (shapes.qwen2_linears(**dims), fused)
    ]
    assert weights[0] == weights[1]
    assert shapes.gemm_flops(10, shapes.Linear("q", 64, 64, 3)) == 2 * 10 * 64 * 64
    ms = {"a": {"fwd": 1.0, "dgrad": 2.0, "wgrad": 3.0}, "b": {"fwd": 0.5, "dgrad": 0.5, "wgrad": 1.0}}
    assert shapes.step_ms(ms, [shapes.Linear("a", 1, 1, 4), shapes.Linear("b", 1, 1, 1)]) == 26.0
