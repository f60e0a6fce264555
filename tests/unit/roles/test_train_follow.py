"""playbooks/train_status.yml -e follow=true on a local "node": the same watch as train.yml's (progress, one
verdict), re-attached to a job's running unit from the job's record and the master's launch.json, reading only
this run's metrics. systemd is a stand-in here (a ``systemctl`` that reports the unit running, then its end);
the lab case tests/train/run.py ``reattach`` does it with a real job after Ctrl-C."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

FAKE_SYSTEMCTL = """#!/bin/sh
# `systemctl show UNIT --property=...`: running for the first RUNNING calls, then exited with STATUS
n=$(cat "$STATE/calls" 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" > "$STATE/calls"
echo "Id=$3"
echo "LoadState=loaded"
if [ "$n" -le "$RUNNING" ]; then
  echo "ActiveState=active"; echo "SubState=running"; echo "Result=success"; echo "ExecMainStatus=0"
else
  echo "ActiveState=$END_ACTIVE"; echo "SubState=$END_SUB"
  echo "Result=$END_RESULT"; echo "ExecMainStatus=$STATUS"
fi
"""


def job(tmp_path: Path, name: str) -> dict[str, object]:
    """A job as train.yml leaves it on its master: job.json, launch.json, a metrics file that an earlier run
    of the same job began (resume appends), and its log."""
    base = tmp_path / "train"
    workdir = base / name
    out = workdir / "runs" / name
    out.mkdir(parents=True)
    metrics = out / "metrics.jsonl"
    earlier = [
        {"event": "start", "step": 0},
        {"event": "train", "step": 5, "loss": 9.0},
        {"event": "end", "step": 5},
    ]
    old = "".join(json.dumps(r) + "\n" for r in earlier)
    now = time.time()
    current = [
        {"event": "start", "start_step": 5, "time": now - 30},
        {"event": "train", "step": 10, "loss": 2.5, "tokens_per_s": 900.0, "time": now - 20},
        {"event": "train", "step": 20, "loss": 2.0, "tokens_per_s": 900.0, "time": now - 10},
        {"event": "end", "step": 20, "loss": 2.0, "time": now - 5},
    ]
    metrics.write_text(old + "".join(json.dumps(r) + "\n" for r in current))
    log = tmp_path / f"train-{name}.log"
    log.write_text("=== rdmaops train job t: now\nstep 20 loss 2.0\n")
    record = {
        "job": name, "unit": f"rdmaops-train-{name}.service", "recipe": "tiny", "launcher": "torchrun",
        "master": "node1", "workdir": str(workdir), "output_dir": str(out), "metrics_file": str(metrics),
        "log_file": str(log), "events_file": str(tmp_path / f"train-{name}.events.jsonl"), "steps": 20,
        "recipe_sha256": "0" * 64, "launch_file": str(workdir / "launch.json"), "master_addr": "127.0.0.1",
        "master_port": 29500, "order": ["node1"], "slurm_job_name": "", "nodes": {},
    }  # fmt: skip
    (workdir / "job.json").write_text(json.dumps(record))
    (workdir / "launch.json").write_text(json.dumps({"metrics_offset": len(old), "started": now - 40}))
    return record


def follow(tmp_path: Path, name: str, **end: str) -> subprocess.CompletedProcess[str]:
    bin_dir, state = tmp_path / "bin", tmp_path / "state"
    bin_dir.mkdir()
    state.mkdir()
    (bin_dir / "systemctl").write_text(FAKE_SYSTEMCTL)
    (bin_dir / "systemctl").chmod(0o755)
    inventory = tmp_path / "hosts.yml"
    node = {
        "ansible_connection": "local",
        "ansible_become": False,
        "ansible_python_interpreter": sys.executable,
    }
    inventory.write_text(json.dumps({"cluster": {"hosts": {"node1": node}}}))
    env = dict(os.environ)
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env['PATH']}",
        STATE=str(state),
        RUNNING="3",
        END_ACTIVE=end.get("active", "active"),
        END_SUB=end.get("sub", "exited"),
        END_RESULT=end.get("result", "success"),
        STATUS=end.get("status", "0"),
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
        PYTHONPATH=os.pathsep.join([str(ROOT / ".collections"), env.get("PYTHONPATH", "")]),
    )
    argv = [
        str(Path(sys.executable).with_name("ansible-playbook")), str(ROOT / "playbooks" / "train_status.yml"),
        "-i", str(inventory), "-e", f"job={name}", "-e", "follow=true",
        "-e", f"train_base_dir={tmp_path / 'train'}",
        "-e", "train_poll_interval=0.2", "-e", "train_progress_interval=0.5",
    ]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=240, check=False)


def test_follow_reattaches_to_a_running_job_and_reports_its_end(tmp_path: Path) -> None:
    job(tmp_path, "t-follow")
    p = follow(tmp_path, "t-follow")
    out = " ".join((p.stdout + p.stderr).split())
    assert p.returncode == 0, out
    # this run's progress and end, not the earlier run's (its step 5 is before launch.json's offset)
    assert "job t-follow finished: step 20" in out
    assert "[t-follow] step 20/20" in out
    assert "step 5/" not in out
    assert f"checkpoints: {tmp_path}/train/t-follow/runs/t-follow/checkpoints (on node1)" in out


def test_follow_names_a_failed_job_with_its_log(tmp_path: Path) -> None:
    job(tmp_path, "t-failed")
    p = follow(tmp_path, "t-failed", active="failed", sub="failed", result="exit-code", status="1")
    out = " ".join((p.stdout + p.stderr).split())
    assert p.returncode != 0
    assert "the job was stopped on every node" in out and "last lines of node1" in out
