"""Opt-in float8 training of the Linear layers (``train.float8``), through torchao's float8 recipe.

The matmuls of the converted layers run in float8 (e4m3 forward, e5m2 gradients) with dynamic tensor-wise
scales; weights, optimizer state and every other op stay as the recipe has them. This changes the numerics
of the run, so it is never the default: a recipe turns it on, and docs/benchmarks.md reports its speed and
losses next to the bf16 run. It needs an H100-class GPU (float8 tensor cores) and torchao.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from torch import nn

from ..errors import RecipeError

if TYPE_CHECKING:
    from ..config import Recipe

# float8 GEMMs (torch._scaled_mm) need both dimensions of the weight to be multiples of 16.
ALIGN = 16


def keeps(module: nn.Module, fqn: str) -> bool:
    """Whether a module is converted: a Linear with aligned dimensions, not the output head.

    The head is left in bf16: in GPT-2 it shares its weight with the token embedding, and the logits are
    where the loss is most sensitive to precision.
    """
    return (
        isinstance(module, nn.Linear)
        and fqn.split(".")[-1] != "lm_head"
        and module.in_features % ALIGN == 0
        and module.out_features % ALIGN == 0
    )


def converted(model: nn.Module, keep: Callable[[nn.Module, str], bool] = keeps) -> list[str]:
    """The names of the modules ``enable`` converts."""
    return [name for name, module in model.named_modules() if name and keep(module, name)]


def enable(model: nn.Module) -> list[str]:
    """Convert the model's Linear layers in place; returns their names."""
    try:
        from torchao.float8 import convert_to_float8_training
    except ImportError as exc:
        raise RecipeError(f"train.float8: needs torchao (pip install torchao): {exc}") from exc
    names = converted(model)
    if not names:
        raise RecipeError("train.float8: the model has no Linear layer whose dimensions are multiples of 16")
    convert_to_float8_training(model, module_filter_fn=keeps)
    return names


def convert(model: nn.Module, recipe: Recipe) -> int:
    """train.float8's converter (registry), on the model the DDP strategy has moved to its GPU: how many
    layers run in float8."""
    return len(enable(model))
