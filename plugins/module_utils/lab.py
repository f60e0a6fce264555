# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The local virtual cluster ("lab"): names, wiring plan and host-side plumbing.

Everything an instance creates on the host carries its prefix ``<lab>-`` (netns, links),
lives under ``<cache_dir>/<lab>/`` or ``<run_dir>/<lab>/`` (files, mounts) or under the
cgroup ``rdmaops-lab/<lab>/`` (processes), so teardown can find leftovers by prefix alone,
without trusting a state file that a crash may not have written.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

CGROUP_ROOT = "rdmaops-lab"
# No '-' in the name: '<lab>-' must be a prefix that no other instance's names can start with.
LAB_NAME_RE = re.compile(r"^[a-z][a-z0-9]{0,9}$")
NODE_PREFIX_RE = re.compile(r"^[a-z][a-z0-9]{0,11}$")
IFNAMSIZ = 15
MGMT_NODE_OFFSET = 10
MGMT_IFNAME = "mgmt0"
DATA_PORT_RE = re.compile(r"^data\d+$")
TOPOLOGIES = ("mesh", "switched")
MAX_NODES = 32


class LabError(Exception):
    """A bad input or a host operation that failed; the message names the culprit."""


# ---------------------------------------------------------------- names and plan


def check_lab_name(name: str) -> None:
    if not LAB_NAME_RE.match(name):
        raise LabError(
            f"lab name {name!r} is invalid: use 1-10 characters, a lowercase letter first, "
            "then lowercase letters or digits (no '-': it separates the instance prefix)"
        )


def node_names(prefix: str, count: int) -> list[str]:
    if not NODE_PREFIX_RE.match(prefix):
        raise LabError(f"node prefix {prefix!r} is invalid: use a lowercase letter, then letters or digits")
    if not 1 <= count <= MAX_NODES:
        raise LabError(f"node count {count} is out of range 1..{MAX_NODES}")
    return [f"{prefix}{i}" for i in range(1, count + 1)]


def netns_name(lab: str, node: str) -> str:
    return f"{lab}-{node}"


def mgmt_bridge(lab: str) -> str:
    return f"{lab}-mbr"


def fabric_bridge(lab: str) -> str:
    return f"{lab}-dbr"


def mgmt_host_ifname(lab: str, index: int) -> str:
    return _ifname(f"{lab}-m{index}")


def fabric_host_ifname(lab: str, index: int) -> str:
    return _ifname(f"{lab}-d{index}")


def _ifname(name: str) -> str:
    if len(name) > IFNAMSIZ:
        raise LabError(f"interface name {name!r} is longer than the kernel's {IFNAMSIZ} characters")
    return name


def stable_mac(*parts: str) -> str:
    """A locally administered unicast MAC derived from the names: the same after every re-creation."""
    digest = bytearray(hashlib.sha256("/".join(parts).encode()).digest()[:6])
    digest[0] = (digest[0] & 0xFC) | 0x02
    return ":".join(f"{b:02x}" for b in digest)


def mesh_port(node_index: int, peer_index: int) -> str:
    """Port of node i towards peer j: ``data<j-1>`` below i, ``data<j-2>`` above.

    Ports towards existing peers never change when nodes are appended.
    """
    if node_index == peer_index or node_index < 1 or peer_index < 1:
        raise LabError(f"no mesh port between node indices {node_index} and {peer_index}")
    return f"data{peer_index - 1 if peer_index < node_index else peer_index - 2}"


@dataclass
class NodePlan:
    name: str
    index: int
    netns: str
    mgmt_ip: str
    mgmt_host_if: str
    mgmt_mac: str
    mgmt_host_mac: str
    # peer name -> local port (mesh) or {"fabric": "data0"} (switched)
    ports: dict[str, str] = field(default_factory=dict)
    macs: dict[str, str] = field(default_factory=dict)


@dataclass
class MeshLink:
    a: str
    a_if: str
    b: str
    b_if: str


@dataclass
class LabPlan:
    lab: str
    topology: str
    mgmt_cidr: str
    mgmt_host_ip: str
    prefixlen: int
    nodes: list[NodePlan]
    links: list[MeshLink]

    def as_dict(self) -> dict[str, Any]:
        return {
            "lab": self.lab,
            "topology": self.topology,
            "mgmt_cidr": self.mgmt_cidr,
            "mgmt_host_ip": self.mgmt_host_ip,
            "prefixlen": self.prefixlen,
            "mgmt_bridge": mgmt_bridge(self.lab),
            "fabric_bridge": fabric_bridge(self.lab) if self.topology == "switched" else None,
            "nodes": [vars(n) for n in self.nodes],
            "links": [vars(link) for link in self.links],
        }


def make_plan(lab: str, nodes: list[str], topology: str, mgmt_cidr: str) -> LabPlan:
    check_lab_name(lab)
    if topology not in TOPOLOGIES:
        raise LabError(f"topology {topology!r} is not one of {', '.join(TOPOLOGIES)}")
    if len(set(nodes)) != len(nodes):
        raise LabError(f"node names are not unique: {nodes}")
    if not 1 <= len(nodes) <= MAX_NODES:
        raise LabError(f"node count {len(nodes)} is out of range 1..{MAX_NODES}")
    try:
        net = ipaddress.IPv4Network(mgmt_cidr, strict=True)
    except ValueError as exc:
        raise LabError(f"management CIDR {mgmt_cidr!r} is not an IPv4 network: {exc}") from exc
    if net.num_addresses - 2 < MGMT_NODE_OFFSET + len(nodes):
        raise LabError(
            f"management CIDR {mgmt_cidr} has no room for {len(nodes)} nodes at .{MGMT_NODE_OFFSET + 1}+"
        )
    host_ip = str(net.network_address + 1)
    plans: list[NodePlan] = []
    for i, node in enumerate(nodes, start=1):
        plans.append(
            NodePlan(
                name=node,
                index=i,
                netns=netns_name(lab, node),
                mgmt_ip=str(net.network_address + MGMT_NODE_OFFSET + i),
                mgmt_host_if=mgmt_host_ifname(lab, i),
                mgmt_mac=stable_mac(lab, node, MGMT_IFNAME),
                mgmt_host_mac=stable_mac(lab, node, "host", MGMT_IFNAME),
            )
        )
    links: list[MeshLink] = []
    if topology == "mesh":
        for a in plans:
            for b in plans:
                if a.index < b.index:
                    link = MeshLink(a.name, mesh_port(a.index, b.index), b.name, mesh_port(b.index, a.index))
                    links.append(link)
                    a.ports[b.name] = link.a_if
                    b.ports[a.name] = link.b_if
        for p in plans:
            p.macs = {ifname: stable_mac(lab, p.name, ifname) for ifname in p.ports.values()}
    else:
        for p in plans:
            p.ports = {"fabric": "data0"}
            p.macs = {"data0": stable_mac(lab, p.name, "data0")}
    return LabPlan(lab, topology, str(net), host_ip, net.prefixlen, plans, links)


def mesh_alias(lab: str, link: MeshLink) -> str:
    return f"{lab}:mesh:{link.a}:{link.a_if}-{link.b}:{link.b_if}"


def fabric_alias(lab: str, node: str) -> str:
    return f"{lab}:fabric:{node}:data0"


def mgmt_alias(lab: str, node: str) -> str:
    return f"{lab}:mgmt:{node}"


# ---------------------------------------------------------------- parsing


def parse_mountinfo(text: str) -> list[str]:
    """Mount points from /proc/self/mountinfo, octal escapes decoded, in mount order."""
    points: list[str] = []
    for line in text.splitlines():
        fields = line.split(" ")
        if len(fields) > 4:
            points.append(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4]))
    return points


def mounts_under(mountinfo: str, root: str) -> list[str]:
    """Mount points at or below root, deepest (and latest) first: the order to unmount them."""
    root = root.rstrip("/")
    found = [p for p in parse_mountinfo(mountinfo) if p == root or p.startswith(root + "/")]
    return list(reversed(found))


def overlay_lowerdir(mountinfo: str, target: str) -> str | None:
    """The lowerdir option of the overlay mounted at target (the last such mount), or None."""
    found = None
    for line in mountinfo.splitlines():
        left, _sep, right = line.partition(" - ")
        fields, rfields = left.split(" "), right.split(" ")
        if len(fields) > 4 and len(rfields) > 2 and rfields[0] == "overlay" and fields[4] == target:
            opts = dict(o.partition("=")[::2] for o in rfields[2].split(","))
            found = opts.get("lowerdir")
    return found


def parse_nspid(status: str) -> list[int]:
    for line in status.splitlines():
        if line.startswith("NSpid:"):
            return [int(x) for x in line.split()[1:]]
    return []


def parse_cgroup_mounts(mountinfo: str) -> dict[str, str]:
    """Mount points of the name=systemd v1 hierarchy and of cgroup2: {'systemd': p, 'unified': p}."""
    found: dict[str, str] = {}
    for line in mountinfo.splitlines():
        left, _sep, right = line.partition(" - ")
        fields, rfields = left.split(" "), right.split(" ")
        if len(fields) < 5 or len(rfields) < 3:
            continue
        fstype, opts = rfields[0], rfields[2].split(",")
        if fstype == "cgroup" and "name=systemd" in opts:
            found.setdefault("systemd", fields[4])
        elif fstype == "cgroup2":
            found.setdefault("unified", fields[4])
    return found


# ---------------------------------------------------------------- host plumbing

Runner = Callable[[list[str]], tuple[int, str, str]]


_SS_PROCESS = re.compile(r'\("([^"]*)",pid=(\d+)')
_WILDCARDS = ("0.0.0.0", "*", "[::]", "::")


def port_holders(ss_output: str, address: str, port: int) -> list[tuple[str, int, str]]:
    """(local address, pid, process name) of every TCP listener that takes ``address:port``.

    ``ss_output``: ``ss -Hltnp``. A listener on the wildcard address takes every address of the host, which is
    how a system-wide apt-cacher-ng (0.0.0.0:3142) keeps an instance's proxy from binding its own address.
    """
    holders = []
    for line in ss_output.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        local = fields[3]
        host, _sep, lport = local.rpartition(":")
        if lport != str(port) or host.split("%")[0] not in (address, *_WILDCARDS):
            continue
        for name, pid in _SS_PROCESS.findall(line) or [("?", "0")]:
            holders.append((local, int(pid), name))
    return holders


def subprocess_runner(argv: list[str]) -> tuple[int, str, str]:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
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
            proc = subprocess.Popen(
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
    """The command line a unit shows once running: `nsenter OPTS -- CMD...` execs CMD in place."""
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


# ---------------------------------------------------------------- wiring (present)


def _is_up(link: dict[str, Any]) -> bool:
    return "UP" in link.get("flags", [])


class Fabric:
    """Makes the host's links, bridges and namespaces match a LabPlan; changes only what differs."""

    def __init__(self, host: Host, plan: LabPlan, fabric_mtu: int) -> None:
        self.host = host
        self.plan = plan
        self.fabric_mtu = fabric_mtu

    def check_cidr_free(self) -> None:
        """Fail when another interface (another instance, a real network) has an address in the CIDR."""
        net = ipaddress.IPv4Network(self.plan.mgmt_cidr)
        own = mgmt_bridge(self.plan.lab)
        for entry in self.host.ip_json(["-4", "addr", "show"]):
            for addr in entry.get("addr_info", []):
                iface = ipaddress.IPv4Interface(f"{addr['local']}/{addr['prefixlen']}")
                if entry.get("ifname") != own and iface.network.overlaps(net):
                    raise LabError(
                        f"management CIDR {net} overlaps {iface} on host interface {entry.get('ifname')}"
                        " (another lab instance or a real network): choose another lab_mgmt_cidr"
                    )

    def apply(self) -> None:
        h, plan = self.host, self.plan
        self.check_cidr_free()
        wanted_host = {mgmt_bridge(plan.lab)} | {n.mgmt_host_if for n in plan.nodes}
        if plan.topology == "switched":
            wanted_host |= {fabric_bridge(plan.lab)} | {
                fabric_host_ifname(plan.lab, n.index) for n in plan.nodes
            }
        # Leftovers of another topology or of removed nodes go first, so names can be reused.
        for name in h.own_host_links():
            if name not in wanted_host:
                h.delete_link(name)
        self._bridge(mgmt_bridge(plan.lab), f"{plan.mgmt_host_ip}/{plan.prefixlen}", None)
        if plan.topology == "switched":
            self._bridge(fabric_bridge(plan.lab), None, self.fabric_mtu)
        present = set(h.netns_list())
        for node in plan.nodes:
            if node.netns not in present:
                h.change(f"add netns {node.netns}", ["ip", "netns", "add", node.netns])
            self._up("lo", node.netns)
            self._mgmt(node)
        self._data_ports()

    def _links(self, netns: str | None) -> dict[str, dict[str, Any]]:
        if netns and self.host.check_mode and netns not in self.host.netns_list():
            return {}
        return self.host.links(netns)

    def _up(self, ifname: str, netns: str | None) -> None:
        link = self._links(netns).get(ifname)
        if link is None or not _is_up(link):
            argv = ["ip"] + (["-n", netns] if netns else []) + ["link", "set", "dev", ifname, "up"]
            self.host.change(f"set {ifname} up" + (f" in {netns}" if netns else ""), argv)

    def _bridge(self, name: str, address: str | None, mtu: int | None) -> None:
        h = self.host
        link = h.links().get(name)
        if link is None:
            h.change(
                f"add bridge {name}",
                ["ip", "link", "add", name, "address", stable_mac(self.plan.lab, name), "type", "bridge"],
            )
        if mtu is not None and (link is None or link.get("mtu") != mtu):
            h.change(f"set {name} mtu {mtu}", ["ip", "link", "set", "dev", name, "mtu", str(mtu)])
        if address is not None:
            have = set()
            if link is not None:
                for entry in h.ip_json(["addr", "show", "dev", name]):
                    have |= {f"{a['local']}/{a['prefixlen']}" for a in entry.get("addr_info", [])}
            if address not in have:
                h.change(f"add {address} to {name}", ["ip", "addr", "add", address, "dev", name])
        self._up(name, None)

    def _veth_ok(
        self, a: dict[str, Any] | None, b: dict[str, Any] | None, alias: str, macs: tuple[str, str]
    ) -> bool:
        return (
            a is not None
            and b is not None
            and a.get("ifalias") == alias
            and b.get("ifalias") == alias
            and (a.get("address"), b.get("address")) == macs
        )

    def _mgmt(self, node: NodePlan) -> None:
        h, lab = self.host, self.plan.lab
        alias = mgmt_alias(lab, node.name)
        hl = h.links().get(node.mgmt_host_if)
        nl = self._links(node.netns).get(MGMT_IFNAME)
        if not self._veth_ok(hl, nl, alias, (node.mgmt_host_mac, node.mgmt_mac)):
            if hl is not None:
                h.delete_link(node.mgmt_host_if)
            if nl is not None and MGMT_IFNAME in self._links(node.netns):
                h.delete_link(MGMT_IFNAME, node.netns)
            h.change(
                f"add veth {node.mgmt_host_if} <-> {node.netns}:{MGMT_IFNAME}",
                [
                    "ip",
                    "link",
                    "add",
                    node.mgmt_host_if,
                    "address",
                    node.mgmt_host_mac,
                    "type",
                    "veth",
                    "peer",
                    "name",
                    MGMT_IFNAME,
                    "address",
                    node.mgmt_mac,
                    "netns",
                    node.netns,
                ],
            )
            if not h.check_mode:
                h.run(["ip", "link", "set", "dev", node.mgmt_host_if, "alias", alias])
                h.run(["ip", "-n", node.netns, "link", "set", "dev", MGMT_IFNAME, "alias", alias])
            hl = None
        if hl is None or hl.get("master") != mgmt_bridge(lab):
            h.change(
                f"attach {node.mgmt_host_if} to {mgmt_bridge(lab)}",
                ["ip", "link", "set", "dev", node.mgmt_host_if, "master", mgmt_bridge(lab)],
            )
        self._up(node.mgmt_host_if, None)
        self._up(MGMT_IFNAME, node.netns)
        address = f"{node.mgmt_ip}/{self.plan.prefixlen}"
        have: set[str] = set()
        if not (h.check_mode and node.netns not in h.netns_list()):
            for entry in h.ip_json(["addr", "show", "dev", MGMT_IFNAME], node.netns):
                have |= {f"{a['local']}/{a['prefixlen']}" for a in entry.get("addr_info", [])}
        if address not in have:
            h.change(
                f"add {address} to {node.netns}:{MGMT_IFNAME}",
                ["ip", "-n", node.netns, "addr", "add", address, "dev", MGMT_IFNAME],
            )

    def _data_ports(self) -> None:
        h, plan = self.host, self.plan
        by_name = {n.name: n for n in plan.nodes}
        links = {n.netns: self._links(n.netns) for n in plan.nodes}
        wanted = {n.netns: set(n.macs) for n in plan.nodes}
        for ns, ports in links.items():
            for ifname in ports:
                if DATA_PORT_RE.match(ifname) and ifname not in wanted[ns]:
                    h.delete_link(ifname, ns)
        if plan.topology == "mesh":
            for link in plan.links:
                a, b = by_name[link.a], by_name[link.b]
                alias = mesh_alias(plan.lab, link)
                la = self._links(a.netns).get(link.a_if)
                lb = self._links(b.netns).get(link.b_if)
                if not self._veth_ok(la, lb, alias, (a.macs[link.a_if], b.macs[link.b_if])):
                    if la is not None and link.a_if in self._links(a.netns):
                        h.delete_link(link.a_if, a.netns)
                    if lb is not None and link.b_if in self._links(b.netns):
                        h.delete_link(link.b_if, b.netns)
                    h.change(
                        f"add veth {a.netns}:{link.a_if} <-> {b.netns}:{link.b_if}",
                        [
                            "ip",
                            "-n",
                            a.netns,
                            "link",
                            "add",
                            link.a_if,
                            "address",
                            a.macs[link.a_if],
                            "type",
                            "veth",
                            "peer",
                            "name",
                            link.b_if,
                            "address",
                            b.macs[link.b_if],
                            "netns",
                            b.netns,
                        ],
                    )
                    if not h.check_mode:
                        h.run(["ip", "-n", a.netns, "link", "set", "dev", link.a_if, "alias", alias])
                        h.run(["ip", "-n", b.netns, "link", "set", "dev", link.b_if, "alias", alias])
                self._up(link.a_if, a.netns)
                self._up(link.b_if, b.netns)
            return
        bridge = fabric_bridge(plan.lab)
        for node in plan.nodes:
            host_if = fabric_host_ifname(plan.lab, node.index)
            alias = fabric_alias(plan.lab, node.name)
            hl = h.links().get(host_if)
            nl = self._links(node.netns).get("data0")
            host_mac = stable_mac(plan.lab, node.name, "host", "data0")
            if not self._veth_ok(hl, nl, alias, (host_mac, node.macs["data0"])):
                if hl is not None:
                    h.delete_link(host_if)
                if nl is not None and "data0" in self._links(node.netns):
                    h.delete_link("data0", node.netns)
                h.change(
                    f"add veth {host_if} <-> {node.netns}:data0",
                    [
                        "ip",
                        "link",
                        "add",
                        host_if,
                        "address",
                        host_mac,
                        "mtu",
                        str(self.fabric_mtu),
                        "type",
                        "veth",
                        "peer",
                        "name",
                        "data0",
                        "address",
                        node.macs["data0"],
                        "netns",
                        node.netns,
                    ],
                )
                if not h.check_mode:
                    h.run(["ip", "link", "set", "dev", host_if, "alias", alias])
                    h.run(["ip", "-n", node.netns, "link", "set", "dev", "data0", "alias", alias])
                hl = None
            if hl is None or hl.get("master") != bridge:
                h.change(
                    f"attach {host_if} to {bridge}", ["ip", "link", "set", "dev", host_if, "master", bridge]
                )
            if hl is not None and hl.get("mtu") != self.fabric_mtu:
                h.change(
                    f"set {host_if} mtu", ["ip", "link", "set", "dev", host_if, "mtu", str(self.fabric_mtu)]
                )
            self._up(host_if, None)
            self._up("data0", node.netns)


# ---------------------------------------------------------------- teardown


def node_of_host_link(lab: str, link: dict[str, Any]) -> str | None:
    """The node a host-side link belongs to, from the alias written when it was made."""
    parts = str(link.get("ifalias", "")).split(":")
    if len(parts) >= 3 and parts[0] == lab and parts[1] in ("mgmt", "fabric"):
        return parts[2]
    return None


def teardown(host: Host, keep: list[str] | None, infra_units: tuple[str, ...], timeout: float) -> list[str]:
    """Remove the whole instance (keep is None) or only the nodes not in keep; returns removed node names."""
    lab = host.lab
    own_ns = host.own_netns()
    if keep is None:
        host.stop(None, own_ns, timeout)
        host.unmount_all(host.instance_dir)
        for ns in own_ns:
            host.delete_netns(ns)
        for name in host.own_host_links():
            host.delete_link(name)
        host.remove_cgroups()
        host.remove_tree(host.instance_dir)
        host.remove_tree(host.instance_run_dir)
        # Shared parents go with the last instance (rmdir fails while another instance has entries).
        if not host.check_mode:
            for parent in [os.path.dirname(d) for d in host.cgroup_dirs()] + [host.run_dir]:
                with contextlib.suppress(OSError):
                    os.rmdir(parent)
        return sorted(ns[len(lab) + 1 :] for ns in own_ns)
    nodes = {ns[len(lab) + 1 :] for ns in own_ns}
    for top in host.cgroup_dirs():
        if os.path.isdir(top):
            nodes |= {d for d in os.listdir(top) if os.path.isdir(os.path.join(top, d))}
    if os.path.isdir(host.instance_dir):
        nodes |= {
            d
            for d in os.listdir(host.instance_dir)
            if os.path.isdir(os.path.join(host.instance_dir, d, "upper"))
        }
    gone = sorted(n for n in nodes if n not in keep and n not in infra_units)
    host_links = host.links()
    for node in gone:
        ns = netns_name(lab, node)
        host.stop(node, [ns] if ns in own_ns else [], timeout)
        host.unmount_all(os.path.join(host.instance_dir, node))
        if ns in own_ns:
            host.delete_netns(ns)
        for name, link in host_links.items():
            if name.startswith(lab + "-") and node_of_host_link(lab, link) == node and name in host.links():
                host.delete_link(name)
        host.remove_cgroups(node)
        host.remove_tree(os.path.join(host.instance_dir, node))
        for suffix in (".pid", ".log"):
            path = os.path.join(host.instance_run_dir, node + suffix)
            if os.path.exists(path):
                host.change(f"remove {path}")
                if not host.check_mode:
                    os.unlink(path)
    return gone


# ---------------------------------------------------------------- node root files


def render_block(current: str, block: str, marker: str) -> str:
    """current with the lines between '# BEGIN marker' and '# END marker' replaced by block (or appended)."""
    begin, end = f"# BEGIN {marker}", f"# END {marker}"
    body = block if block.endswith("\n") or not block else block + "\n"
    lines = current.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.rstrip("\n") == begin]
    ends = [i for i, line in enumerate(lines) if line.rstrip("\n") == end]
    wrapped = f"{begin}\n{body}{end}\n"
    if starts and ends and ends[0] > starts[0]:
        return "".join(lines[: starts[0]]) + wrapped + "".join(lines[ends[0] + 1 :])
    if current and not current.endswith("\n"):
        current += "\n"
    return current + wrapped


def write_root_file(host: Host, root: str, path: str, content: str, mode: int, marker: str | None) -> None:
    """Write one file inside a node's root (only when it differs); with marker, only a managed block."""
    rel = path.lstrip("/")
    if not rel or ".." in rel.split("/"):
        raise LabError(f"file path {path!r} must be a path inside the node's root")
    target = os.path.join(root, rel)
    try:
        with open(target, encoding="utf-8") as fh:
            current: str | None = fh.read()
    except FileNotFoundError:
        current = None
    wanted = render_block(current or "", content, marker) if marker else content
    same_mode = current is not None and (os.stat(target).st_mode & 0o7777) == mode
    if current == wanted and same_mode:
        return
    host.change(f"write {target}")
    if host.check_mode:
        return
    os.makedirs(os.path.dirname(target), exist_ok=True)
    tmp = target + ".rdmaops-lab-tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(wanted)
    os.chmod(tmp, mode)
    os.replace(tmp, target)
