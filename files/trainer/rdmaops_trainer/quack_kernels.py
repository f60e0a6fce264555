"""What ``train.fused_swiglu`` and ``train.fused_rmsnorm`` share: the ``quack-kernels`` package's modules
and a GPU its Hopper and Blackwell kernels run on (both checked before the first step), and the routing of
a model's modules through their ops."""

from __future__ import annotations

import importlib
import types
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from .config import RecipeError


def module(option: str, name: str) -> Any:
    """``quack.<name>``, or a refusal naming ``option`` where the package is missing."""
    try:
        # by path: quack's package namespace binds some names (rmsnorm) to functions, not their modules
        return importlib.import_module(f"quack.{name}")
    except ImportError as exc:
        raise RecipeError(
            f"{option}: true needs the quack-kernels package ({exc}); pip install quack-kernels (set "
            f"{option}=false)"
        ) from exc


def require(option: str, device: torch.device, name: str) -> None:
    """On CUDA: a GPU of compute capability 9 or 10 and ``quack.<name>`` importable. A CPU rank runs the
    options' torch fallbacks and needs neither."""
    if device.type != "cuda":
        return
    major, minor = torch.cuda.get_device_capability(device)
    if major not in (9, 10):
        raise RecipeError(
            f"{option}: true needs a Hopper or Blackwell GPU (compute capability 9.x or 10.x), not "
            f"{major}.{minor} (set {option}=false)"
        )
    module(option, name)


def patch_forwards(option: str, modules: list[nn.Module], forward: Callable[..., Any], missing: str) -> int:
    """Bind ``forward`` as each module's forward; how many. A model with none is refused: it has no
    ``missing``, what ``option`` looks for."""
    if not modules:
        raise RecipeError(f"{option}: true: the model has no {missing} (set {option}=false)")
    for module in modules:
        module.forward = types.MethodType(forward, module)
    return len(modules)
