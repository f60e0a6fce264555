"""The watcher's words: failure causes, the progress line (module_utils/train/watch_text.py)."""

from __future__ import annotations

from ansible_collections.rdmaops.cluster.plugins.module_utils.train import watch_text

from .conftest import FAILED, RUNNING, train_step, watch


def test_failure_causes_from_the_trainer_and_from_python() -> None:
    assert watch_text.failure_cause(
        ["python -m rdmaops_trainer: error: data.path /x does not exist"], FAILED
    )["why"] == ("data.path /x does not exist")
    assert (
        watch_text.failure_cause(
            ["Traceback (most recent call last):", "RuntimeError: Connection closed by peer"], FAILED
        )["why"]
        == "RuntimeError: Connection closed by peer"
    )
    assert watch_text.failure_cause([], FAILED)["why"] == "unit exit-code, exit status 1"


def test_progress_line_has_step_loss_rate_and_eta() -> None:
    w = watch()
    assert watch_text.progress_line(w, 1005).startswith("[tiny] starting (5s): node1 starting")
    w.feed(
        "node1",
        {
            "phase": "running",
            "unit": RUNNING,
            "metrics": [
                {"event": "train", "step": 10, "loss": 4.0, "tokens_per_s": 900, "time": 1010},
                {"event": "train", "step": 30, "loss": 3.5, "tokens_per_s": 1500, "time": 1030},
            ],
        },
        1030,
    )
    assert (
        watch_text.progress_line(w, 1031)
        == "[tiny] step 30/100 (30%), loss 3.5000, 1.5k tok/s, ETA 1m10s, elapsed 31s"
    )


def test_the_progress_line_says_stalled_instead_of_a_stale_eta() -> None:
    w = watch()
    train_step(w, 10, 1010)
    train_step(w, 20, 1020)
    assert "ETA 1m20s" in watch_text.progress_line(w, 1021)
    line = watch_text.progress_line(w, 1060)  # 40 s since the last step, 4 times the usual 10 s
    assert "stalled for 40 s" in line and "ETA" not in line
    assert watch_text.progress_line(w, 1045).count("ETA") == 1  # 25 s: still within 30 s
