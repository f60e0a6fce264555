# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers of what the host reports: /proc/self/mountinfo, /proc/<pid>/status, ``ss -Hltnp``. Pure."""

from __future__ import annotations

import re


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
