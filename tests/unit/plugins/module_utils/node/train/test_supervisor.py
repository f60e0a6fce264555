"""supervise.py, the main process of a job's unit: run for real with stand-in launchers and ranks (Python
processes whose command lines name the launcher and trainer modules), as a child subreaper."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.train import supervisor as sv

# A "rank": sleeps, says so, exits with the code in its RANK_EXIT variable.
RANK = (
    "import os, time; time.sleep(float(os.environ['RANK_SLEEP'])); "
    # one write: two ranks share the log, and print() may write its pieces apart (PYTHONUNBUFFERED)
    "os.write(1, f\"rank {os.environ['RANK']} done\\n\".encode()); "
    "raise SystemExit(int(os.environ.get('RANK_EXIT', '0')))"
)
# A "launcher": starts two ranks in their own sessions (as torchrun does), writes its pid, waits for them.
LAUNCHER = (
    "import os, subprocess, sys, time\n"
    "procs = [subprocess.Popen([sys.executable, '-c', RANK, '-m', 'rdmaops_trainer'], "
    "start_new_session=True,\n"
    "         env={**os.environ, 'RANK': str(r), 'LOCAL_RANK': str(r)}) for r in (0, 1)]\n"
    "print('launcher up', flush=True)\n"
    "sys.exit(max(p.wait() for p in procs))\n"
)


def start(tmp: Path, rank_sleep: float, rank_exit: int = 0) -> subprocess.Popen[bytes]:
    code = f"RANK = {RANK!r}\n{LAUNCHER}"
    argv = [sys.executable, sv.__file__, "--events", str(tmp / "ev.jsonl"), "--log", str(tmp / "log"), "--",
            sys.executable, "-c", code, "-m", "torch.distributed.run"]  # fmt: skip
    env = {**os.environ, "RANK_SLEEP": str(rank_sleep), "RANK_EXIT": str(rank_exit)}
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)


def events(tmp: Path) -> list[dict]:
    path = tmp / "ev.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def wait_for(tmp: Path, pred, timeout: float = 20.0) -> list[dict]:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        evs = events(tmp)
        if pred(evs):
            return evs
        time.sleep(0.1)
    raise AssertionError(f"timed out; events: {events(tmp)}")


def test_command_lines_are_told_apart() -> None:
    assert sv.classify(["/v/bin/python", "-m", "torch.distributed.run", "--nnodes=3"]) == (
        "launcher",
        "torch.distributed.run",
    )
    assert sv.classify(["/v/bin/python", "-u", "-m", "rdmaops_trainer", "--recipe", "r.yaml"])[0] == "rank"
    assert sv.classify(["/v/bin/torchrun", "x"]) == ("launcher", "torchrun")
    assert sv.classify(["/bin/bash", "launch.sh"]) == ("other", "bash")
    assert sv.classify(["python3", "-m", "deepspeed.launcher.launch"])[0] == "launcher"
    assert sv.parse_environ(b"RANK=2\0LOCAL_RANK=0\0X\0") == {"RANK": "2", "LOCAL_RANK": "0"}
    parents = {10: 1, 11: 10, 12: 11, 13: 1, 14: 12}
    assert sv.descendants(10, parents) == [11, 12, 14]


def test_a_job_that_ends_well_exits_0_with_its_output_in_the_log(tmp_path: Path) -> None:
    proc = start(tmp_path, rank_sleep=1.0)
    out = proc.communicate(timeout=30)[0]
    assert proc.returncode == 0, out
    log = (tmp_path / "log").read_text()
    assert "launcher up" in log and "rank 0 done" in log and "rank 1 done" in log
    assert "launcher up" in out.decode()  # the journal gets it too
    evs = events(tmp_path)
    spawned = {e["rank"] for e in evs if e["event"] == "spawn" and e["role"] == "rank"}
    assert spawned == {0, 1}
    # a live launcher reaps its own ranks: only its exit is recorded here
    assert [e for e in evs if e["event"] == "exit"] == [
        {**e, "role": "launcher", "name": "torch.distributed.run", "code": 0, "signal": None}
        for e in evs
        if e["event"] == "exit"
    ]


def test_a_killed_launcher_is_recorded_and_its_orphans_exits_too(tmp_path: Path) -> None:
    proc = start(tmp_path, rank_sleep=3.0)
    evs = wait_for(tmp_path, lambda evs: sum(e["role"] == "rank" for e in evs) == 2)
    launcher = next(e["pid"] for e in evs if e["role"] == "launcher")
    os.kill(launcher, signal.SIGKILL)
    out = proc.communicate(timeout=30)[0]
    assert proc.returncode == 128 + 9  # the unit says how the launcher ended
    exits = [e for e in events(tmp_path) if e["event"] == "exit"]
    assert exits[0]["role"] == "launcher" and exits[0]["signal"] == 9 and exits[0]["signal_name"] == "SIGKILL"
    ranks = sorted((e["rank"], e["code"]) for e in exits if e["role"] == "rank")
    assert ranks == [(0, 0), (1, 0)]  # re-parented to the supervisor, not to PID 1: their exits are known
    log = (tmp_path / "log").read_text()
    assert (
        f"the launcher torch.distributed.run (pid {launcher}) was killed by signal 9 (SIGKILL); ranks 0, 1 "
        "left running without it" in log
    )
    assert "rank 1 (pid" in log and "left without its launcher, exited with code 0" in log
    assert "rank 0 done" in out.decode()


def test_a_launcher_that_fails_after_its_ranks_names_none_left(tmp_path: Path) -> None:
    proc = start(tmp_path, rank_sleep=1.0, rank_exit=3)  # the stand-in launcher exits 3 once both ranks did
    proc.communicate(timeout=30)
    assert proc.returncode == 3
    log = (tmp_path / "log").read_text()
    assert "(pid " in log and "exited with code 3\n" in log and "left running" not in log


def test_an_orphan_that_fails_is_recorded_with_its_code(tmp_path: Path) -> None:
    proc = start(tmp_path, rank_sleep=2.0, rank_exit=3)
    evs = wait_for(tmp_path, lambda evs: sum(e["role"] == "rank" for e in evs) == 2)
    os.kill(next(e["pid"] for e in evs if e["role"] == "launcher"), signal.SIGKILL)
    proc.communicate(timeout=30)
    codes = {e["code"] for e in events(tmp_path) if e["event"] == "exit" and e["role"] == "rank"}
    assert codes == {3}


def test_sigterm_waits_for_the_job_to_end(tmp_path: Path) -> None:
    proc = start(tmp_path, rank_sleep=30.0)
    wait_for(tmp_path, lambda evs: sum(e["role"] == "rank" for e in evs) == 2)
    proc.send_signal(signal.SIGTERM)  # systemd stop: every process of the unit gets it; this one passes it on
    evs = wait_for(tmp_path, lambda evs: any(e["event"] == "exit" for e in evs))
    assert proc.poll() is None  # the ranks still run: it stays to reap them
    for e in evs:
        if e["role"] == "rank":
            os.kill(e["pid"], signal.SIGTERM)
    proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM
    assert "received SIGTERM: waiting for the job's processes to end" in (tmp_path / "log").read_text()
    exits = {(e["role"], e.get("signal")) for e in events(tmp_path) if e["event"] == "exit"}
    assert exits == {("launcher", signal.SIGTERM), ("rank", signal.SIGTERM)}


def test_usage() -> None:
    assert sv.main(["--events", "x"]) == 2
    assert sv.main(["--events", "x", "--", "true"]) == 2
