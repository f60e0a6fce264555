"""The registry of opt-in options: every option is a recipe key that is off by default, its converter exists,
the options of the strategy's stages refuse every strategy but DDP, and no module but the registry and the
option's own reads it."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
from conftest import TRAINER_DIR, refusal
from rdmaops_trainer.config import TrainConfig, load_recipe
from rdmaops_trainer.kernels import registry
from rdmaops_trainer.models import build_model

PACKAGE = TRAINER_DIR / "rdmaops_trainer"
KEYS = [o.key for o in registry.OPTIONS]


def test_every_option_is_a_train_key_that_is_off_by_default() -> None:
    defaults = {f.name: f.default for f in dataclasses.fields(TrainConfig)}
    for o in registry.OPTIONS:
        assert defaults[o.key] is False, o.key
        for setting, default in o.settings:
            assert defaults[setting] == default, setting
        assert (PACKAGE / "kernels" / f"{o.module}.py").is_file(), o.module
    assert len(set(KEYS)) == len(KEYS)


@pytest.mark.parametrize("option", registry.OPTIONS, ids=KEYS)
def test_each_converter_is_a_function_of_its_own_module(option: registry.Option) -> None:
    import importlib

    module = importlib.import_module(f"rdmaops_trainer.kernels.{option.module}")
    assert callable(module.convert) and module.__doc__


@pytest.mark.parametrize("option", [o for o in registry.OPTIONS if o.stage != "build"], ids=lambda o: o.key)
def test_options_the_strategy_applies_take_ddp_only(option: registry.Option) -> None:
    """DDP is the one strategy that applies the on_device and before_compile stages."""
    for strategy in ("fsdp2", "zero3", "pipeline"):
        sets = [f"strategy.name={strategy}", "cluster.device=cuda", "train.compile=true"]
        assert refusal("tiny", [*sets, f"train.{option.key}=true"]).startswith(f"train.{option.key}: ")


def _imported(path: Path, package: str) -> set[str]:
    """Every module a file of ``package`` imports, anywhere in it (inside functions too), by its full name;
    ``from X import n`` counts X and X.n."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")
            base = ".".join(parts[: len(parts) - node.level + 1] if node.level else [])
            module = ".".join(p for p in (base, node.module or "") if p)
            found.update({module, *(f"{module}.{alias.name}" for alias in node.names)})
    return found


def test_the_kernels_never_import_the_model(tmp_path: Path) -> None:
    """models imports the kernels (the registry, fused_loss, fused_mlp's ``mlp``), so the dependency goes one
    way: a converter knows the modules it converts by their shape."""
    for path in sorted((PACKAGE / "kernels").glob("*.py")):
        models = {
            m for m in _imported(path, "rdmaops_trainer.kernels") if m.startswith("rdmaops_trainer.models")
        }
        assert not models, f"kernels/{path.name} imports {sorted(models)}"
    probe = tmp_path / "probe.py"
    probe.write_text("import torch\ndef f():\n    from ..models import MLP\n    from .. import errors\n")
    assert _imported(probe, "rdmaops_trainer.kernels") == {
        "torch",
        "rdmaops_trainer.models",
        "rdmaops_trainer.models.MLP",
        "rdmaops_trainer",
        "rdmaops_trainer.errors",
    }


def test_a_setting_of_an_option_that_is_off_is_refused_with_the_way_out() -> None:
    assert refusal("qwen1_5b", ["train.fused_swiglu_gemms=cublas"]) == (
        "train.fused_swiglu_gemms: cublas needs train.fused_swiglu: true (set train.fused_swiglu=true or "
        "leave train.fused_swiglu_gemms at quack)"
    )


def test_the_first_refusal_follows_the_table_order() -> None:
    # float8 and cuda_graphs both wrong for FSDP2: float8 comes first in the table, as it did in validate()
    got = refusal("tiny", ["train.float8=true", "train.cuda_graphs=true"])
    assert got == "train.float8: true needs strategy.name ddp, not 'fsdp2'"


def test_the_build_stage_counts_what_it_converted() -> None:
    plain = build_model(load_recipe("tiny"), vocab_size=257)
    assert registry.counts(plain) == {"fused_swiglu_mlps": 0, "fused_rmsnorms": 0}
    recipe = load_recipe("tiny", ["strategy.name=ddp", "train.precision=bf16", "train.fused_mlp=true"])
    fused = build_model(recipe, vocab_size=257)
    assert [m.mlp.fused for m in fused.h] == [True, True]
    assert registry.convert(fused, recipe, "on_device") == {}  # nothing of that stage is on


# option and setting keys -> the module of their option
OWN = {k: o.module for o in registry.OPTIONS for k in (o.key, *(name for name, _value in o.settings))}


def _option_reads(path: Path) -> set[str]:
    """The options (and their settings) a module reads as ``<x>.train.<key>``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr in OWN:
            base = node.value
            if isinstance(base, ast.Attribute) and base.attr == "train":
                found.add(node.attr)
    return found


def test_only_the_registry_and_the_options_own_module_read_an_option(tmp_path: Path) -> None:
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "registry.py":
            continue
        for key in _option_reads(path):
            assert path == PACKAGE / "kernels" / f"{OWN[key]}.py", (
                f"{path.relative_to(PACKAGE)} reads train.{key}"
            )
    assert _option_reads(PACKAGE / "kernels" / "fused_swiglu.py") == {"fused_swiglu_gemms"}
    # and the check sees a read elsewhere
    probe = tmp_path / "probe.py"
    probe.write_text("def f(recipe):\n    return recipe.train.float8 or recipe.train.lr\n")
    assert _option_reads(probe) == {"float8"}


def test_the_docs_name_every_option() -> None:
    doc = (TRAINER_DIR.parents[1] / "docs" / "trainer.md").read_text()
    for o in registry.OPTIONS:
        assert f"`train.{o.key}" in doc, o.key
