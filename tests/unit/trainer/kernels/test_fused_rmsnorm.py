"""train.fused_rmsnorm: the two custom ops (torch ops on the CPU, quack's kernels on a Hopper GPU) against
transformers' own RMSNorm, their fake kernels and gradients, the patching of a model, and the refusals."""

from __future__ import annotations

import pytest
import torch
from conftest import assert_refused, assert_trains_alike, qwen_pair
from rdmaops_trainer.config import RecipeError
from rdmaops_trainer.kernels import fused_rmsnorm, fused_swiglu
from rdmaops_trainer.models import HFCausalLM
from torch import nn
from transformers.models.qwen2.modeling_qwen2 import Qwen2RMSNorm

ROWS, N, EPS = 12, 40, 1e-6


def rand(*shape: int, seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def reference(weight: torch.Tensor) -> Qwen2RMSNorm:
    ref = Qwen2RMSNorm(weight.numel(), eps=EPS)
    ref.weight = nn.Parameter(weight.clone())
    return ref


@pytest.mark.parametrize(
    ("x_dtype", "w_dtype"),
    [(torch.float32, torch.float32), (torch.bfloat16, torch.bfloat16), (torch.bfloat16, torch.float32)],
)
def test_the_forward_is_transformers_rmsnorm_in_its_dtypes(
    x_dtype: torch.dtype, w_dtype: torch.dtype
) -> None:
    x, w = rand(ROWS, N, seed=1, dtype=x_dtype), 1 + 0.1 * rand(N, seed=2, dtype=w_dtype)
    y, rstd = fused_rmsnorm.rms_norm(x, w, EPS)
    want = reference(w)(x)
    # a bf16 input under an fp32 weight gives fp32, as transformers' does
    assert y.dtype == want.dtype == torch.promote_types(x_dtype, w_dtype)
    torch.testing.assert_close(y, want, rtol=0, atol=0)
    torch.testing.assert_close(rstd, torch.rsqrt(x.float().pow(2).mean(-1) + EPS))


def test_the_gradients_are_those_of_the_norm() -> None:
    """float64 finite differences through the op and its registered backward, and the same gradients as
    transformers' module in float32."""
    args = [rand(5, 7, seed=1, dtype=torch.float64).requires_grad_(), rand(7, seed=2, dtype=torch.float64)]
    args[1].requires_grad_()
    assert torch.autograd.gradcheck(lambda x, w: torch.ops.rdmaops.rms_norm(x, w, EPS)[0], args)
    w = 1 + 0.1 * rand(N, seed=2)
    ref = reference(w)
    weight = w.clone().requires_grad_()
    dy = rand(ROWS, N, seed=3)
    xs = [rand(ROWS, N, seed=1).requires_grad_(), rand(ROWS, N, seed=1).requires_grad_()]
    (fused_rmsnorm.rms_norm(xs[0], weight, EPS)[0] * dy).sum().backward()
    (ref(xs[1]) * dy).sum().backward()
    torch.testing.assert_close(xs[0].grad, xs[1].grad)
    torch.testing.assert_close(weight.grad, ref.weight.grad)


def test_the_custom_ops_have_consistent_fake_kernels_and_schemas() -> None:
    x, w = rand(ROWS, N, seed=1), rand(N, seed=2)
    torch.library.opcheck(fused_rmsnorm.rms_norm, (x, w, EPS))
    rstd = torch.rsqrt(x.pow(2).mean(-1) + EPS)
    torch.library.opcheck(fused_rmsnorm.rms_norm_backward, (rand(ROWS, N, seed=3), x, w, rstd))


def test_a_patched_qwen2_model_trains_like_transformers_own() -> None:
    plain, fused = qwen_pair("train.fused_rmsnorm")
    assert isinstance(fused, HFCausalLM)
    # two per decoder layer and the final one
    assert fused.fused_rmsnorms == 5 and plain.fused_rmsnorms == 0
    assert sum("forward" in vars(m) for m in fused.modules() if fused_rmsnorm.is_rmsnorm(m)) == 5
    assert_trains_alike(plain, fused, "input_layernorm")


def test_with_the_fused_mlp_on_cublas_the_model_still_trains_like_transformers_own() -> None:
    """The setting that reached 60% MFU (docs/benchmarks.md, calls 54-56): both patches on one model."""
    plain, fused = qwen_pair(
        "train.fused_rmsnorm", "train.fused_swiglu=true", "train.fused_swiglu_gemms=cublas"
    )
    mlps = [m for m in fused.modules() if fused_swiglu.is_swiglu_mlp(m)]
    assert fused.fused_rmsnorms == 5 and len(mlps) == 2
    assert all("forward" in vars(m) and m.swiglu_cublas for m in mlps)
    assert_trains_alike(plain, fused, "gate_proj")


def test_a_patched_norm_compiles_as_one_graph_with_the_ops_as_calls() -> None:
    norm = next(m for m in qwen_pair("train.fused_rmsnorm")[1].modules() if fused_rmsnorm.is_rmsnorm(m))
    compiled = torch.compile(norm, backend="aot_eager", fullgraph=True)
    x, dy = rand(2, 5, 64, seed=8), rand(2, 5, 64, seed=9)
    grads = []
    for module in (compiled, norm):
        norm.zero_grad(set_to_none=True)
        xi = x.clone().requires_grad_()
        (module(xi) * dy).sum().backward()
        grads.append([xi.grad, norm.weight.grad])
    for got, want in zip(*grads, strict=True):
        torch.testing.assert_close(got, want)


def test_norms_it_cannot_run_are_left_alone_and_a_model_without_one_is_refused() -> None:
    class GemmaLike(nn.Module):  # (1 + weight) and an `eps` attribute: not the llama formula
        def __init__(self) -> None:
            super().__init__()
            self.weight, self.eps = nn.Parameter(torch.zeros(8)), 1e-6

    GemmaLike.__name__ = "GemmaRMSNorm"
    assert not fused_rmsnorm.is_rmsnorm(GemmaLike())
    assert fused_rmsnorm.is_rmsnorm(Qwen2RMSNorm(8))
    with pytest.raises(RecipeError, match="the model has no RMSNorm"):
        fused_rmsnorm.patch(nn.Sequential(nn.LayerNorm(8), GemmaLike()))


def test_it_is_refused_where_it_does_not_apply() -> None:
    assert_refused("tiny", [], {"train.fused_rmsnorm=true": "needs model.kind hf, not 'gpt2'"})
