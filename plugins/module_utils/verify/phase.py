# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verify role's check, gate, plan and summary phases: their inputs in, ``{errors, plan}`` out, on the
controller.

- check (tasks/validate.yml): the role's settings, before any node changes;
- gate (tasks/gate.yml): one node's RDMA ports judged;
- plan (tasks/links.yml): the links and rounds of disjoint pairs, this node's parts in each round, and the
  environment of the all-reduce (the NCCL env file read back);
- summary (tasks/report.yml): the all-reduce's result from every node's run, the QoS section, the GPU-to-NIC
  affinity section (module_utils/nccl/affinity.py) from every node's ``nvidia-smi topo -m``.

The action plugins rdmaops.cluster.verify_check, verify_gate, verify_plan and verify_summary call them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl import affinity
from ansible_collections.rdmaops.cluster.plugins.module_utils.node.health import gate as health_gate
from ansible_collections.rdmaops.cluster.plugins.module_utils.node.values import whole
from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import required_raw
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import verify as verify_qos
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify import parse, plan
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify.thresholds import thresholds

MODES = ("auto", "rdma", "tcp")
POSITIVE = re.compile(r"^[1-9][0-9]*$")

VERIFY_CHECK_SPEC: dict[str, Any] = {
    **required_raw("mode", "pattern", "directions"),
    "integers": {"type": "dict", "required": True},
    "thresholds": {"type": "dict", "required": True},
    "hosts": {"type": "list", "elements": "str", "required": True},
    "topology": {"type": "raw", "default": ""},
    # verify_health, verify_health_thresholds, _severity, _sources (docs/health.md)
    **health_gate.MODE_SPEC,
}

VERIFY_GATE_SPEC: dict[str, Any] = {
    "host": {"type": "str", "required": True},
    "port_info": {"type": "dict", "required": True},
    "rdma_required": {"type": "raw", "default": True},
    "require_active": {"type": "raw", "default": True},
    "sysfs_root": {"type": "str", "default": "/sys"},
}

VERIFY_PLAN_SPEC: dict[str, Any] = {
    "host": {"type": "str", "required": True},
    "hosts": {"type": "list", "elements": "str", "required": True},
    "plans": {"type": "dict", "required": True},
    "pattern": {"type": "str", "default": "all_pairs"},
    "directions": {"type": "str", "default": "both"},
    "max_concurrent": {"type": "raw", "default": 0},
    "socket_ifname": {"type": "str", "default": ""},
    "env_file": {"type": "str", "default": ""},
    "port": {"type": "int", "default": 5201},
    "rdma_ports": {"type": "list", "elements": "dict", "default": []},
}

VERIFY_SUMMARY_SPEC: dict[str, Any] = {
    "master": {"type": "str", "required": True},
    "runs": {"type": "dict"},
    "qos_roce": {"type": "dict"},
    "qos_switches": {"type": "list", "elements": "raw", "default": []},
    "qos_hosts": {"type": "dict", "default": {}},
    # per node, its `nvidia-smi topo -m` command result, and its NCCL environment (NCCL_IB_HCA)
    "gpu_topology": {"type": "dict", "default": {}},
    "nccl_envs": {"type": "dict", "default": {}},
}


def check(params: Mapping[str, Any]) -> dict[str, Any]:
    """The settings: choices, positive integers, thresholds, at least two nodes of an addressed fabric."""
    errors: list[str] = []
    mode, pattern, directions = params["mode"], params["pattern"], params["directions"]
    if mode not in MODES or pattern not in plan.PATTERNS or directions not in plan.DIRECTIONS:
        errors.append(
            f"verify_mode '{mode}' (auto|rdma|tcp), verify_pattern '{pattern}' (all_pairs|ring), "
            f"verify_directions '{directions}' (both|one): one of them is not allowed"
        )
    bad = {
        name: value
        for name, value in params["integers"].items()
        if whole(value) is None or not POSITIVE.match(str(value))
    }
    if bad:
        errors.append("must be positive integers: " + ", ".join(f"{k}={v}" for k, v in bad.items()))
    limits: dict[str, Any] = {}
    try:
        limits = thresholds(**params["thresholds"])
    except (plan.VerifyError, TypeError) as exc:
        errors.append(f"verify thresholds: {exc}")
    hosts, topology = params["hosts"], str(params["topology"] or "")
    if len(hosts) < 2 or topology not in ("mesh", "switched"):
        errors.append(
            f"verify needs at least two nodes (got {len(hosts)}) and mesh_network_topology mesh or switched "
            f"(got '{topology}'): run it on an inventory that site.yml addressed"
        )
    errors += health_gate.settings_errors(
        "verify_health",
        params.get("health", "fail"),
        params.get("health_thresholds", {}),
        params.get("health_severity", {}),
        params.get("health_sources", {}),
    )
    return {"errors": errors, "plan": {"thresholds": limits}}


def gate(params: Mapping[str, Any]) -> dict[str, Any]:
    """One node's rdma_port_info result judged: {available, summary, failures, ports}; failures are errors."""
    host = params["host"]
    try:
        judged = parse.gate(
            dict(params["port_info"]),
            host,
            params["rdma_required"],
            params["require_active"],
            params["sysfs_root"],
        )
    except plan.VerifyError as exc:
        return {"errors": [f"{host}: {exc}"], "plan": {}}
    errors = [f"{host}: {'; '.join(judged['failures'])}"] if judged["failures"] else []
    return {"errors": errors, "plan": judged}


def plan_phase(params: Mapping[str, Any]) -> dict[str, Any]:
    """The links and rounds, this node's parts in each round (one per rail of a switched pair), and the
    all-reduce's environment."""
    host, hosts = params["host"], list(params["hosts"])
    try:
        links = plan.links(dict(params["plans"]), hosts, params["pattern"])
        rounds = plan.schedule(
            links, hosts, params["pattern"], params["directions"], params["max_concurrent"]
        )
        # Several rails (mesh_network's comma-joined fabric ports): NCCL takes the list, gloo the first.
        sockets = params["socket_ifname"]
        env = {"GLOO_SOCKET_IFNAME": sockets.partition(",")[0], "NCCL_SOCKET_IFNAME": sockets}
        # The NCCL env file (nccl_env role) wins over the socket defaults, as it does for the launchers.
        env.update(parse.parse_env_file(params["env_file"]) if params["env_file"] else {})
    except plan.VerifyError as exc:
        return {"errors": [str(exc)], "plan": {}}
    return {
        "errors": [],
        "plan": {
            "links": links,
            "rounds": rounds,
            "parts": [
                plan.parts_in_round(rnd, host, params.get("rdma_ports"), params.get("port") or 5201)
                for rnd in rounds
            ],
            "collective_env": env,
        },
    }


def summary(params: Mapping[str, Any]) -> dict[str, Any]:
    """The all-reduce's result (rank 0's line, or every node that failed), the QoS section and the GPU-to-NIC
    affinity section; None for a part that did not run."""
    try:
        collective = (
            parse.collective_result(dict(params["runs"]), params["master"])
            if params["runs"] is not None
            else None
        )
    except plan.VerifyError as exc:
        return {"errors": [str(exc)], "plan": {}}
    qos = None
    if params["qos_roce"] is not None:
        switches = dict(verify_qos.switch_input(r) for r in params["qos_switches"] or [])
        raw = {
            h: verify_qos.host_input(v or {}, parse.parse_env_file)
            for h, v in dict(params["qos_hosts"]).items()
        }
        qos = verify_qos.qos_section(dict(params["qos_roce"]), switches, raw)
    topology = dict(params.get("gpu_topology") or {})
    gpu_nic = (
        affinity.cluster(topology, dict(params.get("nccl_envs") or {}), list(topology)) if topology else None
    )
    return {"errors": [], "plan": {"collective": collective, "qos": qos, "affinity": gpu_nic}}
