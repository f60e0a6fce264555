"""FSDP2's data-parallel mesh (dp_mesh.py): which ranks shard together and which replicate, what decides HSDP
(the recipe, or the launcher's RDMAOPS_HSDP under auto), and the refusals. The runs that train on it are in
test_distributed.py."""

from __future__ import annotations

import pytest
from rdmaops_trainer import dp_mesh
from rdmaops_trainer.__main__ import main
from rdmaops_trainer.config import Recipe, RecipeError, load_recipe


def recipe(nodes: int, procs: int, *sets: str) -> Recipe:
    cluster = [f"cluster.nodes={nodes}", f"cluster.procs_per_node={procs}", "train.micro_batch_size=1"]
    return load_recipe("tiny", [*cluster, *sets])


def test_two_nodes_of_two_shard_inside_a_node_and_replicate_across() -> None:
    mesh = dp_mesh.plan(recipe(2, 2), 4, {"RDMAOPS_HSDP": "1"})
    assert (mesh.hybrid, mesh.replicate, mesh.shard) == (True, 2, 2)
    assert mesh.ranks == [[0, 1], [2, 3]]
    assert [mesh.shard_group(r) for r in range(4)] == [[0, 1], [0, 1], [2, 3], [2, 3]]
    assert [mesh.replicate_group(r) for r in range(4)] == [[0, 2], [1, 3], [0, 2], [1, 3]]
    assert mesh.why == "strategy.fsdp2.hsdp auto, RDMAOPS_HSDP=1"
    three = dp_mesh.plan(recipe(3, 2), 6, {"RDMAOPS_HSDP": "1"})
    assert three.ranks == [[0, 1], [2, 3], [4, 5]] and three.replicate_group(3) == [1, 3, 5]


@pytest.mark.parametrize(
    ("sets", "env", "hybrid", "why"),
    [
        ([], {}, False, "strategy.fsdp2.hsdp auto, RDMAOPS_HSDP unset"),
        ([], {"RDMAOPS_HSDP": ""}, False, "strategy.fsdp2.hsdp auto, RDMAOPS_HSDP unset"),
        ([], {"RDMAOPS_HSDP": "0"}, False, "strategy.fsdp2.hsdp auto, RDMAOPS_HSDP=0"),
        (["strategy.fsdp2.hsdp=true"], {"RDMAOPS_HSDP": "0"}, True, "strategy.fsdp2.hsdp true"),
        (["strategy.fsdp2.hsdp=false"], {"RDMAOPS_HSDP": "1"}, False, "strategy.fsdp2.hsdp false"),
        (["strategy.name=ddp"], {"RDMAOPS_HSDP": "1"}, False, "strategy.name ddp"),
    ],
)
def test_the_recipe_forces_it_and_auto_follows_the_launcher(
    sets: list[str], env: dict[str, str], hybrid: bool, why: str
) -> None:
    mesh = dp_mesh.plan(recipe(2, 2, *sets), 4, env)
    assert (mesh.hybrid, mesh.why) == (hybrid, why)
    assert mesh.ranks == ([[0, 1], [2, 3]] if hybrid else [[0, 1, 2, 3]])


def test_one_node_has_nothing_to_replicate() -> None:
    mesh = dp_mesh.plan(recipe(1, 4), 4, {"RDMAOPS_HSDP": "1"})
    assert (mesh.hybrid, mesh.ranks) == (False, [[0, 1, 2, 3]])
    assert mesh.why == "strategy.fsdp2.hsdp auto, RDMAOPS_HSDP=1, one node"
    with pytest.raises(
        RecipeError, match=r"^strategy.fsdp2.hsdp: true needs cluster.nodes >= 2, not 1 \(HSDP"
    ):
        recipe(1, 4, "strategy.fsdp2.hsdp=true")
    with pytest.raises(RecipeError, match=r"^strategy.fsdp2.hsdp: 1 is not true or false or auto$"):
        recipe(2, 2, "strategy.fsdp2.hsdp=1")


def test_a_bad_launcher_value_or_node_numbering_is_refused() -> None:
    with pytest.raises(RecipeError, match=r"^environment variable RDMAOPS_HSDP='yes': use 1 \(HSDP"):
        dp_mesh.plan(recipe(2, 2, "strategy.fsdp2.hsdp=false"), 4, {"RDMAOPS_HSDP": "yes"})
    # torchrun numbers node by node: rank 2 of 2 x 2 is node 1's first
    dp_mesh.plan(recipe(2, 2), 4, {"RDMAOPS_HSDP": "1", "RANK": "2", "GROUP_RANK": "1"})
    with pytest.raises(
        RecipeError, match=r"rank 2 runs on node 0 \(GROUP_RANK\) but the mesh puts it with the ranks of"
    ):
        dp_mesh.plan(recipe(2, 2), 4, {"RDMAOPS_HSDP": "1", "RANK": "2", "GROUP_RANK": "0"})


def test_the_cli_names_a_bad_launcher_value_before_any_process_group(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RDMAOPS_HSDP", "2")
    for var in ("WORLD_SIZE", "RANK", "MASTER_ADDR"):
        monkeypatch.delenv(var, raising=False)
    sets = ["cluster.nodes=1", "cluster.procs_per_node=1", "train.global_batch_size=2"]
    assert main(["--recipe", "tiny", *(x for s in sets for x in ("--set", s))]) == 2
    assert "error: environment variable RDMAOPS_HSDP='2'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("sets", "env", "fp32", "dtype", "why"),
    [
        # HSDP (a slow link between nodes): the all-reduce that crosses it goes in bf16
        (
            [],
            {"RDMAOPS_HSDP": "1"},
            False,
            "bfloat16",
            "strategy.fsdp2.reduce_dtype auto, HSDP: the all-reduce",
        ),
        ([], {"RDMAOPS_HSDP": "0"}, False, "float32", "strategy.fsdp2.reduce_dtype auto, no HSDP"),
        (["strategy.fsdp2.hsdp=true"], {}, False, "bfloat16", "strategy.fsdp2.reduce_dtype auto, HSDP"),
        # the recipe's own choice wins either way
        (
            ["strategy.fsdp2.reduce_dtype=float32"],
            {"RDMAOPS_HSDP": "1"},
            False,
            "float32",
            "strategy.fsdp2.reduce_dtype float32",
        ),
        (
            ["strategy.fsdp2.reduce_dtype=bfloat16"],
            {},
            False,
            "bfloat16",
            "strategy.fsdp2.reduce_dtype bfloat16",
        ),
        # fp32 compute (CPU): nothing is cast, whatever the recipe says
        (["strategy.fsdp2.reduce_dtype=bfloat16"], {"RDMAOPS_HSDP": "1"}, True, "float32", "fp32 compute"),
    ],
)
def test_gradients_are_reduced_in_bf16_under_hsdp_unless_the_recipe_says(
    sets: list[str], env: dict[str, str], fp32: bool, dtype: str, why: str
) -> None:
    r = recipe(2, 2, *sets)
    got = dp_mesh.reduce_dtype(r, dp_mesh.plan(r, 4, env), fp32)
    assert got[0] == dtype and got[1].startswith(why), got
