"""Shared helpers for the trainer tests: the package is imported from files/trainer, and multi-process
runs go through the real CLI under ``python -m torch.distributed.run`` (gloo on CPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

TRAINER_DIR = Path(__file__).resolve().parents[3] / "files" / "trainer"
if str(TRAINER_DIR) not in sys.path:
    sys.path.insert(0, str(TRAINER_DIR))


def trainer_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TRAINER_DIR), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["OMP_NUM_THREADS"] = "1"
    env.pop("WORLD_SIZE", None)
    env.pop("RANK", None)
    env.pop("MASTER_ADDR", None)
    return env


def run_trainer(nproc: int, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """``torchrun --standalone`` (a free rendezvous port per run) with ``nproc`` CPU processes."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}"]
    cmd += ["-m", "rdmaops_trainer", *args]
    proc = subprocess.run(
        cmd, env=trainer_env(), capture_output=True, text=True, timeout=timeout, check=False
    )
    if proc.returncode != 0:
        tail = f"{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
        pytest.fail(f"trainer failed ({proc.returncode}): {' '.join(cmd)}\n{tail}")
    return proc


def tiny_args(out: Path, nproc: int, *extra: str) -> list[str]:
    """The tiny recipe on ``nproc`` CPU processes, small and short enough for the unit suite."""
    sets = [
        "cluster.nodes=1",
        f"cluster.procs_per_node={nproc}",
        f"train.output_dir={out}",
        "train.steps=8",
        "train.warmup_steps=2",
        "train.log_every=1",
        "train.eval_every=0",
        "train.checkpoint_every=0",
        "train.plot=false",
        "data.generated_docs=600",
        *extra,
    ]
    args = ["--recipe", "tiny"]
    for s in sets:
        args += ["--set", s]
    return args


def records(out: Path, event: str = "train") -> list[dict[str, Any]]:
    path = out / "metrics.jsonl"
    return [
        r for r in (json.loads(x) for x in path.read_text().splitlines() if x.strip()) if r["event"] == event
    ]


def losses(out: Path) -> dict[int, float]:
    """step -> loss; on a resumed run (appended log) the later record of a step wins."""
    return {int(r["step"]): float(r["loss"]) for r in records(out)}
