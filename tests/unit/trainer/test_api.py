"""The trainer's public API: the names of ``rdmaops_trainer.__all__``, each imported on first use from the
module ``_EXPORTS`` names, the same names for type checkers, and no torch before a name needs it."""

from __future__ import annotations

import ast
import importlib

import pytest
import rdmaops_trainer
from conftest import TRAINER_DIR, python_code


def _type_checking_imports() -> dict[str, str]:
    """public name -> "module:attribute" as the ``if TYPE_CHECKING:`` block of __init__.py imports it."""
    tree = ast.parse((TRAINER_DIR / "rdmaops_trainer" / "__init__.py").read_text())
    (block,) = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
    out = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.level == 1, ast.unparse(node)
        for alias in node.names:
            out[alias.asname or alias.name] = f"{node.module}:{alias.name}"
    return out


def test_the_exports_and_the_type_checkers_names_are_the_same() -> None:
    assert _type_checking_imports() == rdmaops_trainer._EXPORTS
    assert rdmaops_trainer.__all__ == sorted(rdmaops_trainer._EXPORTS)


@pytest.mark.parametrize("name", rdmaops_trainer.__all__)
def test_every_public_name_is_its_modules_object(name: str) -> None:
    module, attribute = rdmaops_trainer._EXPORTS[name].split(":")
    assert getattr(rdmaops_trainer, name) is getattr(
        importlib.import_module(f"rdmaops_trainer.{module}"), attribute
    )
    assert name in dir(rdmaops_trainer)


def test_a_name_outside_the_api_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'count_params'"):
        assert rdmaops_trainer.count_params


def test_the_package_and_its_flop_formulas_load_without_torch() -> None:
    code = (
        "import sys, rdmaops_trainer as t\n"
        "t.mfu(1.0, t.transformer_flops_per_token(t.qwen2_matmul_params(), 28, 1536, 2048))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'numpy', 'transformers')))\n"
    )
    assert python_code(code).strip() == "[]"
