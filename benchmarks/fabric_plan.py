"""Time the data network's check and plan on the controller, the code site.yml runs, for large clusters.

For each case (switched fabrics of N nodes x K NICs under the rails and shared schemes; rings and full meshes
of N nodes) it builds what roles/mesh_network/tasks/validate.yml hands its two phases (every node's
`ip -d -j addr show`, port lists and settings), runs the cluster phase once (module_utils/mesh/cluster.py's
plan: what rdmaops.cluster.mesh_network_plan runs, run_once) and the node check for every node (phase.py's
check: what rdmaops.cluster.mesh_network_check runs on each), and prints the CPU seconds of each (the
process's own time: on a shared machine the wall clock measures the other load too; the code is
single-threaded, so on an idle core the two agree). Plain CPU Python: no GPU, no lab, no Ansible (its
templating and task overhead per node come on top).

    .venv/bin/python benchmarks/fabric_plan.py
    .venv/bin/python benchmarks/fabric_plan.py --nodes 8 --cases rails ring
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# the collection through the repository's own link (as pytest and ansible.cfg find it)
sys.path.insert(0, str(ROOT / ".collections"))

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import cluster, phase  # noqa: E402

CASES = ("rails", "shared", "ring", "mesh")
MGMT = "172.16.0.0/16"
# The settings as the role's defaults give them, but pools large enough for 256 nodes of 8 NICs.
SETTINGS: dict[str, Any] = {
    "mgmt_cidr": MGMT,
    "link_prefix": 30,
    "node_pool": "10.255.0.0/23",
    "fabric_subnet": "192.168.0.0/20",
    "fabric_table_base": 100,
    "rail_subnets": [],
    "rail_pool": "192.168.192.0/19",
    "rail_prefix": 23,
    "leaf_pool": "10.200.0.0/16",
    "leaf_routes": ["10.200.0.0/16"],
    "mtu": 9000,
    "nodeaddr_ifname": "nodeaddr0",
    "renumber": False,
}


def link_pool(nodes: int) -> str:
    """A pool with a /30 for every node pair's position: a ring's cables take the subnets of their pairs'
    positions in the host list, so a 256-node ring asks as many as a full mesh (32,640: a /15)."""
    needed = nodes * (nodes - 1) // 2
    prefix = 30
    while (1 << (30 - prefix)) < needed:
        prefix -= 1
    return f"10.{64 if prefix > 8 else 0}.0.0/{prefix}"


def ip_addr(index: int, ports: list[str]) -> str:
    """`ip -d -j addr show` of node ``index``: its management port with its address, then the data ports."""
    links = [
        {
            "ifindex": 2,
            "ifname": "eno1",
            "address": f"02:00:00:00:{index >> 8:02x}:{index & 255:02x}",
            "max_mtu": 9216,
            "addr_info": [
                {"family": "inet", "local": f"172.16.{index >> 8}.{(index & 255) + 1}", "prefixlen": 16}
            ],
        }
    ]
    links += [
        {
            "ifindex": 3 + k,
            "ifname": port,
            "address": f"b8:3f:{index >> 8:02x}:{index & 255:02x}:{k >> 8:02x}:{k & 255:02x}",
            "max_mtu": 9216,
        }
        for k, port in enumerate(ports)
    ]
    return json.dumps(links)


def inventory(case: str, nodes: int, nics: int) -> dict[str, Any]:
    """The role's inputs for one case: ``hosts``, every node's ports and facts, the settings."""
    hosts = [f"node{i:03d}" for i in range(1, nodes + 1)]
    mesh_ports: dict[str, dict[str, str]] = {}
    fabric_ports: dict[str, list[str]] = {}
    if case == "ring":
        mesh_ports = {
            h: {hosts[i - 1]: "data0", hosts[(i + 1) % nodes]: "data1"} for i, h in enumerate(hosts)
        }
    elif case == "mesh":
        mesh_ports = {
            h: {p: f"data{j if j < i else j - 1}" for j, p in enumerate(hosts) if p != h}
            for i, h in enumerate(hosts)
        }
    else:
        fabric_ports = {h: [f"ens{10 + k}np0" for k in range(nics)] for h in hosts}
    facts = {}
    for i, host in enumerate(hosts):
        ports = sorted(set(mesh_ports[host].values())) if mesh_ports else fabric_ports[host]
        facts[host] = {
            "addr": ip_addr(i, ports),
            "route": "[]",
            "netplan": None,
            "netplan_text": "",
            "connect": [f"172.16.{i >> 8}.{(i & 255) + 1}"],
            "ports": mesh_ports.get(host, {}),
            "fabric_ports": fabric_ports.get(host, []),
            "fabric_port": "",
        }
    return {
        "hosts": hosts,
        "topology": "mesh" if case in ("ring", "mesh") else "switched",
        "fabric_scheme": case if case in ("rails", "shared") else "auto",
        "link_pool": link_pool(nodes),
        **SETTINGS,
        "ports": mesh_ports,
        "fabric_ports": fabric_ports,
        "fabric_port": {},
        "nodes": facts,
    }


def run(case: str, nodes: int, nics: int) -> dict[str, Any]:
    """Both phases as tasks/validate.yml runs them: the cluster's once, then every node's check."""
    params = inventory(case, nodes, nics)
    start = time.process_time()
    once = cluster.plan(params)
    cluster_s = time.process_time() - start
    if once["errors"]:
        raise SystemExit(f"{case} {nodes}: {once['errors'][:3]}")
    per_node: list[float] = []
    for host in params["hosts"]:
        args = {
            "host": host,
            "topology": params["topology"],
            "ports": params["ports"].get(host, {}),
            "fabric_ports": params["fabric_ports"].get(host, []),
            "fabric_port": "",
            "mgmt_cidr": MGMT,
            "mtu": 9000,
            "nodeaddr_ifname": "nodeaddr0",
            "node": params["nodes"][host],
            "part": once["plan"]["nodes"][host],
            "shared": once["plan"]["shared"],
            "apply_targets": ["172.16.255.254"],
        }
        start = time.process_time()
        out = phase.check(args)
        per_node.append(time.process_time() - start)
        if out["errors"]:
            raise SystemExit(f"{case} {nodes} {host}: {out['errors'][:3]}")
    ports = nics if case in ("rails", "shared") else (2 if case == "ring" else nodes - 1)
    return {
        "case": case,
        "nodes": nodes,
        "ports": ports,
        "cluster_s": cluster_s,
        "node_max_ms": max(per_node) * 1000,
        "nodes_s": sum(per_node),
        "total_s": cluster_s + sum(per_node),
    }


def best(measure: Callable[[], dict[str, Any]], repeat: int) -> dict[str, Any]:
    """The run with the smallest total of ``repeat`` (the machine is shared: the least disturbed run)."""
    return min((measure() for _ in range(repeat)), key=lambda r: r["total_s"])


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, nargs="+", default=[8, 64, 256])
    parser.add_argument("--nics", type=int, default=8, help="NICs per node of the switched cases")
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--mesh-max", type=int, default=64, help="largest full mesh (a node has N-1 ports)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per row; the fastest is printed")
    args = parser.parse_args()
    print(
        f"# {date.today()} {platform.node()}: {os.cpu_count()} CPUs, {platform.machine()}, Python "
        f"{platform.python_version()}, load average {os.getloadavg()[0]:.1f}; times in CPU seconds",
        flush=True,
    )
    print(
        "| case | nodes | ports per node | cluster phase (s) | slowest node check (ms) | all node checks (s) "
        "| total (s) |"
    )
    print("|---|---|---|---|---|---|---|")
    for case in args.cases:
        for nodes in args.nodes:
            if case == "mesh" and nodes > args.mesh_max:
                continue
            row = best(lambda case=case, nodes=nodes: run(case, nodes, args.nics), args.repeat)
            print(
                f"| {row['case']} | {row['nodes']} | {row['ports']} | {row['cluster_s']:.3f} "
                f"| {row['node_max_ms']:.1f} | {row['nodes_s']:.3f} | {row['total_s']:.3f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
