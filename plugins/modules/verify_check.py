#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: verify_check
short_description: Check the verify role's settings before any node changes
version_added: "0.1.0"
description:
  - The check phase of the rdmaops.cluster.verify role (an action plugin, run once) - the measurement mode,
    pattern and directions among their choices, every count and duration a positive integer, the thresholds
    valid, at least two nodes, and a data network that site.yml addressed (C(mesh) or C(switched)).
  - Fails with every problem in one message; returns the validated thresholds.
author:
  - Rdmaops Developers (@rdmaops)
options:
  mode:
    description: C(verify_mode), one of C(auto), C(rdma), C(tcp).
    type: raw
    required: true
  pattern:
    description: C(verify_pattern), C(all_pairs) or C(ring).
    type: raw
    required: true
  directions:
    description: C(verify_directions), C(both) or C(one).
    type: raw
    required: true
  integers:
    description: Variable name to value of every setting that must be a positive integer.
    type: dict
    required: true
  thresholds:
    description: C(min_fraction_of_line_rate), C(min_gbps), C(max_latency_us), C(line_rate_gbps),
      C(min_busbw_gbps).
    type: dict
    required: true
  hosts:
    description: The nodes verified.
    type: list
    elements: str
    required: true
  topology:
    description: C(mesh_network_topology) of the inventory.
    type: raw
    default: ""
extends_documentation_fragment:
  - rdmaops.cluster.phase
  - rdmaops.cluster.health
  - rdmaops.cluster.health.mode
"""

EXAMPLES = r"""
- name: Check the settings
  rdmaops.cluster.verify_check:
    mode: auto
    pattern: all_pairs
    directions: both
    integers: {verify_duration: 5, verify_port: 5201}
    thresholds: {min_fraction_of_line_rate: 0.8, line_rate_gbps: median}
    hosts: "{{ ansible_play_hosts_all }}"
    topology: mesh
  run_once: true
"""

RETURN = r"""
errors:
  description: Every setting that is not allowed, named with its value.
  returned: always
  type: list
  elements: str
plan:
  description: C(thresholds), the validated limits (null where not checked).
  returned: always
  type: dict
"""

from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import refuse_without_action
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify.phase import VERIFY_CHECK_SPEC


def main() -> None:
    refuse_without_action("verify_check", VERIFY_CHECK_SPEC)


if __name__ == "__main__":
    main()
