"""``train.fused_rmsnorm``: a transformers model's RMSNorm layers through quack's one-pass kernels.

inductor compiles the backward of each RMSNorm into two kernels: one per row for the input gradient, then a
column reduction over all tokens for the weight gradient that reads the incoming gradient and the input a
second time. In the qwen1_5b profile (2x H200, micro-batch 12, call 44) the two took 36.9 ms of an 1,840 ms
step, the forward's another 8 or so. quack's RMSNorm backward (``quack-kernels``, CuTe DSL) writes the input
gradient and per-SM partial weight gradients in one pass over the rows. Measured on 2x H200, the qwen1_5b
rows ran level with and without it beside quack's plain GEMMs (docs/benchmarks.md, call 49), and 0.2 to 0.3
MFU points faster beside cuBLAS's at micro-batch 32 (calls 54-56). Small and shown on H200s only: no recipe
turns it on.

The forward and backward are custom ops (``rdmaops::rms_norm``, ``rdmaops::rms_norm_backward``) that
torch.compile keeps as calls. On the CPU (and any tensor not on CUDA) the same two steps run in torch ops, and
the tests compare them with transformers' own RMSNorm. Like transformers', the output has the dtype the
weight and the input promote to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from . import registry
from .forwards import patch_forwards

if TYPE_CHECKING:
    from ..config import Recipe


def _quack() -> Any:
    """quack's RMSNorm module."""
    return registry.kernels_of("fused_rmsnorm")


def _wide(t: torch.Tensor) -> torch.Tensor:
    """t in float32, or wider where it already is (float64 for gradcheck)."""
    return t.to(torch.promote_types(t.dtype, torch.float32))


@torch.library.custom_op("rdmaops::rms_norm", mutates_args=())
def rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``(y, rstd)`` for x (rows x n) and weight w (n): ``y = w * x / rms(x)``; rstd per row, float32 (or
    x's dtype where wider)."""
    out_dtype = torch.promote_types(x.dtype, w.dtype)
    if x.is_cuda:
        y, _res, rstd = _quack().rmsnorm_fwd(x, w, out_dtype=out_dtype, eps=eps, store_rstd=True)
        return y, rstd
    xf = _wide(x)
    rstd = torch.rsqrt(xf.pow(2).mean(-1) + eps)
    # transformers' order: normalised in float32, back to the input's dtype, then the weight
    return (w * (xf * rstd[:, None]).to(x.dtype)).to(out_dtype), rstd


@rms_norm.register_fake
def _rms_norm_fake(x: torch.Tensor, w: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    y = x.new_empty(x.shape, dtype=torch.promote_types(x.dtype, w.dtype))
    return y, x.new_empty(x.size(0), dtype=torch.promote_types(x.dtype, torch.float32))


@torch.library.custom_op("rdmaops::rms_norm_backward", mutates_args=())
def rms_norm_backward(
    dy: torch.Tensor, x: torch.Tensor, w: torch.Tensor, rstd: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(dx, dw)`` of ``rms_norm`` from the output gradient, its input, weight and rstd."""
    if dy.is_cuda:
        dx, dw, _db, _dres = _quack().rmsnorm_bwd(x, w, dy, rstd)
        return dx, dw
    xhat = _wide(x) * rstd[:, None]
    g = _wide(dy) * _wide(w)
    # d/dx of x * rstd(x): the gradient less its projection on the normalised row
    dx = rstd[:, None] * (g - xhat * (g * xhat).mean(-1, keepdim=True))
    dw = (_wide(dy) * _wide(xhat.to(x.dtype))).sum(0)
    return dx.to(x.dtype), dw.to(w.dtype)


@rms_norm_backward.register_fake
def _rms_norm_backward_fake(
    dy: torch.Tensor, x: torch.Tensor, w: torch.Tensor, rstd: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.empty_like(x), torch.empty_like(w)


def _setup_context(ctx: Any, inputs: tuple[Any, ...], output: tuple[Any, ...]) -> None:
    x, w, _eps = inputs
    ctx.save_for_backward(x, w, output[1])


def _backward(ctx: Any, dy: torch.Tensor, _drstd: torch.Tensor | None) -> tuple[torch.Tensor | None, ...]:
    x, w, rstd = ctx.saved_tensors
    dx, dw = torch.ops.rdmaops.rms_norm_backward(dy.contiguous(), x, w, rstd)
    return dx, dw, None


rms_norm.register_autograd(_backward, setup_context=_setup_context)


def norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm over the last dim of x (any leading shape)."""
    y, _rstd = torch.ops.rdmaops.rms_norm(x.reshape(-1, x.size(-1)).contiguous(), weight, eps)
    return y.view(x.shape)


def _fused_forward(self: nn.Module, hidden_states: torch.Tensor) -> torch.Tensor:
    return norm(hidden_states, self.weight, self.variance_epsilon)  # type: ignore[arg-type]


def is_rmsnorm(module: nn.Module) -> bool:
    """A Llama-family RMSNorm: ``weight * normalised(x)`` with one weight vector and ``variance_epsilon``.

    Gemma's (``(1 + weight)``, an ``eps`` attribute) and any norm with a bias are left alone.
    """
    weight = getattr(module, "weight", None)
    return (
        type(module).__name__.endswith("RMSNorm")
        and isinstance(weight, nn.Parameter)
        and weight.dim() == 1
        and isinstance(getattr(module, "variance_epsilon", None), float)
        and getattr(module, "bias", None) is None
    )


def patch(model: nn.Module) -> int:
    """Route every RMSNorm of ``model`` through ``norm``; how many."""
    norms = [m for m in model.modules() if is_rmsnorm(m)]
    what = "RMSNorm (a weight and variance_epsilon, as in llama, qwen2, qwen3, mistral) to run through quack"
    return patch_forwards("train.fused_rmsnorm", norms, _fused_forward, what)


def convert(model: nn.Module, recipe: Recipe) -> int:
    """train.fused_rmsnorm's converter (registry): the transformers model's RMSNorm layers; how many."""
    return patch(getattr(model, "hf", model))
