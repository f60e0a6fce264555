#!/usr/bin/python
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lossless RoCE QoS on a Cisco IOS-XE or NX-OS switch over NETCONF, with a confirmed commit."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: switch_qos
short_description: RoCE QoS (DSCP -> qos-group, PFC, CNP and RoCE queues) on a Cisco switch over NETCONF
version_added: "0.1.0"
description:
  - Makes a Cisco switch carry RoCE as Cisco's data center networking blueprint for AI/ML describes it
    (docs/switch_qos.md cites it) - RoCE data and congestion notification packets (CNP) classified by DSCP
    into two qos-groups, CNP on the strict-priority queue, RoCE on a weighted queue with WRED/ECN (or on a
    strict queue below CNP, O(roce_qos.roce_queue=strict)), its CoS lossless with PFC and the PFC watchdog
    (NX-OS), jumbo MTU. The numbers come from O(roce_qos), the same variable the hosts' NCCL and NIC settings
    read.
  - "IOS-XE (Catalyst 9000, Cisco-IOS-XE-native and Cisco-IOS-XE-policy): class-maps on the two DSCPs, an
    input policy-map setting the qos-groups, class-maps on the qos-groups with an egress policy (C(priority
    level) for CNP, C(bandwidth remaining percent) for RoCE), service-policies and MTU on the ports. No IOS-XE
    YANG model has priority-flow-control: the module does not configure PFC there and returns the manual step
    in RV(manual) (and as a warning)."
  - "NX-OS (Nexus 9000, Cisco-NX-OS-device): qos class-maps and policy (DSCP -> qos-group), network-qos policy
    with C(pause pfc-cos) and MTU on the RoCE class and MTU on the default class, queuing policy (CNP
    C(priority level), RoCE C(bandwidth remaining percent) with WRED/ECN, the default class the rest), both
    attached to C(system qos), and per port C(priority-flow-control mode on), the PFC watchdog, MTU and the
    qos service-policy. qos-group 0 is NX-OS's default class and is refused for RoCE or CNP."
  - "Safe change: the running configuration is read and compared first, with the model's defaults applied (a
    leaf a with-defaults C(trim) reply leaves out reads as its default; DSCP names such as C(af31) count as
    their numbers); when equal nothing else happens. Otherwise running and candidate are locked, the prior
    running configuration is saved on the controller, the candidate is edited and validated, then committed
    with C(confirmed) and a timeout under a persist token, read back and compared, a fresh session proves
    management still reaches the switch, and only then confirmed."
  - "Any failure (an rpc-error, a reply that times out, a session that drops) ends with a message naming the
    switch, the step and the state it left: before the confirmed commit nothing is live and the candidate this
    run locked is discarded; after it, the commit is cancelled while the locks are still held (from a new
    session when this one dropped); if no session can cancel it, the switch rolls back by itself when
    O(confirm_timeout) expires. A candidate this run did not lock is never discarded."
  - The objects it owns (its class-maps and policy-maps, by O(names)) are replaced whole; on the ports only
    the MTU, PFC mode, PFC watchdog and service-policy leaves are set. Uplinks between switches are not
    configured unless listed in O(interfaces).
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
        C(eth1/1)); C(Ethernet01/01) is the same port as C(Ethernet1/1). A port the switch does not have is
        refused before anything changes.
    type: list
    elements: raw
    required: true
  roce_qos:
    description:
      - The fabric's RoCE QoS numbers (missing keys take their defaults), shared with the hosts' NCCL and NIC
        settings.
    type: dict
    default: {}
    suboptions:
      dscp:
        description: DSCP of RoCE data packets (0..63).
        type: int
        default: 26
      cos:
        description: CoS (802.1p priority) made lossless with PFC (0..7).
        type: int
        default: 3
      qos_group:
        description: qos-group (internal class) of RoCE traffic (0..7; 1..7 on NX-OS).
        type: int
        default: 3
      priority_level:
        description: Strict priority level of the CNP queue, or of the RoCE queue with
          O(roce_qos.roce_queue=strict) (then 2, below CNP's 1).
        type: int
        default: 1
      mtu:
        description: MTU of the listed ports, the RoCE class and (NX-OS) the default class (1500..9216).
        type: int
        default: 9216
      ecn:
        description: ECN marking (WRED) on the RoCE queue (NX-OS).
        type: bool
        default: true
      cnp_dscp:
        description: DSCP of the congestion notification packets the hosts send (0..63).
        type: int
        default: 48
      cnp_qos_group:
        description: qos-group of CNP (0..7; 1..7 on NX-OS), on the strict-priority queue.
        type: int
        default: 7
      roce_queue:
        description: C(weighted) (the blueprint's design) or C(strict) (RoCE on a strict queue below CNP).
        type: str
        default: weighted
      bandwidth_percent:
        description: The RoCE queue's share of the bandwidth the strict queue leaves (1..99); the default
          class gets the rest.
        type: int
        default: 60
      pfc_watchdog:
        description: C(priority-flow-control watch-dog-interval on) on the ports (NX-OS).
        type: bool
        default: true
  names:
    description: Names of the class-maps and policy-maps the module owns on the switch (1-40 letters, digits,
      C(_ . -), all different).
    type: dict
    default: {}
    suboptions:
      class_map:
        description: Class-map matching the RoCE DSCP.
        type: raw
        default: ROCE
      cnp_class_map:
        description: Class-map matching the CNP DSCP.
        type: raw
        default: ROCE-CNP
      input_policy:
        description: Input policy-map setting the qos-groups.
        type: raw
        default: ROCE-IN
      group_class_map:
        description: IOS-XE class-map matching the RoCE qos-group (egress).
        type: raw
        default: ROCE-QG
      cnp_group_class_map:
        description: IOS-XE class-map matching the CNP qos-group (egress).
        type: raw
        default: ROCE-CNP-QG
      output_policy:
        description: Egress policy-map (IOS-XE) or queuing policy-map (NX-OS).
        type: raw
        default: ROCE-OUT
      network_qos_policy:
        description: NX-OS network-qos policy-map (PFC pause and MTU).
        type: raw
        default: ROCE-NQ
  ecn:
    description: WRED/ECN thresholds of the RoCE queue (NX-OS), whole numbers (the blueprint's 100G example).
    type: dict
    default: {}
    suboptions:
      min_kbytes:
        description: Minimum threshold in kbytes.
        type: raw
        default: 150
      max_kbytes:
        description: Maximum threshold in kbytes, above the minimum.
        type: raw
        default: 3000
      drop_probability:
        description: Drop probability in percent (0..100).
        type: raw
        default: 7
      weight:
        description: Averaging weight (0..15).
        type: raw
        default: 0
  confirm_timeout:
    description:
      - Seconds the switch waits for the confirming commit before it rolls back by itself (1..3600). Checked
        with O(hold_before_confirm) and O(timeout) before any session opens - it must cover the hold and three
        replies (read-back, new session, confirm).
    type: int
    default: 120
  hold_before_confirm:
    description:
      - Seconds to wait between the verified commit and the confirm (e.g. to watch traffic); the management
        check runs after it. 0 or more, shorter than O(confirm_timeout).
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
  with_defaults:
    description:
      - The with-defaults mode (RFC 6243) of every read of running. C(auto) asks for C(explicit) (what a
        client set, even when equal to the default), else C(trim), else the switch's basic mode, whichever it
        offers; the comparison applies the models' defaults in every mode. A named mode the switch does not
        offer is refused before any change.
    type: str
    choices: [auto, explicit, trim, report-all]
    default: auto
  backup_dir:
    description: Directory on the controller for the copy of the prior running configuration (mode 0700).
    type: path
    required: true
notes:
  - Check mode reads running, reports the difference (and the diff with C(--diff)) and opens no lock and no
    candidate edit.
  - Needs the C(:candidate) and C(:confirmed-commit:1.1) capabilities; uses C(:validate) when offered, and
    asks read-back in the with-defaults mode C(explicit), else C(trim), else the server's basic mode.
  - yuma123's netconfd does not roll back a cancel-commit sent while the same session holds the running lock;
    for a server naming yuma modules in its capabilities the running lock is released just before the
    cancel-commit.
  - A test hook, for the lab's tests only - with C(RDMAOPS_SWITCH_QOS_PAUSE=verified) in its environment, the
    module stops itself (SIGSTOP) once the confirmed commit is read back and verified, before the hold and the
    management check, so that a test can make its fault in that moment and then send SIGCONT.
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
  sample: {"dscp": [26, 48], "qos_group": [3, 7], "pause_cos": [3], "priority_level": [1],
           "ports": {"Ethernet1/1": {"mtu": 9216, "pfc": "on", "input_policy": "ROCE-IN"}}}
seconds:
  description: Time spent reading, and from the confirmed commit to the confirm.
  returned: always
  type: dict
  sample: {"read": 0.12, "commit_to_confirm": 0.4}
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import roce as rq
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.netconf import apply, timing_errors
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.netconf_errors import NetconfQosError
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.netconf_session import Plan, Target
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.phase import SWITCH_QOS_SPEC
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.switch_inputs import check_inputs
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.switch_lines import manual_steps

try:
    import ncclient  # noqa: F401  # pylint: disable=unused-import

    HAS_NCCLIENT = True
except ImportError:
    HAS_NCCLIENT = False


def main() -> None:
    module = AnsibleModule(
        argument_spec=SWITCH_QOS_SPEC, required_one_of=[("password", "ssh_key")], supports_check_mode=True
    )
    p = module.params
    if not HAS_NCCLIENT:
        module.fail_json(msg=missing_required_lib("ncclient"))
    # The same check the switch_qos role runs in its validate phase (module_utils/qos/phase.py).
    problems = rq.errors(p["roce_qos"])
    qos = rq.settings(p["roce_qos"]) if not problems else {}
    inputs, names, ecn = check_inputs(p["platform"], p["interfaces"], p["names"], p["ecn"], qos)
    problems += inputs + timing_errors(p["confirm_timeout"], p["hold_before_confirm"], p["timeout"])
    if problems:
        module.fail_json(msg=f"{p['name']}: " + "; ".join(problems))
    target = Target.from_params(p)
    plan = Plan(p["platform"], qos, p["interfaces"], names, ecn, p["with_defaults"])
    manual = manual_steps(p["platform"], qos, p["interfaces"])
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
    for warning in out.warnings:
        module.warn(warning)
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
