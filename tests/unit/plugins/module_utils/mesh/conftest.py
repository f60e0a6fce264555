"""Shared helpers for the mesh tests: host names, the role's pools, a node's interfaces, real host plans, and
the role's two check phases as tasks/validate.yml calls them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import (
    cluster,
    data_ports,
    host_plan,
    phase,
)

from ...conftest import FIXTURE_DIR

HOSTS = [f"node{i}" for i in range(1, 9)]
# host_plan takes every pool and name explicitly (the mesh_network role's defaults own them).
PLAN_ARGS = {
    "link_pool": "192.168.100.0/22",
    "link_prefix": 30,
    "node_pool": "10.255.0.0/24",
    "fabric_subnet": "192.168.200.0/24",
    "nodeaddr_ifname": "nodeaddr0",
}

# `ip -j link show` (iproute2 6.1, Debian 12) of a node with two mesh ports (fixtures/iproute2/SOURCES.md).
IPROUTE2 = FIXTURE_DIR / "iproute2"
IFACES = data_ports.ip_link_interfaces((IPROUTE2 / "ip_link_two_mesh_ports.json").read_text())


def mesh_plans(n: int, backups: bool = False) -> dict[str, dict[str, object]]:
    """The host plans of a full mesh of the first ``n`` HOSTS, each peer over its own port mesh<k> (with
    ``backups``, the backup routes the role plans by default)."""
    hosts = HOSTS[:n]
    plans = {}
    for host in hosts:
        peers = [h for h in hosts if h != host]
        names = [f"mesh{k}" for k in range(len(peers))]
        plans[host] = host_plan.host_plan(
            host,
            hosts,
            "mesh",
            ports=dict(zip(peers, names, strict=True)),
            interfaces=dict.fromkeys(names, ""),
            **PLAN_ARGS,
            backups=backups,
        )
    return plans


# The role's settings as the phase tests pass them (the lab's management network, the role's pools).
ROLE_SETTINGS: dict[str, Any] = {
    "mgmt_cidr": "10.93.0.0/24",
    "link_pool": "192.168.100.0/22",
    "link_prefix": 30,
    "node_pool": "10.255.0.0/24",
    "fabric_subnet": "192.168.200.0/24",
    "mtu": 9000,
    "nodeaddr_ifname": "nodeaddr0",
    "renumber": False,
    "apply_targets": ["10.93.0.1"],
}
# The switched fabric's settings as the role's defaults give them (defaults/main.yml, leaf routes templated).
FABRIC_DEFAULTS: dict[str, Any] = {
    "fabric_scheme": "auto",
    "fabric_table_base": 100,
    "rail_subnets": [],
    "rail_pool": "192.168.192.0/20",
    "rail_prefix": 24,
    "leaf_pool": "10.200.0.0/16",
    "leaf_routes": ["10.200.0.0/16"],
}
CLUSTER_KEYS = (
    "hosts",
    "topology",
    "mgmt_cidr",
    "link_pool",
    "link_prefix",
    "node_pool",
    "fabric_subnet",
    "mtu",
    "nodeaddr_ifname",
    "renumber",
    "nodes",
    *FABRIC_DEFAULTS,
)


def cluster_args(params: Mapping[str, Any]) -> dict[str, Any]:
    """What tasks/validate.yml passes rdmaops.cluster.mesh_network_plan, from the role's inputs:
    ``all_ports``, ``all_fabric_ports``, ``all_fabric_port`` are every node's inventory values."""
    args = {key: params.get(key, FABRIC_DEFAULTS.get(key)) for key in CLUSTER_KEYS}
    # the play's hosts (ansible_play_hosts_all): every node that reported, unless the test says otherwise
    args["play_hosts"] = params.get("play_hosts", list(params.get("nodes") or {}))
    args["allow_unreachable"] = params.get("allow_unreachable", False)
    args["backup_routes"] = params.get("backup_routes", True)
    args.update(
        ports=params.get("all_ports") or {},
        fabric_ports=params.get("all_fabric_ports") or {},
        fabric_port=params.get("all_fabric_port") or {},
    )
    return args


def node_args(params: Mapping[str, Any], cluster_plan: Mapping[str, Any]) -> dict[str, Any]:
    """What tasks/validate.yml passes rdmaops.cluster.mesh_network_check for ``params['host']``."""
    host = params["host"]
    return {
        "host": host,
        "topology": params["topology"],
        "ports": params.get("ports", {}),
        "fabric_ports": params.get("fabric_ports", []),
        "fabric_port": params.get("fabric_port", ""),
        "mgmt_cidr": params["mgmt_cidr"],
        "mtu": params["mtu"],
        "nodeaddr_ifname": params["nodeaddr_ifname"],
        "node": params["nodes"][host],
        "part": cluster_plan["nodes"].get(host, {}),
        "shared": cluster_plan["shared"],
        "apply_targets": params.get("apply_targets", []),
    }


def role_phases(params: Mapping[str, Any]) -> dict[str, Any]:
    """tasks/validate.yml for ``params['host']``: the cluster phase (once), then the node's check. The errors
    of the phase that refused, or the node's plan (and the cluster's, as ``cluster``)."""
    once = cluster.plan(cluster_args(params))
    if once["errors"]:
        return {"errors": once["errors"], "plan": {}, "cluster": {}}
    out = phase.check(node_args(params, once["plan"]))
    return {**out, "cluster": once["plan"]}
