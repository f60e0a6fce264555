"""benchmarks/gpu/memory_estimate.py on the CPU side: every row a valid one-GPU recipe with an estimate, the
error and the table, and the whole path (a row trained through run_all.py's runner, its peak read) on tiny
shapes. The measurement itself runs on a GPU (docs/benchmarks.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import memory_estimate as me
import pytest
from rdmaops_trainer import load_recipe

SCRIPT = Path(me.__file__).resolve()


@pytest.mark.parametrize("name", list(me.rows(tiny=False, cpu=False)))
def test_every_gpu_row_is_a_one_gpu_recipe_with_an_estimate(name: str) -> None:
    recipe, sets = me.rows(tiny=False, cpu=False)[name]
    rec = load_recipe(recipe, [*me.FIXED, "cluster.procs_per_node=1", "cluster.device=cuda", *sets])
    assert rec.cluster.world_size == 1 and rec.train.steps == 10
    est = me.estimate_row(recipe, sets, "cuda")
    # each fits the one H200 the measurement runs on (about 132 GiB usable)
    assert 5 < est["estimate_gib"] < 132, est
    assert sum(est["parts_gib"].values()) == pytest.approx(est["estimate_gib"], abs=0.05)


@pytest.mark.parametrize("name", list(me.rows(tiny=True, cpu=True)))
def test_every_tiny_cpu_row_is_estimated(name: str) -> None:
    recipe, sets = me.rows(tiny=True, cpu=True)[name]
    assert me.estimate_row(recipe, sets, "cpu")["estimate_gib"] > 0


def test_the_error_and_the_table() -> None:
    assert me.error_pct(20.2, 19.68) == 2.6 and me.error_pct(None, 3.0) is None
    text = me.table(
        [{"row": "glm-arch lora", "estimate_gib": 20.2, "peak_mem_gib": 19.68, "error_pct": 2.6, "rc": 0}]
    )
    assert text.splitlines()[1].split() == ["glm-arch", "lora", "20.200", "19.680", "+2.6%", "0"]


def test_a_tiny_row_trains_and_is_compared_on_the_cpu(tmp_path: Path) -> None:
    argv = [
        sys.executable,
        str(SCRIPT),
        "--device",
        "cpu",
        "--tiny",
        "--only",
        "gpt2",
        "--out",
        str(tmp_path),
    ]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    (row,) = json.loads((tmp_path / "memory_estimate.json").read_text())["rows"]
    assert row["row"] == "gpt2 ddp" and row["rc"] == 0 and row["peak_mem_gib"] > 0 and row["estimate_gib"] > 0
    assert row["error_pct"] == me.error_pct(row["estimate_gib"], row["peak_mem_gib"])
    assert "(cpu: the measured peak is the process's RSS" in p.stdout
