"""What the lab test scripts share (tests/train/run.py, tests/mesh/run.py, tests/mesh_append/run.py, ...):
the repo's Ansible settings for the plays they run, the venv's tools, a play's bounded end (its process tree
killed past the bound), PASS/FAIL checks and the case loop.
Each script puts tests/ on sys.path and imports this; nothing here knows a lab's layout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
RESULTS: list[tuple[str, bool, str]] = []
L = TypeVar("L")


def env() -> dict[str, str]:
    """The environment of the plays the scripts run: this repo's ansible.cfg, plain output."""
    out = dict(os.environ)
    # ANSIBLE_FORCE_COLOR (molecule sets it for the plays it runs, and we inherit it) wins over NOCOLOR:
    # a coloured "fatal: [node1]" line no longer starts with "fatal:" (seen in CI)
    out.update(
        # the plays run in ROOT; PWD must say so (verify.yml writes its report under $PWD/reports, and a
        # caller's PWD, e.g. molecule's, is inherited unchanged by a child started with another cwd)
        PWD=str(ROOT),
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORCE_COLOR="0",
        ANSIBLE_DEPRECATION_WARNINGS="False",
    )
    return out


def tool(name: str) -> str:
    """A command of the running venv (ansible-playbook, ansible) when it has one, else from PATH."""
    local = Path(sys.executable).with_name(name)
    return str(local) if local.exists() else name


def process_tree(pid: int) -> list[int]:
    """A process and all its descendants (Ansible's workers leave its process group, so not by group)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    tree, todo = [], [pid]
    while todo:
        p = todo.pop()
        tree.append(p)
        todo += children.get(p, [])
    return tree


def signal_tree(pid: int, sig: signal.Signals) -> int:
    """SIG to a process and every descendant at once; how many there were."""
    tree = process_tree(pid)
    for p in tree:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, sig)
    return len(tree)


# the output files of the processes spawn() ran, by pid, until finish() reads them
_OUTPUTS: dict[int, Any] = {}


def spawn(argv: list[str], **popen: Any) -> subprocess.Popen[str]:
    """ARGV in the background, its stdout and stderr together in a temporary file, not a pipe: a play that
    nobody reads while a case waits for something would block once it had written a pipe's 64 KiB, and the
    case would wait for a moment the play cannot reach. finish() returns the output."""
    out = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115 (finish closes it)
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, text=True, **popen)
    _OUTPUTS[proc.pid] = out
    return proc


def output(proc: subprocess.Popen[str]) -> str:
    """What a process that spawn() ran has written so far."""
    out = _OUTPUTS.get(proc.pid)
    if out is None:
        return ""
    out.flush()
    with open(out.fileno(), encoding="utf-8", errors="replace", closefd=False) as fh:
        fh.seek(0)
        return fh.read()


def finish(proc: subprocess.Popen[str], timeout: float) -> str:
    """A play's output once it ended (bounded by TIMEOUT). One that outlives it is killed with all its
    workers and modules (they would go on acting on the lab, holding locks or jobs, during the next case),
    and its output ends with a line saying so."""
    killed = ""
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        signal_tree(proc.pid, signal.SIGKILL)
        proc.wait()
        killed = f"\n(killed after {timeout:g} s)\n"
    if proc.pid in _OUTPUTS:
        text = output(proc)
        _OUTPUTS.pop(proc.pid).close()
    else:
        text = (proc.communicate()[0] if proc.stdout else "") or ""
    return text + killed


def run_bounded(argv: list[str], timeout: float, **popen: Any) -> tuple[int, str, str]:
    """ARGV's exit status, stdout and stderr, bounded by TIMEOUT: past it, its whole process tree is killed
    (subprocess.run's timeout kills only the first process; a play's workers would live on) and the status
    is 124."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err
    except subprocess.TimeoutExpired:
        signal_tree(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return 124, out or "", (err or "") + f"\n(killed after {timeout:g} s)\n"


def lab_report(inventory: Path, timeout: float = 300) -> tuple[int, list[str]]:
    """playbooks/lab_report.yml on INVENTORY (mesh_network's verify step, recorded, not failed): its exit
    status and its reachability table, whole lines as the play printed them (read from the JSON callback);
    [] when the play printed none."""
    report_env = env()
    report_env.update(ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.posix.json")
    argv = [tool("ansible-playbook"), "-i", str(inventory), str(ROOT / "playbooks/lab_report.yml")]
    rc, out, _err = run_bounded(argv, timeout, cwd=ROOT, env=report_env)
    for play in json.loads(out[: out.rfind("}") + 1] or "{}").get("plays", []):
        for task in play["tasks"]:
            for result in task["hosts"].values():
                msg = result.get("msg")
                if isinstance(msg, list) and any("node pairs OK" in str(line) for line in msg):
                    return rc, [str(line) for line in msg]
    return rc, []


def check(name: str, ok: bool, detail: str = "") -> bool:
    RESULTS.append((name, ok, detail))
    print(f"{'PASS' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)
    return ok


def add_tier(parser: argparse.ArgumentParser) -> None:
    """--tier: ci runs a script's CI cases (what make test runs), full every case (the default by hand)."""
    parser.add_argument(
        "--tier",
        choices=("ci", "full"),
        default="full",
        help="ci: the cases make test runs (the script's CI list); full: every case (docs/lab.md)",
    )


def chosen(ci: Iterable[str], only: Iterable[str] | None, tier: str) -> list[str] | None:
    """The cases to run: --only's, else the CI list for --tier ci, else None (every case)."""
    if only:
        return list(only)
    return list(ci) if tier == "ci" else None


def run_cases(cases: Mapping[str, Callable[[L], None]], lab: L, only: Iterable[str] | None) -> int:
    """Run the named cases (all by default), each timed; a case that raises is a failed check. Prints
    "N passed, M failed" and returns the exit status."""
    total = time.monotonic()
    for name in only or list(cases):
        start = time.monotonic()
        try:
            cases[name](lab)
        except Exception as exc:  # a crashed case is a failed check
            check(f"{name} ran", False, repr(exc))
        print(f"-- {name}: {time.monotonic() - start:.0f} s", flush=True)
    failed = sum(1 for result in RESULTS if not result[1])
    print(f"-- all: {time.monotonic() - total:.0f} s")
    print(f"{len(RESULTS) - failed} passed, {failed} failed")
    return 1 if failed else 0
