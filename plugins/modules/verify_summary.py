#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: verify_summary
short_description: Summarise fabric verification's all-reduce and RoCE QoS readings
version_added: "0.1.0"
description:
  - The summary phase of the rdmaops.cluster.verify role (an action plugin, run once) - the all-reduce's
    result from every node's command result (rank 0's JSON line, or every node that failed with its
    reason), the RoCE QoS section (switch ports and host ports side by side against C(roce_qos)), and the
    GPU-to-NIC affinity (each GPU's nearest NIC from C(nvidia-smi topo -m), whether a NIC NCCL uses is at PIX
    or PXB, a warning for a GPU whose nearest NIC is SYS).
author:
  - Rdmaops Developers (@rdmaops)
options:
  master:
    description: The node of rank 0.
    type: str
    required: true
  runs:
    description: Node to its registered all-reduce command result; omitted when the all-reduce did not run.
    type: dict
  qos_roce:
    description: The RoCE QoS settings; omitted when QoS is not verified.
    type: dict
  qos_switches:
    description: The registered results of M(rdmaops.cluster.switch_qos) in check mode.
    type: list
    elements: raw
    default: []
  qos_hosts:
    description: Node to what it said (C(env), C(links), C(ports), C(dcb)).
    type: dict
    default: {}
  gpu_topology:
    description:
      - Node to its C(nvidia-smi topo -m) command result (C(rc), C(stdout), C(stderr)); C(rc) 127 means no
        C(nvidia-smi) there. Empty - no affinity section.
    type: dict
    default: {}
  nccl_envs:
    description: Node to its NCCL environment (variable to value), for the NICs NCCL uses (C(NCCL_IB_HCA)).
    type: dict
    default: {}
extends_documentation_fragment:
  - rdmaops.cluster.phase
"""

EXAMPLES = r"""
- name: Summarise
  rdmaops.cluster.verify_summary:
    master: node1
    runs: "{{ dict(ansible_play_hosts_all | zip(ansible_play_hosts_all
              | map('extract', hostvars, 'verify_allreduce_run'))) }}"
  run_once: true
  register: verify_summarised
"""

RETURN = r"""
errors:
  description: Input that is not a verify result (no run of the master).
  returned: always
  type: list
  elements: str
plan:
  description: C(collective) (the all-reduce result, or null), C(qos) (the QoS section, or null) and
    C(affinity) (the GPU-to-NIC affinity section, or null).
  returned: always
  type: dict
"""

from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import refuse_without_action
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify.phase import VERIFY_SUMMARY_SPEC


def main() -> None:
    refuse_without_action("verify_summary", VERIFY_SUMMARY_SPEC)


if __name__ == "__main__":
    main()
