#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nccl_env_plan
short_description: A node's NCCL and gloo environment and the text of the files that carry it
version_added: "0.2.0"
description:
  - The plan phase of the rdmaops.cluster.nccl_env role, on the controller, after the node's RDMA ports are
    known. Computes the environment as the P(rdmaops.cluster.nccl_env#filter) filter does (one function for
    both) and renders each file of O(files) - each comment as a C(# ) line, then one C(KEY=value) line per
    variable sorted by name - refusing a value that would not read back the same (a line break, surrounding
    blanks or quotes).
  - Fails with the problem named (no ACTIVE port for rdma, a rail without an ACTIVE RDMA port, differing GID
    indexes, a bad HCA name or GDR level).
  - Runs on the controller (an action plugin); changes nothing, the same in check mode.
author:
  - Rdmaops Developers (@rdmaops)
options:
  transport:
    description: C(rdma) or C(tcp).
    type: raw
    required: true
  socket_ifname:
    description: Interface for bootstrap and socket traffic on this node.
    type: raw
    required: true
  roce_qos:
    description: The fabric's RoCE QoS numbers; C(NCCL_IB_TC) is its DSCP x 4.
    type: raw
  gdr_level:
    description: C(NCCL_NET_GDR_LEVEL) (LOC, PIX, PXB, PHB, SYS), empty to leave NCCL's default.
    type: raw
    default: ""
  hca: {type: list, elements: raw, default: []}
  gid_index: {type: raw}
  rails: {type: list, elements: raw, default: []}
  net:
    description: Variables of the per-peer network choice (rdmaops.cluster.nccl_mesh_plugin's), before
      O(extra).
    type: dict
    default: {}
  extra:
    description: More variables, added last (they win).
    type: dict
    default: {}
  files:
    description: The files to render, each with its C(dest) and an C(about) line for its header.
    type: list
    elements: dict
    required: true
    suboptions:
      dest:
        description: Path of the file on the node (the key of the returned text).
        type: str
        required: true
      about:
        description: What the file is, for its second comment line.
        type: str
        default: ""
  managed:
    description: The first comment line (the role passes Ansible's C(DEFAULT_MANAGED_STR)).
    type: str
    default: Ansible managed
extends_documentation_fragment:
  - rdmaops.cluster.phase
  - rdmaops.cluster.nccl_sockets
  - rdmaops.cluster.rdma_ports
  - rdmaops.cluster.nccl_rails
"""

EXAMPLES = r"""
- name: Compute the environment and the files' text
  rdmaops.cluster.nccl_env_plan:
    transport: tcp
    socket_ifname: nodeaddr0
    roce_qos: {}
    files:
      - dest: /etc/nccl.conf
        about: NCCL reads this file at init.
  register: nccl_env_plan
"""

RETURN = r"""
errors:
  description: The problem found; the task fails with it.
  returned: always
  type: list
  elements: str
plan:
  description: C(env) (variable name to value) and C(files) (each O(files) C(dest) to its text).
  returned: always
  type: dict
  sample: {"env": {"NCCL_IB_DISABLE": "1"},
           "files": {"/etc/nccl.conf": "# Ansible managed\nNCCL_IB_DISABLE=1\n"}}
"""

from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl.phase import NCCL_ENV_PLAN_SPEC
from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import refuse_without_action


def main() -> None:
    refuse_without_action("nccl_env_plan", NCCL_ENV_PLAN_SPEC)


if __name__ == "__main__":
    main()
