"""Fitting a recipe to the cluster it runs on: the one rule for train.yml and the trainer.

A recipe names the cluster it was written for (``cluster.nodes`` x ``cluster.procs_per_node``) and a global
batch. ``fit`` moves it to another cluster and keeps what the recipe means:

- ``cluster.nodes`` and ``cluster.procs_per_node`` become the cluster's (train.yml: the play's hosts and, on
  GPU nodes, their GPUs);
- the global batch (``train.global_batch_size`` sequences per optimizer step) is kept: gradient accumulation
  takes up the new number of data-parallel ranks, with the micro-batch lowered where the split needs it
  (never raised: it bounds a step's memory). Where no micro-batch splits the batch evenly over the ranks, the
  batch moves to the nearest one that does (of two as near, the larger) and the notes say so and why;
- a pipeline keeps its stages and its schedule's micro-batches; the ranks must form whole pipelines, and the
  batch moves to a multiple of (replicas x micro-batches) the same way.

A key in ``cluster.pinned``, or one the operator set by hand (train.yml's ``recipe_overrides``, the trainer's
``--set``), is kept as written: a cluster it does not fit is refused (``FitError``) with settings that would
run, as dotted keys, nearest first.

train.yml's controller fits the recipe before it writes the file every node runs
(``module_utils/train/recipe.py``); the trainer refuses a launch whose ``WORLD_SIZE`` is not the recipe's
world size and names the same fit (``world_mismatch``). Plain Python, no torch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import RecipeError
from .layout import CLUSTER_SOURCE, BatchLayout

if TYPE_CHECKING:
    from .config import Recipe

NODES, PROCS = "cluster.nodes", "cluster.procs_per_node"
BATCH, MICRO = "train.global_batch_size", "train.micro_batch_size"
FIT_KEYS = (NODES, PROCS, BATCH, MICRO)
STAGES, MICROBATCHES = "strategy.pipeline.stages", "strategy.pipeline.microbatches"
PINNED = "cluster.pinned"


class FitError(RecipeError):
    """The recipe does not fit the cluster. ``fits``: settings that would (dotted key -> value), best first;
    empty where only another cluster or dropping a pin would."""

    def __init__(self, message: str, fits: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.fits = list(fits or [])


@dataclass(frozen=True)
class Fit:
    """The recipe on the cluster: the keys that changed (``sets``: dotted key -> new value, applied as
    overrides), the batch split that results, and what moved and why (``notes``)."""

    sets: dict[str, Any]
    layout: BatchLayout
    notes: list[str]


def pins(recipe: Recipe, given: Iterable[str] = (), by: str = "set by hand") -> dict[str, str]:
    """The keys ``fit`` must keep, each with who pinned it: ``cluster.pinned``, or BY for the dotted keys
    the operator gave (GIVEN; other keys than the four it may change are ignored)."""
    out = {key: PINNED for key in recipe.cluster.pinned}
    out.update({key: by for key in given if key in FIT_KEYS})
    return out


def _nearest(value: int, step: int) -> tuple[int, int | None]:
    """The multiple of STEP nearest VALUE (at least STEP), and the other one as near when there is a tie."""
    lower = value // step * step
    upper = lower + step
    if lower == 0 or value - lower > upper - value:
        return upper, None
    if value - lower < upper - value:
        return lower, None
    return upper, lower


def _largest_micro(batch: int, world: int, micro: int, pinned: bool) -> int | None:
    """The largest micro-batch up to MICRO (only MICRO when pinned) that splits BATCH over WORLD ranks."""
    options = [micro] if pinned else range(micro, 0, -1)
    return next((m for m in options if batch % (m * world) == 0), None)


def fit(
    recipe: Recipe, nodes: int, procs_per_node: int | None = None, pinned: Mapping[str, str] | None = None
) -> Fit:
    """RECIPE on NODES nodes of PROCS_PER_NODE processes (None: the recipe's own), keeping the keys in
    PINNED (key -> who pinned it, as ``pins`` returns). FitError names what does not fit and what would."""
    pinned = dict(pinned or {})
    c, t = recipe.cluster, recipe.train
    procs = c.procs_per_node if procs_per_node is None else procs_per_node
    if nodes < 1 or procs < 1:
        raise ValueError(f"fit: {nodes} node(s) x {procs} process(es)")
    for key, want, have, unit in ((NODES, c.nodes, nodes, "node(s)"), (PROCS, c.procs_per_node, procs, "")):
        if have != want and key in pinned:
            who = pinned[key]
            fix = f"run it on {want}" if who == PINNED else f"{key}={have} runs it there"
            raise FitError(
                f"{key}: {want}, pinned ({who}), but the cluster has {have} {unit or 'per node'}: {fix}"
                + (f", or take {key.split('.')[1]} out of {PINNED}" if who == PINNED else ""),
                [] if who == PINNED else [{key: have}],
            )
    world = nodes * procs
    sets: dict[str, Any] = {}
    notes: list[str] = []
    if (nodes, procs) != (c.nodes, c.procs_per_node):
        sets.update(
            {k: v for k, v, old in ((NODES, nodes, c.nodes), (PROCS, procs, c.procs_per_node)) if v != old}
        )
        notes.append(
            f"cluster: {nodes} node(s) x {procs} = {world} ranks (the recipe was written for {c.nodes} x "
            f"{c.procs_per_node})"
        )
    if recipe.strategy.name == "pipeline":
        batch, layout = _pipeline(recipe, nodes, procs, pinned, notes)
    else:
        batch, micro = _batch(recipe, world, pinned, notes)
        if micro != t.micro_batch_size:
            sets[MICRO] = micro
        layout = BatchLayout.build(
            world_size=world, global_batch_size=batch, seq_len=recipe.data.seq_len, micro_batch_size=micro,
            source=CLUSTER_SOURCE,
        )  # fmt: skip
    if batch != t.global_batch_size:
        sets[BATCH] = batch
    return Fit(sets, layout, notes)


def _batch(recipe: Recipe, world: int, pinned: Mapping[str, str], notes: list[str]) -> tuple[int, int]:
    """(global batch, micro-batch) on WORLD data-parallel ranks."""
    batch, micro = recipe.train.global_batch_size, recipe.train.micro_batch_size
    micro_pinned = MICRO in pinned
    found = _largest_micro(batch, world, micro, micro_pinned)
    if found is not None:
        if found != micro:
            notes.append(
                f"{MICRO}: {micro} -> {found}: {batch} sequences per step do not split into micro-batches of "
                f"{micro} over {world} ranks"
            )
        return batch, found
    step = world * (micro if micro_pinned else 1)
    moved, tie = _nearest(batch, step)
    why = f"{batch} sequences do not split evenly over {world} data-parallel ranks" + (
        f" in micro-batches of {micro} ({MICRO} pinned, {pinned[MICRO]})" if micro_pinned else ""
    )
    if BATCH in pinned:
        options = [moved] if tie is None else [moved, tie]
        raise FitError(
            f"{BATCH}: {batch}, pinned ({pinned[BATCH]}), but {why}",
            [{BATCH: b} for b in options],
        )
    found = _largest_micro(moved, world, micro, micro_pinned)
    assert found is not None  # moved is a multiple of world (of world * micro when that is pinned)
    notes.append(
        f"{BATCH}: {batch} -> {moved}: {why}; {moved} is the nearest batch that does"
        + (f" ({tie} is as near; the larger keeps every step's sequences)" if tie is not None else "")
        + (f", in micro-batches of {found} ({MICRO} {micro} -> {found})" if found != micro else "")
        + f"; pin {BATCH} to refuse instead"
    )
    return moved, found


def _pipeline(
    recipe: Recipe, nodes: int, procs: int, pinned: Mapping[str, str], notes: list[str]
) -> tuple[int, BatchLayout]:
    """(global batch, layout) of a pipeline on NODES x PROCS ranks: whole pipelines, the schedule kept."""
    from .config import GPTConfig  # config imports this module's callers; the model shape only here

    p, batch = recipe.strategy.pipeline, recipe.train.global_batch_size
    world = nodes * procs
    if world % p.stages:
        layers = GPTConfig(**recipe.model.config).n_layer
        options = sorted(
            (s for s in range(2, min(world, layers) + 1) if world % s == 0),
            key=lambda s: (abs(s - p.stages), s),
        )
        need = f"at least {p.stages} ranks" if world < p.stages else f"a multiple of {p.stages} ranks"
        raise FitError(
            f"{STAGES}: {p.stages} stages need {need} (each data-parallel replica is a whole pipeline), and "
            f"the cluster has {world} ({nodes} node(s) x {procs})",
            [{STAGES: s, **({MICROBATCHES: s} if p.microbatches < s else {})} for s in options],
        )
    dp = world // p.stages
    step = dp * p.microbatches
    moved = batch
    if batch % step:
        moved, tie = _nearest(batch, step)
        why = (
            f"{batch} sequences do not split into {p.microbatches} micro-batches ({MICROBATCHES}) on each "
            f"of {dp} pipeline replicas"
        )
        if BATCH in pinned:
            raise FitError(
                f"{BATCH}: {batch}, pinned ({pinned[BATCH]}), but {why}",
                [{BATCH: b} for b in ([moved] if tie is None else [moved, tie])],
            )
        notes.append(
            f"{BATCH}: {batch} -> {moved}: {why}; {moved} is the nearest batch that does"
            + (f" ({tie} is as near; the larger keeps every step's sequences)" if tie is not None else "")
            + f"; pin {BATCH} to refuse instead"
        )
    layout = BatchLayout.build(
        world_size=world, global_batch_size=moved, seq_len=recipe.data.seq_len, pipeline_stages=p.stages,
        pipeline_microbatches=p.microbatches, source=CLUSTER_SOURCE,
    )  # fmt: skip
    return moved, layout


def describe(layout: BatchLayout) -> str:
    """How a step's batch is split, in words (train.yml's preflight notes; the trainer's refusals)."""
    if layout.pipelined:
        return (
            f"batch: {layout.global_batch_size} sequences per step = {layout.dp_size} pipeline replica(s) of "
            f"{layout.pipeline_stages} stages x {layout.grad_accum} schedule micro-batches of "
            f"{layout.micro_batch_size}"
        )
    return (
        f"batch: {layout.global_batch_size} sequences per step = {layout.micro_batch_size} per micro-batch x "
        f"{layout.grad_accum} accumulation step(s) x {layout.dp_size} data-parallel rank(s)"
    )


def set_args(sets: Mapping[str, Any]) -> str:
    """Dotted keys as the trainer's ``--set`` arguments."""
    import json

    return " ".join(f"--set {k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in sets.items())


def world_mismatch(recipe: Recipe, world_size: int, local_world_size: int | None = None) -> str:
    """The trainer's refusal of a launch on WORLD_SIZE ranks that the recipe was not written for, with the
    fit that would run there (LOCAL_WORLD_SIZE ranks per node, as torchrun says; else the recipe's)."""
    c = recipe.cluster
    text = (
        f"WORLD_SIZE {world_size} does not match {CLUSTER_SOURCE} = {c.nodes} * {c.procs_per_node} = "
        f"{c.world_size}"
    )
    procs = local_world_size or c.procs_per_node
    if world_size % procs:
        procs = 1
    try:
        found = fit(recipe, world_size // procs, procs, pins(recipe))
    except FitError as exc:
        return f"{text}; on {world_size // procs} node(s) x {procs}: {exc}"
    where = f"{world_size // procs} node(s) x {procs}"
    return f"{text}; for {where}: {set_args(found.sets)} ({describe(found.layout)})"
