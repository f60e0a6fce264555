#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: lab_unit
short_description: Run a lab process (a node's systemd-nspawn, the apt proxy) detached in its own cgroup
version_added: "0.1.0"
description:
  - The host's PID 1 may not be systemd, so there is no C(systemctl) to supervise lab processes. This
    module starts
    O(argv) in a new session, detached from Ansible, with output appended to C(<run_dir>/<name>/<unit>.log)
    and its
    PID in C(<run_dir>/<name>/<unit>.pid).
  - The process is first moved into the cgroup C(rdmaops-lab/<name>/<unit>) of the name=systemd hierarchy
    and of
    the cgroup2 hierarchy. Every node then has a cgroup of its own, which systemd inside the node needs to
    keep
    its units apart from other nodes' units, and teardown finds every process of the instance there.
  - Nothing is done when the recorded process runs with exactly O(argv). Otherwise leftovers in the unit's
    cgroup
    (a crashed run, another configuration) are stopped first.
author:
  - Rdmaops Developers (@rdmaops)
options:
  name:
    description: Instance name.
    type: str
    required: true
  unit:
    description: Unit name within the instance (a node name, or C(aptproxy)).
    type: str
    required: true
  argv:
    description: Command and arguments, run without a shell.
    type: list
    elements: str
    required: true
  state:
    description: V(started) starts the unit if needed; V(stopped) stops it (containers get SIGRTMIN+4 first).
    type: str
    choices: [started, stopped]
    default: started
  stop_timeout:
    description: Seconds to wait for an orderly stop before SIGKILL.
    type: int
    default: 30
  listens_on:
    description:
      - C(ADDRESS:PORT) the unit serves (V(started) only). The module waits until the unit's own process
        listens there, and fails naming the other process when a different one holds that address and port
        (a listener on the wildcard address included), instead of letting clients reach the wrong server.
    type: str
  listen_timeout:
    description: Seconds to wait for the unit to listen on O(listens_on).
    type: int
    default: 30
extends_documentation_fragment:
  - rdmaops.cluster.lab
"""

EXAMPLES = r"""
- name: Start the apt proxy of instance lab
  rdmaops.cluster.lab_unit:
    name: lab
    unit: aptproxy
    argv: [/usr/sbin/apt-cacher-ng, -c, /var/lib/rdmaops-lab/lab/aptproxy/conf, ForeGround=1, Port=3242]
    listens_on: 10.99.0.1:3242
"""

RETURN = r"""
pid:
  description: PID of the unit's main process (null in check mode when it would be started, and when stopped).
  returned: always
  type: int
  sample: 41234
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.rdmaops.cluster.plugins.module_utils.lab.host import Host
from ansible_collections.rdmaops.cluster.plugins.module_utils.lab.plan import LabError


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "str", "required": True},
            "unit": {"type": "str", "required": True},
            "argv": {"type": "list", "elements": "str", "required": True},
            "state": {"type": "str", "choices": ["started", "stopped"], "default": "started"},
            "stop_timeout": {"type": "int", "default": 30},
            "listens_on": {"type": "str"},
            "listen_timeout": {"type": "int", "default": 30},
        },
        supports_check_mode=True,
    )
    p = module.params
    pid = None
    try:
        host = Host(p["name"], check_mode=module.check_mode)
        if p["state"] == "started":
            pid = host.start(p["unit"], p["argv"])
            if p["listens_on"] and pid is not None:
                address, _sep, port = p["listens_on"].rpartition(":")
                if not address or not port.isdigit():
                    module.fail_json(msg=f"listens_on: {p['listens_on']!r} is not ADDRESS:PORT")
                host.wait_listening(p["unit"], pid, address, int(port), p["listen_timeout"])
        else:
            host.stop(p["unit"], timeout=p["stop_timeout"])
    except LabError as exc:
        module.fail_json(msg=str(exc))
    for warning in host.warnings:
        module.warn(warning)
    module.exit_json(changed=bool(host.changes), pid=pid, changes=host.changes)


if __name__ == "__main__":
    main()
