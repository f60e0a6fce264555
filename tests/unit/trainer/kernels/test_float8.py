"""train.float8: which layers convert, what the recipe must be, and a clear error without torchao."""

from __future__ import annotations

import sys

import pytest
from conftest import assert_refused
from rdmaops_trainer.config import RecipeError, load_recipe
from rdmaops_trainer.kernels import float8
from rdmaops_trainer.models import build_model
from torch import nn

GPU = ["strategy.name=ddp", "cluster.device=cuda", "train.precision=bf16", "train.float8=true"]


def test_every_block_linear_converts_but_not_the_head() -> None:
    model = build_model(load_recipe("tiny"), vocab_size=257)
    names = float8.converted(model)
    linears = [n for n, m in model.named_modules() if isinstance(m, nn.Linear)]
    assert "lm_head" in linears and "lm_head" not in names
    assert names == [n for n in linears if n != "lm_head"] and len(names) == 8  # 2 layers x 4


def test_unaligned_layers_stay_as_they_are() -> None:
    assert float8.keeps(nn.Linear(64, 256), "blocks.0.mlp.fc")
    assert not float8.keeps(nn.Linear(64, 250), "blocks.0.mlp.fc")
    assert not float8.keeps(nn.Linear(64, 256), "lm_head")
    assert not float8.keeps(nn.LayerNorm(64), "blocks.0.ln_1")


def test_a_recipe_that_float8_cannot_run_is_named() -> None:
    assert load_recipe("tiny", GPU).train.float8
    cases = {
        "strategy.name=fsdp2": "train.float8: true needs strategy.name ddp, not 'fsdp2'",
        "cluster.device=cpu": "float8 tensor cores and bf16 precision, not cluster.device 'cpu'",
        "train.precision=fp32": "with train.precision 'fp32'",
    }
    assert_refused("tiny", GPU, cases)


def test_without_torchao_the_error_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torchao.float8", None)  # import fails as when it is not installed
    with pytest.raises(RecipeError, match=r"train.float8: needs torchao \(pip install torchao\)"):
        float8.enable(build_model(load_recipe("tiny"), vocab_size=257))
