"""rdmaops_trainer: the training package run on the cluster (``python -m rdmaops_trainer --recipe NAME``).

Its public API is the names in ``__all__`` (docs/trainer.md, "Public API"): what the GPU benchmarks and other
tools import, as ``from rdmaops_trainer import mfu``; everything else is internal and may change. Each name
is imported from its module on first use, so ``import rdmaops_trainer`` (and the recipe checks that an Ansible
controller runs through ``rdmaops_trainer.config``) needs no torch.
"""

# the imports for type checkers at the end re-export (public through __all__), none is used here
# ruff: noqa: F401
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> "module:attribute", relative to this package
_EXPORTS: dict[str, str] = {
    # running the trainer, recipes and models
    "main": "__main__:main",
    "load_recipe": "config:load_recipe",
    "Recipe": "config:Recipe",
    "GPTConfig": "config:GPTConfig",
    "RecipeError": "errors:RecipeError",
    "Strategy": "strategies.base:Strategy",
    "build_model": "models:build_model",
    "MLP": "models:MLP",
    "lm_loss": "models:lm_loss",
    "targets_as_given": "lora:targets_as_given",
    # FLOPs per token and MFU
    "flops_per_token": "flops:flops_per_token",
    "transformer_flops_per_token": "flops:transformer_flops_per_token",
    "gpt2_matmul_params": "flops:gpt2_matmul_params",
    "qwen2_matmul_params": "flops:qwen2_matmul_params",
    "glm4_moe_active_matmul_params": "flops:glm4_moe_active_matmul_params",
    "GLM_AIR": "flops:GLM_AIR",
    "mfu": "flops:mfu",
    "peak_flops": "flops:peak_flops",
    "PEAK_BF16_FLOPS": "flops:PEAK_BF16_FLOPS",
    "H100_H200_BF16_PEAK": "flops:H100_H200_BF16_PEAK",
    # a layout's memory per GPU, estimated from the model's config (train.yml's preflight compares it with
    # the GPUs'; benchmarks/gpu/memory_estimate.py with the measured peak)
    "recipe_estimate": "memory:recipe_estimate",
    "MemoryEstimate": "memory:MemoryEstimate",
    "ShapeUnknown": "model_shape:ShapeUnknown",
    # the opt-in kernels: their table and the entry points their benchmarks time
    "KERNEL_OPTIONS": "kernels.registry:OPTIONS",
    "linear_cross_entropy": "kernels.fused_loss:linear_cross_entropy",
    "ce_rows": "kernels.fused_loss:ce_rows",
    "IGNORE_INDEX": "kernels.fused_loss:IGNORE_INDEX",
    "launch_ce_kernel": "kernels.ce_kernel:launch",
    "gelu_linear": "kernels.fused_mlp:gelu_linear",
    "linear_dgelu": "kernels.fused_mlp:linear_dgelu",
    "cublaslt_plan_linear_dgelu": "kernels.cublaslt:plan_linear_dgelu",
    "cublaslt_run": "kernels.cublaslt:run",
    "cublaslt_candidate_ms": "kernels.cublaslt:candidate_ms",
    "median_ms": "kernels.cublaslt:median_ms",
    "stack_gate_up": "kernels.fused_swiglu:stack_gate_up",
    "swiglu_mlp": "kernels.fused_swiglu:swiglu_mlp",
    "fused_rms_norm": "kernels.fused_rmsnorm:norm",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = target.split(":")
    value = getattr(importlib.import_module(f".{module}", __name__), attribute)
    globals()[name] = value  # once: later lookups find it without this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


if TYPE_CHECKING:  # the same names as _EXPORTS (a test holds the two equal)
    from .__main__ import main
    from .config import GPTConfig, Recipe, load_recipe
    from .errors import RecipeError
    from .flops import (
        GLM_AIR,
        H100_H200_BF16_PEAK,
        PEAK_BF16_FLOPS,
        flops_per_token,
        glm4_moe_active_matmul_params,
        gpt2_matmul_params,
        mfu,
        peak_flops,
        qwen2_matmul_params,
        transformer_flops_per_token,
    )
    from .kernels.ce_kernel import launch as launch_ce_kernel
    from .kernels.cublaslt import candidate_ms as cublaslt_candidate_ms
    from .kernels.cublaslt import median_ms
    from .kernels.cublaslt import plan_linear_dgelu as cublaslt_plan_linear_dgelu
    from .kernels.cublaslt import run as cublaslt_run
    from .kernels.fused_loss import IGNORE_INDEX, ce_rows, linear_cross_entropy
    from .kernels.fused_mlp import gelu_linear, linear_dgelu
    from .kernels.fused_rmsnorm import norm as fused_rms_norm
    from .kernels.fused_swiglu import stack_gate_up, swiglu_mlp
    from .kernels.registry import OPTIONS as KERNEL_OPTIONS
    from .lora import targets_as_given
    from .memory import MemoryEstimate, recipe_estimate
    from .model_shape import ShapeUnknown
    from .models import MLP, build_model, lm_loss
    from .strategies.base import Strategy
