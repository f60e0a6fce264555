# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's fast path: is an instance still as the last lab.yml run left it?

lab.yml records, at the end of a run that brought the instance up, a digest of its inputs (every lab_*
setting and the collection's lab code) and the sha256 of the files it wrote. A later run with the same
digest skips every build step when the instance is also still alive: each unit (node, apt proxy) runs with
exactly the command line planned, each node's network namespace exists and each node's sshd answers.

The stamp lives under the run directory (a tmpfs, /run): a host reboot, which stops every node, forgets it.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.site.stamp import file_digest

STAMP_VERSION = 1
STAMP_NAME = "lab-stamp.json"
INPUTS_CHANGED = "the lab's settings or the collection's lab code changed since the last run"
NO_STAMP = "no record of a finished lab.yml run (a first run, a teardown, or a host reboot since)"


class LabStampError(ValueError):
    """Bad input; the message names the value."""


def ssh_answers(address: str, port: int = 22, timeout: float = 2.0) -> bool:
    """Whether an SSH server answers at address:port with its identification line (RFC 4253, 4.2)."""
    try:
        with socket.create_connection((address, port), timeout=timeout) as conn:
            conn.settimeout(timeout)
            return conn.recv(64).startswith(b"SSH-")
    except OSError:
        return False


def check_inputs(units: Any, nodes: Any, files: Any) -> None:
    """LabStampError naming the first bad value."""
    if not isinstance(units, Mapping) or not units:
        raise LabStampError(f"units {units!r} must map unit names to their command lines")
    for unit, argv in units.items():
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise LabStampError(
                f"command line of unit {unit!r} must be a non-empty list of strings, got {argv!r}"
            )
    if not isinstance(nodes, list):
        raise LabStampError(f"nodes {nodes!r} must be a list of {{name, netns, mgmt_ip}}")
    for node in nodes:
        if not isinstance(node, Mapping) or not all(node.get(k) for k in ("name", "netns", "mgmt_ip")):
            raise LabStampError(f"node {node!r} needs name, netns and mgmt_ip")
        if node["name"] not in units:
            raise LabStampError(f"node {node['name']!r} has no entry in units")
    if not isinstance(files, list) or not all(isinstance(f, str) and os.path.isabs(f) for f in files):
        raise LabStampError(f"files {files!r} must be a list of absolute paths")


def read_stamp(path: str) -> dict[str, Any] | None:
    """The recorded stamp, None when there is none or it is not one this version wrote."""
    try:
        with open(path, encoding="utf-8") as handle:
            stamp = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(stamp, dict) or stamp.get("version") != STAMP_VERSION:
        return None
    return stamp


def render(digest: str, files: Iterable[str]) -> str:
    """The stamp's text: the digest and each file's sha256."""
    record = {"version": STAMP_VERSION, "digest": digest, "files": {f: file_digest(f) for f in sorted(files)}}
    return json.dumps(record, indent=2, sort_keys=True) + "\n"


def check(
    path: str,
    digest: str,
    units: Mapping[str, list[str]],
    nodes: list[Mapping[str, Any]],
    unit_running: Callable[[str, list[str]], int | None],
    netns: Iterable[str],
    answers: Callable[[str], bool] = ssh_answers,
) -> list[str]:
    """Why the instance is not as the last run left it, one line each; empty when it is.

    ``unit_running(unit, argv)`` is lab_host.Host.unit_running; ``netns`` the namespaces that exist.
    """
    stamp = read_stamp(path)
    if stamp is None:
        return [NO_STAMP]
    if stamp.get("digest") != digest:
        return [INPUTS_CHANGED]
    reasons = []
    for name, recorded in sorted((stamp.get("files") or {}).items()):
        now = file_digest(name)
        if now != recorded:
            reasons.append(f"{name} {'is missing' if now is None else 'changed'} since the last run")
    stopped = set()
    for unit, argv in units.items():
        if unit_running(unit, argv) is None:
            stopped.add(unit)
            reasons.append(f"{unit} is not running as planned")
    present = set(netns)
    for node in nodes:
        if node["netns"] not in present:
            reasons.append(f"{node['name']}: network namespace {node['netns']} is missing")
        elif node["name"] not in stopped and not answers(str(node["mgmt_ip"])):
            # A node whose nspawn runs but whose systemd or sshd died inside.
            reasons.append(f"{node['name']}: sshd does not answer at {node['mgmt_ip']}:22")
    return reasons
