# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether the kernel still holds what networkd was told to set on the data ports.

networkd sets a port's addresses and routing-policy rules when it configures the port, and does not watch them
afterwards: a source rule deleted by hand (`ip rule del from <nic ip>`, which sends that NIC's traffic out of
another NIC on a shared subnet) or an address deleted stays deleted, and an unchanged netplan file is not
applied again. netplan_apply asks here, on every run with an unchanged file, and has networkd reconfigure the
ports that drifted (``networkctl reconfigure``).

- networkd_rules(): the ``[RoutingPolicyRule]`` sections of a .network file netplan generated
  (``From``, ``Table``, ``Priority``);
- live_rules(): `ip -j rule show` as the same triples;
- missing(): what the kernel lacks, per port: each expected address, each configured rule;
- read_drift(): the same, read on this node (netplan's networkd files under /run/systemd/network).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Mapping, Sequence

# Where `netplan generate` writes networkd's files: 10-netplan-<interface>.network.
NETWORKD_DIR = "/run/systemd/network"

Rule = tuple[str, str, int]  # (from a.b.c.d/len, table, priority)


def _cidr(address: str) -> str:
    return address if "/" in address else f"{address}/32"


def networkd_rules(text: str) -> list[Rule]:
    """The routing-policy rules of one networkd .network file, in order (a rule without From is skipped: the
    data ports' rules are source rules)."""
    rules: list[Rule] = []
    section, values = "", {}
    for raw in [*(text or "").splitlines(), "[end]"]:
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            if section == "RoutingPolicyRule" and values.get("From"):
                rules.append(
                    (_cidr(values["From"]), values.get("Table", "main"), int(values.get("Priority", 0)))
                )
            section, values = line[1:-1], {}
        elif "=" in line and not line.startswith(("#", ";")):
            key, _sep, value = line.partition("=")
            values[key.strip()] = value.strip()
    return rules


def live_rules(text: str) -> set[Rule]:
    """`ip -j rule show` as (from, table, priority); rules without a source are left out."""
    out: set[Rule] = set()
    for rule in json.loads(text or "[]"):
        src = str(rule.get("src") or "")
        if not src or src == "all":
            continue
        out.add(
            (f"{src}/{rule.get('srclen', 32)}", str(rule.get("table", "main")), int(rule.get("priority", 0)))
        )
    return out


def missing(
    expect: Sequence[tuple[str, str]],
    addresses: Mapping[str, set[str]],
    configured: Mapping[str, Sequence[Rule]],
    live: set[Rule],
) -> list[tuple[str, str]]:
    """(port, what it lacks) for every expected (port, address) not on its port and every rule networkd holds
    for a port (``configured``) that the kernel does not."""
    out = [(ifname, f"address {addr}") for ifname, addr in expect if addr not in addresses.get(ifname, set())]
    for ifname, rules in configured.items():
        out += [
            (ifname, f"rule from {frm} table {table} priority {prio}")
            for frm, table, prio in rules
            if (frm, table, prio) not in live
        ]
    return out


def _run(argv: list[str]) -> tuple[int, str]:
    try:
        # subprocess, not run_command: this is module_utils without a module object
        proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)  # pylint: disable=ansible-bad-function
    except (OSError, subprocess.TimeoutExpired):
        return 1, ""
    return proc.returncode, proc.stdout


def read_drift(
    expect: Sequence[tuple[str, str]],
    addresses: Callable[[], dict[str, set[str]]],
    networkd_dir: str = NETWORKD_DIR,
    run: Callable[[list[str]], tuple[int, str]] = _run,
) -> list[tuple[str, str]]:
    """missing() on this node, for the ports of ``expect``; nothing read when there are none. A port whose
    networkd file is not there (not generated yet) has no rules to hold."""
    ifnames = sorted({ifname for ifname, _addr in expect})
    if not ifnames:
        return []
    configured: dict[str, list[Rule]] = {}
    for ifname in ifnames:
        path = os.path.join(networkd_dir, f"10-netplan-{ifname}.network")
        try:
            with open(path, encoding="utf-8") as handle:
                configured[ifname] = networkd_rules(handle.read())
        except OSError:
            configured[ifname] = []
    live: set[Rule] = set()
    if any(configured.values()):
        rc, out = run(["ip", "-j", "rule", "show"])
        if rc != 0:
            return []  # nothing to compare with: the apply's own checks stand
        live = live_rules(out)
    return missing(expect, addresses(), configured, live)


def describe(drift: Sequence[tuple[str, str]]) -> list[str]:
    """'data1: rule from 192.168.200.4/32 table 101 priority 101', one per item."""
    return [f"{ifname}: {what}" for ifname, what in drift]
