# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""train.yml's watcher, the decisions: fed the agents' lines (module_utils/node/train/agent.py) from every
node, it says when the job succeeded, failed (which node, rank and why), hung (no progress for the stall
timeout) or lost a node (no heartbeat), and when a progress line is due. No I/O here: the action plugin
rdmaops.cluster.train_watch feeds it (over the commands of watch_ssh.py) and prints; watch_text.py words
the causes, the verdicts' parts and the progress and summary lines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.train.watch_cables import CableWatch
from ansible_collections.rdmaops.cluster.plugins.module_utils.train.watch_text import (
    STATES,
    exit_text,
    failure_cause,
    human_duration,
    rank_label,
    summary,
)

# The /proc states of a stopped process (SIGSTOP, a debugger, a tracer).
STOPPED = ("T", "t")
# A rank whose CPU time moved within this many seconds counts as active.
ACTIVE_WINDOW = 10.0


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
        self,
        job: str,
        nodes: Sequence[str],
        *,
        total_steps: int,
        started: float,
        limits: Limits,
        cables: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    ) -> None:
        self.job = job
        self.cables = CableWatch(cables or {})
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
        if line.get("cables"):
            self.cables.feed(node, line["cables"], self._at())

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
        """The verdict once there is one (None while the job runs); a job that stopped after a data cable was
        lost says so first: the lost cable is the likely cause of what the ranks show."""
        outcome = self._decide(now)
        cause = self.cables.cause() if outcome is not None and outcome.status != "succeeded" else ""
        if outcome is not None and cause:
            outcome.message = f"job {self.job} stopped after {cause}; {outcome.message}"
        return outcome

    def _decide(self, now: float) -> Outcome | None:
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
            return Outcome("succeeded", summary(self, now), warnings=self.warnings)
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

    def report(self, now: float) -> dict[str, Any]:
        return {
            "start": self.start_record,
            "end": self.end_record,
            "last_train": self.last_train,
            "evals": self.evals,
            "checkpoints": self.checkpoints,
            "nodes": {n: {"phase": v.phase, "unit": v.unit, "exits": v.exits} for n, v in self.nodes.items()},
            "cables": self.cables.events,
            "wall_time_s": round(now - self.started, 1),
        }


# The action plugin's options, also the argument_spec of plugins/modules/train_watch.py (its documentation).
TRAIN_WATCH_SPEC: dict[str, Any] = {
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
    # per node, the data ports whose cables the agents watch: {port, peer, rerouted}
    "cables": {"type": "dict", "default": {}},
}
