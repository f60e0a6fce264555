"""Shared helpers for the mesh tests: host names, the role's pools, a node's interfaces, real host plans."""

from __future__ import annotations

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import data_ports, host_plan

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


def mesh_plans(n: int) -> dict[str, dict[str, object]]:
    """The host plans of a full mesh of the first ``n`` HOSTS, each peer over its own port mesh<k>."""
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
        )
    return plans
