"""train.fused_swiglu and train.fused_rmsnorm refuse, by their own option's name, a GPU quack's kernels do not
run on and a machine without the quack-kernels package, before the first step; a CPU rank needs neither."""

from __future__ import annotations

import re
import sys

import pytest
import torch
from conftest import TINY_QWEN_SETS
from rdmaops_trainer.config import RecipeError, load_recipe
from rdmaops_trainer.kernels import registry
from rdmaops_trainer.runtime import Runtime


@pytest.mark.parametrize("option", ["train.fused_swiglu", "train.fused_rmsnorm"])
def test_a_gpu_it_cannot_run_on_or_a_missing_quack_is_named(
    option: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    recipe = load_recipe("qwen1_5b", [*TINY_QWEN_SETS, f"{option}=true"])
    registry.check_rank(
        recipe, Runtime(0, 1, 0, torch.device("cpu"), "gloo", torch.float32)
    )  # torch fallbacks
    gpu = Runtime(0, 1, 0, torch.device("cuda", 0), "nccl", torch.bfloat16)
    opt = re.escape(option)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda _d=None: (8, 0))
    with pytest.raises(
        RecipeError,
        match=rf"^{opt}: true needs a Hopper or Blackwell GPU \(compute capability 9.x or 10.x\), "
        rf"not 8.0 \(set {opt}=false\)$",
    ):
        registry.check_rank(recipe, gpu)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda _d=None: (9, 0))
    monkeypatch.setitem(sys.modules, "quack", None)  # import fails as if not installed
    with pytest.raises(
        RecipeError, match=rf"^{opt}: true needs the quack-kernels package .*\(set {opt}=false\)$"
    ):
        registry.check_rank(recipe, gpu)
    # the kernels' own import (at their first call on a GPU) refuses the same way
    with pytest.raises(RecipeError, match=rf"^{opt}: true needs the quack-kernels package"):
        registry.kernels_of(option.removeprefix("train."))
