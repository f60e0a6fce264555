#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: switch_qos_check
short_description: Check the switch_qos role's inputs before any NETCONF session, and plan its change
version_added: "0.2.0"
description:
  - The validate phase of the rdmaops.cluster.switch_qos role, on the controller. Checks everything that can
    be known without the switch - the shared O(roce_qos) numbers, the platform's port names and duplicates,
    the names of the owned objects, the ECN thresholds, the confirm timeout and that credentials are given -
    and fails with every problem in one message, each naming its bad value.
  - Otherwise returns the plan the role's configure step hands rdmaops.cluster.switch_qos.
  - Runs on the controller (an action plugin); changes nothing, the same in check mode.
author:
  - Rdmaops Developers (@rdmaops)
options:
  roce_qos:
    description: The fabric's RoCE QoS numbers (missing keys take their defaults, see
      rdmaops.cluster.switch_qos).
    type: raw
  platform:
    description: C(ios-xe) or C(nx-os) (the role's C(switch_qos_platform)).
    type: raw
    required: true
  interfaces:
    description: Ports that face RoCE hosts, as the platform names them.
    type: raw
    required: true
  names:
    description: Names of the owned class-maps and policy-maps (the role's C(switch_qos_names)).
    type: raw
  ecn:
    description: NX-OS WRED/ECN thresholds (the role's C(switch_qos_ecn)).
    type: raw
  password:
    description: The NETCONF password; only whether it is given is checked.
    type: str
    default: ""
  ssh_key:
    description: The private key file; only whether it is given is checked.
    type: str
    default: ""
  confirm_timeout:
    description: Seconds the switch waits for the confirming commit.
    type: raw
    required: true
  hold_before_confirm:
    description: Seconds between the verified commit and the confirm; checked with O(confirm_timeout).
    type: raw
    default: 0
  timeout:
    description: Seconds allowed for each reply; the confirm timeout must cover three after the commit.
    type: raw
    default: 30
extends_documentation_fragment:
  - rdmaops.cluster.phase
"""

EXAMPLES = r"""
- name: Check roce_qos and the switch's variables
  rdmaops.cluster.switch_qos_check:
    roce_qos: "{{ roce_qos | default({}) }}"
    platform: nx-os
    interfaces: [Ethernet1/1, Ethernet1/2]
    names: {}
    ecn: {}
    password: "{{ vault_switch_password }}"
    confirm_timeout: 120
    hold_before_confirm: 0
    timeout: 30
  register: switch_qos_check
"""

RETURN = r"""
errors:
  description: Every bad switch setting (platform, interfaces, RoCE QoS values, policy names, timeouts), each
    naming the value; the task fails with them joined by C(; ).
  returned: always
  type: list
  elements: str
plan:
  description:
    - C(roce_qos) (merged over its defaults), C(interfaces), C(names), C(ecn) (with their defaults) and
      C(manual) (what this platform cannot configure over NETCONF). Empty when there are errors.
  returned: always
  type: dict
"""

from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import refuse_without_action
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.phase import SWITCH_QOS_CHECK_SPEC


def main() -> None:
    refuse_without_action("switch_qos_check", SWITCH_QOS_CHECK_SPEC)


if __name__ == "__main__":
    main()
