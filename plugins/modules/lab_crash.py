#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
---
module: lab_crash
short_description: Crash nodes of a local virtual cluster (lab) the way a power cut would
version_added: "0.1.0"
description:
  - Sends SIGKILL at once to every process of each node in O(nodes) (those in the node's cgroup, in its
    network namespace, or with its root in their command line), including the node's PID 1, and waits
    until none is left.
  - Killing only C(systemd-nspawn) is not a crash, since the node's systemd carries on as PID 1 of its PID
    namespace and sshd keeps answering; with PID 1 gone the kernel kills every process of the namespace.
  - Nothing else is touched (mounts, network namespaces, ports and files stay, as after a power cut);
    C(lab_state=present) of the lab role boots the node again.
  - A node that is not running is left alone (not a change); a name the instance does not have is refused
    before anything is killed.
author:
  - Rdmaops Developers (@rdmaops)
options:
  nodes:
    description: Nodes to crash, such as C(node2).
    type: list
    elements: str
    required: true
extends_documentation_fragment:
  - rdmaops.cluster.lab
  - rdmaops.cluster.lab.instance
"""

EXAMPLES = r"""
- name: Pull the plug on node2 of instance lab
  rdmaops.cluster.lab_crash:
    name: lab
    nodes: [node2]
"""

RETURN = r"""
killed:
  description: Processes killed per node (or that would be, in check mode).
  returned: always
  type: dict
  sample: {node2: 14}
changes:
  description: What was done.
  returned: always
  type: list
  elements: str
  sample: ["crash node2 (SIGKILL to its 14 processes)"]
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.rdmaops.cluster.plugins.module_utils.lab.host import INSTANCE_SPEC, Host
from ansible_collections.rdmaops.cluster.plugins.module_utils.lab.plan import LabError


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            **INSTANCE_SPEC,
            "nodes": {"type": "list", "elements": "str", "required": True},
        },
        supports_check_mode=True,
    )
    p = module.params
    killed: dict[str, int] = {}
    try:
        host = Host(p["name"], p["cache_dir"], p["run_dir"], check_mode=module.check_mode)
        if not os.path.isdir(host.instance_dir):
            raise LabError(f"lab {p['name']} does not exist ({host.instance_dir} is missing)")
        have = sorted(host.nodes_on_disk())
        unknown = [n for n in p["nodes"] if n not in have]
        if unknown:  # before anything is killed
            raise LabError(
                f"lab {p['name']} has no node {', '.join(unknown)} (it has: {', '.join(have) or 'none'})"
            )
        for node in p["nodes"]:
            killed[node] = host.crash(node)
    except LabError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=bool(host.changes), killed=killed, changes=host.changes)


if __name__ == "__main__":
    main()
