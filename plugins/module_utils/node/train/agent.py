# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node side of train.yml's watcher, run over SSH as ``python3 - UNIT METRICS LOG INTERVAL OFFSET [EVENTS
[PORTS]]`` (this source plus ENTRY on stdin), standard library only. Every INTERVAL seconds it prints one
JSON line: the unit's state (or a Slurm job's, for UNIT "slurm:<job id>"), the metrics records added since
the last line (rank 0's metrics.jsonl, on the master only), with EVENTS (the file supervise.py writes) the
job's processes on this node (launcher and ranks, each with its state and CPU time from /proc) and the
exits recorded since the last line, and with PORTS (data ports, comma-separated) each port's cable: up, or
why not. Each line doubles as a heartbeat; the last one, once the unit is no longer running, and any that
reports an exit carry the tail of the job's log.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

SHOW_PROPERTIES = (
    "Id",
    "LoadState",
    "ActiveState",
    "SubState",
    "Result",
    "ExecMainCode",
    "ExecMainStatus",
    "ExecMainPID",
    "ActiveEnterTimestamp",
    "ExecMainExitTimestampMonotonic",
    "ExecMainExitTimestamp",
)
TAIL_LINES = 40
# train_unit writes this line (then the job and the time) into the log before each launch.
RUN_MARKER = "=== rdmaops train job "


def parse_show(text: str) -> dict[str, str]:
    """``systemctl show -p A -p B UNIT`` output (``Key=value`` lines) as a dict."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key] = value
    return out


def unit_phase(show: dict[str, str]) -> str:
    """running | succeeded | failed | absent, from a unit's properties.

    Units run with RemainAfterExit=yes, so a finished job stays "active (exited)" with its exit status until
    the next launch or a stop; a failed one stays "failed".
    """
    active, sub = show.get("ActiveState", ""), show.get("SubState", "")
    if show.get("LoadState") == "not-found" and active == "inactive":
        return "absent"
    if active == "failed" or (show.get("Result") not in ("", "success") and active != "active"):
        return "failed"
    if active == "active" and sub == "exited":
        return "succeeded" if show.get("ExecMainStatus", "0") == "0" else "failed"
    if active in ("active", "activating", "reloading"):
        return "running"
    if active == "deactivating":
        # the main process (supervise.py, which handles SIGTERM) killed or dumped: systemd is stopping the
        # rest of the unit, which can take the whole TimeoutStopSec; the node has failed already
        return "failed" if show.get("ExecMainCode") in ("2", "3") else "running"
    return "absent" if show.get("Result", "success") == "success" else "failed"


def exit_time(show: dict[str, str], now: float, monotonic_now: float) -> float | None:
    """When the unit's main process ended, on this node's wall clock (nodes' monotonic clocks differ)."""
    try:
        mono = int(show.get("ExecMainExitTimestampMonotonic") or 0) / 1e6
    except ValueError:
        return None
    return round(now - (monotonic_now - mono), 3) if mono > 0 else None


def show_unit(unit: str) -> dict[str, str]:
    argv = ["systemctl", "show", unit] + [f"--property={p}" for p in SHOW_PROPERTIES]
    # subprocess, not run_command: a bare script over SSH, standard library only (no AnsibleModule)
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)  # pylint: disable=ansible-bad-function
    return parse_show(proc.stdout)


# A Slurm job is watched on the node it was submitted from: UNIT is "slurm:<job id>".
SLURM_PREFIX = "slurm:"
SLURM_RUNNING = ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING")


def parse_scontrol_job(text: str) -> dict[str, str]:
    """``scontrol show job -o ID``: one line of Key=Value fields (values without spaces but Command's)."""
    out = {}
    for token in text.split():
        key, sep, value = token.partition("=")
        if sep and key and key not in out:
            out[key] = value
    return out


def slurm_unit(job: dict[str, str], job_id: str) -> dict[str, str]:
    """A Slurm job in the unit vocabulary the watcher reads (Id, Result, ExecMainStatus, ...)."""
    if not job:
        return {"Id": f"slurm job {job_id}", "LoadState": "not-found", "ActiveState": "inactive"}
    state = job.get("JobState", "")
    code, _sep, signal = job.get("ExitCode", "0:0").partition(":")
    unit = {"Id": f"slurm job {job_id}", "JobState": state, "ExitCode": job.get("ExitCode", ""),
            "NodeList": job.get("NodeList", ""), "Reason": job.get("Reason", "")}  # fmt: skip
    if state not in SLURM_RUNNING and state != "COMPLETED":
        unit["Result"] = "signal" if signal not in ("", "0") else state.lower()
        unit["ExecMainStatus"] = signal if signal not in ("", "0") else code
    return unit


def slurm_phase(job: dict[str, str]) -> str:
    """running | succeeded | failed | absent (a job Slurm no longer knows: purged after MinJobAge)."""
    if not job:
        return "absent"
    state = job.get("JobState", "")
    if state in SLURM_RUNNING:
        return "running"
    return "succeeded" if state == "COMPLETED" else "failed"


def show_slurm_job(job_id: str) -> dict[str, str]:
    argv = ["scontrol", "show", "job", "-o", job_id]
    # subprocess, not run_command: a bare script over SSH, standard library only (no AnsibleModule)
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)  # pylint: disable=ansible-bad-function
    return parse_scontrol_job(proc.stdout) if proc.returncode == 0 else {}


def tail(path: str, lines: int = TAIL_LINES) -> list[str]:
    if lines <= 0:
        return []
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 64 * 1024))
            data = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    return data.splitlines()[-lines:]


def run_tail(path: str, lines: int = TAIL_LINES) -> list[str]:
    """The end of a job's log, from this launch's first line on (the log keeps every launch of the job)."""
    out = tail(path, lines)
    starts = [i for i, line in enumerate(out) if line.startswith(RUN_MARKER)]
    return out[starts[-1] :] if starts else out


def last_records(path: str) -> dict[str, dict[str, Any]]:
    """The last record of each event type in the end of a metrics.jsonl (for status reports)."""
    out: dict[str, dict[str, Any]] = {}
    for line in tail(path, 200):
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and rec.get("event"):
            if rec["event"] == "start":
                out = {}
            out[str(rec["event"])] = rec
    return out


class MetricsReader:
    """New complete JSON lines of a file that is being appended to (a partial last line waits)."""

    def __init__(self, path: str, offset: int = 0) -> None:
        self.path = path
        self.offset = offset
        self.buffer = b""

    def read(self) -> list[dict[str, Any]]:
        if not self.path:
            return []
        try:
            with open(self.path, "rb") as fh:
                if os.fstat(fh.fileno()).st_size < self.offset:  # replaced by a new run
                    self.offset, self.buffer = 0, b""
                fh.seek(self.offset)
                data = fh.read()
        except OSError:
            return []
        self.offset += len(data)
        self.buffer += data
        *complete, self.buffer = self.buffer.split(b"\n")
        records = []
        for line in complete:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict):
                records.append(rec)
        return records


def proc_stat(pid: int, proc: str = "/proc") -> dict[str, Any] | None:
    """State letter (R, S, D, T, t, Z, ...) and CPU seconds of a process, or None when it is gone."""
    try:
        with open(f"{proc}/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    if len(fields) < 13:
        return None
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    return {"state": fields[0], "cpu": round((int(fields[11]) + int(fields[12])) / ticks, 2)}


class ProcessTable:
    """The job's launcher and ranks on this node, from supervise.py's events, with their /proc state."""

    def __init__(self, events: str, proc: str = "/proc") -> None:
        self.reader = MetricsReader(events)
        self.proc = proc
        self.live: dict[int, dict[str, Any]] = {}

    def read(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(live processes with state and cpu, exits since the last call)."""
        exits = []
        for ev in self.reader.read():
            pid = int(ev.get("pid") or 0)
            if ev.get("event") == "spawn":
                self.live[pid] = {k: v for k, v in ev.items() if k not in ("event", "t")}
            elif ev.get("event") == "exit":
                self.live.pop(pid, None)
                exits.append(ev)
        procs = []
        for pid, info in sorted(self.live.items()):
            stat = proc_stat(pid, self.proc)
            procs.append({**info, **(stat or {"state": "gone", "cpu": None})})
        return procs, exits


def cable_state(port: str, net: str = "/sys/class/net") -> str:
    """ "up", or why a data port's cable is not: the port gone, set down, without carrier, or (RDMA) its HCA
    port not ACTIVE. Read from sysfs each time: a pulled cable shows here within the driver's link check."""
    base = os.path.join(net, port)
    if not os.path.isdir(base):
        return "is gone (no such interface)"
    try:
        with open(os.path.join(base, "carrier"), encoding="ascii") as fh:
            carrier = fh.read().strip()
    except OSError:  # reading carrier of a port set down fails (EINVAL)
        return "was set down"
    if carrier != "1":
        return "lost carrier"
    ib = os.path.join(base, "device", "infiniband")
    for dev in sorted(os.listdir(ib)) if os.path.isdir(ib) else []:
        ports = os.path.join(ib, dev, "ports")
        for num in sorted(os.listdir(ports)) if os.path.isdir(ports) else []:
            try:
                with open(os.path.join(ports, num, "state"), encoding="ascii") as fh:
                    state = fh.read().strip()
            except OSError:
                continue
            if not state.endswith("ACTIVE"):
                return f"RDMA port {dev}/{num} is {state.split(':')[-1].strip()}"
    return "up"


def main(argv: list[str]) -> int:
    try:
        return _report(argv)
    except (BrokenPipeError, KeyboardInterrupt):  # the controller went away: nothing left to report to
        return 0


# The action plugin sends this file's source followed by these lines to the node's Python.
ENTRY = "\nimport sys\nsys.exit(main(sys.argv[1:]))\n"


def _report(argv: list[str]) -> int:
    # OFFSET: the size of metrics.jsonl before this launch (a resumed run appends to the same file).
    unit, metrics, log, interval, offset = argv[0], argv[1], argv[2], float(argv[3]), int(argv[4])
    reader = MetricsReader(metrics, offset)
    table = ProcessTable(argv[5]) if len(argv) > 5 and argv[5] else None
    ports = [p for p in argv[6].split(",") if p] if len(argv) > 6 else []
    while True:
        if unit.startswith(SLURM_PREFIX):
            job_id = unit[len(SLURM_PREFIX) :]
            job = show_slurm_job(job_id)
            show, phase = slurm_unit(job, job_id), slurm_phase(job)
        else:
            show = show_unit(unit)
            phase = unit_phase(show)
        records = reader.read()
        line: dict[str, Any] = {"t": time.time(), "phase": phase, "unit": show, "metrics": records}
        if table is not None:
            line["procs"], line["exits"] = table.read()
        if ports:
            line["cables"] = {port: cable_state(port) for port in ports}
        exited = exit_time(show, time.time(), time.monotonic())
        if exited is not None:
            line["exited_at"] = exited
        if phase != "running" or line.get("exits"):  # a launcher's death leaves the unit running
            line["log_tail"] = run_tail(log)
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()
        if phase != "running":
            return 0
        time.sleep(interval)
