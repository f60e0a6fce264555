# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fabric verification: reading what the nodes returned.

- gate(): one node's rdma_port_info result judged (RDMA present when required, ports active).
- parse_env_file(): the KEY=VALUE lines of the NCCL launcher's environment file.
- collective_result(): the all-reduce result from every node's command result.

Ping output is read by module_utils/mesh/ping.py; the plan is in verify_plan (with VerifyError).
"""

from __future__ import annotations

import json
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl import env_file as nccl_env_file
from ansible_collections.rdmaops.cluster.plugins.module_utils.node.rdma import sysfs as rdma_sysfs
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify.plan import VerifyError

# --------------------------------------------------------------------------- port gate


def gate(
    port_info: dict[str, Any], host: str, rdma_required: Any, require_active: Any, sysfs_root: str = "/sys"
) -> dict[str, Any]:
    """Judge one node's rdma_port_info result: available, summary, failures (empty when it passes)."""
    if not isinstance(port_info, dict):
        raise VerifyError(f"port info of {host} must be the rdma_port_info result, got {port_info!r}")
    ports = port_info.get("rdma_ports") or []
    required = (
        rdma_required
        if isinstance(rdma_required, bool)
        else str(rdma_required).lower() in ("true", "yes", "1")
    )
    if not ports:
        summary = f"no RDMA device (nothing under {sysfs_root.rstrip('/')}/class/infiniband)"
        failures = []
        if required:
            failures.append(
                f"{summary}; RDMA is required (verify_rdma_required): fix the NIC/driver, or set"
                " verify_rdma_required: false to verify the data network over TCP only"
            )
        return {"available": False, "summary": summary, "failures": failures, "ports": []}
    try:
        problems = rdma_sysfs.inactive_ports(ports, rdma_sysfs.normalize_required(require_active))
    except rdma_sysfs.RdmaSysfsError as exc:
        raise VerifyError(str(exc)) from exc
    parts = []
    for port in ports:
        text = f"{port['name']} {port.get('state')}/{port.get('phys_state')} {port.get('link_layer')}"
        if port.get("rate_gbps"):
            text += f" {port['rate_gbps']:g} Gb/s"
        if port.get("netdev"):
            text += f" netdev {port['netdev']}"
        if port.get("roce_v2_ipv4_gid_index") is not None:
            text += f" RoCEv2 GID {port['roce_v2_ipv4_gid_index']}"
        parts.append(text)
    return {"available": True, "summary": "; ".join(parts), "failures": problems, "ports": ports}


# --------------------------------------------------------------------------- environment file and all-reduce


def parse_env_file(text: str) -> dict[str, str]:
    """KEY=VALUE lines of the NCCL launcher's environment file, read by the one parser of that format
    (module_utils/nccl_env_file, which also writes it); a bad line is a VerifyError naming it."""
    try:
        return nccl_env_file.parse(str(text))
    except nccl_env_file.EnvFileError as exc:
        raise VerifyError(str(exc)) from exc


def collective_result(runs: dict[str, Any], master: str) -> dict[str, Any]:
    """The all-reduce result from each node's command result: rank 0's JSON line, or an error naming nodes."""
    if not isinstance(runs, dict) or master not in runs:
        raise VerifyError(f"no all-reduce run recorded for the master {master!r}")
    failed = []
    for host, run in runs.items():
        run = run or {}
        if run.get("skipped"):
            failed.append(f"{host}: not run")
        elif run.get("rc") != 0:
            tail = [ln for ln in (run.get("stderr") or run.get("msg") or "").splitlines() if ln.strip()]
            reason = "timed out" if run.get("rc") in (124, 137) else f"rc {run.get('rc')}"
            failed.append(f"{host}: {reason}" + (f": {tail[-1].strip()[:300]}" if tail else ""))
    if failed:
        return {"error": "; ".join(failed), "results": []}
    for line in reversed((runs[master].get("stdout") or "").splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                document = json.loads(line)
            except ValueError:
                continue
            if isinstance(document, dict) and "results" in document:
                return document
    return {"error": f"{master}: no result line in the all-reduce output", "results": []}
