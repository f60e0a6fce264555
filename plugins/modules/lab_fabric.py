#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: lab_fabric
short_description: Wire the network of a local virtual cluster (lab) instance
version_added: "0.1.0"
description:
  - Creates, on the local host, one network namespace per node (C(<name>-<node>)), a management bridge
    C(<name>-mbr) holding the first address of O(mgmt_cidr), and per node a veth pair whose node end
    C(mgmt0) gets
    the node's management address (C(.11), C(.12), ...). No default route is added and the host's forwarding
    setting is not touched.
  - Data ports, left without addresses. O(topology=mesh) makes one veth pair per node pair; node number i
    reaches
    peer j through C(data<j-1>) when j < i and C(data<j-2>) when j > i, so appending nodes never renames a
    port.
    O(topology=ring) and O(topology=chain) cable two-port nodes in a line, node i's C(data1) to node i+1's
    C(data0) (a ring also the last node's C(data1) to the first's C(data0)); O(topology=rails) joins two
    nodes by two cables (C(data0) to C(data0), C(data1) to C(data1)).
    O(topology=switched) gives every node O(fabric_ports) ports C(data0).. whose host ends are on the bridge
    C(<name>-dbr) (O(fabric=shared)) or, port k, on C(<name>-dbr<k>) (O(fabric=rails)).
  - Every port gets a MAC derived from the instance, node and port names and an alias naming its link, so
    re-runs recognise what they made, repair half-made links, remove ports of another topology and change
    nothing when all is in place.
  - Host-side names start with C(<name>-) and fit the kernel's 15 characters.
author:
  - Rdmaops Developers (@rdmaops)
options:
  name:
    description: Instance name, 1-10 lowercase letters or digits; the prefix of every host-side name.
    type: str
    required: true
  nodes:
    description: Node names in order; the position (from 1) is the node number used in addresses and port
      names.
    type: list
    elements: str
    required: true
  switches:
    description:
      - Names of switches (lab stand-ins for the fabric's switch, reached over NETCONF). Each gets a
        netns and a management port only, at the (110+k)th address, so appending nodes never moves it.
    type: list
    elements: str
    default: []
  topology:
    description: Data network wiring (ring - 3 nodes or more, chain - 2 or more, rails - exactly 2).
    type: str
    choices: [mesh, switched, ring, chain, rails]
    default: mesh
  fabric_ports:
    description:
      - Data ports C(data0)..C(data<n-1>) of every node of a switched lab (1-8). Their host ends are named
        C(<name>-d<i>) and then C(<name>-d<i>b), C(<name>-d<i>c) ... for the further ports.
    type: int
    default: 1
  fabric:
    description:
      - How a switched lab's ports meet - V(shared), every port of every node on the bridge C(<name>-dbr)
        (one subnet, several NICs per node in it); V(rails), port k of every node on bridge C(<name>-dbr<k>)
        (port 0 on C(<name>-dbr)), like rail-optimized leaf switches.
    type: str
    choices: [shared, rails]
    default: shared
  mgmt_cidr:
    description: IPv4 management network; the host bridge gets the first address, node i gets the (10+i)th.
    type: str
    default: 10.99.0.0/24
  fabric_mtu:
    description: MTU of the host side of a switched fabric (bridge and host veth ends), so jumbo frames pass.
    type: int
    default: 9000
extends_documentation_fragment:
  - rdmaops.cluster.lab
requirements:
  - iproute2 with JSON output (C(ip -j)); run as root.
"""

EXAMPLES = r"""
- name: Wire a three-node mesh
  rdmaops.cluster.lab_fabric:
    name: lab
    nodes: [node1, node2, node3]
    topology: mesh
    mgmt_cidr: 10.99.0.0/24
  register: lab_fabric_result
"""

RETURN = r"""
plan:
  description: What the instance looks like, whether or not anything changed.
  returned: always
  type: dict
  contains:
    mgmt_host_ip:
      description: Address of the host on the management bridge.
      type: str
      sample: 10.99.0.1
    nodes:
      description: Per node (and switch) its number, netns, management address, C(role) (C(node) or
        C(switch)) and C(ports) (peer name to port, or C(fabric); none for a switch).
      type: list
      elements: dict
      sample: [{"name": "node1", "index": 1, "netns": "lab-node1", "mgmt_ip": "10.99.0.11",
                "ports": {"node2": "data0", "node3": "data1"}, "macs": {"data0": "02:4f:10:aa:01:9c"}}]
    links:
      description: Mesh links, one per node pair.
      type: list
      elements: dict
      sample: [{"a": "node1", "a_if": "data0", "b": "node2", "b_if": "data0"}]
changes:
  description: What was done (or would be done in check mode).
  returned: always
  type: list
  elements: str
  sample: ["add netns lab-node1", "add bridge lab-mbr"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.rdmaops.cluster.plugins.module_utils.lab.fabric import LAB_FABRIC_SPEC, Fabric
from ansible_collections.rdmaops.cluster.plugins.module_utils.lab.host import Host
from ansible_collections.rdmaops.cluster.plugins.module_utils.lab.plan import LabError, make_plan


def main() -> None:
    module = AnsibleModule(argument_spec=LAB_FABRIC_SPEC, supports_check_mode=True)
    p = module.params
    try:
        plan = make_plan(
            p["name"],
            p["nodes"],
            p["topology"],
            p["mgmt_cidr"],
            p["switches"],
            p["fabric_ports"],
            p["fabric"],
        )
        host = Host(p["name"], check_mode=module.check_mode)
        Fabric(host, plan, p["fabric_mtu"]).apply()
    except LabError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=bool(host.changes), changes=host.changes, plan=plan.as_dict())


if __name__ == "__main__":
    main()
