# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a node needs the Mesh NCCL net plugin, and the NCCL environment that follows from the cabling.

NCCL 2.30.7 added ``NCCL_IB_SUBNET_AWARE_ROUTING=1``: its built-in IB/RoCE transport then corrects, per
connection, a local NIC that is not on the peer's subnet, compared at ``NCCL_IB_SUBNET_PREFIX_LEN`` bits
(default 24, so the cables' prefix is set). It can only correct a connection when one end's device already
faces the other, sends at most two GIDs per listener, and has no path to a node without a cable; where the
cabling (mesh_network's ``mesh_network_cabling`` fact) needs more, and for older NCCL (torch 2.11 ships
2.28.9), the plugin (files/plugin_src, ``NCCL_NET_PLUGIN=mesh``) routes per peer instead. An unknown
version (a CPU-only torch, no venv yet) gets the plugin too. docs/nccl_plugin.md cites the NCCL source lines.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.values import is_int

BUILTIN_SUBNET_ROUTING = (2, 30, 7)
# GIDs a listener puts in its handle (src/transport/net_ib/connect.cc:57, listenGids[2]).
BUILTIN_LISTEN_GIDS = 2
TRANSPORTS = {"rdma": "verbs", "tcp": "tcp"}
MAX_NSOCKS = 16
_VERSION_RE = re.compile(r"^\s*(\d+)\.(\d+)\.(\d+)\s*$")
_IFNAME_RE = re.compile(r"^\^?=?[A-Za-z0-9_.:@-]{1,15}(,[A-Za-z0-9_.:@-]{1,15})*$")


class NcclMeshPluginError(ValueError):
    """A version or setting the decision cannot use."""


def parse_nccl_version(value: Any) -> tuple[int, int, int] | None:
    """(major, minor, patch) of "2.28.9", of a tuple, or of NCCL_VERSION_CODE (22809; 2708 before 2.9)."""
    if value is None or value == "":
        return None
    if isinstance(value, (tuple, list)) and len(value) == 3 and all(isinstance(v, int) for v in value):
        return (value[0], value[1], value[2])
    text = str(value)
    match = _VERSION_RE.match(text)
    if match:
        return (int(match.group(1)), int(match.group(2)), int(match.group(3)))
    if text.isdigit():
        code = int(text)
        if code >= 20900:  # NCCL_VERSION_CODE since 2.9: major*10000 + minor*100 + patch
            return (code // 10000, code // 100 % 100, code % 100)
        return (code // 1000, code // 100 % 10, code % 100)
    raise NcclMeshPluginError(f"cannot read NCCL version {value!r}: expected MAJOR.MINOR.PATCH")


def settings_errors(*, nsocks: Any, debug: Any, gid_index: Any, ifname: Any, prefix: Any) -> list[str]:
    """The role's settings, one message per bad value (names are the role's variables)."""
    errors = []
    if not is_int(nsocks) or not 1 <= nsocks <= MAX_NSOCKS:
        errors.append(f"nccl_mesh_plugin_nsocks must be an integer 1..{MAX_NSOCKS}, got {nsocks!r}")
    if not is_int(debug) or debug not in (0, 1, 2):
        errors.append(f"nccl_mesh_plugin_debug must be 0, 1 or 2, got {debug!r}")
    if gid_index is not None and (not is_int(gid_index) or gid_index < 0):
        errors.append(
            f"nccl_mesh_plugin_gid_index must be empty (automatic) or an integer >= 0, got {gid_index!r}"
        )
    if ifname and not _IFNAME_RE.match(str(ifname)):
        errors.append(
            f"nccl_mesh_plugin_ifname {str(ifname)!r} is not an interface filter"
            " (names or prefixes separated by commas, optionally after ^ or =)"
        )
    if not isinstance(prefix, str) or not prefix.startswith("/") or prefix.rstrip("/") == "":
        errors.append(f"nccl_mesh_plugin_prefix must be an absolute directory other than /, got {prefix!r}")
    return errors


def builtin_limits(cabling: Mapping[str, Any]) -> list[str]:
    """Why NCCL's built-in subnet-aware routing cannot carry this cabling (empty when it can)."""
    why = []
    if cabling.get("non_neighbours"):
        why.append(
            f"{cabling.get('shape', 'the cabling')} with nodes {cabling.get('max_hops')} cables apart: "
            "NCCL's IB transport has no path to a node without a cable"
        )
    if int(cabling.get("max_cables") or 0) > BUILTIN_LISTEN_GIDS:
        why.append(
            f"{cabling['max_cables']} cables between two nodes: a listener sends NCCL only "
            f"{BUILTIN_LISTEN_GIDS} GIDs to match"
        )
    problems = list(cabling.get("device_index_problems") or [])
    if problems:
        why.append(
            "NCCL corrects a port only where one end's device of the same index faces the other, and here "
            f"neither does ({'; '.join(problems[:3])}{'; ...' if len(problems) > 3 else ''})"
        )
    return why


def cabling_env(cabling: Mapping[str, Any]) -> dict[str, str]:
    """What the cabling needs of NCCL whatever carries it: ring order's algorithm where nodes lack cables."""
    if cabling.get("non_neighbours"):
        # Tree and the other algorithms pair ranks that are no ring neighbours; the ring with ranks in the
        # order of the cabling (train.yml's rank order) keeps every transfer on a direct cable.
        return {"NCCL_ALGO": "Ring"}
    return {}


def decide(
    nccl_version: Any,
    *,
    force: bool,
    transport: str,
    ifname: str = "",
    gid_index: int | None = None,
    nsocks: int = 4,
    debug: int = 0,
    cabling: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """{'use_plugin', 'reason', 'nccl', 'env'}: env is what the node's NCCL environment gains.

    ``cabling``: mesh_network's summary of the cabling (shape, link_prefix, max_cables, non_neighbours,
    max_hops, device_index_problems); without it, a full mesh as before.
    """
    if transport not in TRANSPORTS:
        raise NcclMeshPluginError(f"transport must be 'rdma' or 'tcp', got {transport!r}")
    cabling = dict(cabling or {})
    version = parse_nccl_version(nccl_version)
    shown = ".".join(map(str, version)) if version else None
    builtin = ".".join(map(str, BUILTIN_SUBNET_ROUTING))
    shape = str(cabling.get("shape") or "mesh").replace("_", " ")
    limits = builtin_limits(cabling) if transport == "rdma" else []
    extra = cabling_env(cabling)
    if version is not None and version >= BUILTIN_SUBNET_ROUTING and not force and not limits:
        env = {"NCCL_IB_SUBNET_AWARE_ROUTING": "1"}
        details = "NCCL_IB_SUBNET_AWARE_ROUTING=1"
        if cabling.get("link_prefix"):
            # NCCL compares GIDs at 24 bits unless told: every /30 of a /24 pool would look like one subnet.
            env["NCCL_IB_SUBNET_PREFIX_LEN"] = str(int(cabling["link_prefix"]))
            # Both ends of a connection on the same device index, the premise of the correction above.
            env["NCCL_CROSS_NIC"] = "0"
            details += f", NCCL_IB_SUBNET_PREFIX_LEN={env['NCCL_IB_SUBNET_PREFIX_LEN']}, NCCL_CROSS_NIC=0"
            if int(cabling.get("max_cables") or 0) <= 1 and len(cabling.get("order") or []) > 2:
                # A fused NIC's ports all have to reach the peer; here they face different peers.
                env["NCCL_IB_MERGE_NICS"] = "0"
                details += ", NCCL_IB_MERGE_NICS=0"
        env.update(extra)
        return {
            "use_plugin": False,
            "nccl": shown,
            "reason": f"NCCL {shown} >= {builtin} on a {shape}: built-in subnet-aware routing ({details})",
            "env": env,
        }
    if force:
        reason = "forced (nccl_mesh_plugin_force)"
    elif version is None:
        reason = "NCCL version unknown (no NCCL in the venv's torch): the plugin"
    elif version < BUILTIN_SUBNET_ROUTING:
        reason = f"NCCL {shown} < {builtin} has no subnet-aware routing: the plugin"
    else:
        reason = f"NCCL {shown} on a {shape.replace('_', ' ')}, beyond its built-in routing: " + "; ".join(
            limits
        )
    env = {"NCCL_NET_PLUGIN": "mesh", "NCCL_MESH_TRANSPORT": TRANSPORTS[transport]}
    if ifname:
        env["NCCL_MESH_IFNAME"] = str(ifname)
    if gid_index is not None:
        env["NCCL_MESH_GID_INDEX"] = str(int(gid_index))
    if transport == "tcp":
        env["NCCL_MESH_NSOCKS"] = str(int(nsocks))
    if debug:
        env["NCCL_MESH_DEBUG"] = str(int(debug))
    env.update(extra)
    return {"use_plugin": True, "nccl": shown, "reason": reason, "env": env}
