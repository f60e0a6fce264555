"""train.fused_loss: the head + cross-entropy step against the unfused model, and the Triton kernel (run on
the CPU by Triton's interpreter) against the same math in torch ops."""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from conftest import TRAINER_DIR, python_code, refusal
from rdmaops_trainer.config import RecipeError, load_recipe
from rdmaops_trainer.kernels import fused_loss
from rdmaops_trainer.kernels.registry import FUSED_LOSS_HF_TYPES
from rdmaops_trainer.models import HFCausalLM, build_model, lm_loss


def logits_and_labels(rows: int, cols: int, ignored: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(rows, cols, generator=gen) * 3.0
    labels = torch.randint(0, cols, (rows,), generator=gen)
    labels[:ignored] = fused_loss.IGNORE_INDEX
    return logits, labels


def reference(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Loss and d(loss)/d(logits) of F.cross_entropy (mean over the labels that are not ignored)."""
    x = logits.float().clone().requires_grad_(True)
    loss = F.cross_entropy(x, labels, ignore_index=fused_loss.IGNORE_INDEX)
    loss.backward()
    assert x.grad is not None
    return loss.detach(), x.grad


def n_valid(labels: torch.Tensor) -> torch.Tensor:
    return (labels != fused_loss.IGNORE_INDEX).sum()


def test_torch_rows_give_the_loss_and_gradient_of_cross_entropy() -> None:
    logits, labels = logits_and_labels(rows=2500, cols=97, ignored=300)  # 3 chunks of CPU_CHUNK_ROWS
    want_loss, want_grad = reference(logits, labels)
    buf = logits.clone()
    losses = fused_loss.ce_rows_torch(buf, labels, n_valid(labels), fused_loss.IGNORE_INDEX, write_grad=True)
    assert torch.allclose(losses.sum() / n_valid(labels), want_loss, atol=1e-6, rtol=1e-6)
    assert torch.equal(losses[:300], torch.zeros(300))
    assert torch.allclose(buf, want_grad, atol=1e-7, rtol=1e-5)
    assert torch.equal(buf[:300], torch.zeros(300, 97))


def test_without_grad_the_logits_stay_as_they_are() -> None:
    logits, labels = logits_and_labels(rows=40, cols=33, ignored=4)
    buf = logits.clone()
    fused_loss.ce_rows_torch(buf, labels, n_valid(labels), fused_loss.IGNORE_INDEX, write_grad=False)
    assert torch.equal(buf, logits)


# Run in a fresh interpreter: TRITON_INTERPRET must be set before triton is imported (torch imports it), and
# the kernel is then the kernel's own code executed by numpy on the CPU.
KERNEL_CHECK = """
import json, sys, torch
from rdmaops_trainer.kernels import ce_kernel, fused_loss
rows, cols, ignored = 24, 300, 5
gen = torch.Generator().manual_seed(1)
out = {"shapes": [ce_kernel.block_and_warps(50304), ce_kernel.block_and_warps(300)]}
for dtype in (torch.float32, torch.bfloat16):
    logits = (torch.randn(rows, cols, generator=gen) * 3.0).to(dtype)
    labels = torch.randint(0, cols, (rows,), generator=gen)
    labels[:ignored] = -100
    n_valid = (labels != -100).sum()
    want = logits.clone()
    want_losses = fused_loss.ce_rows_torch(want, labels, n_valid, -100, write_grad=True)
    got = logits.clone()
    losses = torch.empty(rows, dtype=torch.float32)
    # 300 columns in blocks of 64: four full loop iterations and a masked tail
    ce_kernel.launch(got, labels, losses, n_valid, -100, write_grad=True, block=64)
    kept = logits.clone()
    kept_losses = torch.empty(rows, dtype=torch.float32)
    ce_kernel.launch(kept, labels, kept_losses, n_valid, -100, write_grad=False, block=64)
    out[str(dtype)] = {
        "loss_err": float((losses - want_losses).abs().max()),
        "grad_err": float((got.float() - want.float()).abs().max()),
        "grad_max": float(want.float().abs().max()),
        "ignored_rows_zero": bool(torch.equal(got[:ignored], torch.zeros_like(got[:ignored]))),
        "row_sum_max": float(got[ignored:].float().sum(dim=1).abs().max()),
        "no_grad_kept_logits": bool(torch.equal(kept, logits)),
        "no_grad_loss_err": float((kept_losses - want_losses).abs().max()),
    }
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def interpreted_kernel() -> dict[str, Any]:
    pytest.importorskip("triton", reason="requirements.txt installs triton; the kernel test needs it")
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(TRAINER_DIR)}
    out = python_code(KERNEL_CHECK, env=env)
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize(("dtype", "tol"), [("torch.float32", 1e-6), ("torch.bfloat16", 1e-2)])
def test_the_triton_kernel_matches_the_torch_rows(
    interpreted_kernel: dict[str, Any], dtype: str, tol: float
) -> None:
    r = interpreted_kernel[dtype]
    assert r["loss_err"] < 1e-4
    # bf16: the same fp32 values rounded once, so at most one bf16 step (2**-8 relative) apart
    assert r["grad_err"] <= tol * r["grad_max"]
    assert r["ignored_rows_zero"]
    # the gradient of a row sums to 0 (softmax sums to 1, minus the one-hot)
    assert r["row_sum_max"] < 1e-3
    assert r["no_grad_kept_logits"] and r["no_grad_loss_err"] < 1e-4


def test_the_launch_shape_covers_gpt2s_vocabulary_in_four_loops(interpreted_kernel: dict[str, Any]) -> None:
    assert interpreted_kernel["shapes"] == [[16384, 16], [512, 4]]


def test_head_and_loss_in_one_step_equal_the_unfused_ones() -> None:
    gen = torch.Generator().manual_seed(2)
    hidden = torch.randn(3, 50, 16, generator=gen, requires_grad=True)
    weight = (torch.randn(61, 16, generator=gen) * 0.3).requires_grad_(True)
    labels = torch.randint(0, 61, (3, 50), generator=gen)
    labels[0, :7] = -100

    scale = 0.125  # the 1/micro-batches factor gradient accumulation puts on the loss
    want = lm_loss(hidden @ weight.t(), labels)
    (want * scale).backward()
    assert hidden.grad is not None and weight.grad is not None
    want_h, want_w = hidden.grad.clone(), weight.grad.clone()
    hidden.grad, weight.grad = None, None

    got = fused_loss.linear_cross_entropy(hidden, weight, labels)
    (got * scale).backward()
    assert torch.allclose(got, want, atol=1e-6)
    assert torch.allclose(hidden.grad, want_h, atol=1e-7, rtol=1e-5)
    assert torch.allclose(weight.grad, want_w, atol=1e-7, rtol=1e-5)


def test_without_grad_mode_only_the_loss_is_made() -> None:
    hidden = torch.randn(2, 8, 16, requires_grad=True)
    weight = torch.randn(40, 16, requires_grad=True)
    labels = torch.randint(0, 40, (2, 8))
    with torch.no_grad():
        loss = fused_loss.linear_cross_entropy(hidden, weight, labels)
    assert not loss.requires_grad
    assert torch.allclose(loss, lm_loss(hidden @ weight.t(), labels).detach(), atol=1e-6)


def test_under_autocast_the_head_runs_in_the_autocast_dtype() -> None:
    hidden = torch.randn(4, 16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert fused_loss.compute_dtype(hidden) == torch.bfloat16
        loss = fused_loss.linear_cross_entropy(hidden, torch.randn(40, 16), torch.randint(0, 40, (4,)))
    assert fused_loss.compute_dtype(hidden) == torch.float32
    assert loss.dtype == torch.float32


def tiny_gpt(fused: bool) -> torch.nn.Module:
    torch.manual_seed(3)
    model = build_model(load_recipe("tiny"), vocab_size=257)
    model.fused_loss = fused
    return model


def test_gpt_with_the_fused_loss_trains_like_without() -> None:
    """The whole model, tied head and token embedding included: same loss, same gradient on every weight."""
    ids = torch.randint(0, 257, (2, 32), generator=torch.Generator().manual_seed(4))
    labels = ids.roll(-1, dims=1)
    labels[:, -1] = -100
    grads = []
    for fused in (False, True):
        model = tiny_gpt(fused)
        loss = model(ids, labels)
        (loss * 0.5).backward()
        grads.append((loss.detach(), {n: p.grad for n, p in model.named_parameters()}))
    (loss_a, ga), (loss_b, gb) = grads
    assert torch.allclose(loss_a, loss_b, atol=1e-6)
    assert ga.keys() == gb.keys() and "wte.weight" in ga
    for name in ga:
        assert torch.allclose(ga[name], gb[name], atol=1e-7, rtol=1e-4), name


def test_compiled_gpt_breaks_once_at_the_fused_loss() -> None:
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    ids = torch.randint(0, 257, (2, 16), generator=torch.Generator().manual_seed(5))
    model = tiny_gpt(True)
    want = tiny_gpt(False)(ids, ids)
    got = torch.compile(model)(ids, ids)
    got.backward()
    assert torch.allclose(got, want, atol=1e-5)
    assert sum(counters["graph_break"].values()) == 1
    assert model.wte.weight.grad is not None


# small enough for the CPU; each type's constructor takes the keys it knows (the MoE ones: experts)
TINY_HF = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "vocab_size": 97,
    "pad_token_id": 0,
    "max_position_embeddings": 64,
    "moe_intermediate_size": 16,
    "shared_expert_intermediate_size": 16,
    "num_experts": 4,
    "n_routed_experts": 4,
    "n_shared_experts": 1,
    "num_experts_per_tok": 2,
    "first_k_dense_replace": 1,
}


def tiny_hf(model_type: str, tied: bool, fused: bool) -> torch.nn.Module:
    from transformers import AutoConfig, AutoModelForCausalLM

    base = AutoConfig.for_model(model_type)
    known = set(inspect.signature(type(base).__init__).parameters) | set(base.to_dict())
    cfg = type(base)(**{k: v for k, v in TINY_HF.items() if k in known}, tie_word_embeddings=tied)
    torch.manual_seed(6)
    model = HFCausalLM(AutoModelForCausalLM.from_config(cfg))
    model.fused_loss = fused
    return model


@pytest.mark.parametrize("model_type", FUSED_LOSS_HF_TYPES)
def test_each_transformers_type_it_accepts_gives_its_own_loss_and_gradients(model_type: str) -> None:
    """The decoder's hidden states and the head's weight through the fused step: the loss of the model's own
    forward (logits) + lm_loss, and the same gradient on every weight, the head (tied or not) included."""
    ids = torch.randint(1, 97, (2, 12), generator=torch.Generator().manual_seed(7))
    labels = ids.roll(-1, dims=1)
    labels[:, -3:] = -100
    for tied in (True, False):
        got = []
        for fused in (False, True):
            model = tiny_hf(model_type, tied, fused)
            loss = model(ids, labels)
            assert ("LinearCrossEntropy" in type(loss.grad_fn).__name__) == fused
            loss.backward()
            got.append(
                (loss.detach(), {n: p.grad for n, p in model.named_parameters() if p.grad is not None})
            )
        (loss_a, ga), (loss_b, gb) = got
        assert torch.allclose(loss_a, loss_b, atol=1e-6), (model_type, tied)
        assert ga.keys() == gb.keys() and any("lm_head" in n or "embed_tokens" in n for n in ga)
        for name in ga:
            assert torch.allclose(ga[name], gb[name], atol=1e-7, rtol=1e-4), (model_type, tied, name)
        # without labels the model still gives its logits
        assert model(ids).shape == (2, 12, 97)


def test_a_recipe_the_fused_loss_cannot_run_is_named(tmp_path: Path) -> None:
    assert load_recipe("gpt2", ["train.fused_loss=true"]).train.fused_loss
    assert load_recipe("qwen1_5b", ["train.fused_loss=true"]).train.fused_loss
    assert load_recipe("tiny", ["train.fused_loss=true", "strategy.name=fsdp2"]).train.fused_loss
    assert load_recipe("qwen1_5b", ["train.fused_loss=true", "strategy.name=zero3"]).train.fused_loss
    want = "train.fused_loss: true with strategy.name pipeline: not supported (set train.fused_loss=false)"
    assert want in refusal("gpt2", ["train.fused_loss=true", "strategy.name=pipeline"])
    refused = refusal("qwen1_5b", ["train.fused_loss=true", "model.model_type=gemma2", "model.config={}"])
    assert "train.fused_loss: true: model_type 'gemma2' is not one whose logits are known" in refused
    # a pretrained model's type is read from its config.json when the model is built, before any weight
    from transformers import Gemma2Config

    Gemma2Config(vocab_size=300, hidden_size=16, num_hidden_layers=1).save_pretrained(tmp_path)
    sets = ["train.fused_loss=true", "model.init=pretrained", f"model.path={tmp_path}", "model.config={}"]
    with pytest.raises(RecipeError, match="model_type 'gemma2' is not one whose logits are known"):
        build_model(load_recipe("qwen1_5b", sets), device="meta")
