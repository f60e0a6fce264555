"""``train.cuda_graphs``: each compiled forward and backward replayed as one CUDA graph (inductor's cudagraph
trees) instead of its kernels launched one by one; strategy ddp with train.compile on CUDA.

A graph's outputs live in its memory pool until the next replay: a gradient that AccumulateGrad took over
as ``.grad`` would be overwritten by the next micro-batch. So the gradients exist before the first
micro-batch and stay allocated between steps (the optimizer zeroes them, never sets them to None), and
accumulation adds into them. The DDP strategy's step does the rest (marks each step's start, copies the
loss out of the pool).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

if TYPE_CHECKING:
    from ..config import Recipe


def convert(model: nn.Module, recipe: Recipe) -> int:
    """The converter (registry), once DDP has made its optimizer: inductor's graphs on, every trainable
    parameter's gradient allocated; how many."""
    import torch._inductor.config as inductor

    inductor.triton.cudagraphs = True
    params = [p for p in model.parameters() if p.requires_grad]
    for p in params:
        p.grad = torch.zeros_like(p)
    return len(params)
