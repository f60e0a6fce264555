"""``train.fused_mlp``: GPT-2's MLP with the bias + GELU in a GEMM's epilogue, forward and backward.

Unfused, torch.compile runs the MLP's GELU as two memory-bound kernels per layer and micro-batch: the forward
reads the first GEMM's output and writes its GELU, the backward reads the GELU input and the incoming gradient
and writes their product (80 ms of a 966 ms GPT-2 step on an H100, docs/benchmarks.md). Here cuBLASLt's
epilogues do that work while the GEMM's tile is still on chip:

* forward: one GEMM writes ``pre = x @ w_fc.T + b_fc`` and ``h = gelu(pre)``; then ``y = h @ w_proj.T +
  b_proj``;
* backward: one GEMM writes ``dpre = (dy @ w_proj) * gelu'(pre)``; the weight and input gradients are plain
  GEMMs and the bias gradients sums. (cuBLASLt's DGELU_BGRAD epilogue would also sum ``b_fc``'s gradient, but
  at GPT-2's shape it is slower than torch's GEMM + GELU backward + sum together.)

The two epilogue GEMMs are custom ops (``rdmaops::gelu_linear``, ``rdmaops::linear_dgelu``) that torch.compile
keeps as calls and everything around them compiles as usual. On the CPU they run ``cublaslt.run_reference``,
the same column-major plan in torch ops. GELU is the tanh approximation that the unfused model uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from . import cublaslt
from .fused_loss import compute_dtype

if TYPE_CHECKING:
    from ..config import Recipe


@torch.library.custom_op("rdmaops::gelu_linear", mutates_args=())
def gelu_linear(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(gelu(pre), pre)`` with ``pre = x @ weight.T + bias``; x (tokens x in), weight (out x in)."""
    tokens, out_features = x.size(0), weight.size(0)
    h = x.new_empty(tokens, out_features)
    pre = x.new_empty(tokens, out_features)
    g = cublaslt.plan_gelu_linear(tokens, x.size(1), out_features)
    cublaslt.run(g, weight.contiguous(), x.contiguous(), h, bias.contiguous(), pre)
    return h, pre


@gelu_linear.register_fake
def _gelu_linear_fake(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    return x.new_empty(x.size(0), weight.size(0)), x.new_empty(x.size(0), weight.size(0))


@torch.library.custom_op("rdmaops::linear_dgelu", mutates_args=())
def linear_dgelu(grad: torch.Tensor, weight: torch.Tensor, pre: torch.Tensor) -> torch.Tensor:
    """``dpre = (grad @ weight) * gelu'(pre)``: grad (tokens x out), weight (out x hidden), pre (tokens x
    hidden)."""
    tokens, hidden = pre.shape
    dpre = pre.new_empty(tokens, hidden)
    g = cublaslt.plan_linear_dgelu(tokens, hidden, weight.size(0))
    # DGELU has no bias: the bias buffer is not read or written
    cublaslt.run(g, weight.contiguous(), grad.contiguous(), dpre, dpre.new_empty(0), pre.contiguous())
    return dpre


@linear_dgelu.register_fake
def _linear_dgelu_fake(grad: torch.Tensor, weight: torch.Tensor, pre: torch.Tensor) -> torch.Tensor:
    return pre.new_empty(pre.shape)


class FusedMLP(torch.autograd.Function):
    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        x: torch.Tensor,
        w_fc: torch.Tensor,
        b_fc: torch.Tensor,
        w_proj: torch.Tensor,
        b_proj: torch.Tensor,
    ) -> torch.Tensor:
        h, pre = torch.ops.rdmaops.gelu_linear(x, w_fc, b_fc)
        ctx.save_for_backward(x, w_fc, w_proj, h, pre)
        return torch.addmm(b_proj, h, w_proj.t())

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, ...]:  # type: ignore[override]
        x, w_fc, w_proj, h, pre = ctx.saved_tensors
        grad = grad.contiguous()
        dpre = torch.ops.rdmaops.linear_dgelu(grad, w_proj, pre)
        return dpre @ w_fc, dpre.t() @ x, dpre.sum(0), grad.t() @ h, grad.sum(0)


def mlp(x: torch.Tensor, fc: nn.Linear, proj: nn.Linear) -> torch.Tensor:
    """``proj(gelu(fc(x)))`` for x (..., in) in autocast's dtype where it is on, else x's."""
    kind = x.device.type
    dtype = compute_dtype(x)
    if fc.bias is None or proj.bias is None:
        raise ValueError("train.fused_mlp: the MLP's Linear layers need biases (model.config.bias)")
    with torch.autocast(kind, enabled=False):
        y = FusedMLP.apply(
            x.reshape(-1, x.size(-1)).to(dtype),
            fc.weight.to(dtype),
            fc.bias.to(dtype),
            proj.weight.to(dtype),
            proj.bias.to(dtype),
        )
    return y.view(*x.shape[:-1], proj.out_features)


def is_gpt2_mlp(module: nn.Module) -> bool:
    """GPT-2's MLP as ``models.MLP`` builds it: Linear ``c_fc`` and ``c_proj`` and the ``fused`` switch its
    forward reads. Known by its shape: models imports this module (for ``mlp``), never the other way round."""
    return (
        isinstance(getattr(module, "fused", None), bool)
        and isinstance(getattr(module, "c_fc", None), nn.Linear)
        and isinstance(getattr(module, "c_proj", None), nn.Linear)
    )


def convert(model: nn.Module, recipe: Recipe) -> int:
    """train.fused_mlp's converter (registry): every GPT-2 MLP of ``model`` runs ``mlp``; how many."""
    mlps = [m for m in model.modules() if is_gpt2_mlp(m)]
    for m in mlps:
        m.fused = True
    return len(mlps)
