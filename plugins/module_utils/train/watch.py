# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""train.yml's watcher, the decisions: fed the agents' lines (module_utils/train/agent.py) from every node,
it says when the job succeeded, failed (which node, rank and why), hung (no progress for the stall timeout)
or lost a node (no heartbeat), and writes the progress and summary lines. No I/O here: the action plugin
rdmaops.cluster.train_watch feeds it and prints.
"""

from __future__ import annotations

import getpass
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
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
    main_killed = unit.get("ExecMainCode") == "2" and not str(unit.get("Id", "")).startswith("slurm job")
    if main_killed:
        # supervise.py catches SIGTERM and SIGINT: killed by a signal, it was killed from outside, and systemd
        # then stopped the rest of the unit (whatever the ranks said as they went)
        cause = {"why": f"killed by signal {unit.get('ExecMainStatus', '?')}"}
        cause["where"] = "the unit's main process"
    elif sig:
        cause["why"] = f"killed by signal {sig.group(1)} ({sig.group(2)})"
    elif err:
        cause["why"] = err.group(1).strip()
    elif exc:
        cause["why"] = f"{exc[-1][0]}: {exc[-1][1].strip()}"
    elif code:
        cause["why"] = f"exit code {code.group(1)}"
    elif unit.get("Result") == "signal":
        cause["why"] = f"killed by signal {unit.get('ExecMainStatus', '?')}"
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


# How a process state letter from /proc reads in a verdict.
STATES = {
    "R": "running",
    "S": "sleeping",
    "D": "in uninterruptible sleep (state D: waiting on the kernel, often I/O)",
    "T": "stopped (state T: SIGSTOP, or a debugger)",
    "t": "stopped by a tracer (state t)",
    "Z": "a zombie (state Z)",
    "gone": "gone from /proc",
}
STOPPED = ("T", "t")
# A rank whose CPU time moved within this many seconds counts as active.
ACTIVE_WINDOW = 10.0


def exit_text(ev: Mapping[str, Any]) -> str:
    """'killed by signal 9 (SIGKILL)' or 'exited with code 1', from a supervise.py exit event."""
    if ev.get("signal"):
        return f"killed by signal {ev['signal']} ({ev.get('signal_name') or '?'})"
    return f"exited with code {ev.get('code')}"


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
    # the job's processes here (supervise.py's events, states from /proc): pid -> {role, name, rank, state,
    # cpu}
    procs: dict[int, dict[str, Any]] = field(default_factory=dict)
    cpu_seen: dict[int, float] = field(default_factory=dict)
    active_at: dict[int, float] = field(default_factory=dict)
    stopped_since: dict[int, float] = field(default_factory=dict)
    exits: list[dict[str, Any]] = field(default_factory=list)
    launcher_exit: dict[str, Any] | None = None

    def ranks(self) -> list[dict[str, Any]]:
        return [p for p in self.procs.values() if p.get("role") == "rank" and p.get("state") != "gone"]

    def rank_exits(self) -> list[dict[str, Any]]:
        return [e for e in self.exits if e.get("role") == "rank"]


def rank_label(node: str, proc: Mapping[str, Any]) -> str:
    rank = proc.get("rank")
    who = f"rank {rank}" if rank is not None else "a rank"
    return f"{who} on {node} (pid {proc.get('pid')})"


@dataclass
class Outcome:
    status: str  # succeeded | failed | hung | lost
    message: str
    node: str = ""
    node_rank: int | None = None
    rank: int | None = None
    log_tail: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def as_result(self) -> dict[str, Any]:
        """train_watch's result keys: the message as msg; the warnings go to Ansible's own list."""
        out = asdict(self)
        out["msg"] = out.pop("message")
        del out["warnings"]
        return out


@dataclass(frozen=True)
class Limits:
    """The watch's time limits in seconds, the role's train_<name> variables (train_watch's options)."""

    stall_timeout: float  # no new step while training
    startup_timeout: float  # no first step
    lost_timeout: float  # a node's agent silent
    failure_grace: float = 5.0  # after a first failure, for the rank that caused it to report
    stopped_timeout: float = 10.0  # a rank stopped (SIGSTOP, a debugger)

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Limits:
        """From the module parameters of the same names."""
        return cls(**{f.name: float(params[f.name]) for f in fields(cls)})


class JobWatch:
    """State of one job across its nodes; ``feed`` agent lines, ``decide`` at any time."""

    def __init__(
        self, job: str, nodes: Sequence[str], *, total_steps: int, started: float, limits: Limits
    ) -> None:
        self.job = job
        self.nodes = {n: NodeView(n, i) for i, n in enumerate(nodes)}
        self.master = nodes[0]
        self.total_steps = total_steps
        self.started = started
        self.limits = limits
        self.first_failure_seen: float | None = None
        self.start_record: dict[str, Any] | None = None
        self.end_record: dict[str, Any] | None = None
        self.last_train: dict[str, Any] | None = None
        self.first_train: dict[str, Any] | None = None
        self.train_records = 0
        self.evals: list[dict[str, Any]] = []
        self.checkpoints: list[dict[str, Any]] = []
        self.last_progress = started  # when the step count last moved (or the job started)
        self.last_shown: float | None = None  # when a progress line was last shown
        self.step_shown = False  # whether any progress line showed a step
        self.warnings: list[str] = []

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
        for ev in line.get("exits") or []:
            view.exits.append(dict(ev))
            view.procs.pop(int(ev.get("pid") or 0), None)
            if ev.get("role") == "launcher" and view.launcher_exit is None:
                view.launcher_exit = dict(ev, seen=now, step=self._step())
                if self._past_last_step() and (ev.get("signal") or ev.get("code")):
                    self.warnings.append(
                        f"the launcher on {node} ({ev.get('name')}, pid {ev.get('pid')}) was {exit_text(ev)} "
                        f"after the last step was logged; its ranks finished without it"
                    )
        if "procs" in line:
            self._processes(view, line.get("procs") or [], now)

    def _processes(self, view: NodeView, procs: Sequence[Mapping[str, Any]], now: float) -> None:
        current = {}
        for proc in procs:
            pid = int(proc.get("pid") or 0)
            current[pid] = dict(proc)
            cpu = proc.get("cpu")
            if cpu is not None and view.cpu_seen.get(pid) != cpu:
                if pid in view.cpu_seen:
                    view.active_at[pid] = now
                view.cpu_seen[pid] = float(cpu)
            view.active_at.setdefault(pid, now)
            if proc.get("state") in STOPPED:
                view.stopped_since.setdefault(pid, now)
            else:
                view.stopped_since.pop(pid, None)
        for pid in set(view.stopped_since) - set(current):
            view.stopped_since.pop(pid)
        view.procs = current

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
            self.train_records += 1
            self.last_progress = now
        elif event == "eval":
            self.evals.append(dict(rec))
            self.last_progress = now
        elif event == "checkpoint":
            self.checkpoints.append(dict(rec))
            self.last_progress = now
        elif event == "end":
            self.end_record = dict(rec)

    def _step(self) -> int | None:
        return int(self.last_train["step"]) if self.last_train else None

    def _at(self) -> str:
        step = self._step()
        return f"step {step}" if step is not None else "start-up (no step logged yet)"

    def _past_last_step(self) -> bool:
        """The last step was logged (or the end record written): the ranks need no launcher any more."""
        step = self._step()
        return self.end_record is not None or (bool(self.total_steps) and (step or 0) >= self.total_steps)

    def _finished_without_launcher(self, v: NodeView) -> bool:
        """A node whose unit failed only because its launcher was killed after the last step, while its
        ranks wrote the end record and exited 0 on their own."""
        ev = v.launcher_exit
        return bool(
            ev
            and self.end_record is not None
            and self._past_last_step()
            and not v.ranks()
            and all(e.get("code") == 0 for e in v.rank_exits())
        )

    def _phase(self, v: NodeView) -> str:
        return "succeeded" if v.phase == "failed" and self._finished_without_launcher(v) else v.phase

    def _orphaning_launcher(self) -> NodeView | None:
        """A node whose launcher ended before the last step while its ranks run on (killed by a signal, or
        exited while they still run): nobody supervises them there, so the job has failed."""
        if self._past_last_step():
            return None
        for v in self.nodes.values():
            ev = v.launcher_exit
            if ev and ev.get("step") is None and self.last_train is not None:
                ev["step"] = self._step()
            if ev and (ev.get("signal") or (ev.get("code") and v.ranks())):
                return v
        return None

    def decide(self, now: float) -> Outcome | None:
        orphaned = self._orphaning_launcher()
        if orphaned is not None:
            ev = orphaned.launcher_exit or {}
            left = ", ".join(rank_label(orphaned.name, p) for p in orphaned.ranks())
            msg = (
                f"job {self.job} failed on {orphaned.name} (node rank {orphaned.node_rank}, its launcher "
                f"{ev.get('name')}, pid {ev.get('pid')}): {exit_text(ev)} at {self._at()}"
                + (f"; it left {left} running unsupervised" if left else "")
            )
            return Outcome("failed", msg, orphaned.name, orphaned.node_rank, None, orphaned.log_tail)
        failed = [v for v in self.nodes.values() if self._phase(v) == "failed"]
        if failed:
            # The ranks a dead one leaves behind fail too, sometimes before its own node reports: unless a
            # node already names a cause of its own, give the others a moment to end, then name the cause, not
            # a consequence ("Connection closed by peer").
            causes = {v.name: self._cause(v) for v in failed}
            ending = any(
                v.phase in ("running", "starting") and not v.stream_error for v in self.nodes.values()
            )
            only_consequences = all(c["peer_gone"] for c in causes.values())
            if (
                ending
                and only_consequences
                and now - (self.first_failure_seen or now) < self.limits.failure_grace
            ):
                return None
            first = min(
                failed,
                key=lambda v: (causes[v.name]["peer_gone"], v.exited_at or float("inf"), v.node_rank),
            )
            cause = causes[first.name]
            rank = cause.get("rank")
            also = [v.name for v in failed if v is not first]
            where = f"rank {rank}" if rank is not None else cause.get("where", "its launcher")
            msg = (
                f"job {self.job} failed on {first.name} (node rank {first.node_rank}, {where}): "
                f"{cause['why']}" + (f"; then also on {', '.join(also)}" if also else "")
            )
            return Outcome("failed", msg, first.name, first.node_rank, rank, first.log_tail, self.warnings)
        for v in self.nodes.values():
            if v.stream_error:
                return Outcome(
                    "lost",
                    f"job {self.job}: lost {v.name} (node rank {v.node_rank}): {v.stream_error}",
                    v.name,
                    v.node_rank,
                )  # fmt: skip
            if (
                v.phase in ("running", "starting")
                and v.last_seen
                and now - v.last_seen > self.limits.lost_timeout
            ):
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
        if all(self._phase(v) == "succeeded" for v in self.nodes.values()):
            return Outcome("succeeded", self.summary(now), warnings=self.warnings)
        stopped = self._stopped_rank(now)
        if stopped is not None:
            return stopped
        limit = self.limits.stall_timeout if self.last_train is not None else self.limits.startup_timeout
        quiet = now - self.last_progress
        if quiet > limit:
            which = "train_stall_timeout" if self.last_train is not None else "train_startup_timeout"
            seen, node, rank = self._diagnose(now)
            v = self.nodes[node]
            return Outcome(
                "hung",
                f"job {self.job} hung: no progress for {human_duration(quiet)} at {self._at()} "
                f"({which}={int(limit)} s); {seen}",
                node,
                v.node_rank,
                rank,
            )
        return None

    def _cause(self, v: NodeView) -> dict[str, Any]:
        ev = v.launcher_exit
        if ev and ev.get("signal"):
            return {
                "where": f"its launcher {ev.get('name')}, pid {ev.get('pid')}",
                "why": exit_text(ev) + (f" at step {ev['step']}" if ev.get("step") is not None else ""),
                "peer_gone": False,
            }
        bad = [e for e in v.rank_exits() if e.get("signal") or e.get("code")]
        cause = failure_cause(v.log_tail, v.unit)
        if bad and "rank" not in cause:
            # ranks reaped by supervise.py: their launcher was gone, so no launcher summary names them
            cause.update(rank=bad[0].get("rank"), why=exit_text(bad[0]))
        return cause

    def _others(self, skip: tuple[str, int]) -> str:
        seen = [
            f"{v.name} rank {p.get('rank', '?')} {STATES.get(str(p.get('state')), p.get('state'))}"
            for v in self.nodes.values()
            for pid, p in v.procs.items()
            if p.get("role") == "rank" and (v.name, pid) != skip
        ]
        return ", ".join(seen)

    def _stopped_rank(self, now: float) -> Outcome | None:
        """A rank visibly stopped (state T) for stopped_timeout: the job cannot move, say so early."""
        limit = self.limits.stopped_timeout
        for v in self.nodes.values():
            for pid, since in v.stopped_since.items():
                proc = v.procs.get(pid, {})
                if now - since < limit or proc.get("role") not in ("rank", "launcher"):
                    continue
                others = self._others((v.name, pid))
                who = (
                    rank_label(v.name, proc)
                    if proc.get("role") == "rank"
                    else (f"the launcher on {v.name} ({proc.get('name')}, pid {pid})")
                )
                return Outcome(
                    "hung",
                    f"job {self.job} hung at {self._at()}: {who} is {STATES[str(proc.get('state'))]} for "
                    f"{human_duration(now - since)} (train_stopped_timeout={int(limit)} s)"
                    + (f"; the others wait for it: {others}" if others else ""),
                    v.name,
                    v.node_rank,
                    proc.get("rank"),
                )
        return None

    def _diagnose(self, now: float) -> tuple[str, str, int | None]:
        """What the process states say about a hang: (text, node, rank) naming the odd rank if one is."""
        ranks = [
            (v, pid, p) for v in self.nodes.values() for pid, p in v.procs.items() if p.get("role") == "rank"
        ]
        if not ranks:
            return "a rank is stuck or frozen (no process states from the nodes)", self.master, None

        def idle(v: NodeView, pid: int) -> float:
            return now - v.active_at.get(pid, now)

        states = "; ".join(
            f"{rank_label(v.name, p)} {STATES.get(str(p.get('state')), p.get('state'))}, "
            f"no CPU for {human_duration(idle(v, pid))}"
            for v, pid, p in ranks
        )
        odd = [(v, p) for v, pid, p in ranks if p.get("state") not in ("R", "S")]
        active = [(v, p) for v, pid, p in ranks if idle(v, pid) < ACTIVE_WINDOW]
        idle_ones = [(v, pid, p) for v, pid, p in ranks if idle(v, pid) >= ACTIVE_WINDOW]
        pick: tuple[NodeView, Mapping[str, Any], str] | None = None
        if odd:
            v, p = odd[0]
            pick = (v, p, f"is {STATES.get(str(p.get('state')), p.get('state'))}")
        elif len(ranks) > 1 and len(active) == 1:
            pick = (*active[0], "is the only rank using CPU, the others wait for it")
        elif len(ranks) > 2 and len(idle_ones) == 1:
            v, pid, p = idle_ones[0]
            pick = (v, p, f"has used no CPU for {human_duration(idle(v, pid))} while the others spin waiting")
        if pick is not None:
            v, p, what = pick
            return f"{rank_label(v.name, p)} {what} (all ranks: {states})", v.name, p.get("rank")
        return f"no rank stands out: {states}", self.master, None

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

    def stalled_after(self) -> float:
        """Seconds without a record after which the progress line says "stalled": 3 times the usual gap
        between two logged steps, at least 30 s."""
        first, last = self.first_train, self.last_train
        gap = 0.0
        if first and last and self.train_records > 1:
            gap = (float(last.get("time", 0)) - float(first.get("time", 0))) / (self.train_records - 1)
        return max(30.0, 3 * gap)

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
        quiet = now - self.last_progress
        if quiet > self.stalled_after():
            parts.append(f"stalled for {int(quiet)} s")
        else:
            eta = self.eta(now)
            if eta is not None:
                parts.append(f"ETA {human_duration(eta)}")
        parts.append(f"elapsed {elapsed}")
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
            "nodes": {n: {"phase": v.phase, "unit": v.unit, "exits": v.exits} for n, v in self.nodes.items()},
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
    "events_file": {"type": "str", "default": ""},
    "total_steps": {"type": "int", "default": 0},
    "started": {"type": "float"},
    "stall_timeout": {"type": "float", "default": 300.0},
    "startup_timeout": {"type": "float", "default": 900.0},
    "lost_timeout": {"type": "float", "default": 60.0},
    "failure_grace": {"type": "float", "default": 5.0},
    "stopped_timeout": {"type": "float", "default": 10.0},
    "progress_interval": {"type": "float", "default": 30.0},
    "poll_interval": {"type": "float", "default": 2.0},
    "stop_on_failure": {"type": "bool", "default": False},
    "stop_timeout": {"type": "float", "default": 30.0},
}

# Long-lived streams: fail fast on a dead peer (ServerAlive) instead of TCP's minutes-long retries.
SSH_OPTIONS = [
    "-T",
    "-o", "BatchMode=yes",
    "-o", "ConnectTimeout=15",
    "-o", "ServerAliveInterval=5",
    "-o", "ServerAliveCountMax=3",
]  # fmt: skip


def remote_argv(hostvars: Mapping[str, Any], name: str, remote: Sequence[str]) -> list[str]:
    """A command on a node with its inventory connection settings (ssh; as is for ansible_connection=local):
    address, port, user, key, common and extra ssh arguments."""
    if hostvars.get("ansible_connection") == "local":
        return list(remote)
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


def agent_argv(
    hostvars: Mapping[str, Any],
    name: str,
    *,
    unit: str,
    metrics: str,
    log: str,
    interval: float,
    offset: int,
    events: str = "",
) -> list[str]:
    """How to run the agent on a node: its source goes to the remote Python's stdin."""
    python = str(hostvars.get("ansible_python_interpreter") or "/usr/bin/python3")
    if python.startswith("auto"):
        python = "/usr/bin/python3"
    return remote_argv(
        hostvars, name, [python, "-", unit, metrics or "", log, str(interval), str(offset), events]
    )


def stop_argv(hostvars: Mapping[str, Any], name: str, unit: str) -> list[str]:
    """``systemctl stop UNIT`` on a node (through ``sudo -n`` unless Ansible logs in as root there): the
    watcher stops the job everywhere as soon as it has a verdict, before the play's own stop task."""
    user = str(hostvars.get("ansible_user") or hostvars.get("ansible_ssh_user") or getpass.getuser())
    sudo = [] if user == "root" or hostvars.get("ansible_connection") == "local" else ["sudo", "-n"]
    return remote_argv(hostvars, name, [*sudo, "systemctl", "stop", unit])
