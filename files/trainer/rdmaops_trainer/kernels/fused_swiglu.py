"""``train.fused_swiglu``: a transformers model's SwiGLU MLP with the activation in its GEMMs' epilogues.

``down(silu(gate(x)) * up(x))`` compiled by inductor is three cuBLAS GEMMs plus two memory-bound kernels per
layer and micro-batch: the forward re-reads both projections to write their SwiGLU, the backward re-reads
them with the incoming gradient to write both gradients. In the qwen1_5b profile on 2x H100 those two kernels
took 129 ms of an 1,847 ms step (docs/benchmarks.md, call 35). Here quack's Hopper GEMMs (``quack-kernels``,
CuTe DSL) do that work while each output tile is still on chip:

* forward: one GEMM of x with the gate and up rows interleaved (``w1``: gate 0, up 0, gate 1, ...) writes the
  pre-activation in the same order and ``h = silu(gate) * up``; then ``y = h @ down.T``. Kept for the
  backward: x, ``w1`` and the pre-activation, not h;
* backward: one GEMM writes ``d(pre) = SwiGLU'((dy @ down), pre)`` and recomputes h for ``down``'s weight
  gradient; the input and ``w1`` weight gradients are plain GEMMs of the interleaved gradient.

Only those two GEMMs need quack's epilogues. The other four (``down``'s forward, and the backward's
``dx``, ``dw1``, ``dw2``) run on quack's GEMMs or, with ``train.fused_swiglu_gemms: cublas``, on
torch's (cuBLAS). The two steps are custom ops (``rdmaops::swiglu_mlp``,
``rdmaops::swiglu_mlp_backward``) that torch.compile keeps as calls, so quack's JIT-compiled kernels never
meet dynamo. On the CPU (and any tensor that is not on CUDA) the same interleaved plan runs in torch ops,
which the tests compare against the model's own MLP.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import RecipeError
from . import registry
from .forwards import patch_forwards
from .fused_loss import compute_dtype

if TYPE_CHECKING:
    from ..config import Recipe

# the silu module classes transformers' ACT2FN gives for hidden_act "silu" (and torch's own)
SILU_TYPES = ("SiLU", "SiLUActivation")


def _interleave(a: torch.Tensor, b: torch.Tensor, dim: int) -> torch.Tensor:
    """a's and b's slices along ``dim`` in turn (a0, b0, a1, b1, ...): quack's gated layout."""
    return torch.stack([a, b], dim=dim + 1).flatten(dim, dim + 1)


def stack_gate_up(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """``w1``: the rows of the gate and up weights (ffn x d each) interleaved, (2 ffn x d). ``x @ w1.T`` is
    then the pre-activation in quack's layout; autograd splits w1's gradient back into the two."""
    return _interleave(gate, up, 0)


def _quack() -> Any:
    """quack's GEMM module."""
    return registry.kernels_of("fused_swiglu")


def _mm(a: torch.Tensor, b: torch.Tensor, cublas: bool, **quack_args: Any) -> torch.Tensor:
    """``a @ b`` on quack's GEMM, or in torch (cuBLAS on a GPU) where ``cublas`` or off CUDA."""
    return a @ b if cublas or not a.is_cuda else _quack().gemm(a, b, tuned=False, **quack_args)


@torch.library.custom_op("rdmaops::swiglu_mlp", mutates_args=())
def swiglu_mlp(
    x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor, cublas: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(y, pre)``: x (tokens x d), w1 gate/up rows interleaved (2 ffn x d), w2 (d_out x ffn); pre
    interleaved as w1's rows."""
    if x.is_cuda:
        pre, h = _quack().gemm_gated(x, w1.T, activation="swiglu", tuned=False)
        return _mm(h, w2.T, cublas), pre
    pre = x @ w1.T
    return (F.silu(pre[:, 0::2]) * pre[:, 1::2]) @ w2.T, pre


@swiglu_mlp.register_fake
def _swiglu_mlp_fake(
    x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor, cublas: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    return x.new_empty(x.size(0), w2.size(0)), x.new_empty(x.size(0), w1.size(0))


@torch.library.custom_op("rdmaops::swiglu_mlp_backward", mutates_args=())
def swiglu_mlp_backward(
    dy: torch.Tensor, x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor, pre: torch.Tensor, cublas: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(dx, dw1, dw2)`` of ``swiglu_mlp`` from its input, weights and interleaved pre-activation."""
    if dy.is_cuda:
        dpre, h = _quack().gemm_dgated(dy, w2, pre, activation="swiglu", tuned=False)
    else:
        gate, up = pre[:, 0::2], pre[:, 1::2]
        sig = torch.sigmoid(gate)
        dh = dy @ w2
        dpre = _interleave(dh * up * sig * (1 + gate * (1 - sig)), dh * gate * sig, 1)
        h = gate * sig * up
    dw2 = _mm(dy.T, h, cublas, dynamic_scheduler=True)
    dx = _mm(dpre, w1, cublas, dynamic_scheduler=True)
    dw1 = _mm(dpre.T, x, cublas, dynamic_scheduler=True)
    return dx, dw1, dw2


@swiglu_mlp_backward.register_fake
def _swiglu_mlp_backward_fake(
    dy: torch.Tensor, x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor, pre: torch.Tensor, cublas: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return torch.empty_like(x), torch.empty_like(w1), torch.empty_like(w2)


def _setup_context(ctx: Any, inputs: tuple[Any, ...], output: tuple[Any, ...]) -> None:
    x, w1, w2, ctx.cublas = inputs
    ctx.save_for_backward(x, w1, w2, output[1])


def _backward(ctx: Any, dy: torch.Tensor, _dpre: torch.Tensor | None) -> tuple[torch.Tensor | None, ...]:
    x, w1, w2, pre = ctx.saved_tensors
    dx, dw1, dw2 = torch.ops.rdmaops.swiglu_mlp_backward(dy.contiguous(), x, w1, w2, pre, ctx.cublas)
    return dx, dw1, dw2, None


swiglu_mlp.register_autograd(_backward, setup_context=_setup_context)


def mlp(
    x: torch.Tensor, gate: nn.Linear, up: nn.Linear, down: nn.Linear, cublas: bool = False
) -> torch.Tensor:
    """``down(silu(gate(x)) * up(x))`` for x (..., d) in autocast's dtype where it is on, else x's."""
    dtype = compute_dtype(x)
    with torch.autocast(x.device.type, enabled=False):
        # w1 built per call (2 ffn x d, small next to the activations); its gradient splits back
        w1 = stack_gate_up(gate.weight, up.weight).to(dtype)
        flat = x.reshape(-1, x.size(-1)).to(dtype)
        y, _pre = torch.ops.rdmaops.swiglu_mlp(flat, w1, down.weight.to(dtype), cublas)
    return y.view(*x.shape[:-1], down.out_features)


def _fused_forward(self: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return mlp(x, self.gate_proj, self.up_proj, self.down_proj, self.swiglu_cublas)  # type: ignore[arg-type]


def is_swiglu_mlp(module: nn.Module) -> bool:
    """A Llama-family MLP: plain bias-free Linear gate/up/down projections and SiLU."""
    linears = [getattr(module, n, None) for n in ("gate_proj", "up_proj", "down_proj")]
    act = getattr(module, "act_fn", None)
    return (
        all(type(lin) is nn.Linear and lin.bias is None for lin in linears)
        and type(act).__name__ in SILU_TYPES
    )


def patch(model: nn.Module, cublas: bool = False) -> int:
    """Route every SwiGLU MLP of ``model`` through ``mlp`` (its plain GEMMs on cuBLAS if ``cublas``); how
    many. Refuses shapes quack cannot run, before any MLP is patched."""
    mlps = [(name, m) for name, m in model.named_modules() if is_swiglu_mlp(m)]
    for name, module in mlps:
        gate, down = module.gate_proj, module.down_proj
        # quack's gated GEMM: 16-byte aligned rows of bf16 (d, 2 ffn, d_out multiples of 8, 2 ffn of 16)
        if gate.in_features % 8 or (2 * gate.out_features) % 16 or down.out_features % 8:
            raise RecipeError(
                f"train.fused_swiglu: {name}: hidden size {gate.in_features}, intermediate size "
                f"{gate.out_features} and output {down.out_features} must be multiples of 8 (set "
                "train.fused_swiglu=false)"
            )
        module.swiglu_cublas = cublas
    what = "SwiGLU MLP (bias-free gate_proj, up_proj, down_proj with SiLU) to fuse"
    return patch_forwards("train.fused_swiglu", [m for _, m in mlps], _fused_forward, what)


def convert(model: nn.Module, recipe: Recipe) -> int:
    """train.fused_swiglu's converter (registry): the transformers model's SwiGLU MLPs, their plain GEMMs
    on the library ``train.fused_swiglu_gemms`` names; how many."""
    return patch(getattr(model, "hf", model), recipe.train.fused_swiglu_gemms == "cublas")
