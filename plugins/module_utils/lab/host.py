# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host-side operations of one lab instance: commands, processes in their cgroups, mounts, removal.

Everything here acts on the host through ``Host`` (``changes`` for ``changed``, ``check_mode`` honoured);
the names it looks for come from lab_plan, the parsing of what the host reports from lab_parse.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterable
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.lab.parse import (
    mounts_under,
    overlay_lowerdir,
    parse_cgroup_mounts,
    parse_nspid,
    port_holders,
)
from ansible_collections.rdmaops.cluster.plugins.module_utils.lab.plan import (
    CGROUP_ROOT,
    LabError,
    check_lab_name,
    netns_name,
)

Runner = Callable[[list[str]], tuple[int, str, str]]

# Argument spec of the modules that act on an existing instance (doc fragment rdmaops.cluster.lab.instance).
INSTANCE_SPEC: dict[str, dict[str, Any]] = {
    "name": {"type": "str", "required": True},
    "cache_dir": {"type": "path", "default": "/var/lib/rdmaops-lab"},
    "run_dir": {"type": "path", "default": "/run/rdmaops-lab"},
}


def subprocess_runner(argv: list[str]) -> tuple[int, str, str]:
    # subprocess, not run_command: the default runner; run_command would expand $ and ~ in argv
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)  # pylint: disable=ansible-bad-function
    return proc.returncode, proc.stdout, proc.stderr


class Host:
    """Host-side operations of one lab instance; `changes` lists what was done (for `changed`)."""

    def __init__(
        self,
        lab: str,
        cache_dir: str = "/var/lib/rdmaops-lab",
        run_dir: str = "/run/rdmaops-lab",
        runner: Runner = subprocess_runner,
        check_mode: bool = False,
    ) -> None:
        check_lab_name(lab)
        self.lab = lab
        self.cache_dir = cache_dir
        self.run_dir = run_dir
        self.instance_dir = os.path.join(cache_dir, lab)
        self.instance_run_dir = os.path.join(run_dir, lab)
        self.runner = runner
        self.check_mode = check_mode
        self.changes: list[str] = []
        self.warnings: list[str] = []

    # -- commands

    def run(self, argv: list[str], check: bool = True) -> str:
        rc, out, err = self.runner(argv)
        if rc != 0 and check:
            raise LabError(f"{' '.join(argv)} failed (rc={rc}): {err.strip() or out.strip()}")
        return out

    def change(self, what: str, argv: list[str] | None = None) -> None:
        self.changes.append(what)
        if argv is not None and not self.check_mode:
            self.run(argv)

    def ip_json(self, args: list[str], netns: str | None = None) -> list[dict[str, Any]]:
        argv = ["ip"] + (["-n", netns] if netns else []) + ["-j"] + args
        out = self.run(argv)
        return json.loads(out) if out.strip() else []

    # -- discovery

    def netns_list(self) -> list[str]:
        out = self.run(["ip", "netns", "list"])
        names = [line.split()[0] for line in out.splitlines() if line.strip()]
        # A netns whose `ip netns add` crashed half-way may have a file but no mount.
        if os.path.isdir("/run/netns"):
            names += [n for n in os.listdir("/run/netns") if n not in names]
        return names

    def own_netns(self) -> list[str]:
        return sorted(n for n in self.netns_list() if n.startswith(self.lab + "-"))

    def links(self, netns: str | None = None) -> dict[str, dict[str, Any]]:
        return {link["ifname"]: link for link in self.ip_json(["link", "show"], netns)}

    def own_host_links(self) -> list[str]:
        return sorted(n for n in self.links() if n.startswith(self.lab + "-"))

    def cgroup_dirs(self, unit: str | None = None) -> list[str]:
        with open("/proc/self/mountinfo", encoding="utf-8") as fh:
            mounts = parse_cgroup_mounts(fh.read())
        base = [os.path.join(m, CGROUP_ROOT, self.lab) for m in mounts.values()]
        return [os.path.join(b, unit) for b in base] if unit else base

    def cgroup_pids(self, unit: str | None = None) -> set[int]:
        pids: set[int] = set()
        for top in self.cgroup_dirs(unit):
            for dirpath, _subdirs, files in os.walk(top):
                if "cgroup.procs" in files:
                    pids |= _read_pids(os.path.join(dirpath, "cgroup.procs"))
        return pids

    def cmdline_pids(self, needle: str) -> set[int]:
        pids: set[int] = set()
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) != os.getpid():
                argv = _cmdline(int(entry))
                if any(needle in arg for arg in argv):
                    pids.add(int(entry))
        return pids

    def netns_pids(self, netns: str) -> set[int]:
        rc, out, _err = self.runner(["ip", "netns", "pids", netns])
        return {int(x) for x in out.split()} if rc == 0 else set()

    # -- processes

    def unit_pids(self, unit: str | None, netns: Iterable[str] = ()) -> set[int]:
        """All processes of a unit (or of the whole instance when unit is None)."""
        pids = self.cgroup_pids(unit)
        for ns in netns:
            pids |= self.netns_pids(ns)
        needle = os.path.join(self.instance_dir, unit or "").rstrip("/") + "/"
        pids |= self.cmdline_pids(needle)
        pids.discard(os.getpid())
        pids.discard(1)
        return {p for p in pids if os.path.exists(f"/proc/{p}")}

    def stop(self, unit: str | None, netns: Iterable[str] = (), timeout: float = 20.0) -> None:
        """Power containers off (SIGRTMIN+4 to their PID 1), SIGTERM the rest, then SIGKILL what is left."""
        netns = list(netns)
        pids = self.unit_pids(unit, netns)
        if not pids:
            return
        self.change(f"stop {unit or 'all units'} ({len(pids)} processes)")
        if self.check_mode:
            return
        for pid in pids:
            nspid = _nspid(pid)
            comm = _comm(pid)
            if len(nspid) > 1 and nspid[-1] == 1:
                _signal(pid, signal.SIGRTMIN + 4)  # systemd: poweroff
            elif len(nspid) <= 1 and comm != "systemd-nspawn":
                _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.unit_pids(unit, netns):
            time.sleep(0.5)
        left = self.unit_pids(unit, netns)
        if left:
            self.warnings.append(
                f"{unit or self.lab}: {len(left)} processes ignored the stop request; killed"
            )
        for _attempt in range(50):
            left = self.unit_pids(unit, netns)
            if not left:
                return
            for pid in left:
                _signal(pid, signal.SIGKILL)
            time.sleep(0.1)
        raise LabError(f"processes {sorted(left)} of lab {self.lab} survive SIGKILL")

    def nodes_on_disk(self) -> set[str]:
        """Nodes with a root on disk (an overlay upper directory); the apt proxy and files have none."""
        root = self.instance_dir
        if not os.path.isdir(root):
            return set()
        return {d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d, "upper"))}

    def crash(self, unit: str, timeout: float = 10.0) -> int:
        """Kill every process of a node at once, as a power cut would: no poweroff, no SIGTERM, no unmount.

        SIGKILL to systemd-nspawn alone leaves the node running (its systemd carries on as PID 1 of the node's
        PID namespace, sshd still answers); SIGKILL to that PID 1 makes the kernel kill the whole namespace.
        Returns how many processes were killed.
        """
        pids = self.unit_pids(unit, [netns_name(self.lab, unit)])
        if not pids:
            return 0
        killed = len(pids)
        self.change(f"crash {unit} (SIGKILL to its {killed} processes)")
        if self.check_mode:
            return killed
        deadline = time.monotonic() + timeout
        while True:
            for pid in pids:
                _signal(pid, signal.SIGKILL)
            time.sleep(0.1)
            pids = self.unit_pids(unit, [netns_name(self.lab, unit)])
            if not pids:
                return killed
            killed += len(pids)
            if time.monotonic() > deadline:
                raise LabError(f"processes {sorted(pids)} of {self.lab} {unit} survive SIGKILL")

    def unit_running(self, unit: str, argv: list[str]) -> int | None:
        """PID of the unit's leader if it runs with exactly this argv."""
        pidfile = os.path.join(self.instance_run_dir, unit + ".pid")
        try:
            with open(pidfile, encoding="utf-8") as fh:
                pid = int(fh.read().strip())
        except (OSError, ValueError):
            return None
        return pid if _cmdline(pid) == exec_argv(argv) else None

    def start(self, unit: str, argv: list[str], settle: float = 0.5) -> int | None:
        """Start argv detached, in its own cgroup (each hierarchy), logging to <run_dir>/<lab>/<unit>.log."""
        pid = self.unit_running(unit, argv)
        if pid is not None:
            return pid
        leftovers = self.unit_pids(unit)
        if leftovers:
            # A crashed or differently configured earlier start: replace it.
            self.stop(unit)
        self.change(f"start {unit}")
        if self.check_mode:
            return None
        os.makedirs(self.instance_run_dir, exist_ok=True)
        cgroups = self.cgroup_dirs(unit)
        for cg in cgroups:
            os.makedirs(cg, exist_ok=True)
        procs = [os.path.join(cg, "cgroup.procs") for cg in cgroups]

        def join_cgroups() -> None:
            for path in procs:
                with open(path, "w", encoding="ascii") as fh:
                    fh.write(str(os.getpid()))

        log_path = os.path.join(self.instance_run_dir, unit + ".log")
        with open(log_path, "ab") as log, open(os.devnull, "rb") as devnull:
            # subprocess, not run_command: a detached unit in its own session, joining cgroups before exec
            proc = subprocess.Popen(  # pylint: disable=ansible-bad-function
                argv,
                stdin=devnull,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd="/",
                close_fds=True,
                start_new_session=True,
                preexec_fn=join_cgroups,  # must run between fork and exec
            )
        time.sleep(settle)
        if proc.poll() is not None:
            raise LabError(f"{unit} exited at once (rc={proc.returncode}); log {log_path}: {_tail(log_path)}")
        with open(os.path.join(self.instance_run_dir, unit + ".pid"), "w", encoding="ascii") as fh:
            fh.write(f"{proc.pid}\n")
        return proc.pid

    def wait_listening(self, unit: str, pid: int, address: str, port: int, timeout: float = 30.0) -> None:
        """Return once the unit's process listens on address:port; fail when another process holds it.

        A daemon that cannot bind may keep running (apt-cacher-ng does), and a client reaching the port would
        then talk to the other process without anyone noticing: check who listens, not only that someone does.
        """
        deadline = time.monotonic() + timeout
        while True:
            holders = port_holders(self.run(["ss", "-Hltnp"]), address, port)
            foreign = [h for h in holders if h[1] != pid]
            if foreign:
                taken = ", ".join(f"{local} {name} (pid {hpid})" for local, hpid, name in foreign)
                raise LabError(
                    f"{unit}: {address}:{port} is taken by another process: {taken}; stop it, or give "
                    "the lab another port"
                )
            if holders:
                return
            if time.monotonic() > deadline:
                log_path = os.path.join(self.instance_run_dir, unit + ".log")
                raise LabError(
                    f"{unit} (pid {pid}) does not listen on {address}:{port} after {timeout:.0f} s; "
                    f"log {log_path}: {_tail(log_path)}"
                )
            time.sleep(0.5)

    # -- mounts

    def mounts(self, root: str) -> list[str]:
        with open("/proc/self/mountinfo", encoding="utf-8") as fh:
            return mounts_under(fh.read(), root)

    def mount_overlay(self, lower: str, upper: str, work: str, target: str) -> None:
        if target in self.mounts(target):
            with open("/proc/self/mountinfo", encoding="utf-8") as fh:
                mounted = overlay_lowerdir(fh.read(), target)
            if mounted is not None and mounted != lower:
                raise LabError(
                    f"{target} is mounted over base {mounted}, not {lower} (the base package list changed):"
                    " recreate the instance (lab_state=absent, then present)"
                )
            return
        for path in (upper, work, target):
            if not self.check_mode:
                os.makedirs(path, exist_ok=True)
        opts = f"lowerdir={lower},upperdir={upper},workdir={work}"
        self.change(f"mount overlay {target}", ["mount", "-t", "overlay", "overlay", "-o", opts, target])

    def unmount_all(self, root: str) -> None:
        for point in self.mounts(root):
            self.change(f"unmount {point}")
            if self.check_mode:
                continue
            rc, _out, _err = self.runner(["umount", point])
            if rc != 0:
                self.run(["umount", "-l", point])
        if not self.check_mode and self.mounts(root):
            raise LabError(f"mounts under {root} remain: {self.mounts(root)}")

    # -- files

    def remove_tree(self, path: str) -> None:
        if not os.path.lexists(path):
            return
        if self.mounts(path):
            raise LabError(f"refusing to delete {path}: mounts remain under it: {self.mounts(path)}")
        self.change(f"remove {path}")
        if not self.check_mode:
            # A file that vanished meanwhile (a concurrent teardown, a node's last writes) is already gone.
            shutil.rmtree(path, onerror=_ignore_missing)

    def remove_cgroups(self, unit: str | None = None) -> None:
        for top in self.cgroup_dirs(unit):
            if not os.path.isdir(top):
                continue
            self.change(f"remove cgroup {top}")
            if self.check_mode:
                continue
            for dirpath, _subdirs, _names in os.walk(top, topdown=False):
                os.rmdir(dirpath)

    # -- network

    def delete_netns(self, ns: str) -> None:
        self.change(f"delete netns {ns}")
        if self.check_mode:
            return
        rc, _out, err = self.runner(["ip", "netns", "delete", ns])
        if rc != 0 and os.path.lexists(f"/run/netns/{ns}"):
            # File left without a mount by an interrupted `ip netns add`.
            if ns in self.mounts(f"/run/netns/{ns}"):
                raise LabError(f"cannot delete netns {ns}: {err.strip()}")
            os.unlink(f"/run/netns/{ns}")

    def delete_link(self, ifname: str, netns: str | None = None) -> None:
        self.change(f"delete link {ifname}" + (f" in {netns}" if netns else ""))
        if not self.check_mode:
            argv = ["ip"] + (["-n", netns] if netns else []) + ["link", "del", ifname]
            rc, _out, err = self.runner(argv)
            # A veth vanishes with its peer: deleting one end may already have removed this one.
            if rc != 0 and ifname in self.links(netns):
                raise LabError(f"{' '.join(argv)} failed: {err.strip()}")


def exec_argv(argv: list[str]) -> list[str]:
    """The command line a unit shows once running: `env NAME=VALUE... CMD...` and `nsenter OPTS -- CMD...`
    exec CMD in place (a node's argv has both)."""
    if argv[:1] in (["env"], ["/usr/bin/env"]):
        rest = argv[1:]
        while rest and "=" in rest[0] and not rest[0].startswith("-"):
            rest = rest[1:]
        return exec_argv(rest)
    if argv[:1] == ["nsenter"] and "--" in argv:
        return argv[argv.index("--") + 1 :]
    return argv


def _read_pids(path: str) -> set[int]:
    try:
        with open(path, encoding="ascii") as fh:
            return {int(x) for x in fh.read().split()}
    except OSError:
        return set()


def _ignore_missing(func: Callable[..., object], path: str, exc_info: tuple) -> None:
    if not isinstance(exc_info[1], FileNotFoundError):
        raise exc_info[1]


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            raw = fh.read()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0")[:-1]]


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def _nspid(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as fh:
            return parse_nspid(fh.read())
    except OSError:
        return []


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _tail(path: str, lines: int = 15) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return " | ".join(fh.read().splitlines()[-lines:])
    except OSError:
        return ""
