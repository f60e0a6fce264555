#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nccl_env_check
short_description: Check the nccl_env role's variables before anything on a node changes
version_added: "0.2.0"
description:
  - The validate phase of the rdmaops.cluster.nccl_env role, on the controller. Checks the socket interface
    name (or comma-separated names), the rails (distinct interface names), the shared O(roce_qos) numbers and
    that both file paths are absolute; fails with every problem in one message, each naming its bad value.
  - Runs on the controller (an action plugin); changes nothing, the same in check mode.
author:
  - Rdmaops Developers (@rdmaops)
options:
  socket_ifname:
    description: Interface for NCCL bootstrap/socket traffic and gloo (C(nccl_env_socket_ifname)).
    type: raw
    required: true
  rails:
    type: raw
    default: []
  roce_qos:
    description: The fabric's RoCE QoS numbers (this role reads C(dscp)).
    type: raw
  conf_file:
    description: NCCL's configuration file (C(nccl_env_conf_file)).
    type: raw
    required: true
  env_file:
    description: The launchers' env file (C(nccl_env_file)).
    type: raw
    required: true
extends_documentation_fragment:
  - rdmaops.cluster.phase
  - rdmaops.cluster.nccl_sockets
  - rdmaops.cluster.nccl_rails
"""

EXAMPLES = r"""
- name: Check the role's variables
  rdmaops.cluster.nccl_env_check:
    socket_ifname: nodeaddr0
    roce_qos: {dscp: 26}
    conf_file: /etc/nccl.conf
    env_file: /etc/rdmaops/nccl.env
"""

RETURN = r"""
errors:
  description: Every bad NCCL setting (socket interface, rails, RoCE QoS, thread counts, file paths), each
    naming the role variable and its value; the task fails with them joined by C(; ).
  returned: always
  type: list
  elements: str
plan:
  description: C(dscp), the DSCP of RoCE traffic (NCCL_IB_TC = DSCP x 4).
  returned: always
  type: dict
"""

from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl.phase import NCCL_ENV_CHECK_SPEC
from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import refuse_without_action


def main() -> None:
    refuse_without_action("nccl_env_check", NCCL_ENV_CHECK_SPEC)


if __name__ == "__main__":
    main()
