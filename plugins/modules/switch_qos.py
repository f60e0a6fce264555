#!/usr/bin/python
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lossless RoCE QoS on a Cisco IOS-XE or NX-OS switch over NETCONF, with a confirmed commit."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: switch_qos
short_description: RoCE QoS (DSCP -> qos-group, PFC, priority queue) on a Cisco switch over NETCONF
version_added: "0.1.0"
description:
  - Makes a Cisco switch classify RoCE traffic by DSCP into a qos-group, give it a strict-priority egress
    queue and (NX-OS) make its CoS lossless with PFC, with jumbo MTU on the listed ports. The numbers come
    from O(roce_qos), the same variable the hosts' NCCL and NIC settings read.
  - "IOS-XE (Catalyst 9000, Cisco-IOS-XE-native and Cisco-IOS-XE-policy): class-map on the DSCP, input
    policy-map setting the qos-group, class-map on the qos-group with an egress policy C(priority level),
    service-policies and MTU on the ports. No IOS-XE YANG model has priority-flow-control: the module
    does not configure PFC there and returns the manual step in RV(manual) (and as a warning)."
  - "NX-OS (Nexus 9000, Cisco-NX-OS-device): qos class-map and policy (DSCP -> qos-group), network-qos
    policy with C(pause pfc-cos) and MTU on the system class of the qos-group, queuing policy with
    C(priority level) and WRED/ECN, both attached to C(system qos), and per port
    C(priority-flow-control mode on), MTU and the qos service-policy."
  - "Safe change: the running configuration is read and compared first (DSCP names such as C(af31) count
    as their numbers); when equal nothing else happens. Otherwise the prior running configuration is saved
    on the controller, running and candidate are locked, the candidate is edited and validated, then
    committed with C(confirmed) and a timeout, read back and compared, a fresh session proves management
    still reaches the switch, and only then confirmed. If any step after the commit fails the commit is
    cancelled; if this process dies, the switch rolls back by itself when O(confirm_timeout) expires."
  - The objects it owns (its class-maps and policy-maps, by O(names)) are replaced whole; on the ports only
    the MTU, PFC mode and service-policy leaves are set.
  - Runs on the controller (C(ansible_connection=local)) and opens the NETCONF session itself with ncclient,
    because ansible.netcommon.netconf_config's C(confirm) does not work (ansible-collections/ansible.netcommon
    issue 551).
author:
  - Rdmaops Developers (@rdmaops)
options:
  name:
    description: The switch's name in messages and in the backup file name (the inventory name).
    type: str
    required: true
  host:
    description: Address of the switch's NETCONF server.
    type: str
    required: true
  port:
    description: NETCONF over SSH port.
    type: int
    default: 830
  username:
    description: NETCONF user.
    type: str
    required: true
  password:
    description: Password of O(username) (keep it in Ansible Vault); not needed with O(ssh_key).
    type: str
  ssh_key:
    description: Private key file for O(username), instead of a password.
    type: path
  hostkey_verify:
    description: Check the switch's SSH host key against the controller's known_hosts.
    type: bool
    default: true
  timeout:
    description: Seconds to wait for the session to open and for each reply.
    type: int
    default: 30
  platform:
    description: The switch's operating system.
    type: str
    required: true
    choices: [ios-xe, nx-os]
  interfaces:
    description:
      - Ports that face RoCE hosts, as the platform names them (C(HundredGigE1/0/1); C(Ethernet1/1) or
        C(eth1/1)). A port the switch does not have is refused before anything changes.
    type: list
    elements: str
    required: true
  roce_qos:
    description:
      - The fabric's RoCE QoS numbers (missing keys take their defaults), shared with the hosts' NCCL and NIC
        settings.
    type: dict
    default: {}
    suboptions:
      dscp:
        description: DSCP of RoCE packets (0..63).
        type: int
        default: 26
      cos:
        description: CoS (802.1p priority) made lossless with PFC (0..7).
        type: int
        default: 3
      qos_group:
        description: qos-group (internal class) of RoCE traffic (0..7).
        type: int
        default: 3
      priority_level:
        description: Strict priority level of the RoCE queue (1..2).
        type: int
        default: 1
      mtu:
        description: MTU of the listed ports and the RoCE class (1500..9216).
        type: int
        default: 9216
      ecn:
        description: ECN marking (WRED) on the RoCE queue (NX-OS).
        type: bool
        default: true
  names:
    description: Names of the class-maps and policy-maps the module owns on the switch.
    type: dict
    default: {}
    suboptions:
      class_map:
        description: Class-map matching the RoCE DSCP.
        type: str
        default: ROCE
      input_policy:
        description: Input policy-map setting the qos-group.
        type: str
        default: ROCE-IN
      group_class_map:
        description: IOS-XE class-map matching the qos-group (egress).
        type: str
        default: ROCE-QG
      output_policy:
        description: Egress policy-map (IOS-XE) or queuing policy-map (NX-OS) with the priority queue.
        type: str
        default: ROCE-OUT
      network_qos_policy:
        description: NX-OS network-qos policy-map (PFC pause and MTU).
        type: str
        default: ROCE-NQ
  ecn:
    description: WRED/ECN thresholds of the RoCE queue (NX-OS), in kbytes.
    type: dict
    default: {}
    suboptions:
      min_kbytes:
        description: Minimum threshold.
        type: int
        default: 150
      max_kbytes:
        description: Maximum threshold.
        type: int
        default: 3000
      drop_probability:
        description: Drop probability in percent.
        type: int
        default: 7
      weight:
        description: Averaging weight (0..15).
        type: int
        default: 0
  confirm_timeout:
    description: Seconds the switch waits for the confirming commit before it rolls back by itself.
    type: int
    default: 120
  hold_before_confirm:
    description:
      - Seconds to wait between the verified commit and the confirm (e.g. to watch traffic); the
        management check runs after it.
    type: int
    default: 0
  validate:
    description:
      - How the edited candidate is validated before the commit. C(candidate) sends
        C(<validate><source><candidate/>); C(inline) sends the candidate's content as C(<source><config>) (for
        servers such as yuma123 netconfd 2.13, which drops the candidate's pending changes at the next commit
        after a validate by name - the read-back verification catches that); C(none) leaves it to the commit.
    type: str
    choices: [candidate, inline, none]
    default: candidate
  backup_dir:
    description: Directory on the controller for the copy of the prior running configuration (mode 0700).
    type: path
    required: true
notes:
  - Check mode reads running, reports the difference (and the diff with C(--diff)) and opens no lock and no
    candidate edit.
  - Needs the C(:candidate) and C(:confirmed-commit:1.1) capabilities; uses C(:validate) and
    C(:with-defaults) (trim) when the switch offers them.
requirements:
  - ncclient (on the controller)
attributes:
  check_mode:
    description: Reads running and reports what would change; takes no lock and edits no candidate.
    support: full
  diff_mode:
    description: Shows the owned configuration on the switch and as wanted, as CLI lines.
    support: full
"""

EXAMPLES = r"""
- name: RoCE QoS on a leaf switch
  rdmaops.cluster.switch_qos:
    name: "{{ inventory_hostname }}"
    host: "{{ ansible_host }}"
    username: admin
    password: "{{ vault_switch_password }}"
    platform: nx-os
    interfaces: [Ethernet1/1, Ethernet1/2]
    roce_qos: {dscp: 26, cos: 3}
    backup_dir: backups/switches
  delegate_to: localhost
"""

RETURN = r"""
differences:
  description: What differed before the change (C(+) missing on the switch, C(-) there but not wanted).
  returned: always
  type: list
  elements: str
  sample: ["+ interface Ethernet1/1 / priority-flow-control mode on"]
intended:
  description: The owned configuration as CLI lines, as the module wants it.
  returned: always
  type: str
  sample: "class-map type qos match-all ROCE\n match dscp 26\n"
backup:
  description: File on the controller holding the running configuration before the change.
  returned: when changed and not in check mode
  type: str
  sample: backups/switches/sw1-running-20261124T101500.123456Z.xml
manual:
  description: What the module could not configure on this platform and must be done by hand.
  returned: always
  type: list
  elements: str
  sample: ["IOS-XE has no YANG model for priority-flow-control: PFC on CoS 3 was NOT configured; ..."]
state:
  description:
    - What the switch's running configuration held before this run, per RoCE value (for verify.yml's QoS
      table).
      C(ports) maps each listed port to its C(mtu), C(pfc) mode (NX-OS) and C(input_policy).
  returned: always
  type: dict
  sample: {"dscp": [26], "qos_group": [3], "pause_cos": [3], "priority_level": [1],
           "ports": {"Ethernet1/1": {"mtu": 9216, "pfc": "on", "input_policy": "ROCE-IN"}}}
seconds:
  description: Time spent reading, and from the confirmed commit to the confirm.
  returned: always
  type: dict
  sample: {"read": 0.12, "commit_to_confirm": 0.4}
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import roce as rq
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch as sq
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.netconf import (
    NetconfQosError,
    Plan,
    Target,
    apply,
)

try:
    import ncclient  # noqa: F401  # pylint: disable=unused-import

    HAS_NCCLIENT = True
except ImportError:
    HAS_NCCLIENT = False


def _dict(spec: dict[str, tuple[str, object]]) -> dict[str, dict[str, object]]:
    return {key: {"type": kind, "default": default} for key, (kind, default) in spec.items()}


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "str", "required": True},
            "host": {"type": "str", "required": True},
            "port": {"type": "int", "default": 830},
            "username": {"type": "str", "required": True},
            "password": {"type": "str", "no_log": True},
            "ssh_key": {"type": "path", "no_log": False},
            "hostkey_verify": {"type": "bool", "default": True},
            "timeout": {"type": "int", "default": 30},
            "platform": {"type": "str", "required": True, "choices": ["ios-xe", "nx-os"]},
            "interfaces": {"type": "list", "elements": "str", "required": True},
            "roce_qos": {
                "type": "dict",
                "default": {},
                "options": _dict(
                    {
                        "dscp": ("int", 26),
                        "cos": ("int", 3),
                        "qos_group": ("int", 3),
                        "priority_level": ("int", 1),
                        "mtu": ("int", 9216),
                        "ecn": ("bool", True),
                    }
                ),
            },
            "names": {
                "type": "dict",
                "default": {},
                "options": _dict(
                    {
                        "class_map": ("str", "ROCE"),
                        "input_policy": ("str", "ROCE-IN"),
                        "group_class_map": ("str", "ROCE-QG"),
                        "output_policy": ("str", "ROCE-OUT"),
                        "network_qos_policy": ("str", "ROCE-NQ"),
                    }
                ),
            },
            "ecn": {
                "type": "dict",
                "default": {},
                "options": _dict(
                    {
                        "min_kbytes": ("int", 150),
                        "max_kbytes": ("int", 3000),
                        "drop_probability": ("int", 7),
                        "weight": ("int", 0),
                    }
                ),
            },
            "confirm_timeout": {"type": "int", "default": 120},
            "hold_before_confirm": {"type": "int", "default": 0},
            "validate": {"type": "str", "choices": ["candidate", "inline", "none"], "default": "candidate"},
            "backup_dir": {"type": "path", "required": True},
        },
        required_one_of=[("password", "ssh_key")],
        supports_check_mode=True,
    )
    p = module.params
    if not HAS_NCCLIENT:
        module.fail_json(msg=missing_required_lib("ncclient"))
    problems = rq.errors(p["roce_qos"])
    names = sq.Names(**p["names"])
    ecn = sq.Ecn(**p["ecn"])
    problems += sq.input_errors(p["platform"], p["interfaces"], names, ecn)
    if not 1 <= p["confirm_timeout"] <= 3600:
        problems.append(f"confirm_timeout must be 1..3600 seconds, got {p['confirm_timeout']}")
    if problems:
        module.fail_json(msg=f"{p['name']}: " + "; ".join(problems))
    qos = rq.settings(p["roce_qos"])
    target = Target(
        name=p["name"],
        host=p["host"],
        port=p["port"],
        username=p["username"],
        password=p["password"],
        ssh_key=p["ssh_key"],
        hostkey_verify=p["hostkey_verify"],
        timeout=p["timeout"],
    )
    plan = Plan(p["platform"], qos, p["interfaces"], names, ecn)
    manual = sq.manual_steps(p["platform"], qos, p["interfaces"])
    for step in manual:
        module.warn(step)
    try:
        out = apply(
            target,
            plan,
            module.check_mode,
            p["backup_dir"],
            p["confirm_timeout"],
            p["hold_before_confirm"],
            validate=p["validate"],
        )
    except NetconfQosError as exc:
        module.fail_json(msg=str(exc), manual=manual)
    result = {
        "changed": out.changed,
        "differences": out.differences,
        "intended": out.after,
        "manual": manual,
        "seconds": out.seconds,
        "state": out.state,
    }
    if out.backup:
        result["backup"] = out.backup
    if module._diff and out.changed:
        result["diff"] = {
            "before": out.before,
            "after": out.after,
            "before_header": f"{p['name']} running",
            "after_header": f"{p['name']} intended",
        }
    module.exit_json(**result)


if __name__ == "__main__":
    main()
