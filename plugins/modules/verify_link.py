#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: verify_link
short_description: Client side of one link check of verify.yml (bandwidth, latency, port counters)
version_added: "0.1.0"
description:
  - Measures one direction of one link from the sending node in a single task, against servers that
    M(rdmaops.cluster.rdma_bandwidth) started on the peer (its C(role=server), asynchronously).
  - Reads the transmit counter of O(interface) before and after the bandwidth test, so the report can
    show that the traffic really left through that port.
  - Bandwidth with iperf3 (O(mode=tcp)) or perftest (O(mode=rdma)); latency with ICMP echo round trips
    (O(mode=tcp), kernel stack, not RDMA latency) or a perftest latency test against a second server
    listening on O(latency_port) (O(mode=rdma)).
  - A measurement that cannot be made is returned in C(error), not as a failure, so that verify.yml can
    report every link; thresholds are judged by M(rdmaops.cluster.verify_report).
author:
  - Rdmaops Developers (@rdmaops)
options:
  mode:
    description: V(tcp) (iperf3 and ping) or V(rdma) (perftest).
    default: tcp
  test:
    description: perftest bandwidth test (RDMA mode).
    choices: [write_bw, send_bw, read_bw]
  server:
    description: The peer's address on this link.
    required: true
  port:
    description: TCP port of the bandwidth server.
    default: 5201
  bind_address:
    description: This node's address on the link (iperf3 C(-B), ping C(-I)).
  interface:
    description: This node's port of the link (counters, and its speed as the line rate when none is given).
    required: true
  connect_timeout:
    default: 20
  latency_test:
    description: perftest latency test (RDMA mode).
    type: str
    default: send_lat
    choices: [write_lat, send_lat, read_lat]
  latency_port:
    description: TCP port of the perftest latency server (RDMA mode).
    type: int
    default: 5202
  ping_count:
    description: ICMP echoes in TCP mode (0 skips the latency measurement).
    type: int
    default: 50
  ping_interval:
    description: Seconds between echoes (below 0.2 needs root).
    type: float
    default: 0.02
extends_documentation_fragment:
  - rdmaops.cluster.link_test
seealso:
  - module: rdmaops.cluster.rdma_bandwidth
  - module: rdmaops.cluster.verify_report
"""

EXAMPLES = r"""
- name: Measure node1 -> node2 over their direct link
  rdmaops.cluster.verify_link:
    mode: tcp
    server: 192.168.100.2
    bind_address: 192.168.100.1
    interface: data0
    duration: 5
  register: link
"""

RETURN = r"""
gbps:
  description: Bandwidth received by the peer, in Gb/s (null when it could not be measured).
  returned: always
  type: float
  sample: 9.41
line_rate_gbps:
  description: The line rate given, or the RDMA port rate / the port's speed.
  returned: always
  type: float
  sample: 100
latency_us:
  description: Median latency in microseconds (ICMP round trip in TCP mode; perftest typical in RDMA mode).
  returned: always
  type: float
  sample: 48.0
latency:
  description: The latency details (ping statistics or the perftest summary).
  returned: always
  type: dict
bytes_sent:
  description: Bytes the bandwidth tool sent.
  returned: always
  type: int
port_tx_bytes:
  description: Growth of the port's transmit counter during the bandwidth test.
  returned: always
  type: int
retransmits:
  description: TCP retransmits (iperf3).
  returned: always
  type: int
command:
  description: The bandwidth command line.
  returned: always
  type: list
  elements: str
error:
  description: Why a measurement could not be made, or null.
  returned: always
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import ping
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify import bandwidth, link_test


def _tx_bytes(sysfs_root: str, interface: str) -> int | None:
    try:
        with open(
            os.path.join(sysfs_root, "class", "net", interface, "statistics", "tx_bytes"), encoding="ascii"
        ) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def main() -> None:
    module = AnsibleModule(
        argument_spec=link_test.argument_spec(
            {
                "mode": {"default": "tcp"},
                "test": {"choices": link_test.BW_TESTS},
                "server": {"required": True},
                "port": {"default": 5201},
                "interface": {"required": True},
                "connect_timeout": {"default": 20},
                "latency_test": {"type": "str", "default": "send_lat", "choices": link_test.LAT_TESTS},
                "latency_port": {"type": "int", "default": 5202},
                "ping_count": {"type": "int", "default": 50},
                "ping_interval": {"type": "float", "default": 0.02},
            }
        ),
        supports_check_mode=True,
    )
    p = module.params
    error = link_test.param_error(p, (*link_test.POSITIVE, "latency_port"))
    if error:
        module.fail_json(msg=error)
    if p["ping_count"] < 0:
        module.fail_json(msg=f"ping_count must be 0 or more, got {p['ping_count']}")
    common = {
        "mode": p["mode"],
        "server": p["server"],
        "bind_address": p["bind_address"] if p["mode"] == "tcp" else None,
        "size": p["size"],
        "duration": p["duration"],
        "parallel": p["parallel"],
        "timeout": p["timeout"],
        "connect_timeout": p["connect_timeout"],
        "device": p["device"],
        "ib_port": p["ib_port"],
        "gid_index": p["gid_index"],
        "iterations": p["iterations"],
    }
    bw_params = {**common, "port": p["port"], "test": p["test"]}
    try:
        argv = bandwidth.build_command(bw_params, "client")
    except bandwidth.BandwidthError as exc:
        module.fail_json(msg=str(exc))
    module.get_bin_path(argv[0], required=True)
    line_rate = link_test.line_rate_gbps(p)
    result: dict = {
        "changed": False,
        "command": argv,
        "gbps": None,
        "line_rate_gbps": line_rate,
        "latency_us": None,
        "latency": None,
        "bytes_sent": None,
        "port_tx_bytes": None,
        "retransmits": None,
        "error": None,
    }
    if module.check_mode:
        module.exit_json(**result)

    errors = []
    before = _tx_bytes(p["sysfs_root"], p["interface"])
    try:
        run = bandwidth.measure(bw_params, "client")
        figures = bandwidth.numbers(p["mode"], run["parsed"])
        result["gbps"] = figures["gbps"]
        if p["mode"] == "tcp":
            result["bytes_sent"] = run["parsed"].get("bytes_sent")
            result["retransmits"] = run["parsed"].get("retransmits")
    except bandwidth.BandwidthError as exc:
        errors.append(str(exc))
    after = _tx_bytes(p["sysfs_root"], p["interface"])
    if before is not None and after is not None:
        result["port_tx_bytes"] = after - before

    if p["mode"] == "rdma":
        lat_params = {**common, "port": p["latency_port"], "test": p["latency_test"]}
        try:
            run = bandwidth.measure(lat_params, "client")
            result["latency_us"] = bandwidth.numbers("rdma", run["parsed"])["latency_us"]
            result["latency"] = run["parsed"].get("summary")
        except bandwidth.BandwidthError as exc:
            errors.append(f"latency: {exc}")
    elif p["ping_count"]:
        module.get_bin_path("ping", required=True)
        stats, error = ping.measure(
            p["server"], count=p["ping_count"], interval=p["ping_interval"], source=p["bind_address"]
        )
        if stats is not None:
            result["latency"] = stats
            result["latency_us"] = stats["median_us"]
        if error:
            errors.append(error)
    result["error"] = "; ".join(errors) or None
    module.exit_json(**result)


if __name__ == "__main__":
    main()
