"""benchmarks/gpu/run_all.py: which rows --only selects, and which rows run without it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

RUN_ALL = Path(__file__).resolve().parents[3] / "benchmarks" / "gpu" / "run_all.py"


def listed(*args: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, str(RUN_ALL), "--list", *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    return [line[2:].split("  [")[0] for line in out.splitlines() if line.startswith("  ")]


def test_only_takes_substrings_and_exact_names() -> None:
    # "=name" is that row alone; a bare substring takes every row containing it
    assert listed("--only", "=trainer gpt2 ddp 1gpu gb512") == ["trainer gpt2 ddp 1gpu gb512"]
    assert listed("--only", "gb512 micro32") == [
        "exp trainer gpt2 ddp 2gpu gb512 micro32",
        "exp trainer gpt2 ddp 2gpu gb512 micro32 optimize-ddp",
        "exp trainer gpt2 ddp 1gpu gb512 micro32",
    ]


def test_core_rows_without_only() -> None:
    core = listed()
    assert "trainer qwen1.5b zero3 2gpu" in core and "hf_trainer 1gpu bf16+compile" in core
    assert not [r for r in core if r.startswith("exp ")]
