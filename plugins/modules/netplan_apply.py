#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: netplan_apply
short_description: Install a netplan file and roll it back if the network stops answering
version_added: "0.1.0"
description:
  - Writes O(content) to O(dest) only when it differs, then runs C(netplan generate) and C(networkctl reload)
    (the networkd renderer; C(netplan apply) needs udev and C(netplan try) cannot run unattended).
  - Before the change it pings every O(check_targets) entry once; those that answered must answer again
    within O(timeout) seconds after the reload. Otherwise, or when C(netplan generate) rejects the file, the
    previous file is restored (or the new one removed), regenerated and reloaded, and the module fails
    naming the targets.
  - All of this runs on the node in one go, so the rollback also happens when the management connection
    breaks.
author:
  - Rdmaops Developers (@rdmaops)
options:
  dest:
    description: Path of the netplan file.
    type: path
    required: true
  content:
    description: The complete file content.
    type: str
    required: true
  mode:
    description: File mode; netplan warns about files readable by others.
    type: str
    default: "0600"
  check_targets:
    description:
      - Addresses that must keep answering, as strings or as mappings with C(address), C(size), C(name) and
        C(source).
      - C(name) says what the path is in an operator's terms (port and peer); errors lead with it.
      - C(source) is the local address to ping from (C(ping -I)), so a source rule's routing table is probed;
        a target whose source the node does not have yet does not answer before the change, and is then not
        required.
      - With C(size) greater than 0 the ping is sent with don't-fragment and that payload, so an MTU
        mismatch counts as not answering.
    type: list
    elements: raw
    default: []
  expect_addresses:
    description:
      - Addresses the new file configures, as mappings with C(ifname) and C(address) (C(a.b.c.d/len)).
      - C(networkctl reload) returns before networkd has reconfigured the links; probing starts only once
        all of these show up in C(ip addr), so answers over the old configuration do not count. Not
        showing up within O(timeout) also rolls back.
    type: list
    elements: dict
    default: []
  timeout:
    description: Seconds to wait for the targets after the reload (a single probe right after it is racy).
    type: int
    default: 20
  backup:
    description: Keep the previous file as O(dest) plus C(.rdmaops-prev) (netplan only reads C(*.yaml)).
    type: bool
    default: true
attributes:
  check_mode:
    description: Reports whether the file would change, with a diff, and touches nothing.
    support: full
  diff_mode:
    description: Shows the old and new file.
    support: full
  platform:
    description: Linux with netplan and the systemd-networkd renderer.
    support: full
    platforms: posix
notes:
  - Needs C(netplan), C(networkctl) and C(ping) on the node.
  - A test hook, for the lab's tests only - while C(/run/rdmaops-test/netplan_apply.hold) exists on the node,
    the module stops itself (SIGSTOP) right after the reload, before its probes, and writes its PID to that
    path plus C(.pid), so that a test can cut the node off in that moment and then send SIGCONT.
"""

EXAMPLES = r"""
- name: Apply the data-port configuration, keep it only if peers and the controller still answer
  rdmaops.cluster.netplan_apply:
    dest: /etc/netplan/60-rdmaops-mesh.yaml
    content: "{{ lookup('ansible.builtin.template', 'netplan.yaml.j2') }}"
    check_targets:
      - 10.99.0.1
      - address: 192.168.100.2
        size: 8972
    expect_addresses:
      - ifname: enp1s0f0np0
        address: 192.168.100.1/30
    timeout: 20
"""

RETURN = r"""
backup_file:
  description: Where the previous file was kept.
  returned: changed and a previous file existed
  type: str
  sample: /etc/netplan/60-rdmaops-mesh.yaml.rdmaops-prev
required_targets:
  description: Targets that answered before the change and therefore had to answer after it.
  returned: always
  type: list
  elements: str
  sample: ["10.99.0.1", "192.168.100.2 (DF 8972 B)"]
waited:
  description:
    - Seconds until all required targets answered after the reload; on a rollback because targets stopped
      answering, seconds from the reload until the restored configuration answered (or was given up on).
  returned: always
  type: float
  sample: 1.02
reconfigured:
  description:
    - Interfaces whose expected addresses had not appeared halfway through O(timeout) after the reload, and
      that networkd was therefore asked to reconfigure (C(networkctl reconfigure)). Empty on a normal apply.
  returned: changed
  type: list
  elements: str
  sample: ["data0"]
rolled_back:
  description: True when the new file was not kept (only on failure).
  returned: failure
  type: bool
  sample: true
networkd_status:
  description:
    - C(networkctl status) of the interfaces whose expected addresses did not appear, read before the
      rollback (state, addresses and networkd's log lines for them).
  returned: failure, when networkd did not configure the expected addresses in time
  type: list
  elements: str
  sample: ["2: data0", "State: routable (configuring)"]
"""

import signal

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh.netplan_apply import (
    ApplyError,
    parse_expect,
    parse_targets,
    safe_apply,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "dest": {"type": "path", "required": True},
            "content": {"type": "str", "required": True},
            "mode": {"type": "str", "default": "0600"},
            "check_targets": {"type": "list", "elements": "raw", "default": []},
            "expect_addresses": {"type": "list", "elements": "dict", "default": []},
            "timeout": {"type": "int", "default": 20},
            "backup": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    params = module.params
    try:
        mode = int(params["mode"], 8)
        targets = parse_targets(params["check_targets"])
        expect = parse_expect(params["expect_addresses"])
    except ValueError as exc:
        module.fail_json(msg=f"bad argument: {exc}")
    # If the management link drops mid-apply the SSH session may hang up; finish the rollback anyway.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        result = safe_apply(
            params["dest"],
            params["content"],
            mode=mode,
            targets=targets,
            expect=expect,
            timeout_s=params["timeout"],
            check_mode=module.check_mode,
            backup=params["backup"],
        )
    except ApplyError as exc:
        module.fail_json(msg=str(exc), **exc.details)
    out = {
        "changed": result.changed,
        "required_targets": result.required,
        "waited": result.waited_s,
    }
    if result.changed:
        out["reconfigured"] = result.reconfigured
    if result.backup_file:
        out["backup_file"] = result.backup_file
    if module._diff and result.before != result.after:
        out["diff"] = {
            "before": result.before or "",
            "after": result.after,
            "before_header": params["dest"] if result.before is not None else "(absent)",
            "after_header": params["dest"],
        }
    module.exit_json(**out)


if __name__ == "__main__":
    main()
