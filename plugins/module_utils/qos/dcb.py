# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A RoCE NIC's DCB settings through iproute2's ``dcb`` tool: read (``-j``), compare, commands to set.

What the fabric wants on each RoCE port: PFC on the RoCE priority (roce_qos.cos) and only there, and the
RoCE DSCP mapped to that priority in the APP table (so the NIC queues RoCE by the DSCP the switch trusts).
Pure Python; the formats are iproute2's (dcb/dcb_pfc.c, dcb/dcb_app.c, lib/json_print.c):

    dcb -j pfc show dev D  ->  {"pfc_cap":8,"macsec_bypass":false,"delay":0,"prio_pfc":[false,...x8]}
    dcb -j app show dev D  ->  {"dscp_prio":[[26,3],...], ...}   ({} with an empty table)

A port whose driver has no DCB support answers "Attribute read: Operation not supported" (rc 1).

Trust DSCP: no NIC driver implements dcbnl's apptrust operations (``dcb apptrust``, iproute2 6.2+; only the
sparx5 and lan966x switch chips and DSA do), and Debian 12 and Ubuntu 24.04 ship iproute2 6.1, which has no
such command. A ConnectX port (mlx5) switches to DSCP trust when its first DSCP APP entry is added and back
to PCP when the last is removed (mlx5e_dcbnl_ieee_setapp/delapp in the kernel's mlx5 en_dcbnl.c), so the APP
entry below is what makes the NIC trust DSCP; ``trust_dscp`` reports it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

UNSUPPORTED = ("Operation not supported", "Not supported", "No such device")


class DcbError(Exception):
    """Output dcb should not have printed; the message quotes it."""


@dataclass
class PortDcb:
    """One port's DCB state as read (supported=False: the driver has none; reason says why)."""

    dev: str
    supported: bool
    reason: str = ""
    pfc: list[bool] = field(default_factory=list)
    pfc_cap: int = 0
    dscp_prio: dict[int, list[int]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "dev": self.dev,
            "supported": self.supported,
            "reason": self.reason,
            "pfc_enabled": [i for i, on in enumerate(self.pfc) if on],
            "pfc_cap": self.pfc_cap,
            "dscp_prio": {str(k): v for k, v in sorted(self.dscp_prio.items())},
            "trust_dscp": self.trust_dscp,
        }

    @property
    def trust_dscp(self) -> bool:
        """DSCP trust as mlx5 sets it: on while the APP table holds a DSCP entry (module docstring)."""
        return self.supported and bool(self.dscp_prio)


def unsupported(rc: int, stderr: str) -> bool:
    return rc != 0 and any(text in stderr for text in UNSUPPORTED)


def parse_pfc(text: str) -> tuple[list[bool], int]:
    """(PFC per priority 0..7, pfc_cap) from ``dcb -j pfc show dev D``."""
    try:
        data = json.loads(text)
        prio = data["prio_pfc"]
    except (ValueError, KeyError, TypeError) as exc:
        raise DcbError(f"unexpected `dcb -j pfc show` output: {text[:200]!r}") from exc
    # JSON booleans (print_on_off); older iproute2 printed "on"/"off" strings.
    flags = [p is True or p == "on" for p in prio]
    if len(flags) != 8:
        raise DcbError(f"`dcb -j pfc show` gave {len(flags)} priorities, expected 8: {text[:200]!r}")
    return flags, int(data.get("pfc_cap", 0))


def parse_app(text: str) -> dict[int, list[int]]:
    """DSCP -> priorities from ``dcb -j app show dev D`` (a DSCP may map to several)."""
    try:
        data = json.loads(text) if text.strip() else {}
        pairs = data.get("dscp_prio", [])
        out: dict[int, list[int]] = {}
        for dscp, prio in pairs:
            out.setdefault(int(dscp), []).append(int(prio))
    except (ValueError, TypeError, AttributeError) as exc:
        raise DcbError(f"unexpected `dcb -j app show` output: {text[:200]!r}") from exc
    return {k: sorted(v) for k, v in out.items()}


def wanted_changes(port: PortDcb, dscp: int, cos: int) -> list[list[str]]:
    """The dcb commands that make the port lossless on cos only, with dscp mapped to cos."""
    if not port.supported:
        return []
    cmds: list[list[str]] = []
    want_pfc = [i == cos for i in range(8)]
    if port.pfc != want_pfc:
        cmds.append(["dcb", "pfc", "set", "dev", port.dev, "prio-pfc", "all:off", f"{cos}:on"])
    if port.dscp_prio.get(dscp) != [cos]:
        # replace: drops the DSCP's other mappings, keeps the rest of the table
        cmds.append(["dcb", "app", "replace", "dev", port.dev, "dscp-prio", f"{dscp}:{cos}"])
    return cmds


def verdict(port: PortDcb, dscp: int, cos: int) -> list[str]:
    """What disagrees with roce_qos on this port (empty: consistent)."""
    if not port.supported:
        return []
    out = []
    enabled = [i for i, on in enumerate(port.pfc) if on]
    if enabled != [cos]:
        out.append(f"{port.dev}: PFC on priorities {enabled or 'none'}, roce_qos.cos is {cos}")
    if port.dscp_prio.get(dscp) != [cos]:
        out.append(f"{port.dev}: DSCP {dscp} maps to priority {port.dscp_prio.get(dscp, 'none')}, want {cos}")
    return out
