# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nodes' GPUs for train.yml: how many (the processes per node a GPU recipe follows) and how much memory
(what the memory estimate is compared with), read on each node by the train_preflight module and decided on
the controller from every node's report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PROCS_KEY = "cluster.procs_per_node"
# what train_preflight runs where the driver shows GPUs: one line of MiB per GPU
MEMORY_QUERY = ["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"]


def parse_memory_total(text: str) -> list[int]:
    """MiB per GPU from ``nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits``; lines that are
    not a number ("[N/A]", a MIG note) are left out."""
    return [int(line.strip()) for line in text.splitlines() if line.strip().isdigit()]


def _reachable(reports: Mapping[str, Any], hosts: Sequence[str]) -> list[str]:
    return [
        h for h in hosts if (rep := reports.get(h)) and not rep.get("unreachable") and not rep.get("failed")
    ]


def follows_gpus(device: str, reports: Mapping[str, Any], hosts: Sequence[str]) -> bool:
    """Whether the recipe runs on the nodes' GPUs: device cuda, or auto where every node has one."""
    counts = [int(reports[h].get("gpus") or 0) for h in _reachable(reports, hosts)]
    return device == "cuda" or (device == "auto" and bool(counts) and min(counts) > 0)


def procs_per_node(
    launch: Mapping[str, Any], reports: Mapping[str, Any], hosts: Sequence[str], pinned: Sequence[str]
) -> tuple[int | None, list[str]]:
    """The processes per node a recipe gets on these nodes, and notes: a GPU recipe one per GPU (the fewest
    any node has: torchrun starts as many on each), unless cluster.procs_per_node is pinned or no node shows
    a GPU (then the preflight names the shortfall). None: the recipe's own (CPU recipes, or nothing read)."""
    reachable = _reachable(reports, hosts)
    if PROCS_KEY in pinned or not reachable or not follows_gpus(str(launch.get("device")), reports, hosts):
        return None, []
    counts = {h: int(reports[h].get("gpus") or 0) for h in reachable}
    fewest = min(counts.values())
    if fewest < 1:
        return None, []
    notes = []
    more = sorted(h for h, n in counts.items() if n > fewest)
    if more:
        notes.append(
            f"gpus: {', '.join(more)} have more than {fewest} GPUs; every node runs {fewest} processes "
            f"(the fewest any node has; pin {PROCS_KEY} to choose)"
        )
    return fewest, notes


def memory_mib(reports: Mapping[str, Any], hosts: Sequence[str]) -> tuple[int, str] | None:
    """The smallest GPU memory any node reports (MiB) and where, or None where a node reports none."""
    found: list[tuple[int, str]] = []
    for host in _reachable(reports, hosts):
        mib = [int(m) for m in reports[host].get("gpu_memory_mib") or []]
        if not mib:
            return None
        found.append((min(mib), host))
    return min(found) if found else None
