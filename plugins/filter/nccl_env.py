# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NCCL/gloo environment of one node, from the transport, its RDMA ports and its socket interface.

Also the checks the nccl_env role validates its variables with (the rules this filter applies too,
module_utils/nccl/env_rules.py) and the text of the files the role writes (module_utils/nccl/env_file.py).
Docs of the filters other than nccl_env: the .yml files beside this one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl import env_file as nccl_env_file
from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl import env_rules as rules

DOCUMENTATION = r"""
name: nccl_env
short_description: NCCL and gloo environment variables for one node
version_added: "0.1.0"
author: Rdmaops Developers (@rdmaops)
description:
  - Computes the variables NCCL and gloo need on one node for C(rdma) or C(tcp) transport.
  - "rdma: C(NCCL_IB_HCA) lists the ACTIVE ports as C(=device:port) (exact match),
    C(NCCL_IB_GID_INDEX) is the RoCE v2 IPv4 GID index the ports share (not set on InfiniBand),
    C(NCCL_IB_DISABLE=0), C(NCCL_NET_GDR_LEVEL)."
  - "tcp: C(NCCL_IB_DISABLE=1)."
  - "both: C(NCCL_SOCKET_IFNAME) (C(=name), exact match), C(GLOO_SOCKET_IFNAME), and
    C(NCCL_IB_TC) = DSCP x 4 so RoCE traffic carries the DSCP the switches' QoS expects."
positional: transport
options:
  _input:
    description: The transport, C(rdma) or C(tcp).
    type: str
    required: true
  ports:
    description: The node's RDMA ports as rdmaops.cluster.rdma_port_info returns them.
    type: list
    elements: dict
    default: []
  socket_ifname:
    description: The interface for bootstrap and socket traffic on this node.
    type: str
    required: true
  dscp:
    description: DSCP of RDMA traffic; C(NCCL_IB_TC) is DSCP x 4 (the role passes C(nccl_env_dscp)).
    type: int
    required: true
  gdr_level:
    description: C(NCCL_NET_GDR_LEVEL) (LOC, PIX, PXB, PHB, SYS), empty to leave NCCL's default
      (the role passes C(nccl_env_gdr_level)).
    type: str
    required: true
  hca:
    description: Explicit device names (or C(device:port)) instead of the discovered ACTIVE ports.
    type: list
    elements: str
    default: []
  gid_index:
    description: Explicit GID index instead of the discovered one.
    type: int
  extra:
    description: More variables, added last.
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Compute the environment
  ansible.builtin.set_fact:
    env: >-
      {{ 'rdma' | rdmaops.cluster.nccl_env(ports=rdma_ports, socket_ifname=mesh_network_socket_ifname,
         dscp=nccl_env_dscp, gdr_level=nccl_env_gdr_level) }}
"""

RETURN = r"""
_value:
  description: Mapping of variable name to string value.
  type: dict
"""

GDR_LEVELS = ("LOC", "PIX", "PXB", "PHB", "SYS")
_HCA_RE = re.compile(r"^[A-Za-z0-9_.-]+(:[0-9]+)?$")


def nccl_env(
    transport: str,
    ports: list[dict[str, Any]] | None = None,
    socket_ifname: str | None = None,
    *,
    dscp: Any,
    gdr_level: str,
    hca: list[str] | None = None,
    gid_index: int | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, str]:
    # dscp and gdr_level have no default here: the nccl_env role's defaults own them.
    errors = (
        rules.transport_errors(transport, "nccl transport")
        + rules.socket_ifname_errors(socket_ifname, "socket interface name")
        + rules.dscp_errors(dscp, "DSCP")
    )
    if errors:
        raise AnsibleFilterError(errors[0])
    dscp_value = int(dscp)
    env: dict[str, str] = {}
    if transport == "rdma":
        env.update(_rdma_env(ports or [], hca or [], gid_index, gdr_level))
    else:
        env["NCCL_IB_DISABLE"] = "1"
    env["NCCL_SOCKET_IFNAME"] = f"={socket_ifname}"
    env["GLOO_SOCKET_IFNAME"] = str(socket_ifname)
    # The host marks RoCE packets with the traffic class; DSCP is its upper 6 bits.
    env["NCCL_IB_TC"] = str(dscp_value * 4)
    for key, value in (extra or {}).items():
        if not re.match(r"^[A-Z_][A-Z0-9_]*$", str(key)):
            raise AnsibleFilterError(f"extra variable name {key!r} is not an environment variable name")
        env[str(key)] = str(value)
    return env


def _rdma_env(
    ports: list[dict[str, Any]], hca: list[str], gid_index: int | None, gdr_level: str
) -> dict[str, str]:
    env = {"NCCL_IB_DISABLE": "0"}
    if hca:
        bad = [h for h in hca if not _HCA_RE.match(str(h))]
        if bad:
            raise AnsibleFilterError(f"HCA names must look like mlx5_0 or mlx5_0:1, got {bad}")
        names = [str(h) for h in hca]
        selected = [p for p in ports if p.get("device") in hca or f"{p.get('device')}:{p.get('port')}" in hca]
    else:
        selected = [p for p in ports if p.get("active")]
        if not selected:
            found = ", ".join(f"{p.get('name')} ({p.get('state')})" for p in ports) or "none"
            raise AnsibleFilterError(
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
            raise AnsibleFilterError(
                f"no RoCE v2 GID with an IPv4 address on {missing}:"
                " give the port an IPv4 address or set the GID index"
            )
        if len(indices) > 1:
            detail = ", ".join(f"{p['name']}={p['roce_v2_ipv4_gid_index']}" for p in roce)
            raise AnsibleFilterError(
                f"the RoCE v2 IPv4 GID index differs between ports of one node ({detail});"
                " NCCL takes one index: set it explicitly"
            )
        env["NCCL_IB_GID_INDEX"] = str(indices.pop())
    if gdr_level:
        if str(gdr_level).upper() not in GDR_LEVELS:
            raise AnsibleFilterError(
                f"NCCL_NET_GDR_LEVEL must be one of {', '.join(GDR_LEVELS)}, got {gdr_level!r}"
            )
        env["NCCL_NET_GDR_LEVEL"] = str(gdr_level).upper()
    return env


def nccl_env_file_text(env: Mapping[str, Any], comments: Iterable[Any] = ()) -> str:
    try:
        return nccl_env_file.render(env, comments)
    except nccl_env_file.EnvFileError as exc:
        raise AnsibleFilterError(f"nccl_env_file_text: {exc}") from exc


def nccl_socket_ifname_errors(ifname: Any, name: str) -> list[str]:
    return rules.socket_ifname_errors(ifname, name)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "nccl_env": nccl_env,
            "nccl_env_file_text": nccl_env_file_text,
            "nccl_socket_ifname_errors": nccl_socket_ifname_errors,
        }
