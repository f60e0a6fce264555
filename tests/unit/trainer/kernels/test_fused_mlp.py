"""train.fused_mlp: the cuBLASLt plans (run in torch ops on the CPU, as cuBLASLt reads and writes the buffers)
against the row-major math, the custom ops' fake kernels, and the fused MLP against the unfused model."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_refused
from rdmaops_trainer.config import load_recipe
from rdmaops_trainer.kernels import cublaslt, fused_mlp
from rdmaops_trainer.models import MLP, build_model, gpt_config

# tokens x in -> hidden -> out, none of them equal, so a swapped dimension or leading dimension cannot pass
TOKENS, IN, HIDDEN, OUT = 24, 16, 40, 8


def rand(*shape: int, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def test_the_forward_plan_computes_bias_and_gelu_of_x_times_w_transposed() -> None:
    x, w, b = rand(TOKENS, IN, seed=1), rand(HIDDEN, IN, seed=2), rand(HIDDEN, seed=3)
    h, pre = torch.empty(TOKENS, HIDDEN), torch.empty(TOKENS, HIDDEN)
    cublaslt.run_reference(cublaslt.plan_gelu_linear(TOKENS, IN, HIDDEN), w, x, h, b, pre)
    want = x @ w.t() + b
    torch.testing.assert_close(pre, want)
    torch.testing.assert_close(h, F.gelu(want, approximate="tanh"))


def test_the_backward_plan_gives_the_gelu_input_gradient_and_the_bias_gradient() -> None:
    grad, w_proj, pre = rand(TOKENS, OUT, seed=4), rand(OUT, HIDDEN, seed=5), rand(TOKENS, HIDDEN, seed=6)
    dpre, dbias = torch.empty(TOKENS, HIDDEN), torch.empty(HIDDEN)
    g = cublaslt.plan_linear_dgelu(TOKENS, HIDDEN, OUT, bgrad=True)
    cublaslt.run_reference(g, w_proj, grad, dpre, dbias, pre)
    p = pre.clone().requires_grad_(True)
    (F.gelu(p, approximate="tanh") * (grad @ w_proj)).sum().backward()
    assert p.grad is not None
    torch.testing.assert_close(dpre, p.grad)
    torch.testing.assert_close(dbias, p.grad.sum(0))


def test_the_backward_plan_the_mlp_uses_leaves_the_bias_buffer_alone() -> None:
    grad, w_proj, pre = rand(TOKENS, OUT, seed=4), rand(OUT, HIDDEN, seed=5), rand(TOKENS, HIDDEN, seed=6)
    dpre, untouched = torch.empty(TOKENS, HIDDEN), torch.full((HIDDEN,), 7.0)
    g = cublaslt.plan_linear_dgelu(TOKENS, HIDDEN, OUT)
    assert g.epilogue == cublaslt.EPILOGUE_DGELU
    cublaslt.run_reference(g, w_proj, grad, dpre, untouched, pre)
    torch.testing.assert_close(dpre, (grad @ w_proj) * cublaslt.gelu_tanh_grad(pre))
    assert bool((untouched == 7.0).all())


def test_a_plan_with_the_operands_swapped_does_not_pass() -> None:
    """The reference reads the buffers by the plan's layout: x and w passed the wrong way round fail."""
    x, w, b = rand(TOKENS, IN, seed=1), rand(HIDDEN, IN, seed=2), rand(HIDDEN, seed=3)
    h, pre = torch.empty(TOKENS, HIDDEN), torch.empty(TOKENS, HIDDEN)
    with pytest.raises(RuntimeError):
        cublaslt.run_reference(cublaslt.plan_gelu_linear(TOKENS, IN, HIDDEN), x, w, h, b, pre)


def test_the_aux_leading_dimension_must_be_a_multiple_of_8() -> None:
    with pytest.raises(ValueError, match="aux leading dimension 12"):
        cublaslt.check_plan(cublaslt.plan_gelu_linear(TOKENS, IN, 12))


def test_the_custom_ops_have_consistent_fake_kernels_and_schemas() -> None:
    x, w, b = rand(TOKENS, IN, seed=1), rand(HIDDEN, IN, seed=2), rand(HIDDEN, seed=3)
    torch.library.opcheck(fused_mlp.gelu_linear, (x, w, b))
    grad, w_proj, pre = rand(TOKENS, OUT, seed=4), rand(OUT, HIDDEN, seed=5), rand(TOKENS, HIDDEN, seed=6)
    torch.library.opcheck(fused_mlp.linear_dgelu, (grad, w_proj, pre))


def mlp_pair() -> tuple[MLP, MLP]:
    recipe = load_recipe("tiny", ["model.config.n_embd=32", "model.config.n_head=2"])
    torch.manual_seed(0)
    plain = MLP(gpt_config(recipe))
    fused = MLP(gpt_config(recipe))
    fused.load_state_dict(plain.state_dict())
    fused.fused = True
    return plain, fused


def grads_of(
    module: MLP, x: torch.Tensor, dtype: torch.dtype | None
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    module.zero_grad(set_to_none=True)
    x = x.clone().requires_grad_(True)
    ctx = torch.autocast("cpu", dtype=dtype) if dtype else torch.autocast("cpu", enabled=False)
    with ctx:
        y = module(x)
    (y.float() * rand(*y.shape, seed=9)).sum().backward()
    assert x.grad is not None
    # a compiled module names its parameters _orig_mod.*
    grads = {n.removeprefix("_orig_mod."): p.grad for n, p in module.named_parameters() if p.grad is not None}
    return x.grad, {"y": y.detach().float(), **grads}


def test_the_fused_mlp_matches_the_unfused_one_in_fp32() -> None:
    plain, fused = mlp_pair()
    x = rand(3, 5, 32, seed=8)
    dx_plain, plain_grads = grads_of(plain, x, None)
    dx_fused, fused_grads = grads_of(fused, x, None)
    torch.testing.assert_close(dx_fused, dx_plain)
    assert (
        plain_grads.keys()
        == fused_grads.keys()
        == {"y", "c_fc.weight", "c_fc.bias", "c_proj.weight", "c_proj.bias"}
    )
    for name, want in plain_grads.items():
        torch.testing.assert_close(fused_grads[name], want, msg=name)


def test_under_bf16_autocast_it_computes_in_bf16_and_keeps_fp32_weight_gradients() -> None:
    plain, fused = mlp_pair()
    x = rand(3, 5, 32, seed=8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert fused(x).dtype == plain(x).dtype == torch.bfloat16
    plain_grads = grads_of(plain, x, torch.bfloat16)[1]
    fused_grads = grads_of(fused, x, torch.bfloat16)[1]
    for name, want in plain_grads.items():
        got = fused_grads[name]
        assert got.dtype == torch.float32, name
        assert F.cosine_similarity(got.flatten(), want.flatten(), dim=0) > 0.999, name


def test_the_fused_mlp_compiles_with_the_custom_ops_as_calls() -> None:
    fused = mlp_pair()[1]
    x = rand(2, 8, 32, seed=8)
    compiled = torch.compile(fused, backend="aot_eager", fullgraph=True)
    dx_c, grads_c = grads_of(compiled, x, None)  # type: ignore[arg-type]
    dx_e, grads_e = grads_of(fused, x, None)
    torch.testing.assert_close(dx_c, dx_e)
    for name, want in grads_e.items():
        torch.testing.assert_close(grads_c[name], want, msg=name)


def test_its_converter_switches_every_gpt2_mlp_and_nothing_else() -> None:
    recipe = load_recipe("tiny")
    model = build_model(recipe, vocab_size=257)
    mlps = [m for m in model.modules() if isinstance(m, MLP)]
    assert [m for m in model.modules() if fused_mlp.is_gpt2_mlp(m)] == mlps and len(mlps) == len(model.h)
    assert not any(m.fused for m in mlps)
    assert fused_mlp.convert(model, recipe) == len(mlps) and all(m.fused for m in mlps)
    # attention has a c_proj too, and a Linear alone is no MLP
    assert not fused_mlp.is_gpt2_mlp(model.h[0].attn) and not fused_mlp.is_gpt2_mlp(mlps[0].c_fc)


def test_a_gpt2_model_built_with_it_trains_like_the_unfused_one() -> None:
    base = ["strategy.name=ddp", "train.precision=auto"]
    models = [
        build_model(load_recipe("tiny", [*base, f"train.fused_mlp={on}"]), vocab_size=257)
        for on in ("false", "true")
    ]
    assert [m.h[0].mlp.fused for m in models] == [False, True]
    ids = torch.randint(0, 257, (2, 32), generator=torch.Generator().manual_seed(6))
    losses = []
    for model in models:
        loss = model(ids, ids.roll(-1, dims=1))
        loss.backward()
        losses.append(loss.detach())
    torch.testing.assert_close(losses[0], losses[1])
    for (name, p0), p1 in zip(models[0].named_parameters(), models[1].parameters(), strict=True):
        torch.testing.assert_close(p1.grad, p0.grad, msg=name)


def test_it_is_refused_where_it_does_not_apply() -> None:
    every = "train.fused_mlp: true needs model.kind gpt2 with strategy.name ddp and bf16 compute, not "
    assert_refused(
        "tiny",
        ["train.fused_mlp=true"],
        {
            "strategy.name=fsdp2": "strategy.name 'fsdp2'",
            "train.precision=fp32": "train.precision 'fp32'",
        },
        every=every,
    )
    assert_refused("qwen1_5b", ["strategy.name=ddp"], {"train.fused_mlp=true": "model.kind 'hf'"}, every)
    assert_refused(
        "tiny",
        ["strategy.name=ddp", "train.precision=auto", "train.fused_mlp=true"],
        {
            "model.config.bias=false": "train.fused_mlp: true needs model.config.bias true",
            "train.cuda_graphs=true": "train.fused_mlp: true with train.cuda_graphs: true: not supported",
        },
    )


def test_a_cuda_rank_computing_in_fp32_is_told_why() -> None:
    with pytest.raises(RuntimeError, match=r"bf16 or fp16 here, not torch\.float32"):
        lt = object.__new__(cublaslt.CublasLt)
        x = torch.empty(16, 16)
        lt.matmul(cublaslt.plan_gelu_linear(16, 16, 16), x, x, x, x[0], x)
