# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NCCL/gloo environment of one node, from the transport, its RDMA ports and its socket interface.

The rules live in module_utils/nccl/env.py, which the nccl_env role's plan phase
(rdmaops.cluster.nccl_env_plan) calls too.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl import env

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
  - "With two or more O(rails): rdma lists each rail's HCA in rail order and sets C(NCCL_CROSS_NIC=0); tcp
    lists every rail's interface in C(NCCL_SOCKET_IFNAME)."
  - "both: C(NCCL_SOCKET_IFNAME) (C(=name), exact match), C(GLOO_SOCKET_IFNAME), and
    C(NCCL_IB_TC) = DSCP x 4 so RoCE traffic carries the DSCP the switches' QoS expects."
positional: transport
options:
  _input:
    description: The transport, C(rdma) or C(tcp).
    type: str
    required: true
  socket_ifname:
    description: The interface for bootstrap and socket traffic on this node (or comma-separated interfaces;
      gloo takes the first).
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
  hca: {type: list, elements: str, default: []}
  gid_index: {type: int}
  rails: {type: list, elements: str, default: []}
  extra:
    description: More variables, added last.
    type: dict
    default: {}
extends_documentation_fragment:
  - rdmaops.cluster.rdma_ports
  - rdmaops.cluster.nccl_rails
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
    rails: list[str] | None = None,
) -> dict[str, str]:
    # dscp and gdr_level have no default here: the nccl_env role's defaults own them.
    try:
        return env.compute(
            transport,
            ports,
            socket_ifname,
            dscp=dscp,
            gdr_level=gdr_level,
            hca=hca,
            gid_index=gid_index,
            extra=extra,
            rails=rails,
        )
    except env.NcclEnvError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"nccl_env": nccl_env}
