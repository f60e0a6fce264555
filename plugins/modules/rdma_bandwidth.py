#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: rdma_bandwidth
short_description: Measure bandwidth or latency between two hosts with perftest (RDMA) or iperf3 (TCP)
version_added: "0.1.0"
description:
  - One side of a pairwise measurement. Run it with O(role=server) on one host (asynchronously, with
    C(async) and C(poll=0)) and with O(role=client) on the other host.
  - The server is one-shot (C(iperf3 -s -1), or a perftest server which serves exactly one client) and is
    killed with its whole process group when O(timeout) passes, when it fails, or when the module is
    terminated, so no server is left listening.
  - The client retries for up to O(connect_timeout) seconds while the server is not listening yet.
  - In RDMA mode the device, GID index and line rate default to what sysfs reports for the first ACTIVE
    RDMA port (see M(rdmaops.cluster.rdma_port_info)). Without any RDMA device the module fails with
    "no RDMA device" or, with O(rdma_required=false), reports C(available=false).
  - The client checks thresholds and fails naming the pair, the measured and the expected number.
author:
  - Rdmaops Developers (@rdmaops)
options:
  role:
    description: Which side this host runs.
    type: str
    required: true
    choices: [server, client]
  mode:
    description: V(rdma) runs perftest, V(tcp) runs iperf3.
    default: rdma
  test:
    choices: [write_bw, send_bw, read_bw, write_lat, send_lat, read_lat]
  server:
    description: Address of the peer running the server (client only).
  port:
    default: 18515
  device:
    description:
      - RDMA device (perftest C(-d)).
      - Defaults to the first ACTIVE port's device.
  ib_port:
    description:
      - RDMA device port (perftest C(-i)).
      - Defaults to the discovered port.
  gid_index:
    description:
      - GID index (perftest C(-x)).
      - Defaults to the discovered RoCE v2 IPv4 GID index on Ethernet ports.
  timeout:
    description:
      - Seconds after which this side is killed.
      - The server needs a larger value than the client (it also waits for the client to start).
  connect_timeout:
    default: 15
  min_fraction_of_line_rate:
    description: Fail when bandwidth is below this fraction of O(line_rate_gbps) (client only).
    type: float
  min_gbps:
    description: Fail when bandwidth is below this many Gb/s (client only).
    type: float
  max_latency_us:
    description: Fail when the typical (median) latency is above this many microseconds (client only).
    type: float
  fail_on_threshold:
    description: Whether a missed threshold fails the task; with V(false) the result carries C(passed=false).
    type: bool
    default: true
  label:
    description:
      - Name of the pair in messages, for example C(node1 -> node2).
      - Defaults to C(<this host> -> <server>).
    type: str
  rdma_required:
    description: In RDMA mode, fail when the host has no RDMA device; with V(false) report C(available=false).
    type: bool
    default: true
extends_documentation_fragment:
  - rdmaops.cluster.link_test
seealso:
  - module: rdmaops.cluster.rdma_port_info
"""

EXAMPLES = r"""
- name: Start the iperf3 server on the peer
  rdmaops.cluster.rdma_bandwidth:
    role: server
    mode: tcp
    port: 5201
    timeout: 60
  delegate_to: node2
  async: 90
  poll: 0
  register: server_job

- name: Measure node1 -> node2 over TCP
  rdmaops.cluster.rdma_bandwidth:
    role: client
    mode: tcp
    server: 10.255.0.2
    port: 5201
    duration: 5
    interface: mesh0
    min_fraction_of_line_rate: 0.8
    label: node1 -> node2

- name: RDMA write bandwidth with an explicit device and GID index
  rdmaops.cluster.rdma_bandwidth:
    role: client
    mode: rdma
    test: write_bw
    device: mlx5_0
    gid_index: 3
    server: 192.168.100.2
    min_gbps: 90
"""

RETURN = r"""
available:
  description: False only when RDMA mode found no RDMA device and O(rdma_required=false).
  returned: always
  type: bool
  sample: true
command:
  description: The command line that was run.
  returned: when a measurement ran
  type: list
  elements: str
  sample: [iperf3, -c, 10.255.0.2, -J, -p, "5201", -t, "5", -P, "1"]
rc:
  description: Exit status of the tool.
  returned: when a measurement ran
  type: int
  sample: 0
attempts:
  description: How many times the client tried to connect.
  returned: when a measurement ran
  type: int
  sample: 2
result:
  description: The parsed output (see module_utils perftest.parse and iperf3.parse).
  returned: when a measurement ran
  type: dict
gbps:
  description: Measured bandwidth in Gb/s (bandwidth tests).
  returned: when a measurement ran
  type: float
  sample: 9.41
latency_us:
  description: Typical (median) latency in microseconds (latency tests).
  returned: when a measurement ran
  type: float
  sample: 1.47
line_rate_gbps:
  description: The line rate used for the fraction.
  returned: when a measurement ran
  type: float
  sample: 100
fraction_of_line_rate:
  description: gbps / line_rate_gbps, or null when either is unknown.
  returned: when a measurement ran
  type: float
  sample: 0.94
passed:
  description: Whether every threshold was met (always true on the server side).
  returned: when a measurement ran
  type: bool
  sample: true
failures:
  description: One message per missed threshold.
  returned: when a measurement ran
  type: list
  elements: str
  sample: ["node1 -> node2: 3.20 Gb/s measured, expected at least 8.00 Gb/s (0.8 x line rate 10 Gb/s)"]
"""

import signal
import socket

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.rdma import sysfs as rdma_sysfs
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify import bandwidth, link_test


def _discover(module: AnsibleModule, params: dict) -> dict | None:
    """Fill device/port/GID index/line rate from sysfs; None when the host has no RDMA port."""
    ports = rdma_sysfs.read_ports(params["sysfs_root"])
    if not ports:
        return None
    candidates = [p for p in ports if params["device"] in (None, p["device"])]
    if params["ib_port"] is not None:
        candidates = [p for p in candidates if p["port"] == params["ib_port"]]
    if not candidates:
        present = ", ".join(p["name"] for p in ports)
        module.fail_json(
            msg=f"RDMA device {params['device']} port {params['ib_port']} not found (present: {present})"
        )
    port = next((p for p in candidates if p["active"]), candidates[0])
    return port


def main() -> None:
    module = AnsibleModule(
        argument_spec=link_test.argument_spec(
            {
                "role": {"type": "str", "required": True, "choices": ["server", "client"]},
                "mode": {"default": "rdma"},
                "test": {"choices": list(bandwidth.PERFTEST_TOOLS)},
                "port": {"default": 18515},
                "connect_timeout": {"default": 15},
                "min_fraction_of_line_rate": {"type": "float"},
                "min_gbps": {"type": "float"},
                "max_latency_us": {"type": "float"},
                "fail_on_threshold": {"type": "bool", "default": True},
                "label": {"type": "str"},
                "rdma_required": {"type": "bool", "default": True},
            }
        ),
        required_if=[("role", "client", ["server"])],
        supports_check_mode=True,
    )
    params = dict(module.params)
    error = link_test.param_error(params, ports=("port",))
    if error:
        module.fail_json(msg=error)
    fraction = params["min_fraction_of_line_rate"]
    if fraction is not None and not 0 < fraction <= 1:
        module.fail_json(msg=f"min_fraction_of_line_rate must be in (0, 1], got {fraction}")

    port_rate = None
    if params["mode"] == "rdma":
        try:
            port = _discover(module, params)
        except rdma_sysfs.RdmaSysfsError as exc:
            module.fail_json(msg=f"cannot read RDMA ports: {exc}")
        if port is None:
            msg = (
                f"no RDMA device on {socket.gethostname()}"
                f" (nothing under {params['sysfs_root']}/class/infiniband):"
                f" cannot run {bandwidth.PERFTEST_TOOLS[params['test']]}"
            )
            if params["rdma_required"]:
                module.fail_json(msg=msg, available=False)
            module.exit_json(changed=False, available=False, msg=msg)
        params["device"] = params["device"] or port["device"]
        params["ib_port"] = params["ib_port"] or port["port"]
        if params["gid_index"] is None and port["link_layer"] == "Ethernet":
            params["gid_index"] = port["roce_v2_ipv4_gid_index"]
        port_rate = port["rate_gbps"]
    line_rate = link_test.line_rate_gbps(params, port_rate)

    try:
        argv = bandwidth.build_command(params, params["role"])
    except bandwidth.BandwidthError as exc:
        module.fail_json(msg=str(exc))
    module.get_bin_path(argv[0], required=True)
    if module.check_mode:
        module.exit_json(changed=False, available=True, command=argv, msg="check mode: measurement not run")

    runner = bandwidth.Runner()

    def terminate(signum: int, _frame: object) -> None:
        # Ansible's async wrapper and a user's Ctrl-C end us with a signal: take the child along.
        runner.kill()
        module.fail_json(msg=f"{argv[0]} {params['role']} interrupted by signal {signum}; child killed")

    signal.signal(signal.SIGTERM, terminate)
    signal.signal(signal.SIGINT, terminate)
    try:
        run = bandwidth.measure(params, params["role"], runner)
    except bandwidth.BandwidthError as exc:
        module.fail_json(msg=str(exc), command=argv, available=True)
    finally:
        runner.kill()

    figures = bandwidth.numbers(params["mode"], run["parsed"])
    failures: list[str] = []
    if params["role"] == "client":
        label = params["label"] or f"{socket.gethostname()} -> {params['server']}"
        failures = bandwidth.evaluate(
            figures,
            label=f"{label} ({params['mode']} {params['test'] if params['mode'] == 'rdma' else 'iperf3'})",
            line_rate_gbps=line_rate,
            min_fraction_of_line_rate=fraction,
            min_gbps=params["min_gbps"],
            max_latency_us=params["max_latency_us"],
        )
    gbps = figures["gbps"]
    result = {
        "changed": False,
        "available": True,
        "command": argv,
        "rc": run["rc"],
        "attempts": run["attempts"],
        "elapsed_s": run["elapsed_s"],
        "result": run["parsed"],
        "gbps": gbps,
        "latency_us": figures["latency_us"],
        "line_rate_gbps": line_rate,
        "fraction_of_line_rate": round(gbps / line_rate, 4) if gbps is not None and line_rate else None,
        "passed": not failures,
        "failures": failures,
    }
    if failures and params["fail_on_threshold"]:
        module.fail_json(msg="threshold missed: " + "; ".join(failures), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
