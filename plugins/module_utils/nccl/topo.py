# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``nvidia-smi topo -m``: the matrix of how each GPU reaches each NIC, read into plain data.

The formats it reads (real outputs in tests/unit/fixtures/nvidia-smi-topo, SOURCES.md there):

- drivers of 2021 and before: the NICs are columns named by their RDMA device (``mlx5_0``), cells separated by
  tabs, a ``CPU Affinity`` and a ``NUMA Affinity`` column, no NIC legend;
- newer drivers: columns ``NIC0``, ``NIC1``, ... named in a ``NIC Legend:`` section (``  NIC0: mlx5_0``), a
  ``GPU NUMA ID`` column after the NUMA affinity; GitHub issues show the tabs expanded to spaces.

A cell is ``X`` (the device itself), ``NV#`` (# bonded NVLinks, between GPUs) or a PCIe relation, nearest
first: PIX (at most one PCIe bridge), PXB (several bridges, no host bridge), PHB (through a PCIe host bridge,
the CPU), NODE (between host bridges of one NUMA node), SYS (across the SMP interconnect between NUMA nodes;
drivers before 2017 said SOC). Pure Python; ``TopoError`` names what does not fit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Nearest first: the order NCCL's own topology uses (src/graph/topo.h, PATH_PIX .. PATH_SYS).
RELATIONS = ("PIX", "PXB", "PHB", "NODE", "SYS")
_ALIASES = {"SOC": "SYS"}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_LEGEND = re.compile(r"^\s*(NIC\d+):\s*(\S+)\s*$")


class TopoError(ValueError):
    """Text that is not ``nvidia-smi topo -m``'s matrix; the message says what is missing or which row."""


@dataclass
class Topology:
    gpus: list[str]  # row/column labels, in order: GPU0, GPU1, ...
    nics: dict[
        str, str
    ]  # column label -> RDMA device name (NIC0 -> mlx5_0; the old format's label is the name)
    cells: dict[str, dict[str, str]]  # GPU label -> NIC label -> relation (PIX .. SYS)
    cpu_affinity: dict[str, str] = field(default_factory=dict)  # GPU label -> CPUs, as printed
    numa_affinity: dict[str, str] = field(default_factory=dict)  # GPU label -> NUMA node, as printed


def rank(relation: str) -> int:
    """0 for PIX .. 4 for SYS; anything else (a GPU-GPU NVLink cell) sorts after SYS."""
    relation = _ALIASES.get(relation, relation)
    return RELATIONS.index(relation) if relation in RELATIONS else len(RELATIONS)


def parse(text: str) -> Topology:
    """The GPU-to-NIC part of ``nvidia-smi topo -m``'s output (a machine without NICs has no NIC column)."""
    lines = [_ANSI.sub("", line).rstrip("\n") for line in str(text).splitlines()]
    header_at = next((i for i, line in enumerate(lines) if line.split()[:1] == ["GPU0"]), None)
    if header_at is None:
        raise TopoError("no matrix header (a line of columns starting with GPU0): not nvidia-smi topo -m")
    header = lines[header_at].split()
    labels = header[: header.index("CPU")] if "CPU" in header else header
    has_numa = "NUMA Affinity" in lines[header_at]
    legend = {m.group(1): m.group(2) for m in (_LEGEND.match(line) for line in lines) if m}
    nics = {label: legend.get(label, label) for label in labels if not label.startswith("GPU")}
    gpus = [label for label in labels if label.startswith("GPU")]
    cells: dict[str, dict[str, str]] = {}
    cpu: dict[str, str] = {}
    numa: dict[str, str] = {}
    for line in lines[header_at + 1 :]:
        fields = line.split()
        if not fields or fields[0] not in gpus:
            continue
        row = fields[1:]
        if len(row) < len(labels):
            raise TopoError(
                f"row {fields[0]} has {len(row)} cells for {len(labels)} columns: {line.strip()!r}"
            )
        cells[fields[0]] = {
            label: _ALIASES.get(row[i], row[i]) for i, label in enumerate(labels) if label in nics
        }
        rest = row[len(labels) :]
        if rest:
            cpu[fields[0]] = rest[0]
        if has_numa and len(rest) > 1:
            numa[fields[0]] = rest[1]
    missing = [g for g in gpus if g not in cells]
    if missing:
        raise TopoError(f"no row for {', '.join(missing)} under the header")
    unnamed = [label for label in nics if label.startswith("NIC") and label not in legend]
    if unnamed:
        raise TopoError(f"{', '.join(unnamed)} not named in a 'NIC Legend:' section")
    return Topology(gpus=gpus, nics=nics, cells=cells, cpu_affinity=cpu, numa_affinity=numa)
