#!/usr/bin/python
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""PFC on the RoCE priority and the RoCE DSCP mapped to it, on a node's RoCE ports (iproute2 dcb)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nic_qos
short_description: PFC and DSCP-to-priority of RoCE ports with iproute2's dcb (read, compare, set)
version_added: "0.1.0"
description:
  - For each port, reads C(dcb -j pfc show) and C(dcb -j app show), and when they differ from what the
    fabric wants sets PFC on priority O(cos) only (C(dcb pfc set ... prio-pfc all:off COS:on)) and maps DSCP
    O(dscp) to that priority (C(dcb app replace ... dscp-prio DSCP:COS)), then reads back.
  - A port whose driver has no DCB support (veths, most virtual NICs) is skipped and named, with dcb's own
    message, in RV(unsupported); that is not a failure.
  - O(dscp) and O(cos) are the C(dscp) and C(cos) of C(roce_qos), which the switches and NCCL read too.
author:
  - Rdmaops Developers (@rdmaops)
options:
  devices:
    description: Network devices of the RoCE ports (the netdevs of the RDMA ports).
    type: list
    elements: str
    required: true
  dscp:
    description: DSCP of RoCE traffic (0..63).
    type: int
    required: true
  cos:
    description: The lossless priority (0..7).
    type: int
    required: true
requirements:
  - iproute2 with C(dcb) (Debian 11+, Ubuntu 22.04+).
attributes:
  check_mode:
    description: Reads and reports the commands it would run; changes nothing.
    support: full
  diff_mode:
    description: Not supported.
    support: none
"""

EXAMPLES = r"""
- name: Lossless RoCE priority on the RoCE ports
  rdmaops.cluster.nic_qos:
    devices: [ens1f0np0]
    dscp: 26
    cos: 3
"""

RETURN = r"""
ports:
  description:
    - Per port, the state after the run (C(supported), C(pfc_enabled), C(dscp_prio), C(trust_dscp)).
    - C(trust_dscp) is true while the APP table holds a DSCP entry, which is when a ConnectX (mlx5) port
      trusts DSCP; NIC drivers have no C(dcb apptrust).
  returned: always
  type: list
  elements: dict
  sample:
    - {"dev": "ens1f0np0", "supported": true, "pfc_enabled": [3], "dscp_prio": {"26": [3]},
       "trust_dscp": true}
commands:
  description: The dcb commands run (or, in check mode, that would run).
  returned: always
  type: list
  elements: list
  sample: [["dcb", "pfc", "set", "dev", "ens1f0np0", "prio-pfc", "all:off", "3:on"]]
unsupported:
  description: Ports without DCB support, with dcb's message.
  returned: always
  type: list
  elements: str
  sample: ["data0: no DCB support (Attribute read: Operation not supported)"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import dcb


def _read(module: AnsibleModule, dev: str) -> dcb.PortDcb:
    rc, out, err = module.run_command(["dcb", "-j", "pfc", "show", "dev", dev])
    if dcb.unsupported(rc, err):
        return dcb.PortDcb(dev, False, err.strip().splitlines()[-1] if err.strip() else "not supported")
    if rc != 0:
        module.fail_json(msg=f"dcb pfc show dev {dev} failed (rc {rc}): {err.strip()}")
    try:
        pfc, cap = dcb.parse_pfc(out)
        rc, out, err = module.run_command(["dcb", "-j", "app", "show", "dev", dev])
        if rc != 0:
            module.fail_json(msg=f"dcb app show dev {dev} failed (rc {rc}): {err.strip()}")
        return dcb.PortDcb(dev, True, pfc=pfc, pfc_cap=cap, dscp_prio=dcb.parse_app(out))
    except dcb.DcbError as exc:
        module.fail_json(msg=f"{dev}: {exc}")
    raise AssertionError("unreachable")


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "devices": {"type": "list", "elements": "str", "required": True},
            "dscp": {"type": "int", "required": True},
            "cos": {"type": "int", "required": True},
        },
        supports_check_mode=True,
    )
    p = module.params
    if not 0 <= p["dscp"] <= 63 or not 0 <= p["cos"] <= 7:
        module.fail_json(msg=f"dscp must be 0..63 and cos 0..7, got {p['dscp']} and {p['cos']}")
    if module.get_bin_path("dcb") is None:
        module.fail_json(msg="iproute2's dcb tool is not installed on this node")
    commands: list[list[str]] = []
    ports, unsupported = [], []
    for dev in p["devices"]:
        port = _read(module, dev)
        if not port.supported:
            unsupported.append(f"{dev}: no DCB support ({port.reason})")
            ports.append(port.as_dict())
            continue
        todo = dcb.wanted_changes(port, p["dscp"], p["cos"])
        commands += todo
        if todo and not module.check_mode:
            for cmd in todo:
                module.run_command(cmd, check_rc=True)
            port = _read(module, dev)
            left = dcb.verdict(port, p["dscp"], p["cos"])
            if left:
                module.fail_json(msg=f"{dev}: after dcb set, still {'; '.join(left)}", commands=commands)
        ports.append(port.as_dict())
    module.exit_json(changed=bool(commands), commands=commands, ports=ports, unsupported=unsupported)


if __name__ == "__main__":
    main()
