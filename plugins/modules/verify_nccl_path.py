#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: verify_nccl_path
short_description: The path NCCL took between the nodes, from its INFO logs, with a verdict
version_added: "0.2.0"
description:
  - Reads each node's output of an NCCL job run with C(NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET)
    (verify.yml's all-reduce) and maps every channel to its transport (P2P, SHM, NET/IB, NET/Socket,
    NET/Mesh), the NIC and RoCE GID it uses and the peer node it reaches.
  - "Fails the verdict (C(fail)) when traffic to a peer leaves by a port that does not face that peer (per the
    nodes' mesh_network plans), when it falls back to NCCL's Socket transport (or the Mesh plugin's TCP
    backend) where RDMA was configured (C(NCCL_IB_DISABLE) not 1), or when a net plugin was configured
    (C(NCCL_NET_PLUGIN)) and not loaded. A single-node run with no channel across the network passes, with a
    note when NCCL fell back to Socket."
  - "On a fabric of several rails (O(fabrics), or the NCCL environment's HCAs in rail order) each channel gets
    its NIC's rail, and a channel whose two ends are on different rails fails the verdict where
    C(NCCL_CROSS_NIC=0) asked for rail-optimized channels (a note otherwise)."
  - Pure parsing on the controller; changes nothing. Use with C(delegate_to) localhost and C(run_once).
author:
  - Rdmaops Developers (@rdmaops)
options:
  runs:
    description: Per node, the command result of the NCCL job (its C(stdout) and C(stderr) are read).
    type: dict
    required: true
  env_files:
    description:
      - Per node, the NCCL environment file as rdmaops.cluster.nccl_env wrote it - a slurp result (C(content),
        base64) or the text. It says which transport and plugin were configured.
    type: dict
    default: {}
  plans:
    description: Per node, its C(mesh_network_plan) (links with peer and ifname, or the switched fabric port).
    type: dict
    default: {}
  rdma_ports:
    description: Per node, its C(rdma_ports) (RDMA devices on each link's netdev face the same peer).
    type: dict
    default: {}
  fabrics:
    description:
      - Per node, its fabric rails C(mesh_network_fabric) (each C(rail), C(name), C(ifname), C(address));
        absent or empty on a mesh. A NIC on a rail's interface (or an RDMA device on that netdev) is on that
        rail; without them the rails are the NCCL environment's C(NCCL_IB_HCA) entries (or
        C(NCCL_SOCKET_IFNAME)'s exact names) in order, when it lists two or more.
      - Each channel gets the rail of its NIC; a channel whose two ends are on different rails fails the
        verdict where C(NCCL_CROSS_NIC=0) asked for rail-optimized channels, and is a note otherwise.
    type: dict
    default: {}
attributes:
  check_mode:
    description: Reads and judges the same.
    support: full
  diff_mode:
    description: Nothing to compare.
    support: none
"""

EXAMPLES = r"""
- name: Check the path NCCL took in the all-reduce
  vars:
    _hosts: "{{ ansible_play_hosts_all }}"
  rdmaops.cluster.verify_nccl_path:
    runs: "{{ dict(_hosts | zip(_hosts | map('extract', hostvars, 'verify_allreduce_run'))) }}"
    env_files: "{{ dict(_hosts | zip(_hosts | map('extract', hostvars, 'verify_nccl_env_raw'))) }}"
    plans: "{{ dict(_hosts | zip(_hosts | map('extract', hostvars, 'mesh_network_plan'))) }}"
  delegate_to: localhost
  run_once: true
  register: verify_nccl_path
"""

RETURN = r"""
verdict:
  description: C(pass), C(fail), or C(not run) (no node's output had NCCL initialisation lines).
  returned: always
  type: str
problems:
  description: What failed, each naming the node, the peer and the NIC or transport.
  returned: always
  type: list
  elements: str
notes:
  description: What is worth knowing but not a failure (a Socket network that carried no channel).
  returned: always
  type: list
  elements: str
channels:
  description: Every channel - C(node), C(rank), C(channel), C(peer_rank), C(peer_node), C(direction), C(via),
    C(transport), C(nic), C(gid), C(rail) and C(peer_rail) (its NIC's rail and the other end's, empty without
    rails), C(cross_rail).
  returned: always
  type: list
  elements: dict
nodes:
  description: Per node - NCCL version, ranks, network used, plugin configured and loaded, devices, the Mesh
    plugin's backend and connections.
  returned: always
  type: dict
"""

import base64
import binascii
from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl import env_file
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify import nccl_path


def _env(raw: Any) -> dict[str, str]:
    if isinstance(raw, dict):
        if not raw.get("content"):
            return {}
        try:
            raw = base64.b64decode(raw["content"]).decode()
        except (binascii.Error, UnicodeDecodeError):
            return {}
    try:
        return env_file.parse(str(raw or ""))
    except env_file.EnvFileError:
        return {}


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "runs": {"type": "dict", "required": True},
            "env_files": {"type": "dict", "default": {}},
            "plans": {"type": "dict", "default": {}},
            "rdma_ports": {"type": "dict", "default": {}},
            "fabrics": {"type": "dict", "default": {}},
        },
        supports_check_mode=True,
    )
    p = module.params
    logs = {
        node: "\n".join(str((run or {}).get(k) or "") for k in ("stdout", "stderr"))
        for node, run in p["runs"].items()
    }
    envs = {node: _env(p["env_files"].get(node)) for node in logs}
    expect = nccl_path.expectations(p["plans"], envs, p["rdma_ports"], p["fabrics"])
    result = nccl_path.verdict(logs, expect)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
