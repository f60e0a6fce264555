# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The words of train.yml's watcher (module_utils/train/watch.py makes the decisions).

What a failed node's log says (``failure_cause``: the rank that died first there, and why, from torchrun's
summary, the trainer's refusal or a Python traceback); how an exit, a rank and a process state read in a
verdict (``exit_text``, ``rank_label``, ``STATES``, ``human_duration``); and the lines the task prints
while the job runs and when it ends (``progress_line`` with its ETA or "stalled", ``summary``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # watch.py words its verdicts with this module
    from ansible_collections.rdmaops.cluster.plugins.module_utils.train.watch import JobWatch

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


def exit_text(ev: Mapping[str, Any]) -> str:
    """'killed by signal 9 (SIGKILL)' or 'exited with code 1', from a supervise.py exit event."""
    if ev.get("signal"):
        return f"killed by signal {ev['signal']} ({ev.get('signal_name') or '?'})"
    return f"exited with code {ev.get('code')}"


def rank_label(node: str, proc: Mapping[str, Any]) -> str:
    rank = proc.get("rank")
    who = f"rank {rank}" if rank is not None else "a rank"
    return f"{who} on {node} (pid {proc.get('pid')})"


# --------------------------------------------------------------------------- progress and summary lines


def stalled_after(watch: JobWatch) -> float:
    """Seconds without a record after which the progress line says "stalled": 3 times the usual gap
    between two logged steps, at least 30 s."""
    first, last = watch.first_train, watch.last_train
    gap = 0.0
    if first and last and watch.train_records > 1:
        gap = (float(last.get("time", 0)) - float(first.get("time", 0))) / (watch.train_records - 1)
    return max(30.0, 3 * gap)


def progress_line(watch: JobWatch, now: float) -> str:
    """The line shown while the job runs: the nodes' phases before the first step, then step, loss, rate,
    ETA (or how long it has stalled) and time elapsed."""
    elapsed = human_duration(now - watch.started)
    if watch.last_train is None:
        phases = ", ".join(f"{v.name} {v.phase}" for v in watch.nodes.values())
        return f"[{watch.job}] starting ({elapsed}): {phases}"
    rec = watch.last_train
    step = int(rec.get("step", 0))
    parts = [f"[{watch.job}] step {step}/{watch.total_steps}"]
    if watch.total_steps:
        parts[0] += f" ({100 * step / watch.total_steps:.0f}%)"
    if rec.get("loss") is not None:
        parts.append(f"loss {float(rec['loss']):.4f}")
    if rec.get("tokens_per_s"):
        parts.append(f"{_si(float(rec['tokens_per_s']))} tok/s")
    quiet = now - watch.last_progress
    if quiet > stalled_after(watch):
        parts.append(f"stalled for {int(quiet)} s")
    else:
        left = eta(watch, now)
        if left is not None:
            parts.append(f"ETA {human_duration(left)}")
    parts.append(f"elapsed {elapsed}")
    return ", ".join(parts)


def eta(watch: JobWatch, now: float) -> float | None:
    """Seconds to the last step at the pace since the first logged one; None before two steps."""
    first, last = watch.first_train, watch.last_train
    if not first or not last or not watch.total_steps:
        return None
    steps = int(last["step"]) - int(first["step"])
    secs = float(last.get("time", 0)) - float(first.get("time", 0))
    if steps <= 0 or secs <= 0:
        return None
    return max(0.0, (watch.total_steps - int(last["step"])) * secs / steps)


def summary(watch: JobWatch, now: float) -> str:
    """The verdict of a job that succeeded: its last step, losses, rate and wall time."""
    end = watch.end_record or {}
    last_step = watch.last_train.get("step") if watch.last_train else "?"
    evals = [e["eval_loss"] for e in watch.evals if e.get("eval_loss") is not None]
    tps = (
        [float(watch.last_train["tokens_per_s"])]
        if watch.last_train and watch.last_train.get("tokens_per_s")
        else []
    )
    parts = [f"job {watch.job} finished: step {end.get('step', last_step)}"]
    if end.get("loss") is not None:
        parts.append(f"final loss {float(end['loss']):.4f}")
    if end.get("eval_loss") is not None:
        parts.append(f"final eval loss {float(end['eval_loss']):.4f}")
    if evals:
        parts.append(f"best eval loss {min(float(e) for e in evals):.4f}")
    if tps:
        parts.append(f"{_si(tps[0])} tok/s")
    parts.append(f"wall time {human_duration(now - watch.started)}")
    return ", ".join(parts)
