"""The batch layout: one object splits a step's global batch over the ranks, for every recipe and world size;
errors name the recipe keys and where the world size came from."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import TRAINER_DIR, python_code, trainer_env
from rdmaops_trainer.config import RecipeError, available_recipes, load_recipe
from rdmaops_trainer.layout import CLUSTER_SOURCE, BatchLayout


@pytest.mark.parametrize("name", available_recipes())
def test_every_recipe_splits_its_batch_exactly_over_its_cluster(name: str) -> None:
    r = load_recipe(name)
    lay = BatchLayout.from_recipe(r)
    assert lay.world_size == r.cluster.world_size
    assert lay.dp_size * lay.pipeline_stages == lay.world_size
    assert lay.micro_batch_size * lay.grad_accum * lay.dp_size == r.train.global_batch_size
    assert lay.sequences_per_rank * lay.dp_size == lay.global_batch_size
    assert lay.tokens_per_step == r.train.global_batch_size * r.data.seq_len
    assert lay.pipelined == (r.strategy.name == "pipeline")
    # the launcher's WORLD_SIZE equal to the recipe's cluster gives the same layout
    assert BatchLayout.from_recipe(r, r.cluster.world_size) == lay


def test_shipped_layouts() -> None:
    tiny = BatchLayout.from_recipe(load_recipe("tiny"))
    assert (tiny.dp_size, tiny.micro_batch_size, tiny.grad_accum) == (3, 2, 2)
    q = BatchLayout.from_recipe(load_recipe("qwen14b"))  # 48 sequences over 24 ranks, 1 per micro-batch
    assert (q.dp_size, q.micro_batch_size, q.grad_accum) == (24, 1, 2)
    pp = BatchLayout.from_recipe(load_recipe("gpt2-pipeline"))
    assert (pp.pipeline_stages, pp.dp_size, pp.mesh_shape) == (2, 1, (1, 2))
    # the schedule's 8 micro-batches of the replica's 64 sequences
    assert (pp.micro_batch_size, pp.grad_accum, pp.sequences_per_rank) == (8, 8, 64)
    assert pp.to_dict() == {
        "world_size": 2,
        "pipeline_stages": 2,
        "global_batch_size": 64,
        "micro_batch_size": 8,
        "grad_accum": 8,
        "seq_len": 1024,
        "dp_size": 1,
        "pipelined": True,
        "sequences_per_rank": 64,
        "tokens_per_step": 65536,
    }


def test_the_global_batch_stays_when_the_world_size_changes() -> None:
    # a resume on another world size: gradient accumulation adapts, the step's sequences do not
    r = load_recipe("tiny")
    two, three = BatchLayout.from_recipe(r, 2), BatchLayout.from_recipe(r, 3)
    assert (two.grad_accum, three.grad_accum) == (3, 2)
    assert two.global_batch_size == three.global_batch_size == 12
    # a pipeline keeps its stages and widens the data-parallel dimension
    pp = BatchLayout.from_recipe(load_recipe("gpt2-pipeline"), 4)
    assert (pp.mesh_shape, pp.sequences_per_rank, pp.micro_batch_size, pp.grad_accum) == ((2, 2), 32, 4, 8)
    assert [list(pp.pipeline_ranks(d)) for d in range(2)] == [[0, 1], [2, 3]]


@pytest.mark.parametrize(("dp", "micro"), [(1, 12), (1, 2), (2, 3), (3, 1), (4, 3), (6, 2), (12, 1)], ids=str)
def test_micro_batch_slices_cover_the_step_once_in_order(dp: int, micro: int) -> None:
    lay = BatchLayout.build(world_size=dp, global_batch_size=12, seq_len=8, micro_batch_size=micro)
    slices = [s for r in range(dp) for s in lay.micro_batch_slices(r)]
    assert all(s.stop - s.start == micro for s in slices)
    assert [p for s in slices for p in range(s.start, s.stop)] == list(range(12))
    # replica r's share is the r-th contiguous slice of the step
    assert lay.micro_batch_slices(dp - 1)[0].start == (dp - 1) * lay.sequences_per_rank
    with pytest.raises(ValueError, match=f"data-parallel rank {dp} is outside the {dp} replicas"):
        lay.micro_batch_slices(dp)


@pytest.mark.parametrize(
    ("recipe", "microbatches", "world", "source", "message"),
    [
        (
            "tiny",
            None,
            5,
            "WORLD_SIZE",
            "train.global_batch_size: 12 is not a multiple of train.micro_batch_size 2 * WORLD_SIZE 5",
        ),
        (
            "tiny",
            None,
            5,
            None,
            "train.global_batch_size: 12 is not a multiple of train.micro_batch_size 2 "
            "* 5 data-parallel ranks",
        ),
        (
            "gpt2-pipeline",
            None,
            3,
            "WORLD_SIZE",
            "strategy.pipeline.stages: 2 does not divide WORLD_SIZE = 3",
        ),
        (
            "gpt2-pipeline",
            None,
            10,
            "WORLD_SIZE",
            "train.global_batch_size: 64 is not divisible by 5 data-parallel pipeline replicas "
            "(WORLD_SIZE = 10)",
        ),
        (
            "gpt2-pipeline",
            3,
            2,
            "WORLD_SIZE",
            "strategy.pipeline.microbatches: 3 does not divide the 64 sequences per replica",
        ),
    ],
)
def test_uneven_splits_are_named(
    recipe: str, microbatches: int | None, world: int, source: str | None, message: str
) -> None:
    r = load_recipe(recipe)
    if microbatches is not None:
        # past config.validate, which would refuse this recipe with the same message
        r.strategy.pipeline.microbatches = microbatches
    with pytest.raises(RecipeError) as err:
        BatchLayout.from_recipe(r, world, source=source)
    assert str(err.value) == message


def test_the_recipe_check_names_the_cluster_keys() -> None:
    # config.validate builds the layout on the recipe's own cluster
    with pytest.raises(RecipeError) as err:
        load_recipe("tiny", ["cluster.procs_per_node=5"])
    assert str(err.value) == (
        f"train.global_batch_size: 12 is not a multiple of train.micro_batch_size 2 * {CLUSTER_SOURCE} 15"
    )
    with pytest.raises(RecipeError) as err:
        load_recipe("gpt2-pipeline", ["cluster.procs_per_node=3"])
    assert str(err.value) == f"strategy.pipeline.stages: 2 does not divide {CLUSTER_SOURCE} = 3"


def test_a_layout_is_frozen_and_consistent() -> None:
    lay = BatchLayout.build(world_size=2, global_batch_size=8, seq_len=4, micro_batch_size=2)
    assert lay == BatchLayout(world_size=2, pipeline_stages=1, global_batch_size=8, micro_batch_size=2,
                              grad_accum=2, seq_len=4)  # fmt: skip
    with pytest.raises(dataclasses.FrozenInstanceError):
        lay.grad_accum = 3  # type: ignore[misc]
    with pytest.raises(ValueError, match="is not the global batch of 8"):
        dataclasses.replace(lay, grad_accum=3)
    with pytest.raises(ValueError, match="2 pipeline stages do not divide 3 ranks"):
        dataclasses.replace(lay, world_size=3, pipeline_stages=2)
    with pytest.raises(ValueError, match=r"BatchLayout\.seq_len: 0 is not a positive integer"):
        dataclasses.replace(lay, seq_len=0)
    with pytest.raises(ValueError, match="micro_batch_size, or pipeline_stages"):
        BatchLayout.build(world_size=2, global_batch_size=8, seq_len=4)
    with pytest.raises(ValueError, match="micro_batch_size, or pipeline_stages"):
        BatchLayout.build(world_size=2, global_batch_size=8, seq_len=4, micro_batch_size=2, pipeline_stages=2)
    with pytest.raises(ValueError, match="sizes must be positive"):
        BatchLayout.build(world_size=2, global_batch_size=8, seq_len=4, micro_batch_size=0)


def test_layout_and_config_import_no_torch() -> None:
    # the playbooks load them on the controller, which need not have torch
    code = (
        "import sys, rdmaops_trainer.config, rdmaops_trainer.layout\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'numpy', 'transformers')))\n"
    )
    out = python_code(code)
    assert out.strip() == "[]", out
    assert str(TRAINER_DIR) in trainer_env()["PYTHONPATH"]
