"""train.fused_swiglu: the interleaved plan (run in torch ops on the CPU, in quack's GEMMs on a Hopper GPU)
against transformers' own SwiGLU MLP, the custom ops' fake kernels and gradients, the patching of a model,
and the refusals."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from conftest import TINY_QWEN_SETS, assert_refused, assert_trains_alike, qwen_pair
from rdmaops_trainer.config import RecipeError, load_recipe
from rdmaops_trainer.kernels import fused_swiglu
from rdmaops_trainer.models import HFCausalLM, build_model
from torch import nn

# tokens, hidden, intermediate, out: all different, so a swapped dimension cannot pass
TOKENS, D, FFN = 24, 16, 40


def rand(*shape: int, seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def plain(x: torch.Tensor, wg: torch.Tensor, wu: torch.Tensor, wd: torch.Tensor) -> torch.Tensor:
    return (F.silu(x @ wg.T) * (x @ wu.T)) @ wd.T


def test_the_forward_gives_the_mlp_and_the_pre_activation_interleaved() -> None:
    x, wg, wu, wd = rand(TOKENS, D, seed=1), rand(FFN, D, seed=2), rand(FFN, D, seed=3), rand(D, FFN, seed=4)
    w1 = fused_swiglu.stack_gate_up(wg, wu)
    torch.testing.assert_close(w1[0::2], wg, rtol=0, atol=0)
    torch.testing.assert_close(w1[1::2], wu, rtol=0, atol=0)
    y, pre = fused_swiglu.swiglu_mlp(x, w1, wd, False)
    torch.testing.assert_close(y, plain(x, wg, wu, wd))
    assert pre.shape == (TOKENS, 2 * FFN)
    # quack's gated GEMMs lay gate and up column by column: g0, u0, g1, u1, ...
    torch.testing.assert_close(pre[:, 0::2], x @ wg.T)
    torch.testing.assert_close(pre[:, 1::2], x @ wu.T)


def test_the_gradients_are_those_of_the_mlp() -> None:
    """float64 finite differences through the op and its registered backward."""
    args = [rand(6, 8, seed=1, dtype=torch.float64), rand(2 * 10, 8, seed=2, dtype=torch.float64)]
    args.append(rand(4, 10, seed=3, dtype=torch.float64))
    args = [a.requires_grad_() for a in args]
    assert torch.autograd.gradcheck(lambda *a: torch.ops.rdmaops.swiglu_mlp(*a, False)[0], args)


def test_the_custom_ops_have_consistent_fake_kernels_and_schemas() -> None:
    x, w1, w2 = rand(TOKENS, D, seed=1), rand(2 * FFN, D, seed=2), rand(D, FFN, seed=4)
    dy, pre = rand(TOKENS, D, seed=5), rand(TOKENS, 2 * FFN, seed=6)
    for cublas in (False, True):  # the flag picks the GPU's plain GEMMs; the CPU runs torch's either way
        torch.library.opcheck(fused_swiglu.swiglu_mlp, (x, w1, w2, cublas))
        torch.library.opcheck(fused_swiglu.swiglu_mlp_backward, (dy, x, w1, w2, pre, cublas))


@pytest.mark.parametrize("gemms", ["quack", "cublas"])
def test_a_patched_qwen2_model_trains_like_transformers_own(gemms: str) -> None:
    models = qwen_pair("train.fused_swiglu", f"train.fused_swiglu_gemms={gemms}")
    assert isinstance(models[1], HFCausalLM)
    mlps = [m for m in models[1].modules() if fused_swiglu.is_swiglu_mlp(m)]
    assert len(mlps) == 2 and all("forward" in vars(m) for m in mlps)
    assert all(m.swiglu_cublas is (gemms == "cublas") for m in mlps)
    assert not any("forward" in vars(m) for m in models[0].modules() if fused_swiglu.is_swiglu_mlp(m))
    assert_trains_alike(*models, "gate_proj")


def test_under_bf16_autocast_it_computes_in_bf16_and_keeps_fp32_weight_gradients() -> None:
    mlp = next(m for m in qwen_pair("train.fused_swiglu")[1].modules() if fused_swiglu.is_swiglu_mlp(m))
    x = rand(2, 5, 64, seed=8).requires_grad_()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = mlp(x)
    assert y.dtype == torch.bfloat16
    y.float().sum().backward()
    assert mlp.gate_proj.weight.grad is not None and mlp.gate_proj.weight.grad.dtype == torch.float32
    assert x.grad is not None and x.grad.dtype == torch.float32


def test_a_patched_mlp_compiles_as_one_graph_with_the_ops_as_calls() -> None:
    mlp = next(m for m in qwen_pair("train.fused_swiglu")[1].modules() if fused_swiglu.is_swiglu_mlp(m))
    compiled = torch.compile(mlp, backend="aot_eager", fullgraph=True)
    x = rand(2, 5, 64, seed=8)
    grads = []
    for module in (compiled, mlp):
        mlp.zero_grad(set_to_none=True)
        xi = x.clone().requires_grad_()
        (module(xi) * rand(2, 5, 64, seed=9)).sum().backward()
        grads.append([xi.grad, mlp.gate_proj.weight.grad, mlp.up_proj.weight.grad, mlp.down_proj.weight.grad])
    for got, want in zip(*grads, strict=True):
        torch.testing.assert_close(got, want)


def test_a_model_without_a_swiglu_mlp_or_with_unaligned_sizes_is_refused() -> None:
    gelu = nn.Sequential(nn.Linear(8, 8))
    with pytest.raises(RecipeError, match="the model has no SwiGLU MLP"):
        fused_swiglu.patch(gelu)
    with pytest.raises(RecipeError, match=r"hidden size 64, intermediate size 100 and output 64"):
        build_model(
            load_recipe(
                "qwen1_5b", [*TINY_QWEN_SETS, "model.config.intermediate_size=100", "train.fused_swiglu=true"]
            )
        )


def test_it_is_refused_where_it_does_not_apply() -> None:
    assert_refused(
        "tiny", [], {"train.fused_swiglu=true": "needs model.kind hf without LoRA, not model.kind 'gpt2'"}
    )
    lora = ["lora.enabled=true", "lora.target_modules=[q_proj]"]
    assert_refused("qwen1_5b", lora, {"train.fused_swiglu=true": "with lora.enabled True"})
    assert_refused(
        "qwen1_5b", [], {"train.fused_swiglu_gemms=cublas": "cublas needs train.fused_swiglu: true"}
    )
    assert_refused(
        "qwen1_5b",
        ["cluster.device=cuda", "train.fused_swiglu=true"],
        {"train.precision=fp32": "needs bf16 compute on a GPU (quack's GEMMs), not train.precision 'fp32'"},
    )
