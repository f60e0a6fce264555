"""The batch layout of a run: how a step's global batch is split over the ranks.

``BatchLayout`` is the one owner of the numbers that follow from the recipe and the world size: the
data-parallel size, the pipeline stages, the micro-batch size, the micro-batches per optimizer step (gradient
accumulation, or the pipeline schedule's micro-batches), and the sequences and tokens per step. It is built
once (``BatchLayout.from_recipe``) and checked as it is built, with messages that name the recipe keys; the
config checks, the strategies, the training loop, the data order and the playbooks' launch plan all read it
instead of dividing the batch themselves. The model is torchtitan's ``ParallelDims``: plain numbers in, the
invariants checked once, the derived sizes as properties.

Plain Python, no torch: the playbooks import it on the controller through ``rdmaops_trainer.config``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import RecipeError

if TYPE_CHECKING:
    from .config import Recipe

# how errors name a world size taken from the recipe (the launcher's WORLD_SIZE is named "WORLD_SIZE")
CLUSTER_SOURCE = "cluster.nodes * cluster.procs_per_node"


def _world(world_size: int, source: str | None, sep: str) -> str:
    """The world size as an error names it: with where it came from, or (None) as a bare replica count."""
    return f"{world_size} data-parallel ranks" if source is None else f"{source}{sep}{world_size}"


@dataclass(frozen=True)
class BatchLayout:
    """How each optimizer step's ``global_batch_size`` sequences are split over ``world_size`` ranks.

    Ranks form a (data-parallel x pipeline stage) grid, rank = dp_index * pipeline_stages + stage; without a
    pipeline there is one stage and every rank is a data-parallel replica. Each replica takes a contiguous
    slice of the step's batch and runs it as ``grad_accum`` micro-batches of ``micro_batch_size`` sequences.
    """

    world_size: int
    # 1: no pipeline parallelism
    pipeline_stages: int
    # sequences per optimizer step over all replicas (train.global_batch_size)
    global_batch_size: int
    # sequences per micro-batch on each rank (pipeline: the replica's batch / the schedule's micro-batches)
    micro_batch_size: int
    # micro-batches per optimizer step on each replica: gradient accumulation, or the pipeline schedule's
    # micro-batches (strategy.pipeline.microbatches)
    grad_accum: int
    # tokens per sequence (data.seq_len)
    seq_len: int

    def __post_init__(self) -> None:
        # the constructors below check a recipe with messages naming its keys; this guards direct use
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"BatchLayout.{f.name}: {value!r} is not a positive integer")
        if self.world_size % self.pipeline_stages:
            raise ValueError(
                f"BatchLayout: {self.pipeline_stages} pipeline stages do not divide {self.world_size} ranks"
            )
        if self.micro_batch_size * self.grad_accum * self.dp_size != self.global_batch_size:
            raise ValueError(
                f"BatchLayout: {self.micro_batch_size} sequences x {self.grad_accum} micro-batches x "
                f"{self.dp_size} replicas is not the global batch of {self.global_batch_size}"
            )

    # ------------------------------------------------------------------ construction
    @classmethod
    def build(
        cls,
        *,
        world_size: int,
        global_batch_size: int,
        seq_len: int,
        micro_batch_size: int | None = None,
        pipeline_stages: int | None = None,
        pipeline_microbatches: int | None = None,
        source: str | None = "WORLD_SIZE",
    ) -> BatchLayout:
        """Split ``global_batch_size`` over ``world_size`` ranks; RecipeError (naming the recipe keys) if it
        does not divide evenly.

        Without a pipeline, give ``micro_batch_size``; gradient accumulation is what remains. With one, give
        ``pipeline_stages`` and ``pipeline_microbatches``: the schedule splits each replica's batch into that
        many micro-batches (the recipe's micro_batch_size is not used). ``source`` names where
        ``world_size`` came from in the messages (``WORLD_SIZE``, ``CLUSTER_SOURCE``); None calls it a number
        of data-parallel ranks.
        """
        pipelined = pipeline_stages is not None
        if (micro_batch_size is None) != pipelined or (pipeline_microbatches is None) == pipelined:
            raise ValueError("BatchLayout.build: micro_batch_size, or pipeline_stages and _microbatches")
        sizes = [world_size, global_batch_size, seq_len, micro_batch_size]
        sizes += [pipeline_stages, pipeline_microbatches]
        if any(n is not None and n < 1 for n in sizes):
            raise ValueError(f"BatchLayout.build: sizes must be positive, got {sizes}")
        world, batch = world_size, global_batch_size

        if micro_batch_size is not None:
            if batch % (micro_batch_size * world):
                raise RecipeError(
                    f"train.global_batch_size: {batch} is not a multiple of train.micro_batch_size "
                    f"{micro_batch_size} * {_world(world, source, ' ')}"
                )
            return cls(world, 1, batch, micro_batch_size, batch // (micro_batch_size * world), seq_len)

        assert pipeline_stages is not None and pipeline_microbatches is not None
        if world % pipeline_stages:
            raise RecipeError(
                f"strategy.pipeline.stages: {pipeline_stages} does not divide {_world(world, source, ' = ')}"
            )
        dp = world // pipeline_stages
        if batch % dp:
            raise RecipeError(
                f"train.global_batch_size: {batch} is not divisible by {dp} data-parallel "
                f"pipeline replicas ({_world(world, source, ' = ')})"
            )
        per_replica = batch // dp
        if per_replica % pipeline_microbatches:
            raise RecipeError(
                f"strategy.pipeline.microbatches: {pipeline_microbatches} does not divide the "
                f"{per_replica} sequences per replica"
            )
        micro = per_replica // pipeline_microbatches
        return cls(world, pipeline_stages, batch, micro, pipeline_microbatches, seq_len)

    @classmethod
    def from_recipe(
        cls, recipe: Recipe, world_size: int | None = None, source: str | None = "WORLD_SIZE"
    ) -> BatchLayout:
        """The layout of ``recipe`` on ``world_size`` processes; by default on the recipe's own cluster
        (``cluster.nodes * cluster.procs_per_node``, named so in errors)."""
        if world_size is None:
            world_size, source = recipe.cluster.world_size, CLUSTER_SOURCE
        t, s = recipe.train, recipe.strategy
        if s.name == "pipeline":
            return cls.build(
                world_size=world_size,
                global_batch_size=t.global_batch_size,
                seq_len=recipe.data.seq_len,
                pipeline_stages=s.pipeline.stages,
                pipeline_microbatches=s.pipeline.microbatches,
                source=source,
            )
        return cls.build(
            world_size=world_size,
            global_batch_size=t.global_batch_size,
            seq_len=recipe.data.seq_len,
            micro_batch_size=t.micro_batch_size,
            source=source,
        )

    # ------------------------------------------------------------------ derived sizes
    @property
    def dp_size(self) -> int:
        """Data-parallel replicas (each one pipeline of ``pipeline_stages`` ranks)."""
        return self.world_size // self.pipeline_stages

    @property
    def pipelined(self) -> bool:
        return self.pipeline_stages > 1

    @property
    def mesh_shape(self) -> tuple[int, int]:
        """(data-parallel, stage): the device mesh of a pipelined run, rank = dp_index * stages + stage."""
        return (self.dp_size, self.pipeline_stages)

    @property
    def sequences_per_rank(self) -> int:
        """Sequences of each step that one data-parallel replica trains on."""
        return self.global_batch_size // self.dp_size

    @property
    def tokens_per_step(self) -> int:
        """Tokens per optimizer step over all replicas."""
        return self.global_batch_size * self.seq_len

    def pipeline_ranks(self, dp_index: int) -> range:
        """Global ranks of replica ``dp_index``'s stages, first stage first."""
        self._check_dp_rank(dp_index)
        return range(dp_index * self.pipeline_stages, (dp_index + 1) * self.pipeline_stages)

    def micro_batch_slices(self, dp_rank: int) -> list[slice]:
        """Positions, within a step's global batch, of replica ``dp_rank``'s micro-batches: a contiguous slice
        of ``sequences_per_rank`` cut into ``grad_accum`` pieces of ``micro_batch_size``."""
        self._check_dp_rank(dp_rank)
        start = dp_rank * self.sequences_per_rank
        m = self.micro_batch_size
        return [slice(start + i * m, start + (i + 1) * m) for i in range(self.grad_accum)]

    def to_dict(self) -> dict[str, int | bool]:
        """The fields and the derived sizes (the ``layout`` a playbook's launch plan returns)."""
        out: dict[str, int | bool] = dict(dataclasses.asdict(self))
        out.update(
            dp_size=self.dp_size,
            pipelined=self.pipelined,
            sequences_per_rank=self.sequences_per_rank,
            tokens_per_step=self.tokens_per_step,
        )
        return out

    def _check_dp_rank(self, dp_rank: int) -> None:
        if not 0 <= dp_rank < self.dp_size:
            raise ValueError(f"data-parallel rank {dp_rank} is outside the {self.dp_size} replicas")
