#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: mesh_paths
short_description: Check every data path of a node, route and don't-fragment ping, in one call
version_added: "0.1.0"
description:
  - For each path check (the C(path_checks) of the plan M(rdmaops.cluster.mesh_network_check) returns), looks
    up the route to the address with C(ip -j route get) (from the check's source address on a fabric rail)
    and pings it with don't-fragment at the check's payload, from the check's source address when it has one.
  - For each ARP check (C(kind=arp), a switched fabric with several rails - one per peer NIC), asks who has
    the peer NIC's address with C(arping -b) from this node's NIC on the same rail (C(expected_dev), its
    address C(source)), O(arp_count) probes a second apart at most, and compares the MACs that answered with
    the NIC's own (C(expected_mac)); more than one MAC is ARP flux, and every MAC is named with its NIC
    (C(nics)). A node without C(arping) (Debian's iputils-arping, which verify.yml installs) reports the ARP
    checks as not run (C(skipped)).
  - The route lookups run one after another; the pings and arpings run side by side, so the call takes
    about one arping's time (or one ping's, without ARP checks) however many peers the node has.
  - Reports each path with the route's interface, the round trip and, for a check with C(hops), the hops
    its replies crossed (from their TTL) against the cabling's. A failed rail check names the node, its NIC,
    the rail and the check (C(egress), C(reach), C(ARP flux)). It never fails because a path is broken; the
    caller decides (the mesh_network role's verify tasks assert on the results).
author:
  - Rdmaops Developers (@rdmaops)
options:
  checks:
    description:
      - The path checks, each with C(dst) (peer name), C(kind) (C(link), C(node), C(fabric) or C(arp)),
        C(address), C(expected_dev) (the interface the route must take; for C(arp) the NIC asked from),
        C(size) (the don't-fragment payload) and optionally C(source), C(hops) (the cables the route
        crosses), C(cable) (a link check's cable), C(path) (the nodes on the way), C(rail), C(node) (this
        node) and C(peer_ifname) (a fabric rail's check), C(expected_mac) and C(nics) (an ARP check's
        expected MAC, and C(mac)/C(nic) of every NIC that could answer).
    type: list
    elements: dict
    required: true
  count:
    description: Echo requests per path.
    type: int
    default: 2
  interval:
    description: Seconds between echo requests.
    type: float
    default: 0.2
  wait_s:
    description: Seconds to wait for the last reply.
    type: int
    default: 2
  arp_count:
    description: ARP requests per ARP check at most, one a second (arping stops at as many replies).
    type: int
    default: 3
attributes:
  check_mode:
    description: Reads only; runs the same in check mode.
    support: full
  diff_mode:
    description: Changes nothing, so has nothing to diff.
    support: none
  platform:
    description: Linux hosts with iproute2 and iputils ping.
    support: full
    platforms: posix
"""

EXAMPLES = r"""
- name: Check every path of this node
  rdmaops.cluster.mesh_paths:
    checks: "{{ mesh_network_plan.path_checks }}"
  register: paths

- name: Fail on a broken path
  ansible.builtin.assert:
    that: paths.failed_paths == 0
    fail_msg: "{{ paths.results | rejectattr('ok') | map(attribute='error') | join('; ') }}"
"""

RETURN = r"""
results:
  description:
    - One entry per check, in the order given, with C(dst), C(kind), C(address), C(expected_dev), C(dev)
      (the interface the route took), C(route_ok), C(ping_ok), C(rtt_ms) (average round trip, null without
      replies), C(ok) and, when not ok, C(error) naming the peer, the address (and the cable or the path)
      and what failed (on a fabric rail - the node, its NIC, the rail and the check); a check with C(hops)
      also has C(expected_hops) and C(hops) (measured, null without replies); an ARP check has C(macs) (the
      MACs that answered), C(expected_mac), C(flux) (more than one answered) or C(skipped) (why it was
      not run).
  returned: always
  type: list
  elements: dict
  sample:
    - dst: node2
      kind: link
      address: 192.168.100.2
      expected_dev: mesh0
      dev: mesh0
      route_ok: true
      ping_ok: true
      rtt_ms: 0.053
      ok: true
failed_paths:
  description: How many entries of RV(results) are not ok.
  returned: always
  type: int
  sample: 0
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import path_probe


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "checks": {"type": "list", "elements": "dict", "required": True},
            "count": {"type": "int", "default": 2},
            "interval": {"type": "float", "default": 0.2},
            "wait_s": {"type": "int", "default": 2},
            "arp_count": {"type": "int", "default": 3},
        },
        supports_check_mode=True,
    )
    params = module.params
    for name in ("count", "wait_s", "arp_count"):
        if params[name] < 1:
            module.fail_json(msg=f"{name} {params[name]} must be 1 or more")
    if params["interval"] <= 0:
        module.fail_json(msg=f"interval {params['interval']} must be more than 0")
    try:
        results = path_probe.probe(
            params["checks"],
            count=params["count"],
            interval=params["interval"],
            wait_s=params["wait_s"],
            arp_count=params["arp_count"],
        )
    except path_probe.PathProbeError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(
        changed=False, results=results, failed_paths=sum(1 for entry in results if not entry["ok"])
    )


if __name__ == "__main__":
    main()
