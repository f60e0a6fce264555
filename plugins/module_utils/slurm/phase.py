# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The slurm role's check, plan and config phases: their arguments in, ``{errors, plan}`` out.

``check`` (tasks/validate.yml): the inventory and the settings, before anything is read from a node.
``plan`` (tasks/facts.yml, again after an install gave slurmd -C): each node's declared memory and GPUs
against what it has, then the node definitions, the slurm.conf and gres.conf lines and the cgroup choice.
``config`` (tasks/config.yml): the slurm.conf each host rendered is the same everywhere, and what the change
from each node's current file asks of the running daemons.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.health import gate as health_gate
from ansible_collections.rdmaops.cluster.plugins.module_utils.node.values import whole
from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import required_raw
from ansible_collections.rdmaops.cluster.plugins.module_utils.slurm import config as slurm

SLURM_CHECK_SPEC: dict[str, Any] = {
    "controllers": {"type": "list", "elements": "str", "default": []},
    "nodes": {"type": "list", "elements": "str", "default": []},
    "inventory_hosts": {"type": "list", "elements": "str", "required": True},
    "play_hosts": {"type": "list", "elements": "str", "required": True},
    "running_hosts": {"type": "list", "elements": "str", "required": True},
    "controller_group": {"type": "str", "required": True},
    **required_raw("partitions", "cgroup", "check_timeout", "kill_wait", "cluster_name"),
    "groups": {"type": "dict", "required": True},
    # the HealthCheckProgram (docs/health.md): slurm_health_check_interval, _node_state, _thresholds, ...
    "health_check_interval": {"type": "raw", "default": ""},
    "health_check_node_state": {"type": "raw", "default": "ANY"},
    **health_gate.SETTINGS_SPEC,
}

SLURM_PLAN_SPEC: dict[str, Any] = {
    "controller": {"type": "str", "required": True},
    "compute": {"type": "list", "elements": "str", "required": True},
    "hosts": {"type": "dict", "required": True},
    "partitions": {"type": "list", "elements": "dict", "required": True},
    "groups": {"type": "dict", "required": True},
    "cgroup": {"type": "str", "choices": ["auto", "true", "false"], "default": "auto"},
    "version": {"type": "list", "elements": "int"},
}

SLURM_CONFIG_SPEC: dict[str, Any] = {
    "texts": {"type": "dict", "required": True},
    "current": {"type": "dict", "default": {}},
}

# slurm.conf(5) HealthCheckNodeState: one of ALLOC, ANY, IDLE, NONDRAINED_IDLE, MIXED, comma-separated, and
# CYCLE (spread the runs over the interval instead of all nodes at once).
HEALTH_NODE_STATES = ("ALLOC", "ANY", "CYCLE", "IDLE", "MIXED", "NONDRAINED_IDLE")
_CLUSTER_NAME = re.compile(r"[a-z0-9_-]{1,40}")


def _text(value: Any) -> str:
    """A value as Jinja's ``string`` filter writes it (True -> 'True')."""
    return "" if value is None else str(value)


def check(p: Mapping[str, Any]) -> dict[str, Any]:
    """One controller in this run, every node an inventory host in this run, partitions on groups of nodes,
    and the cgroup, timeout and name settings."""
    controllers, nodes = list(p["controllers"]), list(p["nodes"])
    errors = slurm.controller_errors(controllers, list(p["play_hosts"]), p["controller_group"])
    if not nodes:
        errors.append("no Slurm nodes: the compute group is empty or missing")
    errors += slurm.node_errors(nodes, list(p["inventory_hosts"]), list(p["play_hosts"]))
    errors += slurm.failed_earlier_errors(
        [*controllers[:1], *nodes], list(p["play_hosts"]), list(p["running_hosts"])
    )
    errors += slurm.partition_errors(p["partitions"], dict(p["groups"]), nodes)
    cgroup = _text(p["cgroup"]).lower()
    if cgroup not in ("auto", "true", "false"):
        errors.append(f"slurm_cgroup must be auto, true or false (got '{_text(p['cgroup'])}')")
    for name in ("check_timeout", "kill_wait"):
        if whole(_text(p[name])) is None:
            errors.append(f"slurm_{name} must be whole seconds (got '{_text(p[name])}')")
    if not isinstance(p["cluster_name"], str) or not _CLUSTER_NAME.fullmatch(p["cluster_name"]):
        errors.append(
            "slurm_cluster_name must be 1-40 lower-case letters, digits, _ and - "
            f"(got '{_text(p['cluster_name'])}')"
        )
    interval = _text(p.get("health_check_interval")).strip()
    if interval and whole(interval) is None:
        errors.append(
            f"slurm_health_check_interval must be whole seconds, 0 or empty to disable (got '{interval}')"
        )
    states = [s.strip().upper() for s in _text(p.get("health_check_node_state", "ANY")).split(",")]
    bad = [s for s in states if s not in HEALTH_NODE_STATES]
    if bad:
        errors.append(
            f"slurm_health_check_node_state: {', '.join(bad) or repr('')} not one of "
            f"{', '.join(HEALTH_NODE_STATES)} (comma-separated)"
        )
    errors += health_gate.settings_errors(
        "slurm_health",
        "fail",
        p.get("health_thresholds", {}),
        p.get("health_severity", {}),
        p.get("health_sources", {}),
    )
    seconds = whole(interval) or 0
    return {
        "errors": errors,
        "plan": {
            "controller": controllers[0] if controllers else None,
            "cgroup": cgroup,
            "health_check_interval": seconds,
            "health_check_node_state": ",".join(states),
        },
    }


def plan(p: Mapping[str, Any]) -> dict[str, Any]:
    """The checks of what each node declares, then everything slurm.conf and gres.conf say.

    ``hosts``: per host (every compute node and the controller) what tasks/facts.yml noted: slurmd -C's
    ``hardware`` (null before slurmd is installed), ``memory_mib``, ``gpus``, ``gpu_files``, ``cgroup``
    ({usable, why}), the declared ``declared_memory`` and ``declared_gpus``, and ``addr``. The files can be
    planned only once every compute node has slurmd -C's hardware (``config_possible``).
    """
    hosts: Mapping[str, Mapping[str, Any]] = p["hosts"]
    compute = list(p["compute"])
    missing = [h for h in [*compute, p["controller"]] if h not in hosts]
    if missing:
        return {"errors": [f"no facts noted for {', '.join(dict.fromkeys(missing))}"], "plan": {}}
    info = {h: dict(hosts[h]) for h in compute}
    errors = slurm.hardware_errors(info)
    cgroups = [(h, dict(info[h].get("cgroup") or {})) for h in compute]
    if p["cgroup"] == "true":
        errors += [
            f"slurm_cgroup is true but {h} cannot use cgroup plugins: {c.get('why')}"
            for h, c in cgroups
            if not c.get("usable")
        ]
    controller = hosts[p["controller"]]
    version = p.get("version")
    out: dict[str, Any] = {
        "config_possible": all(info[h].get("hardware") for h in compute),
        "controller": {
            "host": p["controller"],
            "name": (controller.get("hardware") or {}).get("NodeName") or p["controller"],
            "addr": controller.get("addr"),
        },
        "version": list(version) if version else None,
        "use_cgroup": p["cgroup"] == "true"
        or (p["cgroup"] == "auto" and all(c.get("usable") for c in dict(cgroups).values())),
        "cgroup_why": "; ".join(dict.fromkeys(str(c.get("why")) for c in dict(cgroups).values())),
        "nodes": [],
        "node_lines": [],
        "partition_lines": [],
        "gres_lines": [],
    }
    if errors or not out["config_possible"]:
        return {"errors": errors, "plan": out}
    nodes = slurm.node_definitions(info)
    out["nodes"] = nodes
    out["node_lines"] = [slurm.node_line(n) for n in nodes]
    out["partition_lines"] = slurm.partition_lines(list(p["partitions"]), dict(p["groups"]), nodes)
    out["gres_lines"] = [
        f"NodeName={n['name']} Name=gpu File={path}"
        for n in nodes
        if n["gpus"]
        for path in list(info[n["host"]].get("gpu_files") or [])[: n["gpus"]]
    ]
    return {"errors": errors, "plan": out}


def config(p: Mapping[str, Any]) -> dict[str, Any]:
    """``texts``: host -> the slurm.conf it rendered (from its own view of the inventory); ``current``:
    host -> the file it holds now (null when none). Refuses a file that differs between hosts; plans per
    host 'restart', 'reconfigure' or 'none' (with why)."""
    texts = {str(h): str(t) for h, t in p["texts"].items()}
    if not texts:
        return {"errors": ["no rendered slurm.conf to compare"], "plan": {}}
    first, *rest = texts
    differs = [h for h in rest if texts[h] != texts[first]]
    errors = []
    if differs:
        errors.append(
            f"slurm.conf would differ on {', '.join(differs)} from {first}'s: a slurm_ variable set per host "
            "(host_vars) that must be the same for the cluster?"
        )
    current = dict(p["current"])
    actions = {h: slurm.conf_change(current.get(h), text) for h, text in texts.items()}
    return {"errors": errors, "plan": {"actions": actions}}
