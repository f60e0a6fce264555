# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The option set that rdma_bandwidth and verify_link share: one link test with perftest or iperf3.

- argument_spec(): the shared options (documented by the doc fragment rdmaops.cluster.link_test),
  with each module's own defaults, requirements and extra options merged in.
- param_error(): the checks both modules make on those options (positive integers, port range).
- line_rate_gbps(): the line rate of the modules' options: the one given, else the RDMA port's rate, or the
  netdev's speed.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.rdma import sysfs as rdma_sysfs
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify import bandwidth

BW_TESTS = [t for t in bandwidth.PERFTEST_TOOLS if t.endswith("_bw")]
LAT_TESTS = [t for t in bandwidth.PERFTEST_TOOLS if t.endswith("_lat")]

# Defaults both modules use are here; where the modules differ (mode, port, connect_timeout, which
# tests, what is required) each passes its own value to argument_spec().
_SHARED: dict[str, dict[str, Any]] = {
    "mode": {"type": "str", "choices": ["rdma", "tcp"]},
    "test": {"type": "str", "default": "write_bw"},
    "server": {"type": "str"},
    "port": {"type": "int"},
    "bind_address": {"type": "str"},
    "interface": {"type": "str"},
    "device": {"type": "str"},
    "ib_port": {"type": "int"},
    "gid_index": {"type": "int"},
    "size": {"type": "int"},
    "duration": {"type": "int", "default": 5},
    "iterations": {"type": "int", "default": 1000},
    "parallel": {"type": "int", "default": 1},
    "timeout": {"type": "int", "default": 60},
    "connect_timeout": {"type": "int"},
    "line_rate_gbps": {"type": "float"},
    "sysfs_root": {"type": "path", "default": "/sys"},
}
# The shared options that must be 1 or more.
POSITIVE = ("port", "duration", "iterations", "parallel", "timeout")


def shared_options() -> dict[str, dict[str, Any]]:
    """A copy of the shared options as they are before any module's changes (for tests and docs)."""
    return copy.deepcopy(_SHARED)


def argument_spec(changes: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The shared options with ``changes[name]`` merged over each (a name not shared adds an option)."""
    spec = shared_options()
    for name, change in changes.items():
        spec[name] = {**spec.get(name, {}), **change}
    return spec


def param_error(
    params: Mapping[str, Any], positive: Iterable[str] = POSITIVE, ports: Iterable[str] = ()
) -> str | None:
    """The first problem with the parameters, or None: ``positive`` must be >= 1, ``ports`` <= 65535."""
    for name in positive:
        if params[name] is None or params[name] < 1:
            return f"{name} must be a positive integer, got {params[name]}"
    for name in ports:
        if params[name] > 65535:
            return f"{name} must be at most 65535, got {params[name]}"
    return None


def rdma_port_rate(sysfs_root: str, device: str | None, ib_port: int | None) -> float | None:
    """The rate of the RDMA port ``device``/``ib_port`` (any port of it when None), or None."""
    try:
        ports = rdma_sysfs.read_ports(sysfs_root)
    except rdma_sysfs.RdmaSysfsError:
        return None
    for entry in ports:
        if entry["device"] == device and (ib_port is None or entry["port"] == ib_port):
            return entry["rate_gbps"]
    return None


def line_rate_gbps(params: Mapping[str, Any], port_rate: float | None = None) -> float | None:
    """The line rate a bandwidth is compared with, from a module's shared options: ``line_rate_gbps`` when
    set, else in RDMA mode ``port_rate`` (when the caller already read the port) or the rate of
    ``device``/``ib_port``, else in TCP mode the speed of ``interface``. 0 is no line rate and counts as not
    given."""
    if params["line_rate_gbps"]:
        return params["line_rate_gbps"]
    if params["mode"] != "rdma":
        interface = params["interface"]
        return bandwidth.interface_speed_gbps(interface, params["sysfs_root"]) if interface else None
    if port_rate is not None:
        return port_rate
    return rdma_port_rate(params["sysfs_root"], params["device"], params["ib_port"])
