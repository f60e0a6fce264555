"""Routing a model's modules through a kernel: what ``train.fused_swiglu`` and ``train.fused_rmsnorm``
share."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from torch import nn

from ..errors import RecipeError


def patch_forwards(option: str, modules: list[nn.Module], forward: Callable[..., Any], missing: str) -> int:
    """Bind ``forward`` as each module's forward; how many. A model with none is refused: it has no
    ``missing``, what ``option`` looks for."""
    if not modules:
        raise RecipeError(f"{option}: true: the model has no {missing} (set {option}=false)")
    for module in modules:
        module.forward = types.MethodType(forward, module)
    return len(modules)
