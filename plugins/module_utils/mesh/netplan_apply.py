# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Install a netplan file and keep it only if the network still answers afterwards.

`netplan try` cannot be used unattended (it reverts at once with stdin on /dev/null and
exits 0 either way) and `netplan apply` needs udev. This does what works on servers
with the networkd renderer and in containers alike: back up, install, `netplan
generate` (restore on failure), `networkctl reload`, wait until networkd shows the
new addresses (the reload is asynchronous: a probe right after it still sees the old
configuration; interfaces still without them halfway through the wait get one `networkctl
reconfigure`), then probe with retries the targets that answered before the change,
until one round in which all of them answer; restore, regenerate and reload if any
stopped answering. Side effects go through `ApplyOps` so the decisions are unit-tested.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import path_probe, ping

GENERATE = ["netplan", "generate"]
RELOAD = ["networkctl", "reload"]
# A test hook (tests/mesh/run.py's cut_off): while this file exists, the module stops itself (SIGSTOP) right
# after the reload, before its probes, and writes its PID beside it; a test cuts the node off in that moment
# and sends SIGCONT. /run is root's and is emptied at boot, so nothing else sets it by accident.
HOLD_FLAG = "/run/rdmaops-test/netplan_apply.hold"


def hold_if_asked(flag: str = HOLD_FLAG) -> None:
    """Stop here (SIGSTOP) when the test hook's flag file exists; PID in FLAG.pid, for the SIGCONT."""
    if os.path.exists(flag):
        with open(f"{flag}.pid", "w", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()}\n")
        os.kill(os.getpid(), signal.SIGSTOP)


class ApplyError(Exception):
    """The new file was not kept; ``details`` says what happened and whether restore worked."""

    def __init__(self, msg: str, details: dict[str, Any]) -> None:
        super().__init__(msg)
        self.details = details


@dataclass(frozen=True)
class Target:
    """Something that must keep answering: ``size`` > 0 sends a don't-fragment ping of that payload."""

    address: str
    size: int = 0
    # how an operator names the path ("data0 -> node1 (link address)"): errors lead with it, not the address
    name: str = ""
    # the local address to send from (ping -I): a fabric NIC's own, so its source rule and table are probed
    source: str = ""

    def label(self) -> str:
        addr = f"{self.address}, DF {self.size} B" if self.size else self.address
        return (
            f"{self.name} ({addr})"
            if self.name
            else (f"{self.address} (DF {self.size} B)" if self.size else addr)
        )


def parse_targets(raw: Sequence[Any]) -> list[Target]:
    targets: list[Target] = []
    for item in raw:
        if isinstance(item, str):
            targets.append(Target(item))
        elif isinstance(item, dict) and item.get("address"):
            targets.append(
                Target(
                    str(item["address"]),
                    int(item.get("size") or 0),
                    str(item.get("name") or ""),
                    str(item.get("source") or ""),
                )
            )
        else:
            raise ValueError(f"check target {item!r} is neither an address nor a mapping with 'address'")
    return targets


def parse_expect(raw: Sequence[Any]) -> list[tuple[str, str]]:
    """[{ifname, address: 'a.b.c.d/len'}] -> [(ifname, address)]."""
    out: list[tuple[str, str]] = []
    for item in raw:
        if not isinstance(item, dict) or not item.get("ifname") or "/" not in str(item.get("address", "")):
            raise ValueError(
                f"expected address {item!r} is not a mapping with ifname and address 'a.b.c.d/len'"
            )
        out.append((str(item["ifname"]), str(item["address"])))
    return out


def ping_argv(target: Target, wait_s: int = 1) -> list[str]:
    """One quiet echo: only the exit status is read."""
    return ping.argv(
        target.address, wait_s=wait_s, size=target.size, source=target.source or None, quiet=True
    )


def probe_parallel(targets: Sequence[Target], wait_s: int = 1) -> list[bool]:
    """One ping per target, all at once, so a probe round takes about ``wait_s``."""
    commands = [ping_argv(t, wait_s) for t in targets]
    results = path_probe.run_parallel(commands, timeout=wait_s + 5, max_parallel=len(commands))
    return [result["rc"] == 0 for result in results]


def parse_ip_addr(text: str) -> dict[str, set[str]]:
    """{ifname: {'a.b.c.d/len', ...}} from `ip -j addr show` (IPv4 only)."""
    out: dict[str, set[str]] = {}
    for link in json.loads(text or "[]"):
        addrs = out.setdefault(str(link.get("ifname", "")), set())
        for info in link.get("addr_info", []):
            if info.get("family") == "inet":
                addrs.add(f"{info['local']}/{info['prefixlen']}")
    return out


@dataclass(frozen=True)
class LinkState:
    """What management connectivity depends on, per interface: up or not, IPv4 addresses, static routes."""

    links: dict[str, tuple[bool, frozenset[str]]]
    routes: frozenset[tuple[str, str, str, str]]  # (dst, gateway, dev, prefsrc), not the kernel's own


def parse_state(addr_text: str, route_text: str) -> LinkState:
    """LinkState from `ip -j addr show` and `ip -j route show` (IPv4)."""
    links: dict[str, tuple[bool, frozenset[str]]] = {}
    for link in json.loads(addr_text or "[]"):
        name = str(link.get("ifname", ""))
        addrs = frozenset(
            f"{info['local']}/{info['prefixlen']}"
            for info in link.get("addr_info", [])
            if info.get("family") == "inet"
        )
        links[name] = ("UP" in (link.get("flags") or []), addrs)
    routes = frozenset(
        (str(r.get("dst", "")), str(r.get("gateway", "")), str(r.get("dev", "")), str(r.get("prefsrc", "")))
        for r in json.loads(route_text or "[]")
        if r.get("protocol") != "kernel" and r.get("dev")
    )
    return LinkState(links=links, routes=routes)


def read_state() -> LinkState | None:
    rc_a, addr, _err_a = run_command(["ip", "-j", "addr", "show"])
    rc_r, route, _err_r = run_command(["ip", "-j", "route", "show", "table", "main"])
    if rc_a != 0 or rc_r != 0:
        return None
    return parse_state(addr, route)


def repair_commands(before: LinkState, now: LinkState) -> list[list[str]]:
    """`ip` commands that bring interfaces that existed before back to their state before the apply.

    After the previous netplan file is restored, networkd re-applies it, but an interface the new file
    had taken over (the management port, say) is left as networkd left it: addresses flushed, others
    added. This restores it: link up, addresses back, the new file's addresses removed, static routes back.
    """
    cmds: list[list[str]] = []
    for name, (was_up, addrs) in sorted(before.links.items()):
        if name not in now.links:
            continue  # gone (a virtual device the new file replaced): networkd recreates its own
        is_up, have = now.links[name]
        if was_up and not is_up:
            cmds.append(["ip", "link", "set", "dev", name, "up"])
        for addr in sorted(have - addrs):
            cmds.append(["ip", "addr", "del", addr, "dev", name])
        for addr in sorted(addrs - have):
            cmds.append(["ip", "addr", "add", addr, "dev", name])
    for dst, gateway, dev, src in sorted(before.routes - now.routes):
        if dev not in now.links:
            continue
        cmd = ["ip", "route", "replace", dst]
        if gateway:
            cmd += ["via", gateway]
        cmd += ["dev", dev]
        if src:
            cmd += ["src", src]
        cmds.append(cmd)
    return cmds


def read_addresses() -> dict[str, set[str]]:
    rc, out, _err = run_command(["ip", "-j", "addr", "show"])
    return parse_ip_addr(out) if rc == 0 else {}


def run_command(argv: list[str]) -> tuple[int, str, str]:
    try:
        # subprocess, not run_command: run_command has no timeout
        proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=120)  # pylint: disable=ansible-bad-function
    except FileNotFoundError as exc:
        return 127, "", str(exc)
    except subprocess.TimeoutExpired:
        return 124, "", f"{' '.join(argv)} timed out"
    return proc.returncode, proc.stdout, proc.stderr


def read_file(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def write_file(path: str, content: str, mode: int) -> None:
    """Atomic replace, created with the final mode so the file is never world-readable."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".rdmaops-", dir=directory)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(content)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def remove_file(path: str) -> None:
    if os.path.exists(path):
        os.unlink(path)


def file_mode(path: str) -> int | None:
    try:
        return os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        return None


@dataclass
class ApplyOps:
    read: Callable[[str], str | None] = read_file
    write: Callable[[str, str, int], None] = write_file
    remove: Callable[[str], None] = remove_file
    mode: Callable[[str], int | None] = file_mode
    chmod: Callable[[str, int], None] = os.chmod
    run: Callable[[list[str]], tuple[int, str, str]] = run_command
    probe: Callable[[Sequence[Target]], list[bool]] = probe_parallel
    addresses: Callable[[], dict[str, set[str]]] = read_addresses
    sleep: Callable[[float], None] = time.sleep
    monotonic: Callable[[], float] = time.monotonic
    state: Callable[[], LinkState | None] = read_state
    hold: Callable[[], None] = hold_if_asked


@dataclass
class ApplyResult:
    changed: bool
    before: str | None
    after: str
    backup_file: str | None = None
    required: list[str] = field(default_factory=list)
    waited_s: float = 0.0
    # interfaces networkd was asked to reconfigure because their addresses were late
    reconfigured: list[str] = field(default_factory=list)


def _wait_for(targets: Sequence[Target], timeout_s: float, ops: ApplyOps, rounds: int = 1) -> list[Target]:
    """Probe until ``rounds`` consecutive rounds in which every target answers; return the silent ones.

    A whole round must pass: while networkd is still reconfiguring, targets can answer over the old
    configuration, so one answer per target collected over several rounds proves nothing. After a
    change, two rounds a second apart: networkd applies the new addresses before it drops the old ones
    of an interface it takes over, so a first round can still answer over what is about to go (seen in
    the lab: a file taking over the management port passed one round 10 ms after the reload).
    """
    start = ops.monotonic()
    passed = 0
    while True:
        answers = ops.probe(targets) if targets else []
        missing = [t for t, ok in zip(targets, answers, strict=True) if not ok]
        passed = 0 if missing else passed + 1
        if passed >= rounds or (missing and ops.monotonic() - start >= timeout_s):
            return missing
        ops.sleep(1.0)


def _wait_addresses(expect: Sequence[tuple[str, str]], timeout_s: float, ops: ApplyOps) -> list[str]:
    """Wait until every (ifname, address/len) is configured; return those still missing."""
    start = ops.monotonic()
    while True:
        have = ops.addresses()
        missing = [f"{addr} on {ifname}" for ifname, addr in expect if addr not in have.get(ifname, set())]
        if not missing or ops.monotonic() - start >= timeout_s:
            return missing
        ops.sleep(0.2)


def _ifnames(unset: Sequence[str]) -> list[str]:
    """The interfaces of _wait_addresses' "a.b.c.d/len on IFNAME" items."""
    return sorted({item.rsplit(" on ", 1)[-1] for item in unset})


def _networkd_view(unset: Sequence[str], ops: ApplyOps) -> list[str]:
    """networkd's own account of the interfaces whose addresses did not appear (state and its log lines)."""
    ifnames = _ifnames(unset)
    rc, out, err = ops.run(["networkctl", "status", "--no-pager", "--lines", "10", *ifnames])
    lines = (out if rc == 0 else err).splitlines()
    return [line.rstrip() for line in lines if line.strip()][-80:]


def _restore(dest: str, old: str | None, mode: int, ops: ApplyOps) -> list[str]:
    """Put the old file back (or remove ours) and re-apply; return the problems seen while doing so."""
    problems: list[str] = []
    if old is None:
        ops.remove(dest)
    else:
        ops.write(dest, old, mode)
    for argv in (GENERATE, RELOAD):
        rc, _out, err = ops.run(argv)
        if rc != 0:
            problems.append(f"{' '.join(argv)} failed during restore (rc={rc}): {err.strip()}")
    return problems


def _repair(before: LinkState | None, timeout_s: float, ops: ApplyOps) -> list[str]:
    """Put interfaces back as they were before the apply; return the commands run (bounded by timeout_s).

    networkd re-applies the restored file asynchronously. It gets the first half of the time to do that alone:
    `ip` commands that race its reconfiguration of the same links (two ports that swapped addresses) left
    systemd-networkd 252 failing those links with ERANGE on every later change, until it was restarted.
    Then rounds until a round needs no command; commands that fail are retried in the next round.
    """
    if before is None:
        return []
    done: list[str] = []
    start = ops.monotonic()
    while ops.monotonic() - start < timeout_s / 2:
        now = ops.state()
        if now is not None and not repair_commands(before, now):
            break
        ops.sleep(0.5)
    clean = 0
    while True:
        now = ops.state()
        cmds = repair_commands(before, now) if now is not None else []
        clean = 0 if cmds else clean + 1
        # Two clean rounds a second apart: networkd may still be working through the reload.
        if clean >= 2 or ops.monotonic() - start >= timeout_s:
            return done
        for argv in cmds:
            rc, _out, err = ops.run(argv)
            done.append(" ".join(argv) + ("" if rc == 0 else f" (rc={rc}: {err.strip()})"))
        ops.sleep(1.0)


def safe_apply(
    dest: str,
    content: str,
    *,
    mode: int = 0o600,
    targets: Sequence[Target] = (),
    expect: Sequence[tuple[str, str]] = (),
    timeout_s: float = 20.0,
    check_mode: bool = False,
    backup: bool = True,
    ops: ApplyOps | None = None,
) -> ApplyResult:
    ops = ops or ApplyOps()
    old = ops.read(dest)
    if old == content:
        if ops.mode(dest) != mode:
            # Same content, wrong mode: fix the mode only; nothing to re-apply.
            if not check_mode:
                ops.chmod(dest, mode)
            return ApplyResult(changed=True, before=old, after=content)
        return ApplyResult(changed=False, before=old, after=content)
    if check_mode:
        return ApplyResult(changed=True, before=old, after=content)

    # Only what answers now must answer afterwards: on a first run the peers have no
    # addresses yet, later the change must not break what works.
    answered = ops.probe(list(targets)) if targets else []
    required = [t for t, ok in zip(targets, answered, strict=True) if ok]
    before_state = ops.state()
    backup_file = None
    if backup and old is not None:
        backup_file = f"{dest}.rdmaops-prev"
        ops.write(backup_file, old, mode)
    ops.write(dest, content, mode)
    details: dict[str, Any] = {
        "required": [t.label() for t in required],
        "backup_file": backup_file,
        "rolled_back": True,
    }

    rc, _out, err = ops.run(GENERATE)
    if rc != 0:
        details["restore_problems"] = _restore(dest, old, mode, ops)
        raise ApplyError(
            f"netplan generate rejected the new {dest} (rc={rc}): {err.strip()}; "
            "the previous file was restored",
            details,
        )
    rc, _out, err = ops.run(RELOAD)
    if rc != 0:
        details["restore_problems"] = _restore(dest, old, mode, ops)
        details["repaired"] = _repair(before_state, timeout_s, ops)
        raise ApplyError(
            f"networkctl reload failed (rc={rc}): {err.strip()}; the previous file was restored", details
        )

    ops.hold()
    start = ops.monotonic()
    unset = _wait_addresses(expect, timeout_s / 2, ops)
    reconfigured: list[str] = []
    if unset:
        # A change normally shows within a second. A link that networkd left unconfigured or failed after the
        # reload (seen once in CI under load, renumbering every link at once) is asked again, once, directly.
        reconfigured = _ifnames(unset)
        ops.run(["networkctl", "reconfigure", *reconfigured])
        details["reconfigured"] = reconfigured
        unset = _wait_addresses(expect, max(timeout_s - (ops.monotonic() - start), 1.0), ops)
    if unset:
        # Read before the restore reloads networkd: this is the state that did not converge.
        details["networkd_status"] = _networkd_view(unset, ops)
        details["restore_problems"] = _restore(dest, old, mode, ops)
        details["repaired"] = _repair(before_state, timeout_s, ops)
        raise ApplyError(
            f"after applying {dest}, networkd did not configure {', '.join(unset)} within {timeout_s:g} s; "
            "the previous file was restored",
            details,
        )
    missing = _wait_for(required, max(timeout_s - (ops.monotonic() - start), 1.0), ops, rounds=2)
    waited = ops.monotonic() - start
    if missing:
        details["restore_problems"] = _restore(dest, old, mode, ops)
        details["repaired"] = _repair(before_state, timeout_s, ops)
        back = _wait_for(missing, timeout_s, ops)
        details["still_unreachable_after_restore"] = [t.label() for t in back]
        # from the reload to the restored configuration answering (or not): the apply's own time
        details["waited"] = round(ops.monotonic() - start, 2)
        labels = ", ".join(t.label() for t in missing)
        raise ApplyError(
            f"after applying {dest}, {labels} stopped answering within {timeout_s:g} s; "
            f"the previous configuration was restored"
            + (
                f" but {', '.join(t.label() for t in back)} still does not answer"
                if back
                else " and answers again"
            ),
            details,
        )
    return ApplyResult(
        changed=True,
        before=old,
        after=content,
        backup_file=backup_file,
        required=[t.label() for t in required],
        waited_s=round(waited, 2),
        reconfigured=reconfigured,
    )
