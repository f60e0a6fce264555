"""train.fused_swiglu and train.fused_rmsnorm refuse, by their own option's name, a GPU quack's kernels do not
run on and a machine without the quack-kernels package, before the first step; a CPU rank needs neither."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable

import pytest
import torch
from rdmaops_trainer import fused_rmsnorm, fused_swiglu
from rdmaops_trainer.config import RecipeError


@pytest.mark.parametrize(
    ("option", "require"),
    [
        ("train.fused_swiglu", fused_swiglu.require_kernels),
        ("train.fused_rmsnorm", fused_rmsnorm.require_kernels),
    ],
)
def test_a_gpu_it_cannot_run_on_or_a_missing_quack_is_named(
    option: str, require: Callable[[torch.device], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    require(torch.device("cpu"))  # the CPU runs the torch fallbacks
    opt = re.escape(option)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda _d=None: (8, 0))
    with pytest.raises(
        RecipeError, match=rf"^{opt}: true needs .*9.x or 10.x\), not 8.0 \(set {opt}=false\)$"
    ):
        require(torch.device("cuda", 0))
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda _d=None: (9, 0))
    monkeypatch.setitem(sys.modules, "quack", None)  # import fails as if not installed
    with pytest.raises(
        RecipeError, match=rf"^{opt}: true needs the quack-kernels package .*\(set {opt}=false\)$"
    ):
        require(torch.device("cuda", 0))
