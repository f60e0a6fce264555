#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: verify_report
short_description: Write the fabric verification report (JSON, Markdown, PNG heatmap)
version_added: "0.1.0"
description:
  - Judges every pairwise measurement against the thresholds and writes C(report.json), C(report.md) and
    C(bandwidth.png) (the bandwidth matrix, sender by receiver, coloured by fraction of line rate) into
    O(dest)/O(name), and points O(dest)/C(latest) at that directory.
  - Meant to run on the controller (C(delegate_to) localhost, C(run_once)) at the end of verify.yml. It
    needs matplotlib for the heatmap.
  - It never fails because a threshold was missed; it returns C(passed) and C(failures) so that the play
    can write the report first and fail afterwards.
author:
  - Rdmaops Developers (@rdmaops)
requirements:
  - matplotlib
options:
  dest:
    description: Directory under which the report directory is created.
    type: path
    required: true
  name:
    description: Name of the report directory. Defaults to C(verify-<UTC timestamp>).
    type: str
  latest_link:
    description: Point the symbolic link O(dest)/C(latest) at the new report directory.
    type: bool
    default: true
  hosts:
    description: The nodes in their stable order (rows and columns of the matrix).
    type: list
    elements: str
    required: true
  measurements:
    description:
      - One entry per directed measurement with C(client), C(server), C(label) and the figures C(gbps),
        C(line_rate_gbps), C(latency_us), C(tool), or C(error) when it could not be made.
    type: list
    elements: dict
    default: []
  thresholds:
    description:
      - C(min_fraction_of_line_rate), C(min_gbps), C(max_latency_us), C(line_rate_gbps), C(min_busbw_gbps);
        null means not checked.
    type: dict
    default: {}
  meta:
    description: Free-form facts shown in the report (topology, mode, pattern, rounds, timing, notes).
    type: dict
    default: {}
  gate:
    description: Per host, the port-state gate result with C(summary) and C(failures).
    type: dict
    default: {}
  reachability:
    description: Per host, the mesh_network role's verify results (entries with C(ok) and C(error)).
    type: dict
    default: {}
  collective:
    description: The all-reduce result (the JSON of allreduce_bench.py, or C(error)); null when not run.
    type: dict
  qos:
    description:
      - The RoCE QoS section (the verify_qos_section filter's output - C(rows), C(problems), C(consistent),
        C(roce_qos)); its problems count as failures. Null when not checked.
    type: dict
  nccl_path:
    description:
      - The path NCCL took in the all-reduce (rdmaops.cluster.verify_nccl_path's result - C(verdict),
        C(problems), C(channels)); its problems count as failures. Null when not checked.
    type: dict
  health:
    description:
      - Per host, the result of M(rdmaops.cluster.node_health) (a failed or unreachable result is a node not
        checked). The report gets a node health section over all nodes, with the driver and CUDA versions
        compared across them. Null when not checked.
    type: dict
  affinity:
    description:
      - The GPU-to-NIC affinity section of M(rdmaops.cluster.verify_summary) (each GPU's nearest NIC,
        whether a NIC NCCL uses is at PIX or PXB, warnings for a GPU whose nearest NIC is SYS). Its warnings
        are listed in the report, not counted as failures. Null when not read.
    type: dict
  health_mode:
    description:
      - V(fail) counts every failing health check (and a node not checked) as a failure; V(warn) lists them
        only; V(off) leaves the section out.
    type: str
    choices: [fail, warn, 'off']
    default: fail
  health_severity:
    description: The severity overrides the nodes ran with (they also apply to the cross-node version checks).
    type: dict
    default: {}
attributes:
  check_mode:
    description: Judges the measurements and returns the report without writing files.
    support: full
  diff_mode:
    description: Not supported.
    support: none
  platform:
    description: Runs on the controller.
    support: full
    platforms: posix
"""

EXAMPLES = r"""
- name: Write the report on the controller
  rdmaops.cluster.verify_report:
    dest: reports
    hosts: "{{ ansible_play_hosts_all }}"
    measurements: "{{ ansible_play_hosts_all | map('extract', hostvars, 'verify_measurements') | flatten }}"
    thresholds:
      min_fraction_of_line_rate: 0.8
      min_gbps: 5
  delegate_to: localhost
  run_once: true
  register: verify_report_result
"""

RETURN = r"""
passed:
  description: Whether every check passed.
  returned: always
  type: bool
  sample: false
failures:
  description: One line per failed check, naming the link and the numbers.
  returned: always
  type: list
  elements: str
  sample: ["node1:data1 -> node2:data0 0.19 Gb/s < 0.5 x 10 Gb/s (= 5.00 Gb/s)"]
directory:
  description: The report directory.
  returned: always
  type: str
  sample: reports/verify-20261122T071500Z
paths:
  description: Paths of the written files (C(json), C(markdown), C(heatmap), C(heatmaps) - one per rail on a
    fabric with several rails -, C(latest)); empty in check mode.
  returned: always
  type: dict
markdown:
  description: The Markdown report.
  returned: always
  type: str
report:
  description: The report document (what report.json holds).
  returned: always
  type: dict
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.health import gate as health_gate
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify import report as vr
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify.plan import VerifyError
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify.thresholds import thresholds


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "dest": {"type": "path", "required": True},
            "name": {"type": "str"},
            "latest_link": {"type": "bool", "default": True},
            "hosts": {"type": "list", "elements": "str", "required": True},
            "measurements": {"type": "list", "elements": "dict", "default": []},
            "thresholds": {"type": "dict", "default": {}},
            "meta": {"type": "dict", "default": {}},
            "gate": {"type": "dict", "default": {}},
            "reachability": {"type": "dict", "default": {}},
            "collective": {"type": "dict"},
            "qos": {"type": "dict"},
            "nccl_path": {"type": "dict"},
            "health": {"type": "dict"},
            "affinity": {"type": "dict"},
            "health_mode": {"type": "str", "default": "fail", "choices": ["fail", "warn", "off"]},
            "health_severity": {"type": "dict", "default": {}},
        },
        supports_check_mode=True,
    )
    params = module.params
    timestamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    name = params["name"] or f"verify-{timestamp}"
    if "/" in name or name in (".", "..", "latest"):
        module.fail_json(msg=f"name {name!r} must be a plain directory name other than 'latest'")
    meta = {"timestamp": timestamp, **params["meta"]}
    try:
        limits = thresholds(**params["thresholds"])
        report = vr.build_report(
            params["hosts"],
            params["measurements"],
            limits,
            meta=meta,
            gate=params["gate"],
            reachability=params["reachability"],
            collective=params["collective"],
            qos=params["qos"],
            nccl=params["nccl_path"],
            health=None
            if params["health"] is None or params["health_mode"] == "off"
            else health_gate.evaluate(
                params["health"], params["hosts"], params["health_mode"], params["health_severity"]
            ),
            affinity=params["affinity"],
        )
    except TypeError as exc:
        module.fail_json(msg=f"unknown threshold: {exc}")
    except (VerifyError, KeyError) as exc:
        module.fail_json(msg=f"cannot build the report: {exc}")
    directory = os.path.join(params["dest"], name)
    result = {
        "changed": False,
        "passed": report["passed"],
        "failures": report["failures"],
        "directory": directory,
        "paths": {},
        "markdown": vr.markdown(report),
        "report": report,
    }
    if module.check_mode:
        module.exit_json(**result)
    matplotlib, error = vr.load_matplotlib()
    if matplotlib is None:
        module.fail_json(msg=missing_required_lib("matplotlib"), exception=error)
    latest = os.path.join(params["dest"], "latest") if params["latest_link"] else None
    try:
        result["paths"] = vr.write_report(report, directory, latest)
    except (OSError, VerifyError) as exc:
        module.fail_json(msg=f"cannot write the report to {directory}: {exc}")
    result["changed"] = True
    module.exit_json(**result)


if __name__ == "__main__":
    main()
