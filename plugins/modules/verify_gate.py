#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: verify_gate
short_description: Judge one node's RDMA ports for fabric verification
version_added: "0.1.0"
description:
  - The gate phase of the rdmaops.cluster.verify role (an action plugin) - one node's
    M(rdmaops.cluster.rdma_port_info) result against O(rdma_required) and O(require_active).
  - Fails naming the node and every port that is down or the missing RDMA device; returns the judgement.
author:
  - Rdmaops Developers (@rdmaops)
options:
  host:
    description: The node (for messages).
    type: str
    required: true
  port_info:
    description: The registered result of M(rdmaops.cluster.rdma_port_info).
    type: dict
    required: true
  rdma_required:
    description: Whether a node without RDMA devices fails.
    type: raw
    default: true
  require_active:
    description: Ports that must be ACTIVE/LinkUp, C(true) (all), C(false), or a list of C(device) or
      C(device/port).
    type: raw
    default: true
  sysfs_root:
    description: The sysfs root the ports were read from (for messages).
    type: str
    default: /sys
extends_documentation_fragment:
  - rdmaops.cluster.phase
"""

EXAMPLES = r"""
- name: Judge the port state
  rdmaops.cluster.verify_gate:
    host: "{{ inventory_hostname }}"
    port_info: "{{ verify_ports }}"
    rdma_required: false
  register: verify_gate_result
"""

RETURN = r"""
errors:
  description: The node's failures (a port down, no RDMA device while required), in one line naming the node.
  returned: always
  type: list
  elements: str
plan:
  description: C(available), C(summary) (each port's state, rate, netdev and GID), C(failures), C(ports).
  returned: always
  type: dict
"""

from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import refuse_without_action
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify.phase import VERIFY_GATE_SPEC


def main() -> None:
    refuse_without_action("verify_gate", VERIFY_GATE_SPEC)


if __name__ == "__main__":
    main()
