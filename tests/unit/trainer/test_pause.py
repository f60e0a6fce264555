"""The test hook RDMAOPS_TRAINER_PAUSE: its values, and a real run held at the point it names."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import records, tiny_args, trainer_env
from rdmaops_trainer.config import RecipeError
from rdmaops_trainer.pause import PAUSE_ENV, pause_at, pause_point


def test_pause_point_values() -> None:
    assert pause_point({}) is None
    assert pause_point({PAUSE_ENV: ""}) is None
    assert pause_point({PAUSE_ENV: "start"}) == "start"
    assert pause_point({PAUSE_ENV: "end"}) == "end"
    assert pause_point({PAUSE_ENV: "checkpoint@10"}) == "checkpoint@10"
    assert pause_point({PAUSE_ENV: "checkpoint@10,end"}) == "checkpoint@10,end"
    for bad in ("END", "begin", "checkpoint@0", "checkpoint@x", "checkpoint@", "end ", "end,", "start, end"):
        with pytest.raises(RecipeError, match=f"{PAUSE_ENV}={bad!r}: use start, checkpoint@STEP or end"):
            pause_point({PAUSE_ENV: bad})


def test_pause_at_another_point_returns_at_once() -> None:
    pause_at(None, "end")
    pause_at("checkpoint@4", "end")
    pause_at("end", "checkpoint@4")
    pause_at("checkpoint@40,end", "checkpoint@4")


def state(pid: int) -> str:
    """The process's state letter from /proc (R, S, T, Z...)."""
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]


def wait_stopped(proc: subprocess.Popen[str], timeout: float) -> bool:
    """Until the process stopped itself (state T); False if it ended or the time ran out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if state(proc.pid) == "T":
            return True
        time.sleep(0.1)
    return False


def test_a_run_holds_after_the_named_checkpoint_until_sigcont(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = tiny_args(out, 1, "train.steps=4", "train.checkpoint_every=2")
    proc = subprocess.Popen(
        [sys.executable, "-m", "rdmaops_trainer", *args],
        env={**trainer_env(), PAUSE_ENV: "checkpoint@2"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert wait_stopped(proc, 240), proc.communicate()[1][-3000:]
        # held right after the checkpoint of step 2 was logged: no later step, no end record
        assert [r["step"] for r in records(out, "checkpoint")] == [2]
        assert max(r["step"] for r in records(out)) == 2
        assert not records(out, "end")
        os.kill(proc.pid, signal.SIGCONT)
        _out, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err[-3000:]
    assert [r["step"] for r in records(out, "end")] == [4]


def test_a_bad_value_is_refused_before_training(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "rdmaops_trainer", *tiny_args(out, 1)],
        env={**trainer_env(), PAUSE_ENV: "last"},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode != 0
    assert f"{PAUSE_ENV}='last': use start, checkpoint@STEP or end" in proc.stdout + proc.stderr
    assert not (out / "metrics.jsonl").exists()  # refused before the logger opened its file
