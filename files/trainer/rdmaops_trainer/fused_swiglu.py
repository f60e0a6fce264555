"""``train.fused_swiglu``: a transformers model's SwiGLU MLP with the activation in its GEMMs' epilogues.

``down(silu(gate(x)) * up(x))`` compiled by inductor is three cuBLAS GEMMs plus two memory-bound kernels per
layer and micro-batch: the forward re-reads both projections to write their SwiGLU, the backward re-reads
them with the incoming gradient to write both gradients. In the qwen1_5b profile on 2x H100 those two kernels
took 129 ms of an 1,847 ms step (docs/benchmarks.md, call 35). Here quack's Hopper GEMMs (``quack-kernels``,
CuTe DSL) do that work while each output tile is still on chip:

* forward: one GEMM of x with ``[gate; up]`` writes the pre-activation (gate and up columns interleaved)
  and ``h = silu(gate) * up``; then ``y = h @ down.T``. Kept for the backward: x, ``[gate; up]`` and the
  pre-activation, not h;
* backward: one GEMM writes ``d(pre) = SwiGLU'((dy @ down), pre)`` and recomputes h for ``down``'s weight
  gradient; the input and ``[gate; up]`` weight gradients read the interleaved gradient directly.

The two steps are custom ops (``rdmaops::swiglu_mlp``, ``rdmaops::swiglu_mlp_backward``) that torch.compile
keeps as calls, so quack's JIT-compiled kernels never meet dynamo. On the CPU (and any tensor that is not on
CUDA) the same interleaved plan runs in torch ops, which the tests compare against the model's own MLP.
"""

from __future__ import annotations

import types
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .config import RecipeError
from .fused_loss import compute_dtype

# the silu module classes transformers' ACT2FN gives for hidden_act "silu" (and torch's own)
SILU_TYPES = ("SiLU", "SiLUActivation")


def _interleave(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """``[g0, u0, g1, u1, ...]`` along the last dim: the pre-activation layout of quack's gated GEMMs."""
    return torch.stack([gate, up], dim=-1).flatten(-2)


def _quack() -> Any:
    """quack's GEMM module; the one import check (require_kernels calls it before the first step)."""
    try:
        from quack import gemm_interface
    except ImportError as exc:
        raise RecipeError(
            f"train.fused_swiglu: true needs the quack-kernels package ({exc}); pip install quack-kernels "
            "(set train.fused_swiglu=false)"
        ) from exc
    return gemm_interface


@torch.library.custom_op("rdmaops::swiglu_mlp", mutates_args=())
def swiglu_mlp(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(y, pre)``: x (tokens x d), w1 ``[gate; up]`` (2 ffn x d), w2 (d_out x ffn); pre interleaved."""
    if x.is_cuda:
        q = _quack()
        pre, h = q.gemm_gated(x, w1.T, activation="swiglu", concat_layout=("B",), tuned=False)
        return q.gemm(h, w2.T, tuned=False), pre
    gate, up = (x @ w1.T).chunk(2, dim=-1)
    return (F.silu(gate) * up) @ w2.T, _interleave(gate, up)


@swiglu_mlp.register_fake
def _swiglu_mlp_fake(
    x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    return x.new_empty(x.size(0), w2.size(0)), x.new_empty(x.size(0), w1.size(0))


@torch.library.custom_op("rdmaops::swiglu_mlp_backward", mutates_args=())
def swiglu_mlp_backward(
    dy: torch.Tensor, x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor, pre: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(dx, dw1, dw2)`` of ``swiglu_mlp`` from its input, weights and interleaved pre-activation."""
    if dy.is_cuda:
        q = _quack()
        dpre, h = q.gemm_dgated(dy, w2, pre, activation="swiglu", tuned=False)
        dw2 = q.gemm(dy.T, h, dynamic_scheduler=True, tuned=False)
        dx = q.gemm(dpre, w1, dynamic_scheduler=True, tuned=False, concat_layout=("B",))
        dw1 = q.gemm(dpre.T, x, dynamic_scheduler=True, tuned=False, concat_layout=("out",))
        return dx, dw1, dw2
    gate, up = pre[:, 0::2], pre[:, 1::2]
    sig = torch.sigmoid(gate)
    silu = gate * sig
    dh = dy @ w2
    dgate = dh * up * sig * (1 + gate * (1 - sig))
    dup = dh * silu
    dw2 = dy.T @ (silu * up)
    dx = dgate @ w1[: gate.size(1)] + dup @ w1[gate.size(1) :]
    dw1 = torch.cat([dgate.T @ x, dup.T @ x])
    return dx, dw1, dw2


@swiglu_mlp_backward.register_fake
def _swiglu_mlp_backward_fake(
    dy: torch.Tensor, x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor, pre: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return torch.empty_like(x), torch.empty_like(w1), torch.empty_like(w2)


def _setup_context(ctx: Any, inputs: tuple[Any, ...], output: tuple[Any, ...]) -> None:
    x, w1, w2 = inputs
    ctx.save_for_backward(x, w1, w2, output[1])


def _backward(ctx: Any, dy: torch.Tensor, _dpre: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
    x, w1, w2, pre = ctx.saved_tensors
    return tuple(torch.ops.rdmaops.swiglu_mlp_backward(dy.contiguous(), x, w1, w2, pre))


swiglu_mlp.register_autograd(_backward, setup_context=_setup_context)


def mlp(x: torch.Tensor, gate: nn.Linear, up: nn.Linear, down: nn.Linear) -> torch.Tensor:
    """``down(silu(gate(x)) * up(x))`` for x (..., d) in autocast's dtype where it is on, else x's."""
    dtype = compute_dtype(x)
    with torch.autocast(x.device.type, enabled=False):
        # [gate; up] stacked per call (2 ffn x d, small next to the activations); its gradient splits back
        w1 = torch.cat([gate.weight, up.weight]).to(dtype)
        y, _pre = torch.ops.rdmaops.swiglu_mlp(x.reshape(-1, x.size(-1)).to(dtype), w1, down.weight.to(dtype))
    return y.view(*x.shape[:-1], down.out_features)


def _fused_forward(self: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return mlp(x, self.gate_proj, self.up_proj, self.down_proj)  # type: ignore[arg-type]


def is_swiglu_mlp(module: nn.Module) -> bool:
    """A Llama-family MLP: plain bias-free Linear gate/up/down projections and SiLU."""
    linears = [getattr(module, n, None) for n in ("gate_proj", "up_proj", "down_proj")]
    act = getattr(module, "act_fn", None)
    return (
        all(type(lin) is nn.Linear and lin.bias is None for lin in linears)
        and type(act).__name__ in SILU_TYPES
    )


def patch(model: nn.Module) -> int:
    """Route every SwiGLU MLP of ``model`` through ``mlp``; how many. Refuses shapes quack cannot run."""
    count = 0
    for name, module in model.named_modules():
        if not is_swiglu_mlp(module):
            continue
        gate, down = module.gate_proj, module.down_proj
        # quack's gated GEMM: 16-byte aligned rows of bf16 (d, 2 ffn, d_out multiples of 8, 2 ffn of 16)
        if gate.in_features % 8 or (2 * gate.out_features) % 16 or down.out_features % 8:
            raise RecipeError(
                f"train.fused_swiglu: {name}: hidden size {gate.in_features}, intermediate size "
                f"{gate.out_features} and output {down.out_features} must be multiples of 8 (set "
                "train.fused_swiglu=false)"
            )
        module.forward = types.MethodType(_fused_forward, module)
        count += 1
    if not count:
        raise RecipeError(
            "train.fused_swiglu: true: the model has no SwiGLU MLP (bias-free gate_proj, up_proj, down_proj "
            "with SiLU) to fuse (set train.fused_swiglu=false)"
        )
    return count


def require_kernels(device: torch.device) -> None:
    """On CUDA: quack importable and a GPU of compute capability 9 or 10; before any step runs."""
    if device.type != "cuda":
        return
    major, minor = torch.cuda.get_device_capability(device)
    if major not in (9, 10):
        raise RecipeError(
            f"train.fused_swiglu: true needs a Hopper or Blackwell GPU (compute capability 9.x or 10.x), "
            f"not {major}.{minor} (set train.fused_swiglu=false)"
        )
    _quack()
