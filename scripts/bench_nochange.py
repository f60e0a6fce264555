"""Time no-change runs on a converged lab: site.yml (and optionally the whole `make demo`) re-run as is.

Each run must report changed=0 on every host (else the row says so: it was not a no-change run). Prints the
machine's load average before each run, every run's wall time and the median, and the slowest tasks of the
last site.yml run (ansible.posix.profile_tasks), so docs/benchmarks.md can say where the time goes.

    .venv/bin/python scripts/bench_nochange.py --repeat 3 [--demo] [--fast-path on]
    .venv/bin/python scripts/bench_nochange.py --playbook playbooks/slurm.yml
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import labkit  # noqa: E402  (the lab scripts' env and tool)

RECAP = re.compile(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)
TASK_TIME = re.compile(r"^(.+?) -+ (\d+\.\d+)s$", re.M)


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def run(argv: list[str], profile: bool = False) -> tuple[float, str, int]:
    env = labkit.env()
    if profile:
        env.update(
            ANSIBLE_CALLBACKS_ENABLED="ansible.posix.profile_tasks", PROFILE_TASKS_TASK_OUTPUT_LIMIT="12"
        )
    start = time.monotonic()
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    return time.monotonic() - start, proc.stdout + proc.stderr, proc.returncode


def changed_hosts(output: str) -> dict[str, int]:
    """host -> changed count, over every PLAY RECAP of the output (make demo runs several playbooks)."""
    out: dict[str, int] = {}
    for host, changed, unreachable, failed in RECAP.findall(output):
        out[host] = out.get(host, 0) + int(changed) + int(unreachable) + int(failed)
    return out


def bench(name: str, argv: list[str], repeat: int, profile: bool, no_change: bool = True) -> str:
    times, last = [], ""
    for i in range(repeat):
        before = load()
        wall, output, rc = run(argv, profile)
        changed = changed_hosts(output)
        bad = {h: n for h, n in changed.items() if n}
        if no_change:
            note = "changed=0" if rc == 0 and not bad else f"rc={rc} changed/failed {bad}"
        else:  # make demo ends by launching a training job: its unit and output are changes by design
            note = "ok" if rc == 0 else f"rc={rc}"
        print(
            f"{name} run {i + 1}: {wall:6.1f} s  load before {before}  hosts {len(changed)}  {note}",
            flush=True,
        )
        times.append(wall)
        last = output
    print(
        f"{name}: median {statistics.median(times):.1f} s of {repeat} "
        f"(min {min(times):.1f}, max {max(times):.1f})"
    )
    return last


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--inventory", default="inventories/lab", help="a converged inventory (default the lab's)"
    )
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--playbook", default="site.yml", help="the playbook to re-run (or playbooks/slurm.yml)")
    ap.add_argument(
        "--demo", action="store_true", help="also time `make demo` re-run (the lab must be inventories/lab)"
    )
    ap.add_argument(
        "--fast-path",
        nargs="+",
        choices=["off", "on"],
        default=["off", "on"],
        help="time with site.yml's fast path off (every role runs) and/or on; default both, off first",
    )
    args = ap.parse_args()
    if not (ROOT / args.inventory).exists() and not Path(args.inventory).exists():
        print(
            f"inventory {args.inventory} does not exist: bring a lab up and converge it first",
            file=sys.stderr,
        )
        return 2
    print(f"machine: {os.cpu_count()} CPUs, load {load()}")
    for mode in args.fast_path:
        # site.yml's fast path (docs/site.md): "off" runs every role, as site.yml did before it existed
        os.environ["RDMAOPS_FAST_PATH"] = "1" if mode == "on" else "0"
        last = bench(
            f"{args.playbook} (fast path {mode})",
            [labkit.tool("ansible-playbook"), "-i", args.inventory, args.playbook],
            args.repeat,
            True,
        )
        print(f"slowest tasks of the last {args.playbook} run (fast path {mode}):")
        for task, secs in TASK_TIME.findall(last)[:12]:
            print(f"  {float(secs):6.2f} s  {task.strip()}")
        if args.demo:
            bench(f"make demo (fast path {mode})", ["make", "demo"], args.repeat, False, no_change=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
