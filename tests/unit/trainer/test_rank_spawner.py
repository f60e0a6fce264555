"""The suite's launcher (conftest.run_trainer over rank_spawner.py) reports what failed, as torchrun would."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_trainer, tiny_args


def test_a_refused_recipe_fails_the_launch_with_rank0s_message(tmp_path: Path) -> None:
    with pytest.raises(pytest.fail.Exception) as failed:
        run_trainer(2, *tiny_args(tmp_path / "bad", 2, "train.lr=abc"))
    assert "trainer failed (2)" in str(failed.value)
    assert "train.lr: expected a number, got 'abc'" in str(failed.value)


def test_a_launch_past_its_timeout_is_killed(tmp_path: Path) -> None:
    with pytest.raises(pytest.fail.Exception) as failed:
        run_trainer(2, *tiny_args(tmp_path / "long", 2, "train.steps=100000"), timeout=3)
    assert "trainer failed (-9)" in str(failed.value)


def test_rank0s_stdout_is_the_launchs_output(tmp_path: Path) -> None:
    # the forked rank's fd 1 is its output file: the second launch into a finished run says so there
    run_trainer(2, *tiny_args(tmp_path / "twice", 2, "train.checkpoint_every=8"))
    again = run_trainer(2, *tiny_args(tmp_path / "twice", 2, "train.checkpoint_every=8"))
    assert "is already complete at step 8" in again.stdout
