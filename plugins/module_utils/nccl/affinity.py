# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU-to-NIC affinity: for each GPU of each node, its nearest NIC(s) by ``nvidia-smi topo -m`` (``topo``),
and whether one of the NICs NCCL uses (NCCL_IB_HCA of the node's NCCL environment, ``hca``) is at PIX or PXB.

A GPU whose nearest NIC is SYS sends every byte across the CPUs' interconnect (and GPUDirect RDMA does not
work there): a warning. A node without nvidia-smi (no GPU, as in the lab) reports nothing; the report says so
once. ``cluster`` builds the section from each node's command result (``rc`` 127: no nvidia-smi, the shell's
"not found"), ``notes`` words it for train.yml's preflight notes and ``markdown`` for verify.yml's report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl import hca, topo

NOT_FOUND_RC = 127
CLOSE = ("PIX", "PXB")  # one PCIe switch (tree) between GPU and NIC: GPUDirect RDMA's good case


def nccl_nics(env: Mapping[str, Any], nics: Sequence[str]) -> tuple[list[str], str]:
    """The NICs among NICS that NCCL's IB transport uses under ENV, and what says so (empty list and why not
    when NCCL's own IB transport is not the one configured)."""
    if str(env.get("NCCL_IB_DISABLE", "")) == "1":
        return [], "NCCL runs over TCP (NCCL_IB_DISABLE=1)"
    plugin = str(env.get("NCCL_NET_PLUGIN", ""))
    if plugin and plugin.lower() != "none":
        return [], f"NCCL's network is the {plugin} plugin, which picks its NICs itself"
    spec = str(env.get("NCCL_IB_HCA", ""))
    return [n for n in nics if hca.selects(spec, n)], f"NCCL_IB_HCA={spec}" if spec else "every NIC"


def _nearest(
    cells: Mapping[str, str], names: Mapping[str, str], among: Sequence[str]
) -> tuple[list[str], str]:
    """The device names of the NICs in AMONG (column labels) with the best relation, and that relation."""
    if not among:
        return [], ""
    best = min(among, key=lambda label: topo.rank(cells[label]))
    nearest = [names[label] for label in among if topo.rank(cells[label]) == topo.rank(cells[best])]
    return nearest, cells[best]


def node(text: str, env: Mapping[str, Any]) -> dict[str, Any]:
    """One node's affinity from its ``nvidia-smi topo -m`` text and its NCCL environment (topo.TopoError for
    text that is not the matrix)."""
    matrix = topo.parse(text)
    names = matrix.nics
    used, why = nccl_nics(env, list(names.values()))
    used_labels = [label for label, name in names.items() if name in used]
    gpus = []
    warnings = []
    for gpu in matrix.gpus:
        nearest, relation = _nearest(matrix.cells[gpu], names, list(names))
        mine, mine_relation = _nearest(matrix.cells[gpu], names, used_labels)
        gpus.append(
            {
                "gpu": gpu,
                "nearest": nearest,
                "relation": relation,
                "nccl_nearest": mine,
                "nccl_relation": mine_relation,
                "nccl_close": mine_relation in CLOSE if used_labels else None,
            }
        )
        if relation == "SYS":
            warnings.append(
                f"{gpu}'s nearest NIC is SYS ({', '.join(nearest)}): its network traffic crosses the CPUs'"
                " interconnect (and GPUDirect RDMA is not used that far unless NCCL_NET_GDR_LEVEL=SYS)"
            )
        elif mine_relation == "SYS":
            warnings.append(
                f"{gpu}'s nearest NIC that NCCL uses ({why}) is SYS ({', '.join(mine)}); its nearest NIC,"
                f" {', '.join(nearest)} ({relation}), is not one NCCL uses"
            )
    return {"state": "ok", "gpus": gpus, "nccl_nics": used, "nccl_why": why, "warnings": warnings}


def cluster(
    results: Mapping[str, Any], envs: Mapping[str, Mapping[str, Any]], hosts: Sequence[str]
) -> dict[str, Any]:
    """The section over all nodes: per node its affinity or why there is none ({"state": "absent" | "failed",
    "reason"}), and the warnings and notes, each naming its node."""
    nodes: dict[str, Any] = {}
    warnings: list[str] = []
    for host in hosts:
        result = results.get(host) or {}
        rc = result.get("rc")
        if rc == NOT_FOUND_RC:
            nodes[host] = {"state": "absent", "reason": "no nvidia-smi"}
            continue
        if rc is None:
            nodes[host] = {"state": "failed", "reason": "nvidia-smi topo -m did not run there"}
            continue
        if rc != 0:
            said = str(result.get("stderr") or result.get("stdout") or result.get("msg") or "").strip()
            first = said.splitlines()[0] if said else "no output"
            nodes[host] = {"state": "failed", "reason": f"nvidia-smi topo -m failed (rc {rc}: {first})"}
            continue
        try:
            nodes[host] = node(str(result.get("stdout") or ""), envs.get(host) or {})
        except topo.TopoError as exc:
            nodes[host] = {"state": "failed", "reason": f"nvidia-smi topo -m printed no matrix: {exc}"}
            continue
        warnings += [f"{host}: {w}" for w in nodes[host]["warnings"]]
    absent = [h for h in hosts if nodes[h]["state"] == "absent"]
    failed: dict[str, list[str]] = {}
    for h in hosts:
        if nodes[h]["state"] == "failed":
            failed.setdefault(nodes[h]["reason"], []).append(h)
    notes = [f"{', '.join(group)}: {reason}" for reason, group in failed.items()]
    if absent:
        notes.append(f"no nvidia-smi on {', '.join(absent)} (no GPU driver there): no GPU-to-NIC affinity")
    return {"nodes": nodes, "warnings": warnings, "notes": notes}


def _gpu_line(entry: Mapping[str, Any]) -> str:
    return f"{entry['gpu']} {'/'.join(entry['nearest']) or 'no NIC'} ({entry['relation'] or '-'})"


def _summary(entry: Mapping[str, Any]) -> str:
    """One node's affinity in a line: each GPU's nearest NIC, then whether NCCL's NICs are close."""
    line = ", ".join(_gpu_line(g) for g in entry["gpus"]) or "no GPU in the matrix"
    far = [g["gpu"] for g in entry["gpus"] if g["nccl_close"] is False]
    if not entry["nccl_nics"]:
        return f"{line}; NCCL uses none of these NICs ({entry['nccl_why']})"
    if far:
        return f"{line}; {', '.join(far)} have no NIC NCCL uses ({entry['nccl_why']}) at PIX/PXB"
    return f"{line}; every GPU has a NIC NCCL uses ({entry['nccl_why']}) at PIX/PXB"


def notes(section: Mapping[str, Any], hosts: Sequence[str]) -> list[str]:
    """train.yml's preflight notes: nodes with the same affinity in one line, then warnings and notes."""
    lines: dict[str, list[str]] = {}
    for host in hosts:
        entry = section["nodes"].get(host) or {}
        if entry.get("state") == "ok":
            lines.setdefault(_summary(entry), []).append(host)
    out = [f"gpu-nic affinity on {', '.join(group)}: {text}" for text, group in lines.items()]
    out += [f"gpu-nic affinity: warning: {w}" for w in section["warnings"]]
    return out + [f"gpu-nic affinity: {n}" for n in section["notes"]]


def markdown(section: Mapping[str, Any]) -> list[str]:
    """verify.yml's report section: a row per node and GPU, then the warnings and notes."""
    lines = [
        "",
        "## GPU-to-NIC affinity",
        "",
        "| node | GPU | nearest NIC | relation | NIC NCCL uses at PIX/PXB |",
        "|---|---|---|---|---|",
    ]
    for host, entry in section["nodes"].items():
        for g in entry.get("gpus") or []:
            nccl = "-"
            if g["nccl_close"] is not None:
                near = f"{'/'.join(g['nccl_nearest'])} {g['nccl_relation']}"
                nccl = f"{'yes' if g['nccl_close'] else 'no'} ({near})"
            lines.append(
                f"| {host} | {g['gpu']} | {'/'.join(g['nearest']) or '-'} | {g['relation'] or '-'} | {nccl} |"
            )
    lines += [f"- warning: {w}" for w in section["warnings"]]
    return lines + [f"- note: {n}" for n in section["notes"]]
