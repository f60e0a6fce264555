#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_health
short_description: Check a node's GPUs, RDMA ports and host before work runs on it
version_added: "0.1.0"
description:
  - "GPU, from C(nvidia-smi -q -x): uncorrectable ECC errors (volatile and lifetime), rows pending remapping,
    remapping failures, pages pending retirement, pending memory repairs, the driver's recovery action, clock
    event (throttle) reasons such as HW slowdown, persistence mode, PCIe link width and generation against
    their maximum, and the GPU count against C(thresholds.gpu_count)."
  - "GPU, from the kernel log since boot (C(journalctl -k -b 0), else C(dmesg)): Xid events, failing those
    NVIDIA's Xid catalogue answers with a GPU reset, a reboot or an NVLink/ECC workflow (candidates for an RMA
    when they recur); and C(dcgmi diag -r N -j) when DCGM is installed (level 1 by default)."
  - "RDMA, from sysfs: ports not ACTIVE/LinkUp, a rate below C(thresholds.rdma_rate_gbps) with the narrower
    width or slower speed named, error counters (C(symbol_error), C(link_downed), C(port_rcv_errors), ...)
    that grew since the last check, and PFC pause frames per second from C(ethtool -S) where the NIC has
    them."
  - "Host: available memory, free disk where checkpoints go, clock synchronisation (chrony or
    systemd-timesyncd)."
  - Returns one report; every failing check is a finding naming node, check, subject, value, threshold and
    severity (C(fail) or C(warn)). The task itself fails only with O(fail=true); a launch gate collects the
    reports of all nodes first (the driver and CUDA versions are compared across nodes there).
  - The Slurm HealthCheckProgram C(files/health/rdmaops-health) runs the same code.
author:
  - Rdmaops Developers (@rdmaops)
options:
  node:
    description: Name used in findings (the Slurm node name). Defaults to the short host name.
    type: str
  thresholds:
    description:
      - Thresholds over the defaults; docs/health.md lists every key, its default and meaning.
      - An unknown key or a value of the wrong type fails the task before anything is read.
    type: dict
    default: {}
  severity:
    description:
      - "Per check, V(fail), V(warn) or V(off), replacing its default severity (for example
        C({host.clock_sync: fail}) or C({gpu.dcgm_diag: off}))."
    type: dict
    default: {}
  checkpoint_dir:
    description:
      - Directory (or its nearest existing parent) whose free space C(host.disk_free) checks.
      - Not checked when unset.
    type: path
  state_file:
    description:
      - Where the counter baseline between two checks is kept; empty to keep none (counters are then never
        compared).
      - The Slurm HealthCheckProgram uses the same default file, so growth is measured since whichever ran
        last.
    type: path
    default: /var/lib/rdmaops/health-state.json
  sysfs_root:
    description: Where sysfs is mounted. Tests point this at a copy of the tree.
    type: path
    default: /sys
  sources:
    description:
      - For tests and the lab only. Files read instead of running a tool, by key - C(nvidia_smi)
        (C(nvidia-smi -q -x)), C(kernel_log), C(dcgmi) (C(dcgmi diag -j)), C(chronyc) (C(chronyc tracking)),
        C(timedatectl) (C(timedatectl show)),
        C(meminfo), C(boot_id), C(ethtool:NETDEV) (C(ethtool -S NETDEV)).
    type: dict
    default: {}
  fail:
    description: Fail the task when a check with severity C(fail) failed (the message lists every finding).
    type: bool
    default: false
attributes:
  check_mode:
    description: Runs the same checks in check mode; it only reads, and leaves the state file as it was.
    support: full
  diff_mode:
    description: Nothing on the node changes, so there is no diff.
    support: none
  platform:
    description: Linux nodes.
    support: full
    platforms: posix
notes:
  - The only write is the counter baseline in O(state_file), bookkeeping of the check itself; the task reports
    C(changed=false) and skips the write in check mode.
  - Reading the kernel log needs root (C(become)) on most systems; without it the Xid check is skipped and
    says why.
seealso:
  - name: NVIDIA Xid catalogue
    description: The immediate actions the Xid check follows.
    link: https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html
"""

EXAMPLES = r"""
- name: Check this node before launch
  rdmaops.cluster.node_health:
    node: "{{ inventory_hostname }}"
    checkpoint_dir: /srv/checkpoints
    thresholds:
      gpu_count: 8
      rdma_rate_gbps: 400
      rdma_width: 4X
  become: true
  register: node_health

- name: Show what failed
  ansible.builtin.debug:
    msg: "{{ node_health.health.findings | map(attribute='message') | list }}"

- name: Fail here on a failing check, with clock sync made a failure too
  rdmaops.cluster.node_health:
    severity:
      host.clock_sync: fail
    fail: true
  become: true
"""

RETURN = r"""
health:
  description: The node's report.
  returned: always
  type: dict
  contains:
    node:
      description: The node name used in findings.
      type: str
      sample: node1
    ok:
      description: No check with severity C(fail) failed.
      type: bool
      sample: false
    findings:
      description: One entry per failing check and subject.
      type: list
      elements: dict
      sample:
        - node: node1
          check: gpu.ecc_volatile
          subject: GPU 0 (00000000:00:06.0)
          value: 2
          threshold: 0
          severity: fail
          message: 2 uncorrectable ECC errors (volatile, since the driver loaded)
    checks:
      description: Every check and how it went (C(pass), C(fail), C(warn), or C(skipped) with why).
      type: dict
      sample: {gpu.count: pass, gpu.dcgm_diag: "skipped: dcgmi not installed"}
    facts:
      description: What the checks read that other steps use (driver and CUDA versions, GPUs, RDMA ports).
      type: dict
      sample:
        driver_version: 580.159.04
        cuda_version: "13.0"
        gpu_count: 4
        gpus:
          - index: 0
            pci: "00000000:00:06.0"
            name: NVIDIA H200
            uuid: GPU-b07ca90c-46de-9ecd-7fbd-8229a3934242
        rdma_ports:
          - name: mlx5_0/1
            state: ACTIVE
            phys_state: LinkUp
            rate: 400 Gb/sec (4X NDR)
            link_layer: Ethernet
            netdev: ens1f0np0
    time:
      description: When the checks ran (seconds since the epoch).
      type: float
      sample: 1795756732.13
"""

import socket

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.health import node as noderun
from ansible_collections.rdmaops.cluster.plugins.module_utils.node.health.findings import (
    failed,
    line,
    merge_thresholds,
    severity_errors,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "node": {"type": "str"},
            "thresholds": {"type": "dict", "default": {}},
            "severity": {"type": "dict", "default": {}},
            "checkpoint_dir": {"type": "path"},
            "state_file": {"type": "path", "default": "/var/lib/rdmaops/health-state.json"},
            "sysfs_root": {"type": "path", "default": "/sys"},
            "sources": {"type": "dict", "default": {}},
            "fail": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    params = module.params
    thresholds, errors = merge_thresholds(params["thresholds"])
    errors += severity_errors(params["severity"])
    unknown = sorted(
        k for k in params["sources"] if k not in noderun.SOURCE_KEYS and not k.startswith("ethtool:")
    )
    if unknown:
        errors.append(
            f"sources: unknown keys {unknown} (known: {', '.join(noderun.SOURCE_KEYS)}, ethtool:NETDEV)"
        )
    if errors:
        module.fail_json(msg="node_health: " + "; ".join(errors))
    state_file = params["state_file"] or None
    report, new_state = noderun.run(
        params["node"] or socket.gethostname().split(".")[0],
        thresholds,
        params["severity"],
        sysfs_root=params["sysfs_root"],
        checkpoint_dir=params["checkpoint_dir"],
        state=noderun.load_state(state_file),
        sources=params["sources"],
    )
    if state_file and not module.check_mode:
        try:
            noderun.save_state(state_file, new_state)
        except OSError as exc:
            module.warn(f"could not keep the counter baseline in {state_file}: {exc}")
    fails = failed(report["findings"])
    if params["fail"] and fails:
        module.fail_json(msg="health checks failed: " + " | ".join(line(f) for f in fails), health=report)
    module.exit_json(changed=False, health=report)


if __name__ == "__main__":
    main()
