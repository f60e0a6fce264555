"""Launch overhead and teardown time of train.yml on a lab instance; prints numbers (docs/benchmarks.md).

- overhead: the play's wall time minus the trainer's own run time, for a short tiny run, repeated. The
  trainer's own run time is the life of node rank 0's launcher process (torchrun, from its start to its exit,
  read from the systemd unit): what the same command typed by hand would take. The first-to-last metrics
  record time (the training loop alone, without imports and rendezvous) is printed beside it;
  With --launcher slurm the trainer's run time is the Slurm job's (StartTime to EndTime, whole seconds);
- teardown: from a kill -9 of a worker's trainer to no trainer process on any node, and to the play's exit.

    .venv/bin/python scripts/bench_train.py --inventory inventories/lab [--repeat 3] [--launcher slurm]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "train"))
from run import Lab, metrics, reset, wait_for_step  # noqa: E402  (the lab helpers of the train tests)


def tiny_args(lab: Lab) -> list[str]:
    """The tiny recipe on every node of the inventory: its 3 nodes and global batch 12 become N nodes and the
    smallest multiple of micro-batch 2 x N that is at least 12 (12 on 3 nodes, 16 on 8)."""
    n = len(lab.hosts)
    batch = 2 * n * -(-12 // (2 * n))
    overrides = {"cluster.nodes": n, "train.global_batch_size": batch}
    return ["-e", "recipe=tiny", "-e", json.dumps({"recipe_overrides": overrides})]


def unit_life(lab: Lab, job: str) -> float:
    """Seconds from the start to the exit of the job's launcher on node rank 0 (systemd's own timestamps)."""
    props = ("ExecMainStartTimestampMonotonic", "ExecMainExitTimestampMonotonic")
    show = lab.ssh(
        lab.hosts[0],
        f"systemctl show rdmaops-train-{job}.service " + " ".join(f"--property={p}" for p in props),
        check=True,
    ).stdout
    values = dict(line.split("=", 1) for line in show.split())
    return (int(values[props[1]]) - int(values[props[0]])) / 1e6


def slurm_job_life(lab: Lab, job: str) -> float:
    """Seconds from StartTime to EndTime of the newest Slurm job named rdmaops-JOB (kept MinJobAge s)."""
    out = lab.ssh(lab.hosts[0], "scontrol show job -o", check=True).stdout
    jobs = [dict(t.split("=", 1) for t in line.split() if "=" in t) for line in out.splitlines()]
    mine = [j for j in jobs if j.get("JobName") == f"rdmaops-{job}"]
    last = max(mine, key=lambda j: int(j["JobId"]))
    start, end = (datetime.datetime.fromisoformat(last[k]) for k in ("StartTime", "EndTime"))
    return (end - start).total_seconds()


def overhead(lab: Lab, repeat: int, launcher: str) -> list[float]:
    out = []
    for i in range(repeat):
        job = f"bench-{i}"
        reset(lab, job)
        rc, text, secs = lab.play(
            "train.yml", *tiny_args(lab), "-e", f"job={job}", "-e", "steps=20", "-e", f"launcher={launcher}"
        )
        if rc != 0:
            raise SystemExit(f"train.yml failed:\n{text[-3000:]}")
        recs = metrics(lab, job)
        loop = float(recs[-1]["time"]) - float(recs[0]["time"])
        trainer = slurm_job_life(lab, job) if launcher == "slurm" else unit_life(lab, job)
        out.append(secs - trainer)
        print(
            f"run {i}: play {secs:.1f} s, trainer process {trainer:.1f} s (training loop {loop:.1f} s), "
            f"overhead {secs - trainer:.1f} s",
            flush=True,
        )
        reset(lab, job)
    return out


def teardown(lab: Lab, launcher: str) -> tuple[float, float]:
    job = "bench-kill"
    reset(lab, job)
    proc = lab.play_async(
        "train.yml", *tiny_args(lab), "-e", f"job={job}", "-e", "steps=2000", "-e", f"launcher={launcher}"
    )
    if not wait_for_step(lab, job, 10, proc):
        raise SystemExit("the job did not reach step 10")
    pid = lab.trainers()[lab.hosts[1]][0]
    t0 = time.monotonic()
    lab.ssh(lab.hosts[1], f"kill -9 {pid}")
    clean = None
    while proc.poll() is None or clean is None:
        if clean is None and not any(lab.trainers().values()):
            clean = time.monotonic() - t0
        time.sleep(0.2)
    play = time.monotonic() - t0
    reset(lab, job)
    return clean or 0.0, play


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    ap.add_argument("--inventory", required=True, type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--launcher", default="torchrun", choices=["torchrun", "deepspeed", "slurm"])
    args = ap.parse_args()
    lab = Lab(args.inventory.resolve())
    print(f"nodes {len(lab.hosts)}, load average {os.getloadavg()[0]:.2f}, cores {os.cpu_count()}")
    print(f"launcher {args.launcher}")
    runs = overhead(lab, args.repeat, args.launcher)
    med, lo, hi = statistics.median(runs), min(runs), max(runs)
    print(f"launch overhead: median {med:.1f} s, min {lo:.1f} s, max {hi:.1f} s")
    clean, play = teardown(lab, args.launcher)
    print(f"kill -9 of a worker: every node clean after {clean:.1f} s, play failed after {play:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
