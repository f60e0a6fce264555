"""train.bf16_residual: the stream between the blocks (and its gradient) in bf16, not autocast's fp32."""

from __future__ import annotations

from typing import NamedTuple

import pytest
import torch
from conftest import refusal
from rdmaops_trainer.config import RecipeError, load_recipe
from rdmaops_trainer.kernels import registry
from rdmaops_trainer.models import build_model
from rdmaops_trainer.runtime import Runtime

ON = ["strategy.name=ddp", "train.precision=bf16", "train.bf16_residual=true"]
OFF = ["strategy.name=ddp", "train.precision=bf16"]


class Pass(NamedTuple):
    loss: torch.Tensor
    grads: dict[str, torch.Tensor]
    # dtype of every block's input and of the final LayerNorm's
    stream: list[torch.dtype]
    # dtype of the gradient that flows back into the first block
    stream_grad: torch.dtype


def run(overrides: list[str]) -> Pass:
    """One bf16-autocast forward + backward of the tiny GPT."""
    model = build_model(load_recipe("tiny", overrides), vocab_size=257)
    seen: list[torch.dtype] = []
    grad_dtype: list[torch.dtype] = []

    def record(_m: torch.nn.Module, args: tuple[torch.Tensor, ...]) -> None:
        seen.append(args[0].dtype)
        if not grad_dtype and args[0].requires_grad:
            args[0].register_hook(lambda g: grad_dtype.append(g.dtype))

    for block in model.blocks():
        block.register_forward_pre_hook(record)
    model.ln_f.register_forward_pre_hook(record)
    ids = torch.randint(0, 257, (2, 32), generator=torch.Generator().manual_seed(6))
    labels = ids.roll(-1, dims=1)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model(ids, labels)
    loss.backward()
    grads = {n: p.grad for n, p in model.named_parameters() if p.grad is not None}
    return Pass(loss.detach(), grads, seen, grad_dtype[0])


def test_the_stream_between_blocks_is_bf16_only_when_asked() -> None:
    on, off = run(ON), run(OFF)
    assert on.stream == [torch.bfloat16] * 3  # 2 blocks and the final LayerNorm
    assert on.stream_grad == torch.bfloat16
    assert off.stream == [torch.float32] * 3
    assert off.stream_grad == torch.float32


def test_it_trains_like_the_fp32_stream_up_to_bf16_rounding() -> None:
    """Same weights, same batch: the loss and every weight's gradient (fp32, the weights stay fp32) agree
    to bf16's precision, not exactly."""
    on, off = run(ON), run(OFF)
    assert on.grads.keys() == off.grads.keys() and "wte.weight" in on.grads
    assert abs(float(on.loss) - float(off.loss)) < 2e-2 and not torch.equal(on.loss, off.loss)
    for name, grad in on.grads.items():
        assert grad.dtype == torch.float32
        cos = torch.nn.functional.cosine_similarity(grad.flatten(), off.grads[name].flatten(), dim=0)
        assert cos > 0.99, f"{name}: cosine {float(cos):.4f}"


def test_a_recipe_that_cannot_keep_a_bf16_stream_is_named() -> None:
    assert load_recipe("gpt2", ["train.bf16_residual=true"]).train.bf16_residual
    want = "train.bf16_residual: true needs model.kind gpt2 with strategy.name ddp and bf16 compute, not "
    assert want + "model.kind 'gpt2', strategy.name 'fsdp2'" in refusal("tiny", ["train.bf16_residual=true"])
    assert "train.precision 'fp32'" in refusal("tiny", [*ON, "train.precision=fp32"])
    assert "model.kind 'hf'" in refusal("qwen1_5b", ["strategy.name=ddp", "train.bf16_residual=true"])


def test_a_rank_that_computes_in_fp32_refuses_before_training() -> None:
    """precision auto passes the recipe check but is fp32 on a CPU rank: the rank's check says so, before any
    model is built."""
    recipe = load_recipe("tiny", ["strategy.name=ddp", "train.precision=auto", "train.bf16_residual=true"])
    rt = Runtime(0, 1, 0, torch.device("cpu"), "gloo", torch.float32)
    with pytest.raises(RecipeError, match=r"needs bf16 compute; this rank computes in torch.float32 \(train"):
        registry.check_rank(recipe, rt)
    registry.check_rank(recipe, Runtime(0, 1, 0, torch.device("cpu"), "gloo", torch.bfloat16))
