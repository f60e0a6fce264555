"""``train.fused_loss``: the output head and the cross-entropy as one autograd step, logits never kept.

The forward computes the logits (one GEMM), the loss and the gradient of the logits in one kernel that writes
the gradient over the logits (``ce_kernel``, Triton, on CUDA), and then the two backward GEMMs: the
gradients of the hidden states and of the head's weight. It keeps those two (small) for the backward, which
only scales them by the incoming gradient (the 1/micro-batches factor of gradient accumulation). The
(tokens x vocabulary) logits live for the forward only.

Same numbers as ``models.lm_loss`` on the head's output: fp32 softmax of the logits in the compute dtype, mean
over the labels that are not ``ignore_index``, the gradient of the logits rounded to the compute dtype before
the backward GEMMs. One difference: a micro-batch whose labels are all ignored gives loss 0 (not nan).

Torch's compiler does not trace into it: the compiled graph ends at the hidden states (one graph break), and
this runs eagerly after it. On the CPU (no Triton kernel) the rows go through ``ce_rows_torch``, the same
math in torch ops, which is also what the tests hold the kernel to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import nn

if TYPE_CHECKING:
    from ..config import Recipe

IGNORE_INDEX = -100
# rows per chunk of the CPU path: bounds its fp32 copy of the logits
CPU_CHUNK_ROWS = 1024


def ce_rows_torch(
    logits: torch.Tensor, labels: torch.Tensor, n_valid: torch.Tensor, ignore_index: int, write_grad: bool
) -> torch.Tensor:
    """Per-row losses of the 2-D ``logits``; with ``write_grad`` the gradient of their mean, in place."""
    losses = torch.empty(logits.size(0), dtype=torch.float32, device=logits.device)
    scale = 1.0 / n_valid.to(torch.float32)
    for start in range(0, logits.size(0), CPU_CHUNK_ROWS):
        rows = slice(start, start + CPU_CHUNK_ROWS)
        x = logits[rows].float()
        lab = labels[rows]
        valid = lab != ignore_index
        safe = torch.where(valid, lab, torch.zeros_like(lab))
        lse = torch.logsumexp(x, dim=1)
        target = x.gather(1, safe[:, None])[:, 0]
        losses[rows] = torch.where(valid, lse - target, torch.zeros_like(lse))
        if write_grad:
            g = torch.exp(x - lse[:, None])
            g.scatter_add_(1, safe[:, None], -torch.ones_like(target)[:, None])
            g *= torch.where(valid, scale, torch.zeros_like(scale))[:, None]
            logits[rows] = g.to(logits.dtype)
    return losses


def ce_rows(
    logits: torch.Tensor, labels: torch.Tensor, n_valid: torch.Tensor, ignore_index: int, write_grad: bool
) -> torch.Tensor:
    """``ce_rows_torch``'s contract; the Triton kernel where the logits are on a CUDA device."""
    if not logits.is_cuda:
        return ce_rows_torch(logits, labels, n_valid, ignore_index, write_grad)
    from . import ce_kernel

    losses = torch.empty(logits.size(0), dtype=torch.float32, device=logits.device)
    ce_kernel.launch(logits, labels, losses, n_valid, ignore_index, write_grad)
    return losses


def compute_dtype(hidden: torch.Tensor) -> torch.dtype:
    """The dtype the head's matmul runs in: autocast's where it is on, else the hidden states'."""
    kind = hidden.device.type
    if torch.is_autocast_enabled(kind):
        return torch.get_autocast_dtype(kind)
    return hidden.dtype


class LinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any, hidden: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor, ignore_index: int
    ) -> torch.Tensor:
        dtype = compute_dtype(hidden)
        h = hidden.reshape(-1, hidden.size(-1)).to(dtype)
        w = weight.to(dtype)
        lab = labels.reshape(-1)
        n_valid = (lab != ignore_index).sum().clamp_(min=1)
        need_h, need_w = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        with torch.autocast(hidden.device.type, enabled=False):
            logits = h @ w.t()
            losses = ce_rows(logits, lab, n_valid, ignore_index, write_grad=need_h or need_w)
            # logits now hold d(loss)/d(logits)
            grad_h = (logits @ w).view(hidden.shape).to(hidden.dtype) if need_h else None
            grad_w = (logits.t() @ h).to(weight.dtype) if need_w else None
        del logits
        ctx.save_for_backward(grad_h, grad_w)
        return losses.sum() / n_valid

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor) -> tuple[torch.Tensor | None, ...]:  # type: ignore[override]
        grad_h, grad_w = ctx.saved_tensors
        return (
            None if grad_h is None else grad_h * grad_out.to(grad_h.dtype),
            None if grad_w is None else grad_w * grad_out.to(grad_w.dtype),
            None,
            None,
        )


@torch.compiler.disable
def linear_cross_entropy(
    hidden: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor, ignore_index: int = IGNORE_INDEX
) -> torch.Tensor:
    """Mean cross-entropy of ``hidden @ weight.T`` against ``labels`` (any leading shape, ``ignore_index``
    skipped), with the gradients of ``hidden`` and ``weight`` made in the forward."""
    out = LinearCrossEntropy.apply(hidden, weight, labels, ignore_index)
    assert isinstance(out, torch.Tensor)
    return out


def convert(model: nn.Module, recipe: Recipe) -> int:
    """train.fused_loss's converter (registry): the model (GPT-2 or a transformers one, ``models``) passes
    its last hidden states and the head's weight to ``linear_cross_entropy`` instead of running its head."""
    target: Any = model  # GPT or HFCausalLM, whose forward reads the flag
    target.fused_loss = True
    return 1
