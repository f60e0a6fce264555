# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NCCL/gloo environment of one node, from its transport, its RDMA ports, its socket interface and its
fabric ports in rail order.

``compute`` is what the public ``rdmaops.cluster.nccl_env`` filter and the nccl_env role's plan phase both
call; it raises NcclEnvError naming the bad value. With two or more rails (a node with several fabric ports,
mesh_network's ``mesh_network_fabric``) NCCL_IB_HCA lists the HCA of each rail's port in rail order and
NCCL_CROSS_NIC=0 keeps a channel on its rail; over TCP NCCL_SOCKET_IFNAME lists every rail's interface. One
rail or none (one port, a direct-connect mesh) gives what it always gave.
"""

from __future__ import annotations

import re
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl import env_rules as rules

GDR_LEVELS = ("LOC", "PIX", "PXB", "PHB", "SYS")
_HCA_RE = re.compile(r"^[A-Za-z0-9_.-]+(:[0-9]+)?$")
_VAR_RE = re.compile(r"^[A-Z_][A-Z0-9_]*$")


class NcclEnvError(ValueError):
    """An input the environment cannot be computed from; the message names it."""


def compute(
    transport: Any,
    ports: list[dict[str, Any]] | None,
    socket_ifname: Any,
    *,
    dscp: Any,
    gdr_level: Any,
    hca: list[Any] | None = None,
    gid_index: Any = None,
    extra: dict[str, Any] | None = None,
    socket_threads: tuple[Any, Any] = (None, None),
    rails: list[Any] | None = None,
) -> dict[str, str]:
    """Mapping of variable name to string value (NCCL_IB_TC = DSCP x 4, the switches' DSCP). RAILS: the
    node's fabric interfaces in rail order (rail i is item i)."""
    errors = (
        rules.transport_errors(transport, "nccl transport")
        + rules.socket_ifname_errors(socket_ifname, "socket interface name")
        + rules.rails_errors(rails or [], "rails")
        + rules.dscp_errors(dscp, "DSCP")
        + rules.socket_threads_errors(*socket_threads, ("NCCL_SOCKET_NTHREADS", "NCCL_NSOCKS_PERTHREAD"))
    )
    if errors:
        raise NcclEnvError(errors[0])
    env: dict[str, str] = {}
    rails = [str(r) for r in rails or []]
    sockets = str(socket_ifname).split(",")
    if transport == "rdma":
        env.update(_rdma_env(ports or [], hca or [], gid_index, gdr_level, rails))
    else:
        env["NCCL_IB_DISABLE"] = "1"
        # NCCL's socket transport defaults to one thread with one socket per connection, which one core
        # cannot keep up with on a fast link: helper threads and sockets (docs/nccl_plugin.md, measured).
        if socket_threads != (None, None):
            env["NCCL_SOCKET_NTHREADS"] = str(int(socket_threads[0]))
            env["NCCL_NSOCKS_PERTHREAD"] = str(int(socket_threads[1]))
        # The socket transport carries the data: one device per rail (exact names).
        sockets = rails if len(rails) > 1 else sockets
    env["NCCL_SOCKET_IFNAME"] = "=" + ",".join(sockets)
    # gloo would open a device per listed interface; the first one (rail 0 on a fabric) carries it.
    env["GLOO_SOCKET_IFNAME"] = str(socket_ifname).partition(",")[0]
    # The host marks RoCE packets with the traffic class; DSCP is its upper 6 bits.
    env["NCCL_IB_TC"] = str(int(dscp) * 4)
    for key, value in (extra or {}).items():
        if not _VAR_RE.match(str(key)):
            raise NcclEnvError(f"extra variable name {key!r} is not an environment variable name")
        env[str(key)] = str(value)
    return env


def _rdma_env(
    ports: list[dict[str, Any]], hca: list[Any], gid_index: Any, gdr_level: Any, rails: list[str]
) -> dict[str, str]:
    env = {"NCCL_IB_DISABLE": "0"}
    if len(rails) > 1:
        # Rail-optimized (NCCL's NCCL_CROSS_NIC documentation: 0 keeps a ring/tree on the same NIC, for
        # fabrics with a switch per rail); NCCL_IB_HCA's order is the rails' (the NCCL path audit reads it).
        env["NCCL_CROSS_NIC"] = "0"
    if hca:
        bad = [h for h in hca if not _HCA_RE.match(str(h))]
        if bad:
            raise NcclEnvError(f"HCA names must look like mlx5_0 or mlx5_0:1, got {bad}")
        names = [str(h) for h in hca]
        selected = [p for p in ports if p.get("device") in hca or f"{p.get('device')}:{p.get('port')}" in hca]
    elif len(rails) > 1:
        selected = _rail_ports(ports, rails)
        names = [f"{p['device']}:{p['port']}" for p in selected]
    else:
        selected = [p for p in ports if p.get("active")]
        if not selected:
            found = ", ".join(f"{p.get('name')} ({p.get('state')})" for p in ports) or "none"
            raise NcclEnvError(
                f"transport is rdma but no RDMA port is ACTIVE (ports: {found});"
                " use transport tcp or fix the ports"
            )
        names = [f"{p['device']}:{p['port']}" for p in selected]
    env["NCCL_IB_HCA"] = "=" + ",".join(names)
    roce = [p for p in selected if p.get("link_layer") == "Ethernet"]
    if gid_index is not None:
        env["NCCL_IB_GID_INDEX"] = str(int(gid_index))
    elif roce:
        indices = {p.get("roce_v2_ipv4_gid_index") for p in roce}
        if None in indices:
            missing = ", ".join(p["name"] for p in roce if p.get("roce_v2_ipv4_gid_index") is None)
            raise NcclEnvError(
                f"no RoCE v2 GID with an IPv4 address on {missing}:"
                " give the port an IPv4 address or set the GID index"
            )
        if len(indices) > 1:
            detail = ", ".join(f"{p['name']}={p['roce_v2_ipv4_gid_index']}" for p in roce)
            raise NcclEnvError(
                f"the RoCE v2 IPv4 GID index differs between ports of one node ({detail});"
                " NCCL takes one index: set it explicitly"
            )
        env["NCCL_IB_GID_INDEX"] = str(indices.pop())
    if gdr_level:
        if str(gdr_level).upper() not in GDR_LEVELS:
            raise NcclEnvError(
                f"NCCL_NET_GDR_LEVEL must be one of {', '.join(GDR_LEVELS)}, got {gdr_level!r}"
            )
        env["NCCL_NET_GDR_LEVEL"] = str(gdr_level).upper()
    return env


def _rail_ports(ports: list[dict[str, Any]], rails: list[str]) -> list[dict[str, Any]]:
    """The RDMA port behind each rail's interface (sysfs netdev -> HCA:port), in rail order; each must be
    ACTIVE."""
    out = []
    for index, ifname in enumerate(rails):
        found = [p for p in ports if p.get("netdev") == ifname]
        if not found:
            present = (
                ", ".join(f"{p.get('name')} on {p.get('netdev') or 'no netdev'}" for p in ports) or "none"
            )
            raise NcclEnvError(
                f"rail{index} ({ifname}): no RDMA port has the netdev {ifname} (ports: {present});"
                " set the HCAs (nccl_env_hca) or fix the fabric ports"
            )
        down = [p for p in found if not p.get("active")]
        if down:
            state = ", ".join(f"{p.get('name')} ({p.get('state')}, {p.get('phys_state')})" for p in down)
            raise NcclEnvError(
                f"rail{index} ({ifname}): RDMA port {state} is not ACTIVE; NCCL would use it: fix the link"
            )
        out += found
    return out
