"""train.cuda_graphs: what the recipe must be, and the DDP strategy's gradient handling under it.

The graphs themselves need a GPU (docs/benchmarks.md, call 14). What makes them correct runs anywhere: the
gradients exist before the first micro-batch and stay allocated, so that accumulation adds into the same
tensors and never takes over a graph's output buffer as .grad.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch._inductor.config as inductor
from conftest import assert_refused
from rdmaops_trainer.config import load_recipe
from rdmaops_trainer.models import build_model
from rdmaops_trainer.runtime import resolve_runtime
from rdmaops_trainer.strategies import get_strategy

GPU = ["strategy.name=ddp", "cluster.device=cuda", "train.compile=true", "train.cuda_graphs=true"]


def test_a_recipe_cuda_graphs_cannot_run_is_named() -> None:
    assert load_recipe("tiny", GPU).train.cuda_graphs
    cases = {
        "strategy.name=fsdp2": "not strategy.name 'fsdp2', train.compile True, cluster.device 'cuda'",
        "train.compile=false": "train.compile False",
        "cluster.device=cpu": "cluster.device 'cpu'",
    }
    want = "train.cuda_graphs: true needs strategy.name ddp, train.compile true and a CUDA device"
    assert_refused("tiny", GPU, cases, every=want)


def batch(seed: int) -> dict[str, torch.Tensor]:
    ids = torch.randint(0, 257, (2, 16), generator=torch.Generator().manual_seed(seed))
    return {"input_ids": ids, "labels": ids.roll(-1, dims=1)}


@pytest.mark.parametrize("graphs", [False, True])
def test_gradients_stay_allocated_and_accumulate_in_place(graphs: bool) -> None:
    recipe = load_recipe("tiny", ["strategy.name=ddp", "cluster.device=cpu", "cluster.nodes=1"])
    # the CPU stands in for the GPU: the validation that refuses this is tested above
    recipe = dataclasses.replace(recipe, train=dataclasses.replace(recipe.train, cuda_graphs=graphs))
    rt = resolve_runtime(recipe)
    strategy = get_strategy("ddp")(recipe, rt)
    torch.manual_seed(0)
    with inductor.patch({"triton.cudagraphs": False}):
        strategy.prepare(build_model(recipe, vocab_size=257))
        assert inductor.triton.cudagraphs is graphs
        params = strategy.trainable_parameters()
        grads = [p.grad for p in params]
        before = [p.detach().clone() for p in params]
        for step in range(2):
            strategy.train_step([batch(2 * step), batch(2 * step + 1)], lr=1e-3)
            if graphs:
                # the same tensors as before the first step, zeroed after the optimizer used them
                assert all(p.grad is g for p, g in zip(params, grads, strict=True))
                assert all(g is not None and not g.any() for g in grads)
            else:
                assert all(p.grad is None for p in params)  # set_to_none, as without graphs
        assert all(not torch.equal(p, b) for p, b in zip(params, before, strict=True))
