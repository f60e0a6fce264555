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


def test_baseline_rows_run_the_trainer_of_another_checkout(tmp_path: Path) -> None:
    """--baseline-trainer: every trainer row also as "<row> @base", whose processes import that checkout's
    rdmaops_trainer first (two commits side by side in one device call)."""
    base = tmp_path / "old" / "rdmaops_trainer"
    base.mkdir(parents=True)
    (base / "__init__.py").write_text("")
    (base / "__main__.py").write_text("import sys\nprint('baseline trainer', sys.argv[1:3])\nsys.exit(3)\n")
    rows = listed("--baseline-trainer", str(tmp_path / "old"), "--only", "=trainer gpt2 ddp 1gpu gb512,@base")
    assert (
        "trainer gpt2 ddp 1gpu gb512 @base" in rows and "exp profile qwen1.5b fsdp2 2gpu recipe @base" in rows
    )
    assert "minimal_gpt2 1gpu @base" not in rows  # not the project's trainer: no twin
    out = tmp_path / "out"
    args = ["--tiny", "--device", "cpu", "--gpus", "1", "--no-env", "--out", str(out), "--timeout", "60"]
    only = ["--baseline-trainer", str(tmp_path / "old"), "--only", "=trainer gpt2 ddp 1gpu @base"]
    subprocess.run([sys.executable, str(RUN_ALL), *args, *only], check=True, timeout=120, capture_output=True)
    log = (out / "run_all.log").read_text()
    assert "baseline trainer ['--recipe', 'gpt2']" in log
    assert "===== trainer gpt2 ddp 1gpu @base: rc=3" in log


def test_rows_with_their_own_environment_list_it() -> None:
    """The NCCL rows differ from their base row only in the environment of their processes."""
    out = subprocess.run(
        [sys.executable, str(RUN_ALL), "--list", "--only", "=exp trainer qwen1.5b fsdp2 2gpu recipe ctas8"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    (line,) = [x for x in out.splitlines() if x.startswith("  ")]
    assert line.endswith("[env: NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV NCCL_MAX_CTAS=8]")
    assert listed("--only", "ncclinfo") == [
        "exp trainer qwen1.5b fsdp2 2gpu recipe micro24 fusedswiglu bf16reduce ncclinfo",
        "exp trainer qwen1.5b fsdp2 2gpu recipe ncclinfo",
    ]
