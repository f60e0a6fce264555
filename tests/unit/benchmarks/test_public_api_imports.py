"""The GPU benchmarks use the trainer through its public API only: ``from rdmaops_trainer import NAME`` with
NAME in ``rdmaops_trainer.__all__``, never one of its modules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import rdmaops_trainer

BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "gpu"
SCRIPTS = sorted(BENCH.glob("*.py"))


def outside_the_api(source: str) -> list[str]:
    """Every use of the trainer package in ``source`` that is not a public name."""
    bad = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "rdmaops_trainer":
            if node.module != "rdmaops_trainer":
                bad.append(f"from {node.module} import ...")
            bad += [a.name for a in node.names if a.name not in rdmaops_trainer.__all__]
        elif isinstance(node, ast.Import):
            bad += [a.name for a in node.names if a.name.startswith("rdmaops_trainer.")]
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "rdmaops_trainer"
            and node.attr not in rdmaops_trainer.__all__
        ):
            bad.append(f"rdmaops_trainer.{node.attr}")
    return bad


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_a_benchmark_imports_only_public_names(script: Path) -> None:
    assert outside_the_api(script.read_text()) == []


def test_the_check_finds_what_it_looks_for() -> None:
    assert SCRIPTS and any("from rdmaops_trainer import" in p.read_text() for p in SCRIPTS)
    source = (
        "import rdmaops_trainer.models\n"
        "from rdmaops_trainer.kernels import cublaslt\n"
        "from rdmaops_trainer import mfu, count_params\n"
        "import rdmaops_trainer\n"
        "x = rdmaops_trainer.mfu, rdmaops_trainer.flops\n"
        "def f():\n    from rdmaops_trainer import _EXPORTS\n"
    )
    assert sorted(outside_the_api(source)) == sorted(
        [
            "rdmaops_trainer.models",
            "from rdmaops_trainer.kernels import ...",
            "cublaslt",
            "count_params",
            "rdmaops_trainer.flops",
            "_EXPORTS",
        ]
    )
