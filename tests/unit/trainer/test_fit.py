"""Fitting a recipe to another cluster (fit.py): the processes follow the cluster, the global batch is kept
through gradient accumulation or moved to the nearest even split, a pinned key is kept and a cluster it does
not fit refused with what would run; the trainer names the same fit for a WORLD_SIZE its recipe was not
written for. train.yml's controller calls the same code (tests/unit/plugins/module_utils/train/
test_recipe.py, test_fit_render.py)."""

from __future__ import annotations

import pytest
from rdmaops_trainer import fit as fitting
from rdmaops_trainer.__main__ import main
from rdmaops_trainer.config import RecipeError, available_recipes, load_recipe, validate

TINY = {
    # lab size: (cluster changes, global batch, micro-batch, accumulation)
    1: ({"cluster.nodes": 1}, 12, 2, 6),
    2: ({"cluster.nodes": 2}, 12, 2, 3),
    3: ({}, 12, 2, 2),
    4: ({"cluster.nodes": 4, "train.micro_batch_size": 1}, 12, 1, 3),
    8: ({"cluster.nodes": 8, "train.global_batch_size": 16}, 16, 2, 1),
}


@pytest.mark.parametrize("name", available_recipes())
def test_a_recipe_on_its_own_cluster_changes_nothing(name: str) -> None:
    r = load_recipe(name)
    found = fitting.fit(r, r.cluster.nodes, r.cluster.procs_per_node, fitting.pins(r))
    assert found.sets == {} and found.notes == []
    assert found.layout.world_size == r.cluster.world_size


@pytest.mark.parametrize("nodes", sorted(TINY))
def test_tiny_fits_every_lab_size(nodes: int) -> None:
    sets, batch, micro, accum = TINY[nodes]
    found = fitting.fit(load_recipe("tiny"), nodes)
    assert found.sets == sets
    lay = found.layout
    assert (lay.global_batch_size, lay.micro_batch_size, lay.grad_accum, lay.dp_size) == (
        batch,
        micro,
        accum,
        nodes,
    )
    # the trainer takes the fitted recipe on exactly that world size
    fitted = load_recipe("tiny", [f"{k}={v}" for k, v in sets.items()])
    validate(fitted, world_size=nodes, local_world_size=1)


@pytest.mark.parametrize(
    ("name", "nodes", "procs", "batch", "accum"),
    [
        ("glm", 1, 8, 32, 4),
        ("glm", 2, 4, 32, 4),
        ("glm", 2, 8, 32, 2),
        ("glm", 4, 8, 32, 1),
        ("qwen14b", 1, 8, 48, 6),
        ("qwen14b", 2, 4, 48, 6),
        ("qwen14b", 2, 8, 48, 3),
        ("qwen14b", 4, 8, 64, 2),  # 48 over 32 ranks: 32 and 64 are as near; the larger
    ],
)
def test_gpu_recipes_fit_users_clusters(name: str, nodes: int, procs: int, batch: int, accum: int) -> None:
    found = fitting.fit(load_recipe(name), nodes, procs)
    assert (found.layout.global_batch_size, found.layout.grad_accum) == (batch, accum)
    assert fitting.describe(found.layout) == (
        f"batch: {batch} sequences per step = 1 per micro-batch x {accum} accumulation step(s) x "
        f"{nodes * procs} data-parallel rank(s)"
    )


def test_the_batch_moves_to_the_nearest_even_split_and_says_why() -> None:
    # 12 over 5 ranks: 10 is nearer than 15
    found = fitting.fit(load_recipe("tiny"), 5)
    assert found.sets == {"cluster.nodes": 5, "train.global_batch_size": 10}
    assert found.notes[1] == (
        "train.global_batch_size: 12 -> 10: 12 sequences do not split evenly over 5 data-parallel ranks; 10 "
        "is "
        "the nearest batch that does; pin train.global_batch_size to refuse instead"
    )
    # 12 over 7: 14; the micro-batch is lowered where the moved batch needs it, never raised (a step's memory)
    found = fitting.fit(load_recipe("tiny", ["train.global_batch_size=9", "train.micro_batch_size=3"]), 7)
    assert found.sets == {"cluster.nodes": 7, "train.global_batch_size": 7, "train.micro_batch_size": 1}
    assert (
        "7 is the nearest batch that does, in micro-batches of 1 (train.micro_batch_size 3 -> 1)"
        in found.notes[1]
    )
    # a pinned micro-batch: the batch moves to a multiple of micro-batch x ranks
    found = fitting.fit(
        load_recipe("tiny"), 4, pinned=fitting.pins(load_recipe("tiny"), ["train.micro_batch_size"])
    )
    assert found.sets == {"cluster.nodes": 4, "train.global_batch_size": 16}


def test_pinned_keys_are_kept_and_refused_with_what_would_run() -> None:
    tiny = load_recipe("tiny")
    with pytest.raises(fitting.FitError) as err:
        fitting.fit(tiny, 8, pinned=fitting.pins(tiny, ["train.global_batch_size"], "--set"))
    assert str(err.value) == (
        "train.global_batch_size: 12, pinned (--set), but 12 sequences do not split evenly over 8 "
        "data-parallel ranks"
    )
    assert err.value.fits == [{"train.global_batch_size": 16}, {"train.global_batch_size": 8}]
    # in the recipe itself: cluster.pinned
    pinned = load_recipe("tiny", ["cluster.pinned=[cluster.nodes]"])
    with pytest.raises(fitting.FitError) as err:
        fitting.fit(pinned, 4, pinned=fitting.pins(pinned))
    assert str(err.value) == (
        "cluster.nodes: 3, pinned (cluster.pinned), but the cluster has 4 node(s): run it on 3, or take "
        "nodes out of cluster.pinned"
    )
    assert err.value.fits == []
    with pytest.raises(
        RecipeError, match=r"cluster.pinned\[0\]: 'cluster.steps' is not one of cluster.nodes"
    ):
        load_recipe("tiny", ["cluster.pinned=[cluster.steps]"])


def test_a_pipeline_needs_whole_pipelines() -> None:
    pipe = load_recipe("gpt2-pipeline")
    with pytest.raises(fitting.FitError) as err:
        fitting.fit(pipe, 1, 1)
    assert str(err.value).startswith("strategy.pipeline.stages: 2 stages need at least 2 ranks")
    assert err.value.fits == []  # no stage count of at least 2 fits one rank
    with pytest.raises(fitting.FitError) as err:
        fitting.fit(pipe, 5, 1)
    assert err.value.fits == [{"strategy.pipeline.stages": 5}]
    found = fitting.fit(pipe, 2, 3)  # 3 replicas of 2 stages, 8 schedule micro-batches each: 64 -> 72
    assert found.sets == {"cluster.nodes": 2, "cluster.procs_per_node": 3, "train.global_batch_size": 72}
    assert fitting.describe(found.layout).startswith("batch: 72 sequences per step = 3 pipeline replica(s)")


def test_the_trainer_names_the_fit_for_a_world_size_it_was_not_written_for(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(RecipeError) as err:
        validate(load_recipe("glm"), world_size=8, local_world_size=8)
    assert str(err.value) == (
        "WORLD_SIZE 8 does not match cluster.nodes * cluster.procs_per_node = 2 * 8 = 16; for 1 node(s) x 8: "
        "--set cluster.nodes=1 (batch: 32 sequences per step = 1 per micro-batch x 4 accumulation step(s) x "
        "8 "
        "data-parallel rank(s))"
    )
    # under torchrun: 4 ranks, 1 per node (the lab of 4 nodes), as train.yml would fit it
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "1")
    monkeypatch.setenv("RANK", "0")
    assert main(["--recipe", "tiny"]) == 2
    assert (
        "for 4 node(s) x 1: --set cluster.nodes=4 --set train.micro_batch_size=1" in capsys.readouterr().err
    )
