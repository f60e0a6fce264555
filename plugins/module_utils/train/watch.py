# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""train.yml's watcher, the decisions: fed the agents' lines (module_utils/train/agent.py) from every node,
it says when the job succeeded, failed (which node, rank and why), hung (no progress for the stall timeout)
or lost a node (no heartbeat), and writes the progress and summary lines. No I/O here: the action plugin
rdmaops.cluster.train_watch feeds it and prints.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# torchrun's failure summary: "rank      : 1 (local_rank: 0)", "exitcode  : -9 (pid: 123)", and for a
# signal "traceback : Signal 9 (SIGKILL) received by PID 123".
_RANK = re.compile(r"^\s*rank\s*:\s*(\d+)\s*\(local_rank:\s*(\d+)\)", re.M)
_EXIT = re.compile(r"^\s*exitcode\s*:\s*(-?\d+)", re.M)
_SIGNAL = re.compile(r"Signal (\d+) \((SIG[A-Z0-9]+)\) received by PID (\d+)")
# The trainer's own refusal, and the last exception line of a Python traceback.
_TRAINER_ERROR = re.compile(r"python -m rdmaops_trainer: error: (.*)")
_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt)): (.*\S.*)$", re.M)
# torch prefixes each rank's stderr lines with "[rank3]: " (and "[default0]: " under some launchers).
_RANK_PREFIX = re.compile(r"^\[(?:rank|default)\d*\]:\s?", re.M)
# torchrun's own wrapper: it says only that a child failed, never why.
_WRAPPERS = ("ChildFailedError",)
# What a rank says when another one died first: the consequence, not the cause.
_PEER_GONE = re.compile(
    r"Connection closed by peer|Connection reset by peer|remote (?:worker|process)|Broken pipe|"
    r"DistNetworkError|DistBackendError|NCCL communicator was aborted|Watchdog caught collective",
    re.I,
)


def failure_cause(log_tail: Sequence[str], unit: Mapping[str, str]) -> dict[str, Any]:
    """What a failed node's log and unit say: the rank that died first there and why."""
    text = _RANK_PREFIX.sub("", "\n".join(log_tail))
    # torchrun lists the workers it stopped itself under "Failures"; the first to fail is the root cause.
    root = text.rfind("Root Cause (first observed failure)")
    summary = text[root:] if root >= 0 else text
    cause: dict[str, Any] = {}
    rank = _RANK.search(summary)
    if rank:
        cause["rank"] = int(rank.group(1))
        cause["local_rank"] = int(rank.group(2))
    sig = _SIGNAL.search(summary)
    code = _EXIT.search(summary)
    err = _TRAINER_ERROR.search(text)
    exc = [e for e in _EXCEPTION.findall(text) if not e[0].endswith(_WRAPPERS)]
    if sig:
        cause["why"] = f"killed by signal {sig.group(1)} ({sig.group(2)})"
    elif err:
        cause["why"] = err.group(1).strip()
    elif exc:
        cause["why"] = f"{exc[-1][0]}: {exc[-1][1].strip()}"
    elif code:
        cause["why"] = f"exit code {code.group(1)}"
    elif unit.get("Result") == "signal" or unit.get("ExecMainCode") == "2":
        cause["why"] = f"the launcher was killed (signal {unit.get('ExecMainStatus', '?')})"
    else:
        cause["why"] = f"unit {unit.get('Result') or 'failed'}, exit status {unit.get('ExecMainStatus', '?')}"
    cause["peer_gone"] = bool(_PEER_GONE.search(cause["why"]))
    return cause


def human_duration(seconds: float) -> str:
    s = int(max(0, round(seconds)))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


def _si(value: float) -> str:
    for unit, scale in (("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:.1f}{unit}"
    return f"{value:.0f}"


@dataclass
class NodeView:
    name: str
    node_rank: int
    phase: str = "starting"
    last_seen: float = 0.0
    unit: dict[str, str] = field(default_factory=dict)
    exited_at: float | None = None
    log_tail: list[str] = field(default_factory=list)
    stream_error: str = ""


@dataclass
class Outcome:
    status: str  # succeeded | failed | hung | lost
    message: str
    node: str = ""
    node_rank: int | None = None
    rank: int | None = None
    log_tail: list[str] = field(default_factory=list)


class JobWatch:
    """State of one job across its nodes; ``feed`` agent lines, ``decide`` at any time."""

    def __init__(
        self,
        job: str,
        nodes: Sequence[str],
        *,
        total_steps: int,
        started: float,
        stall_timeout: float,
        startup_timeout: float,
        lost_timeout: float,
        failure_grace: float = 5.0,
    ) -> None:
        self.job = job
        self.nodes = {n: NodeView(n, i) for i, n in enumerate(nodes)}
        self.master = nodes[0]
        self.total_steps = total_steps
        self.started = started
        self.stall_timeout = stall_timeout
        self.startup_timeout = startup_timeout
        self.lost_timeout = lost_timeout
        self.failure_grace = failure_grace
        self.first_failure_seen: float | None = None
        self.start_record: dict[str, Any] | None = None
        self.end_record: dict[str, Any] | None = None
        self.last_train: dict[str, Any] | None = None
        self.first_train: dict[str, Any] | None = None
        self.evals: list[dict[str, Any]] = []
        self.checkpoints: list[dict[str, Any]] = []
        self.last_progress = started  # when the step count last moved (or the job started)
        self.last_shown: float | None = None  # when a progress line was last shown
        self.step_shown = False  # whether any progress line showed a step

    def feed(self, node: str, line: Mapping[str, Any], now: float) -> None:
        view = self.nodes[node]
        view.last_seen = now
        view.phase = str(line.get("phase", view.phase))
        if view.phase == "failed" and self.first_failure_seen is None:
            self.first_failure_seen = now
        view.unit = dict(line.get("unit") or {})
        view.exited_at = line.get("exited_at")
        if "log_tail" in line:
            view.log_tail = list(line["log_tail"])
        for rec in line.get("metrics") or []:
            self._record(rec, now)

    def stream_ended(self, node: str, error: str, now: float) -> None:
        """The SSH stream of a node closed; fine after its final line, a lost node otherwise."""
        view = self.nodes[node]
        if view.phase in ("running", "starting"):
            view.stream_error = error or "the connection closed"

    def _record(self, rec: Mapping[str, Any], now: float) -> None:
        event = rec.get("event")
        if event == "start":
            self.start_record = dict(rec)
            self.last_progress = now
        elif event == "train":
            if self.first_train is None:
                self.first_train = dict(rec)
            self.last_train = dict(rec)
            self.last_progress = now
        elif event == "eval":
            self.evals.append(dict(rec))
            self.last_progress = now
        elif event == "checkpoint":
            self.checkpoints.append(dict(rec))
            self.last_progress = now
        elif event == "end":
            self.end_record = dict(rec)

    def decide(self, now: float) -> Outcome | None:
        failed = [v for v in self.nodes.values() if v.phase == "failed"]
        if failed:
            # The ranks a dead one leaves behind fail too, sometimes before its own node reports: give the
            # others a moment to end, then name the cause, not a consequence ("Connection closed by peer").
            ending = any(
                v.phase in ("running", "starting") and not v.stream_error for v in self.nodes.values()
            )
            if ending and now - (self.first_failure_seen or now) < self.failure_grace:
                return None
            causes = {v.name: failure_cause(v.log_tail, v.unit) for v in failed}
            first = min(
                failed,
                key=lambda v: (causes[v.name]["peer_gone"], v.exited_at or float("inf"), v.node_rank),
            )
            cause = causes[first.name]
            rank = cause.get("rank")
            also = [v.name for v in failed if v is not first]
            where = f"rank {rank}" if rank is not None else "its launcher"
            msg = (
                f"job {self.job} failed on {first.name} (node rank {first.node_rank}, {where}): "
                f"{cause['why']}" + (f"; then also on {', '.join(also)}" if also else "")
            )
            return Outcome("failed", msg, first.name, first.node_rank, rank, first.log_tail)
        for v in self.nodes.values():
            if v.stream_error:
                return Outcome(
                    "lost",
                    f"job {self.job}: lost {v.name} (node rank {v.node_rank}): {v.stream_error}",
                    v.name,
                    v.node_rank,
                )  # fmt: skip
            if v.phase in ("running", "starting") and v.last_seen and now - v.last_seen > self.lost_timeout:
                return Outcome(
                    "lost",
                    f"job {self.job}: no word from {v.name} (node rank {v.node_rank}) for "
                    f"{human_duration(now - v.last_seen)}: the node or its network is down",
                    v.name,
                    v.node_rank,
                )
        absent = [v for v in self.nodes.values() if v.phase == "absent"]
        if absent:
            names = ", ".join(v.name for v in absent)
            return Outcome(
                "failed", f"job {self.job}: no unit on {names} (never started, or removed)", absent[0].name
            )
        if all(v.phase == "succeeded" for v in self.nodes.values()):
            return Outcome("succeeded", self.summary(now))
        if any(v.phase == "succeeded" for v in self.nodes.values()):
            # some nodes finished while others run on: give the rest the stall timeout to finish as well
            pass
        limit = self.stall_timeout if self.last_train is not None else self.startup_timeout
        quiet = now - self.last_progress
        if quiet > limit:
            at = f"step {self.last_train['step']}" if self.last_train else "start-up (no step logged yet)"
            which = "train_stall_timeout" if self.last_train is not None else "train_startup_timeout"
            return Outcome(
                "hung",
                f"job {self.job} hung: no progress for {human_duration(quiet)} at {at} "
                f"({which}={int(limit)} s); "
                "a rank is stuck or frozen",
                self.master,
                0,
            )
        return None

    def progress_due(self, now: float, interval: float, outcome: Outcome | None) -> bool:
        """Whether to show a progress line now: at the start, every ``interval`` seconds while the job runs,
        as soon as the first step is logged, and once at a successful end when no line has shown a step yet
        (a job shorter than the interval still shows its last step and loss). Marks the line as shown."""
        has_step = self.last_train is not None
        if outcome is None:
            due = (
                self.last_shown is None
                or now - self.last_shown >= interval
                or (has_step and not self.step_shown)
            )
        else:
            due = outcome.status == "succeeded" and has_step and not self.step_shown
        if due:
            self.last_shown = now
            self.step_shown = self.step_shown or has_step
        return due

    def progress_line(self, now: float) -> str:
        elapsed = human_duration(now - self.started)
        if self.last_train is None:
            phases = ", ".join(f"{v.name} {v.phase}" for v in self.nodes.values())
            return f"[{self.job}] starting ({elapsed}): {phases}"
        rec = self.last_train
        step = int(rec.get("step", 0))
        parts = [f"[{self.job}] step {step}/{self.total_steps}"]
        if self.total_steps:
            parts[0] += f" ({100 * step / self.total_steps:.0f}%)"
        if rec.get("loss") is not None:
            parts.append(f"loss {float(rec['loss']):.4f}")
        if rec.get("tokens_per_s"):
            parts.append(f"{_si(float(rec['tokens_per_s']))} tok/s")
        eta = self.eta(now)
        if eta is not None:
            parts.append(f"ETA {human_duration(eta)}")
        parts.append(f"elapsed {elapsed}")
        if now - self.last_progress > 30:
            parts.append(f"last step {human_duration(now - self.last_progress)} ago")
        return ", ".join(parts)

    def eta(self, now: float) -> float | None:
        first, last = self.first_train, self.last_train
        if not first or not last or not self.total_steps:
            return None
        steps = int(last["step"]) - int(first["step"])
        secs = float(last.get("time", 0)) - float(first.get("time", 0))
        if steps <= 0 or secs <= 0:
            return None
        return max(0.0, (self.total_steps - int(last["step"])) * secs / steps)

    def summary(self, now: float) -> str:
        end = self.end_record or {}
        last_step = self.last_train.get("step") if self.last_train else "?"
        evals = [e["eval_loss"] for e in self.evals if e.get("eval_loss") is not None]
        tps = (
            [float(self.last_train["tokens_per_s"])]
            if self.last_train and self.last_train.get("tokens_per_s")
            else []
        )
        parts = [f"job {self.job} finished: step {end.get('step', last_step)}"]
        if end.get("loss") is not None:
            parts.append(f"final loss {float(end['loss']):.4f}")
        if end.get("eval_loss") is not None:
            parts.append(f"final eval loss {float(end['eval_loss']):.4f}")
        if evals:
            parts.append(f"best eval loss {min(float(e) for e in evals):.4f}")
        if tps:
            parts.append(f"{_si(tps[0])} tok/s")
        parts.append(f"wall time {human_duration(now - self.started)}")
        return ", ".join(parts)

    def report(self, now: float) -> dict[str, Any]:
        return {
            "start": self.start_record,
            "end": self.end_record,
            "last_train": self.last_train,
            "evals": self.evals,
            "checkpoints": self.checkpoints,
            "nodes": {n: {"phase": v.phase, "unit": v.unit} for n, v in self.nodes.items()},
            "wall_time_s": round(now - self.started, 1),
        }


# The action plugin's options, also the argument_spec of plugins/modules/train_watch.py (its documentation).
ARGUMENT_SPEC: dict[str, Any] = {
    "job": {"type": "str", "required": True},
    "unit": {"type": "str", "required": True},
    "nodes": {"type": "list", "elements": "str", "required": True},
    "metrics_file": {"type": "str", "required": True},
    "metrics_offset": {"type": "int", "default": 0},
    "log_file": {"type": "str", "required": True},
    "total_steps": {"type": "int", "default": 0},
    "started": {"type": "float"},
    "stall_timeout": {"type": "float", "default": 300.0},
    "startup_timeout": {"type": "float", "default": 900.0},
    "lost_timeout": {"type": "float", "default": 60.0},
    "failure_grace": {"type": "float", "default": 5.0},
    "progress_interval": {"type": "float", "default": 30.0},
    "poll_interval": {"type": "float", "default": 2.0},
}

# Long-lived streams: fail fast on a dead peer (ServerAlive) instead of TCP's minutes-long retries.
SSH_OPTIONS = [
    "-T",
    "-o", "BatchMode=yes",
    "-o", "ConnectTimeout=15",
    "-o", "ServerAliveInterval=5",
    "-o", "ServerAliveCountMax=3",
]  # fmt: skip


def agent_argv(
    hostvars: Mapping[str, Any], name: str, *, unit: str, metrics: str, log: str, interval: float, offset: int
) -> list[str]:
    """How to run the agent on a node, from its inventory variables (ssh; local for ansible_connection=local).

    The agent's source goes to the remote Python's stdin; the connection settings are the ones Ansible uses

    that host (address, port, user, key, common and extra ssh arguments).
    """
    python = str(hostvars.get("ansible_python_interpreter") or "/usr/bin/python3")
    if python.startswith("auto"):
        python = "/usr/bin/python3"
    remote = [python, "-", unit, metrics or "", log, str(interval), str(offset)]
    if hostvars.get("ansible_connection") == "local":
        return remote
    argv = ["ssh", *SSH_OPTIONS]
    port = hostvars.get("ansible_port") or hostvars.get("ansible_ssh_port")
    if port:
        argv += ["-p", str(port)]
    key = hostvars.get("ansible_ssh_private_key_file") or hostvars.get("ansible_private_key_file")
    if key:
        argv += ["-i", str(key)]
    user = hostvars.get("ansible_user") or hostvars.get("ansible_ssh_user")
    if user:
        argv += ["-l", str(user)]
    for extra in ("ansible_ssh_common_args", "ansible_ssh_extra_args"):
        if hostvars.get(extra):
            argv += shlex.split(str(hostvars[extra]))
    argv.append(str(hostvars.get("ansible_host") or name))
    # ssh joins the remote words with spaces for the remote shell: quote each one.
    argv.append(" ".join(shlex.quote(w) for w in remote))
    return argv
