"""``train.bf16_residual``: GPT-2's residual stream in bf16 instead of the fp32 autocast leaves it in.

Under fp32 weights autocast keeps the activations between blocks (and so their gradients) in fp32: every
LayerNorm and residual add reads and writes twice the bytes. FSDP2 (bf16 param_dtype), ZeRO-3 and Megatron
(without --fp32-residual-connection) run this way already. It changes the numerics, so no recipe but
``gpt2`` turns it on; it needs model.kind gpt2, strategy ddp and bf16 compute (kernels/registry.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import nn

if TYPE_CHECKING:
    from ..config import Recipe


def convert(model: nn.Module, recipe: Recipe) -> int:
    """The converter (registry): the embedding's output, and so every block's residual add, in bf16."""
    gpt: Any = model  # models.GPT, whose embed() casts to it
    gpt.residual_dtype = torch.bfloat16
    return 1
