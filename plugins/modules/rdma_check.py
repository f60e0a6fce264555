#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: rdma_check
short_description: Check the rdma role's variables before anything on a node changes
version_added: "0.2.0"
description:
  - The validate phase of the rdmaops.cluster.rdma role, on the controller. Checks the package and kernel
    module lists, the memlock limit, the opensm mode, priority and port GUIDs and, when the NIC QoS step runs,
    the shared O(roce_qos) numbers; fails with every problem in one message, each naming its bad value.
  - Otherwise returns the plan (the RoCE numbers the NIC QoS step gives rdmaops.cluster.nic_qos).
  - Runs on the controller (an action plugin); changes nothing, the same in check mode.
author:
  - Rdmaops Developers (@rdmaops)
options:
  packages:
    description: Debian package names (the role's C(rdma_packages)).
    type: raw
    required: true
  kernel_modules:
    description: Kernel module names (C(rdma_kernel_modules)).
    type: raw
    required: true
  memlock_limit:
    description: C(unlimited) or a number of KiB (C(rdma_memlock_limit)).
    type: raw
    required: true
  opensm:
    description: C(auto), C(true) or C(false) (C(rdma_opensm)).
    type: raw
    required: true
  opensm_priority:
    description: opensm priority 0..15 (C(rdma_opensm_priority)).
    type: raw
    required: true
  opensm_guids:
    description: Port GUIDs like C(0x0002c9030002fce9) (C(rdma_opensm_guids)).
    type: raw
    default: []
  nic_qos_enabled:
    description: Whether the NIC QoS step runs (C(rdma_nic_qos_enabled)); O(roce_qos) is checked only then.
    type: bool
    default: true
  roce_qos:
    description: The fabric's RoCE QoS numbers, shared with the switches and NCCL.
    type: raw
extends_documentation_fragment:
  - rdmaops.cluster.phase
"""

EXAMPLES = r"""
- name: Check the role's variables
  rdmaops.cluster.rdma_check:
    packages: [rdma-core, perftest]
    kernel_modules: [ib_core, mlx5_ib]
    memlock_limit: unlimited
    opensm: auto
    opensm_priority: 0
    roce_qos: {dscp: 26}
  register: rdma_check
"""

RETURN = r"""
errors:
  description: Every bad RDMA stack setting (packages, kernel modules, memlock, OpenSM, NIC QoS), each naming
    the role variable and its value; the task fails with them joined by C(; ).
  returned: always
  type: list
  elements: str
plan:
  description: C(roce_qos) (merged over its defaults, or none when the NIC QoS step does not run).
  returned: always
  type: dict
"""

from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import refuse_without_action
from ansible_collections.rdmaops.cluster.plugins.module_utils.rdma.phase import RDMA_CHECK_SPEC


def main() -> None:
    refuse_without_action("rdma_check", RDMA_CHECK_SPEC)


if __name__ == "__main__":
    main()
