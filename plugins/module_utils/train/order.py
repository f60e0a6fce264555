# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""train.yml's node rank order (master first) from the data cabling the inventory describes.

On a ring or chain, NCCL's ring algorithm (NCCL_ALGO=Ring, nccl_mesh_plugin) sends each rank's traffic to the
next rank: ranks ordered along the physical cabling keep it on the direct cables, ranks in host order may send
it across several hops. The order comes from the inventory's mesh_network_ports through the function behind
mesh_network's fact mesh_network_cabling.order (module_utils/mesh/cabling.py), so train.yml does not need
mesh_network to have run in the same play. A full mesh (every pair cabled) and a switched fabric keep the
play's host order: any order is as good there, and the master stays the first host as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import cabling

NO_PATH = (
    "no ring or chain of cables passes through every node; some consecutive ranks are several hops apart"
)
RING = "along the ring of cables: consecutive ranks, and the last and the first, share a cable"
CHAIN = "along the chain of cables: consecutive ranks share a cable"


def rank_order(hosts: Sequence[str], topology: str, ports: Mapping[str, Any]) -> dict[str, Any]:
    """{order, errors, note}: the hosts in node-rank order, the inventory's cabling errors, and a line for the
    preflight notes saying which order and why ('' on a switched fabric or without a port map)."""
    names = list(hosts)
    maps = {h: (ports or {}).get(h) or {} for h in names}
    if topology != "mesh" or not any(maps.values()):
        return {"order": names, "errors": [], "note": ""}
    cable_list, problems = cabling.cables(names, maps)
    if problems:
        # mesh_network refuses the same inventory; ranks along half a cabling would be a guess
        why = "the node rank order follows the cabling, and mesh_network_ports is inconsistent"
        return {"order": names, "errors": [f"{why}: {p}" for p in problems], "note": ""}
    graph = cabling.Graph(names, cable_list)
    if graph.shape() == "full_mesh":
        note = (
            f"rank order: the play's host order {', '.join(names)} (a full mesh: every pair shares a cable)"
        )
        return {"order": names, "errors": [], "note": note}
    order = graph.order()
    if not all(order[i + 1] in graph.neighbours[order[i]] for i in range(len(order) - 1)):
        # no path through every node (a star, two nodes of a ring that are not neighbours): order() falls back
        # to breadth-first from the first host, which keeps near nodes near
        why = NO_PATH
    elif len(order) > 2 and order[0] in graph.neighbours[order[-1]]:
        why = RING
    else:
        why = CHAIN
    return {
        "order": order,
        "errors": [],
        "note": f"rank order: {', '.join(order)}, master {order[0]} ({why})",
    }
