"""Strategy registry. Modules are imported only when chosen (zero3 pulls in deepspeed)."""

from __future__ import annotations

import importlib

from ..config import STRATEGY_NAMES, RecipeError
from .base import Batch, StepResult, Strategy

# name -> "module:Class", relative to this package
_REGISTRY: dict[str, str] = {
    "ddp": "ddp:DDPStrategy",
    "fsdp2": "fsdp2:FSDP2Strategy",
    "pipeline": "pipeline:PipelineStrategy",
    "zero3": "zero3:Zero3Strategy",
}
assert set(_REGISTRY) == set(STRATEGY_NAMES)


def get_strategy(name: str) -> type[Strategy]:
    """The Strategy subclass registered as `name` (imports its module now)."""
    if name not in _REGISTRY:
        raise RecipeError(f"strategy.name: {name!r} is not one of {', '.join(sorted(_REGISTRY))}")
    module_name, cls_name = _REGISTRY[name].split(":")
    module = importlib.import_module(f"{__name__}.{module_name}")
    cls = getattr(module, cls_name)
    if not (isinstance(cls, type) and issubclass(cls, Strategy)):
        raise TypeError(f"{module.__name__}.{cls_name} is not a Strategy")
    return cls


__all__ = ["Batch", "StepResult", "Strategy", "get_strategy"]
