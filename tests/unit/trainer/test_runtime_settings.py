"""Process-level settings of the trainer: the CUDA allocator's environment (train.expandable_segments) and the
watch on torch._dynamo's recompile limit (a function past it runs eager with no error)."""

from __future__ import annotations

import pytest
import torch
from rdmaops_trainer.config import load_recipe
from rdmaops_trainer.runtime import allocator_env, recompile_limit_hits


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}),
        # a setting of the operator's is kept and extended, under the name they used
        (
            {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:512"},
            {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:512,expandable_segments:True"},
        ),
        (
            {"PYTORCH_ALLOC_CONF": "garbage_collection_threshold:0.8"},
            {"PYTORCH_ALLOC_CONF": "garbage_collection_threshold:0.8,expandable_segments:True"},
        ),
        # the operator's own expandable_segments wins, also when it turns them off
        ({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False"}, {}),
        ({"PYTORCH_ALLOC_CONF": "expandable_segments:True"}, {}),
    ],
)
def test_expandable_segments_join_the_allocator_settings(
    environ: dict[str, str], expected: dict[str, str]
) -> None:
    assert allocator_env(True, environ) == expected


def test_no_allocator_setting_without_the_option() -> None:
    assert allocator_env(False, {}) == {}
    assert allocator_env(False, {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:512"}) == {}


def test_the_qwen_recipe_asks_for_expandable_segments_and_the_others_do_not() -> None:
    assert load_recipe("qwen1_5b").train.expandable_segments
    assert not load_recipe("gpt2").train.expandable_segments
    assert not load_recipe("tiny").train.expandable_segments


def test_a_function_past_the_recompile_limit_is_named() -> None:
    def scale(x: torch.Tensor, n: int) -> torch.Tensor:
        return x * n

    torch._dynamo.reset()
    compiled = torch.compile(scale, backend="eager")
    limit = torch._dynamo.config.patch(recompile_limit=1, automatic_dynamic_shapes=False)
    with limit, recompile_limit_hits() as hits:
        for n in (2, 3, 4):
            # each int is a constant of its own graph: the second call needs a second one, past the limit
            assert torch.equal(compiled(torch.ones(2), n), torch.full((2,), float(n)))
    assert len(hits) == 1 and "'scale'" in hits[0] and "test_runtime_settings.py" in hits[0], hits
    # the watch is gone after the block
    with torch._dynamo.config.patch(recompile_limit=1, automatic_dynamic_shapes=False):
        compiled(torch.ones(2), 5)
    assert len(hits) == 1
