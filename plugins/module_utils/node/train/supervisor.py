# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The main process of a training job's unit on a node, written there as ``supervise.py`` (standard library
only; it imports nothing from this collection)::

    python3 -I supervise.py --events EVENTS --log LOG -- /bin/bash launch.sh

It runs the command (launch.sh, which execs the launcher), copies its output to its own stdout (the journal)
and to LOG, and records in EVENTS (one JSON line each) every process of the job it sees start (the
launcher, each rank with its RANK and LOCAL_RANK) and every one it reaps, with its exit code or signal.
It is a child subreaper: ranks whose launcher died are re-parented to it, not to PID 1, so their exits
are recorded too, and it leaves only when no process of the job is left. Its exit status is the
launcher's (128 + N for a signal N), so the unit says how the launcher ended.
Why: a launcher killed by a signal leaves its ranks running unsupervised, and nothing else on the node
would say so; the watcher on the controller reads EVENTS (module_utils/node/train/agent.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

PR_SET_CHILD_SUBREAPER = 36
# Modules (python -m X) and programs that are a training launcher; ranks run the trainer's module.
LAUNCHER_MODULES = ("torch.distributed.run", "deepspeed.launcher.runner", "deepspeed.launcher.launch")
LAUNCHER_PROGRAMS = ("torchrun", "deepspeed")
RANK_MODULE = "rdmaops_trainer"
SCAN_INTERVAL = 0.5
REAP_INTERVAL = 0.1


def classify(argv: list[str]) -> tuple[str, str]:
    """(role, name) of a process from its command line: launcher, rank or other."""
    module = ""
    for i, word in enumerate(argv[:-1]):
        if word == "-m":
            module = argv[i + 1]
            break
    if module in LAUNCHER_MODULES:
        return "launcher", module
    if module == RANK_MODULE:
        return "rank", module
    program = os.path.basename(argv[0]) if argv else ""
    if program in LAUNCHER_PROGRAMS:
        return "launcher", program
    return "other", program


def exit_fields(status: int) -> dict[str, Any]:
    """A ``waitpid`` status as {code} or {signal, signal_name}."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"SIG{sig}"
        return {"code": None, "signal": sig, "signal_name": name}
    return {"code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None, "signal": None}


def describe_exit(ev: dict[str, Any]) -> str:
    if ev.get("signal"):
        return f"was killed by signal {ev['signal']} ({ev.get('signal_name') or '?'})"
    return f"exited with code {ev.get('code')}"


def parse_environ(raw: bytes) -> dict[str, str]:
    out = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            out[key.decode(errors="replace")] = value.decode(errors="replace")
    return out


def parent_map(proc: str = "/proc") -> dict[int, int]:
    """pid -> ppid of every process (from /proc/<pid>/stat; the command name may hold blanks and ')')."""
    out = {}
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            with open(f"{proc}/{entry}/stat", encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            continue
        fields = text[text.rfind(")") + 2 :].split()
        if len(fields) > 1:
            out[int(entry)] = int(fields[1])
    return out


def descendants(root: int, parents: dict[int, int]) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = [], [root]
    while todo:
        for child in sorted(children.get(todo.pop(), [])):
            out.append(child)
            todo.append(child)
    return out


class Supervisor:
    def __init__(self, events: str, log: str, command: list[str]) -> None:
        self.command = command
        self.events = open(events, "w", encoding="utf-8")  # noqa: SIM115 - open for the whole run
        self.log = open(log, "ab")  # noqa: SIM115
        self.lock = threading.Lock()
        self.known: dict[int, dict[str, Any]] = {}
        self.launcher_pid = 0
        self.launcher_exit: dict[str, Any] | None = None

    def out(self, data: bytes) -> None:
        """To the journal (stdout) and the log file, in whole chunks."""
        with self.lock:
            for stream in (sys.stdout.buffer, self.log):
                try:
                    stream.write(data)
                    stream.flush()
                except OSError:
                    pass

    def say(self, text: str) -> None:
        self.out(f"=== supervise.py: {text}\n".encode())

    def record(self, event: dict[str, Any]) -> None:
        self.events.write(json.dumps({"t": round(time.time(), 3), **event}) + "\n")
        self.events.flush()

    def copy_output(self, fd: int) -> None:
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            self.out(data)
        os.close(fd)

    def scan(self) -> None:
        """Learn the job's new processes (and the launcher's name once launch.sh has exec'ed it)."""
        parents = parent_map()
        for pid in descendants(os.getpid(), parents):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    argv = [a.decode(errors="replace") for a in fh.read().split(b"\0") if a]
            except OSError:
                continue
            if not argv:  # a zombie: its command line is gone
                continue
            role, name = classify(argv)
            if pid == self.launcher_pid:
                role = "launcher"
            seen = self.known.get(pid)
            if seen is not None and (seen["role"], seen["name"]) == (role, name):
                continue
            info: dict[str, Any] = {"pid": pid, "role": role, "name": name}
            if role == "rank":
                try:
                    with open(f"/proc/{pid}/environ", "rb") as fh:
                        env = parse_environ(fh.read())
                except OSError:
                    env = {}
                for key in ("RANK", "LOCAL_RANK"):
                    if env.get(key, "").isdigit():
                        info[key.lower()] = int(env[key])
            self.known[pid] = info
            if role != "other":
                self.record({"event": "spawn", **info})

    def reaped(self, pid: int, status: int) -> None:
        info = self.known.pop(pid, None) or {
            "pid": pid,
            "role": "launcher" if pid == self.launcher_pid else "other",
            "name": "launch.sh" if pid == self.launcher_pid else "",
        }
        ev = {"event": "exit", **info, **exit_fields(status)}
        if pid == self.launcher_pid:
            self.launcher_exit = ev
        if info["role"] == "other":
            return
        self.record(ev)
        bad = ev.get("signal") or ev.get("code")
        if pid == self.launcher_pid and bad:
            # ranks the launcher reaped itself are gone from /proc; the others are left running
            left = [
                p for p in self.known.values() if p["role"] == "rank" and os.path.exists(f"/proc/{p['pid']}")
            ]
            ranks = ", ".join(str(p.get("rank", f"pid {p['pid']}")) for p in left)
            self.say(
                f"the launcher {info['name']} (pid {pid}) {describe_exit(ev)}"
                + (f"; rank{'s' if len(left) > 1 else ''} {ranks} left running without it" if left else "")
            )
        elif info["role"] == "rank" and pid != self.launcher_pid:
            # only orphans reach here: a live launcher reaps its own ranks
            self.say(
                f"rank {info.get('rank', '?')} (pid {pid}), left without its launcher, {describe_exit(ev)}"
            )

    def stop(self, signum: int, _frame: Any) -> None:
        # systemd sends SIGTERM to every process of the unit: keep reaping until they are gone
        self.say(f"received {signal.Signals(signum).name}: waiting for the job's processes to end")
        if self.launcher_exit is None and self.launcher_pid:
            with contextlib.suppress(OSError):
                os.kill(self.launcher_pid, signum)

    def run(self) -> int:
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        except (OSError, AttributeError):
            self.say("could not become a child subreaper: ranks that lose their launcher are not followed")
        signal.signal(signal.SIGTERM, self.stop)
        signal.signal(signal.SIGINT, self.stop)
        read_fd, write_fd = os.pipe()
        # subprocess, not run_command: the job's launcher, supervised for its life (no AnsibleModule)
        child = subprocess.Popen(  # pylint: disable=ansible-bad-function
            self.command, stdin=subprocess.DEVNULL, stdout=write_fd, stderr=write_fd, close_fds=True
        )
        os.close(write_fd)
        self.launcher_pid = child.pid
        copier = threading.Thread(target=self.copy_output, args=(read_fd,), daemon=True)
        copier.start()
        next_scan = 0.0
        while True:
            now = time.monotonic()
            if now >= next_scan:
                self.scan()
                next_scan = now + SCAN_INTERVAL
            try:
                while True:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                    if pid == 0:
                        break
                    self.reaped(pid, status)
            except ChildProcessError:
                break  # no process of the job is left
            time.sleep(REAP_INTERVAL)
        copier.join(timeout=5)
        child.returncode = 0  # reaped above; keeps Popen from waiting again
        ev = self.launcher_exit or {"code": 0, "signal": None}
        return 128 + int(ev["signal"]) if ev.get("signal") else int(ev.get("code") or 0)


USAGE = "usage: supervise.py --events FILE --log FILE -- COMMAND...\n"


def main(argv: list[str]) -> int:
    if "--" not in argv:
        sys.stderr.write(USAGE)
        return 2
    split = argv.index("--")
    opts, command = argv[:split], argv[split + 1 :]
    values = dict(zip(opts[::2], opts[1::2], strict=False))
    if not command or set(values) != {"--events", "--log"}:
        sys.stderr.write(USAGE)
        return 2
    for path in (values["--events"], values["--log"]):
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    return Supervisor(values["--events"], values["--log"], command).run()


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
