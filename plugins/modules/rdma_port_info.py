#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: rdma_port_info
short_description: Report RDMA ports, their state, rate and GID table from sysfs
version_added: "0.1.0"
description:
  - Reads C(/sys/class/infiniband/<device>/ports/<n>/) for every RDMA device and returns one entry per port
    with state, physical state, link layer, rate, LIDs, the netdev behind the port and the GID table.
  - Finds the RoCE v2 GID index that carries an IPv4 address, the value NCCL (C(NCCL_IB_GID_INDEX)) and
    perftest (C(-x)) need.
  - Optionally fails when required ports are not C(ACTIVE) with C(LinkUp), listing every such port and why.
  - Only reads files; nothing on the host changes.
author:
  - Rdmaops Developers (@rdmaops)
options:
  sysfs_root:
    description:
      - Where sysfs is mounted. Tests point this at a copy of the tree.
    type: path
    default: /sys
  require_active:
    description:
      - Ports that must be C(ACTIVE) and C(LinkUp).
      - V(true) requires every port (and at least one RDMA device); V(false) requires none.
      - A list of names, each either a device (C(mlx5_0), all its ports) or C(device/port) (C(mlx5_0/1)).
      - A name that matches no port is reported as missing.
    type: raw
    default: false
  devices:
    description:
      - Only report these devices (by name). All devices when empty.
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    description: Can run in check_mode and return the same data (it only reads sysfs).
    support: full
  diff_mode:
    description: Nothing changes, so there is no diff.
    support: none
  platform:
    description: Linux hosts with sysfs.
    support: full
    platforms: posix
notes:
  - The GID type file holds C(IB/RoCE v1) for both InfiniBand and RoCE v1 entries; the module names it
    C(IB) on InfiniBand ports and C(RoCE v1) on Ethernet ports.
"""

EXAMPLES = r"""
- name: Discover RDMA ports
  rdmaops.cluster.rdma_port_info:
  register: rdma

- name: Use the RoCE v2 IPv4 GID index of the first port
  ansible.builtin.debug:
    msg: "perftest -x {{ rdma.rdma_ports[0].roce_v2_ipv4_gid_index }}"

- name: Gate on port state
  rdmaops.cluster.rdma_port_info:
    require_active:
      - mlx5_0/1
      - mlx5_1
"""

RETURN = r"""
rdma_available:
  description: Whether at least one RDMA port exists.
  returned: always
  type: bool
  sample: true
rdma_devices:
  description: Names of the RDMA devices found.
  returned: always
  type: list
  elements: str
  sample: [mlx5_0, mlx5_1]
inactive:
  description: One line per required port that is not ACTIVE/LinkUp (or does not exist).
  returned: always
  type: list
  elements: str
  sample: ["mlx5_1/1: state DOWN, phys_state Disabled (link layer Ethernet, netdev ens1f1np1)"]
rdma_ports:
  description: One entry per port.
  returned: always
  type: list
  elements: dict
  contains:
    device:
      description: RDMA device name.
      type: str
      sample: mlx5_0
    port:
      description: Port number (1-based).
      type: int
      sample: 1
    name:
      description: C(device/port).
      type: str
      sample: mlx5_0/1
    state:
      description: Logical port state name (C(DOWN), C(INIT), C(ARMED), C(ACTIVE)).
      type: str
      sample: ACTIVE
    state_num:
      description: Logical port state number.
      type: int
      sample: 4
    phys_state:
      description: Physical port state name (C(Disabled), C(Polling), C(LinkUp), ...).
      type: str
      sample: LinkUp
    phys_state_num:
      description: Physical port state number.
      type: int
      sample: 5
    active:
      description: State is ACTIVE and physical state is LinkUp.
      type: bool
      sample: true
    link_layer:
      description: C(InfiniBand) or C(Ethernet).
      type: str
      sample: Ethernet
    rate:
      description: Rate text as the kernel writes it.
      type: str
      sample: 100 Gb/sec (4X EDR)
    rate_gbps:
      description: Rate in Gb/s.
      type: float
      sample: 100
    lid:
      description: Port LID (InfiniBand only, else null).
      type: int
      sample: 5
    sm_lid:
      description: LID of the subnet manager (InfiniBand only, else null).
      type: int
      sample: 1
    port_guid:
      description: Port GUID from GID 0 (InfiniBand only), as C(ibstat -p) prints it.
      type: str
      sample: "0xb8599f0300d1f2ba"
    netdev:
      description: The network interface behind the port, or null.
      type: str
      sample: ens1f0np0
    gids:
      description:
        - Non-empty GID table entries with C(index), C(gid), C(type) (IB, RoCE v1, RoCE v2),
          C(ipv4) and C(netdev).
      type: list
      elements: dict
      sample:
        - index: 3
          gid: "0000:0000:0000:0000:0000:ffff:c0a8:6401"
          type: RoCE v2
          ipv4: 192.168.100.1
          netdev: ens1f0np0
    roce_v2_ipv4_gid_index:
      description: Lowest RoCE v2 GID index with an IPv4 address, null when none (or on InfiniBand).
      type: int
      sample: 3
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.rdma.sysfs import (
    RdmaSysfsError,
    inactive_ports,
    normalize_required,
    read_ports,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "sysfs_root": {"type": "path", "default": "/sys"},
            "require_active": {"type": "raw", "default": False},
            "devices": {"type": "list", "elements": "str", "default": []},
        },
        supports_check_mode=True,
    )
    try:
        required = normalize_required(module.params["require_active"])
        ports = read_ports(module.params["sysfs_root"])
    except RdmaSysfsError as exc:
        module.fail_json(msg=str(exc))
    if module.params["devices"]:
        wanted = set(module.params["devices"])
        ports = [p for p in ports if p["device"] in wanted]
    problems = inactive_ports(ports, required)
    result = {
        "changed": False,
        "rdma_available": bool(ports),
        "rdma_devices": sorted({p["device"] for p in ports}),
        "rdma_ports": ports,
        "inactive": problems,
    }
    if problems:
        module.fail_json(msg="RDMA ports not active: " + "; ".join(problems), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
