# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The data network's cables while a job runs: what each node's agent reads of its data ports (carrier, and
an RDMA port's state; module_utils/node/train/agent.py ``cable_state``), turned into what a person reads as
it happens ("node2 data1, the cable to node3, lost carrier at step 40") and into the cause of the verdict when
the job then stops. Whether traffic has another path is the cabling's (``rerouted``: the role says so per
cable).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import cabling


@dataclass
class Cable:
    node: str
    port: str
    peer: str  # "node3", or what a switched port faces ("the switch of rail1")
    rerouted: bool  # the cabling has another path between the two ends (node addresses take it)
    state: str = "up"
    lost_at: str = ""  # "step 40" or "start-up", while it is down
    why: str = ""

    def name(self) -> str:
        return f"{self.node} {self.port}, the cable to {self.peer}"


class CableWatch:
    """Every watched cable of a job; ``feed`` an agent's ``cables`` states, read the news and the cause."""

    def __init__(self, cables: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
        self.cables = {
            (node, str(c["port"])): Cable(
                node, str(c["port"]), str(c.get("peer") or "?"), bool(c.get("rerouted"))
            )
            for node, items in cables.items()
            for c in items
        }
        self.news: list[str] = []
        self.events: list[str] = []  # every change, for the job's report
        self.lost_ever: list[str] = []

    def ports(self, node: str) -> list[str]:
        """The ports the agent on NODE reads."""
        return [c.port for (n, _p), c in self.cables.items() if n == node]

    def feed(self, node: str, states: Mapping[str, Any], at: str) -> None:
        """An agent's states (port -> "up" or why it is down) at AT ("step 40", "start-up")."""
        for port, raw in states.items():
            cable = self.cables.get((node, str(port)))
            if cable is None:
                continue
            state = "up" if raw == "up" else "down"
            if state == cable.state:
                continue
            cable.state = state
            if state == "down":
                cable.lost_at, cable.why = at, str(raw)
                text = f"{cable.name()}, {cable.why} at {at}" + (
                    "; traffic between node addresses takes another path (slower); transports bound to this "
                    "cable stop"
                    if cable.rerouted
                    else "; node addresses have no other route between them: the job stops if it needs it"
                )
                self.lost_ever.append(f"{cable.name()}, {cable.why} at {at}")
            else:
                text = f"{cable.name()} is back at {at} (down since {cable.lost_at}): the direct path again"
                cable.lost_at = cable.why = ""
            self.news.append(text)
            self.events.append(text)

    def take_news(self) -> list[str]:
        """What changed since the last call, in order."""
        out, self.news = self.news, []
        return out

    def cause(self) -> str:
        """The cables down now (else those lost during the job), for the verdict of a job that stopped."""
        down = [f"{c.name()}, {c.why} at {c.lost_at}" for c in self.cables.values() if c.state == "down"]
        return "; ".join(down or self.lost_ever)


def watched_cables(
    hosts: Sequence[str], topology: str, ports: Mapping[str, Any], backup_routes: bool = True
) -> dict[str, list[dict[str, Any]]]:
    """Per node, the data ports of the direct cables (every host's mesh_network_ports) that its agent reads:
    {port, peer, rerouted}. mesh_network routes a node address over a pair's first cable; a pair's second or
    later cable (rails) leaves the node addresses their path when lost, and so does any cable of a full mesh
    of 3+ nodes or a ring with backup routes (mesh_network_backup_routes, module_utils/mesh/backup.py). A port
    listed by MAC only is left out (the agent reads /sys/class/net by name), as is a switched fabric (its
    cables are not in the inventory)."""
    names = list(hosts)
    if topology != "mesh":
        return {}
    cable_list, problems = cabling.cables(names, {h: (ports or {}).get(h) or {} for h in names})
    backups = backup_routes and not problems and cabling.Graph(names, cable_list).backup_kind() != ""
    out: dict[str, list[dict[str, Any]]] = {}
    for cable in cable_list:
        for node, spec, peer in (
            (cable["a"], cable["a_port"], cable["b"]),
            (cable["b"], cable["b_port"], cable["a"]),
        ):
            name = cabling.port_name(spec)
            if name:
                rerouted = backups or int(cable["k"]) > 0
                out.setdefault(node, []).append({"port": name, "peer": peer, "rerouted": rerouted})
    return out
