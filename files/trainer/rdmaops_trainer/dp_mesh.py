"""FSDP2's data-parallel mesh: every parameter sharded over all ranks, or hybrid (HSDP): sharded over the
ranks of a node and replicated across nodes.

Under HSDP a step's gradients are reduce-scattered inside each node and the shards all-reduced across nodes
(one replica per node holds each shard), and parameters are all-gathered inside a node: only the gradient
all-reduce crosses nodes, with 1/procs_per_node of the bytes that plain FSDP2's collectives put on every
link. It pays where the nodes are joined by a link much slower than their GPUs' own (TCP, slow RDMA); it
costs memory (a node holds a whole copy of the model state, not 1/nodes of one).

``strategy.fsdp2.hsdp`` chooses: ``true`` or ``false`` forces it; ``auto`` (the default) follows the launcher,
which knows the fabric: ``RDMAOPS_HSDP=1`` in the environment turns HSDP on, ``0`` or unset leaves plain
FSDP2 (docs/trainer.md has the contract). One node is always plain FSDP2.

Under HSDP the gradients are reduced in bfloat16 unless the recipe says otherwise
(``strategy.fsdp2.reduce_dtype`` auto, ``reduce_dtype`` below): the all-reduce across nodes is what the slow
link carries, and half its bytes is what lets it hide behind the last micro-batch's backward (on 4 GPUs run
as two nodes over TCP, docs/benchmarks.md: 0.79x of one node with float32, 0.92-0.98x with bfloat16). It is
the precision DeepSpeed communicates bf16 gradients in by default; float32 in the recipe keeps exact sums.

torchrun numbers ranks node by node (node n holds ranks n * procs_per_node ...), so a node's ranks are one
row of the mesh. No torch here: the CLI checks the variable before any process group exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import RecipeError

if TYPE_CHECKING:
    from .config import Recipe

HSDP_ENV = "RDMAOPS_HSDP"
DIMS = ("replicate", "shard")


@dataclass(frozen=True)
class DataParallelMesh:
    replicate: int  # replica groups: the nodes under HSDP, 1 for plain FSDP2
    shard: int  # ranks each parameter is sharded over
    why: str  # what decided it (the start record says so)

    @property
    def hybrid(self) -> bool:
        return self.replicate > 1

    @property
    def ranks(self) -> list[list[int]]:
        """The mesh as ranks, ``ranks[r][s]``: a row shards together (one node), a column replicates."""
        return [[r * self.shard + s for s in range(self.shard)] for r in range(self.replicate)]

    def shard_group(self, rank: int) -> list[int]:
        """The ranks that hold the other shards of ``rank``'s parameters."""
        return self.ranks[rank // self.shard]

    def replicate_group(self, rank: int) -> list[int]:
        """The ranks that hold the same shard as ``rank`` (one per node): its gradient all-reduce."""
        return [row[rank % self.shard] for row in self.ranks]


def launcher_says(environ: Mapping[str, str]) -> bool | None:
    """``RDMAOPS_HSDP``: True (1), False (0), or None when the launcher did not set it."""
    raw = environ.get(HSDP_ENV, "")
    if raw == "":
        return None
    if raw not in ("0", "1"):
        raise RecipeError(
            f"environment variable {HSDP_ENV}={raw!r}: use 1 (HSDP: replicate across nodes, shard inside a "
            "node) or 0 (FSDP2 over every rank); strategy.fsdp2.hsdp: auto follows it"
        )
    return raw == "1"


def plan(recipe: Recipe, world_size: int, environ: Mapping[str, str]) -> DataParallelMesh:
    """The mesh FSDP2 builds for ``recipe`` on ``world_size`` ranks, given the launcher's environment (another
    strategy gets the plain one). Under HSDP, where the environment has torchrun's ``RANK`` and
    ``GROUP_RANK`` (the node), a rank the mesh would put with another node's ranks is refused."""
    said = launcher_says(environ)  # checked whatever the recipe says: a bad value is named, not ignored
    choice, nodes = recipe.strategy.fsdp2.hsdp, recipe.cluster.nodes
    if recipe.strategy.name != "fsdp2":
        return DataParallelMesh(1, world_size, f"strategy.name {recipe.strategy.name}")
    if choice != "auto":
        hybrid, why = bool(choice), f"strategy.fsdp2.hsdp {str(choice).lower()}"
    else:
        hybrid = bool(said) and nodes > 1
        why = f"strategy.fsdp2.hsdp auto, {HSDP_ENV}" + (" unset" if said is None else f"={int(said)}")
        why += ", one node" if said and nodes == 1 else ""
    if not hybrid:
        return DataParallelMesh(1, world_size, why)
    mesh = DataParallelMesh(nodes, world_size // nodes, why)
    if environ.get("RANK", "") and environ.get("GROUP_RANK", ""):
        rank, node = int(environ["RANK"]), int(environ["GROUP_RANK"])
        if rank // mesh.shard != node:
            raise RecipeError(
                f"strategy.fsdp2.hsdp: rank {rank} runs on node {node} (GROUP_RANK) but the mesh puts it "
                f"with the ranks of node {rank // mesh.shard}: every node must run cluster.procs_per_node = "
                f"{mesh.shard} ranks, numbered node by node (as torchrun does)"
            )
    return mesh


def reduce_dtype(recipe: Recipe, mesh: DataParallelMesh, fp32_compute: bool) -> tuple[str, str]:
    """The gradients' reduction dtype for FSDP2 on ``mesh`` and what decided it (the start record says)."""
    chosen = recipe.strategy.fsdp2.reduce_dtype
    if fp32_compute:  # gradients are fp32 and FSDP2 casts nothing (the CPU runs)
        return "float32", "fp32 compute"
    if chosen != "auto":
        return chosen, f"strategy.fsdp2.reduce_dtype {chosen}"
    if mesh.hybrid:
        return "bfloat16", "strategy.fsdp2.reduce_dtype auto, HSDP: the all-reduce crosses nodes"
    return "float32", "strategy.fsdp2.reduce_dtype auto, no HSDP"
