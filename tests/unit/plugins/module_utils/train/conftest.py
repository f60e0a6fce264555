"""Shared helpers for the watcher's tests: systemd unit states and a three-node job to feed."""

from __future__ import annotations

from ansible_collections.rdmaops.cluster.plugins.module_utils.train import watch as tw

RUNNING = {"LoadState": "loaded", "ActiveState": "active", "SubState": "running", "Result": "success"}
FAILED = {
    "LoadState": "loaded",
    "ActiveState": "failed",
    "SubState": "failed",
    "Result": "exit-code",
    "ExecMainCode": "1",
    "ExecMainStatus": "1",
}
DONE = {
    "LoadState": "loaded",
    "ActiveState": "active",
    "SubState": "exited",
    "Result": "success",
    "ExecMainStatus": "0",
}


def watch(*, total_steps: int = 100, **limits: float) -> tw.JobWatch:
    limit = tw.Limits(**{"stall_timeout": 60.0, "startup_timeout": 300.0, "lost_timeout": 20.0, **limits})
    return tw.JobWatch(
        "tiny", ["node1", "node2", "node3"], total_steps=total_steps, started=1000.0, limits=limit
    )


def train_step(w: tw.JobWatch, step: int, now: float) -> None:
    rec = {"event": "train", "step": step, "loss": 4.0, "tokens_per_s": 900, "time": now}
    w.feed("node1", {"phase": "running", "unit": RUNNING, "metrics": [rec]}, now)
