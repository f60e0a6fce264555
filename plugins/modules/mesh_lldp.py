#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: mesh_lldp
short_description: Read what LLDP sees on a node's data ports and compare it with the declared cables
version_added: "0.1.0"
description:
  - Reads C(lldpcli -f json show neighbors) (lldpd must run) until every port it waits for has a neighbour, or
    O(wait) seconds pass. It waits for the ports of O(cables) when given, else for every Ethernet port with
    carrier that does not hold an address of O(exclude_addresses) (the management interface).
  - Maps each neighbour's system name back to an inventory name (O(names)) and returns the port map that
    C(discover) writes, for any cabling; a peer on several ports (rails) gets a list, in the same order at
    both ends.
  - With O(cables), each declared cable's port must face the declared peer (and the peer's declared port,
    when known); every mismatch is returned in C(errors), naming port, neighbour and the inventory's word.
    Ports where LLDP sees nobody are returned in C(silent). The module itself never fails on a miscabling.
author:
  - Rdmaops Developers (@rdmaops)
options:
  host:
    description: This node's inventory name.
    type: str
    required: true
  names:
    description: Every node's inventory name with the system names it may send (hostname, FQDN).
    type: dict
    required: true
  cables:
    description: This node's declared cables, each with C(ifname), C(peer) and C(peer_port) (may be empty).
    type: list
    elements: dict
    default: []
  exclude_addresses:
    description: Addresses Ansible connects to; the interface that holds one is not a data port.
    type: list
    elements: str
    default: []
  wait:
    description: Seconds to wait for a neighbour on every port waited for.
    type: int
    default: 10
attributes:
  check_mode:
    description: Reads only; runs the same in check mode.
    support: full
  diff_mode:
    description: Changes nothing.
    support: none
  platform:
    description: Linux with lldpd and iproute2.
    support: full
    platforms: posix
"""

EXAMPLES = r"""
- name: Compare the declared cables with LLDP
  rdmaops.cluster.mesh_lldp:
    host: "{{ inventory_hostname }}"
    names: {node1: [node1], node2: [node2], node3: [node3]}
    cables: "{{ mesh_network_plan.links }}"
  register: lldp_seen

- name: Stop on a miscabling
  ansible.builtin.assert:
    that: lldp_seen.errors | length == 0
    fail_msg: "{{ lldp_seen.errors | join('; ') }}"
"""

RETURN = r"""
neighbors:
  description: Per local port, what LLDP saw (C(sysname), C(chassis_id), C(port_id), C(port_descr), ...).
  returned: always
  type: dict
discovered:
  description: C(ports) (peer to port, or list of ports), C(faces) (port to 'peer peer-port'), C(unknown).
  returned: always
  type: dict
errors:
  description: Declared cables whose port faces another node or port than the inventory says.
  returned: always
  type: list
  elements: str
silent:
  description: Declared ports where LLDP sees no neighbour.
  returned: always
  type: list
  elements: str
waited_for:
  description: The ports the module waited for.
  returned: always
  type: list
  elements: str
"""

import json
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import lldp


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "host": {"type": "str", "required": True},
            "names": {"type": "dict", "required": True},
            "cables": {"type": "list", "elements": "dict", "default": []},
            "exclude_addresses": {"type": "list", "elements": "str", "default": []},
            "wait": {"type": "int", "default": 10},
        },
        supports_check_mode=True,
    )
    p = module.params
    names = {str(h): [str(a) for a in (v or [])] for h, v in p["names"].items()}

    def run(argv: list[str]) -> str:
        rc, out, err = module.run_command(argv)
        if rc != 0:
            module.fail_json(msg=f"{' '.join(argv)} failed (rc {rc}): {err.strip() or out.strip()}")
        return out

    try:
        candidates = lldp.data_port_candidates(
            run(["ip", "-j", "-d", "link", "show"]), run(["ip", "-j", "addr", "show"]), p["exclude_addresses"]
        )
        wanted = [str(c.get("ifname") or "") for c in p["cables"] if c.get("ifname")] or candidates["ports"]
        deadline = time.monotonic() + max(0, p["wait"])
        while True:
            neighbors = lldp.parse_neighbors(run(["lldpcli", "-f", "json", "show", "neighbors"]))
            if all(port in neighbors for port in wanted) or time.monotonic() >= deadline:
                break
            time.sleep(1)
        discovered = lldp.discovered_ports(neighbors, names, p["host"], candidates["excluded"])
        report = (
            lldp.cabling_report(p["host"], p["cables"], neighbors, names)
            if p["cables"]
            else {"errors": [], "silent": []}
        )
    except (lldp.LldpError, json.JSONDecodeError) as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(
        changed=False,
        neighbors=neighbors,
        discovered=discovered,
        errors=report["errors"],
        silent=report["silent"],
        waited_for=wanted,
    )


if __name__ == "__main__":
    main()
