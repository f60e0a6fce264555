"""hopper_kernels.py: its FLOP counts, reference MLP and error measure (the kernels need a Hopper GPU)."""

from __future__ import annotations

import hopper_kernels as hk
import pytest
import torch
import torch.nn.functional as F


def test_mlp_flops_are_nine_gemms_of_the_mlp_shape() -> None:
    # gate, up, down forward; each one's input and weight gradient backward
    assert hk.mlp_flops(24576, 1536, 8960) == 9 * 2 * 24576 * 1536 * 8960


def test_causal_attention_counts_half_the_scores_and_seven_gemms() -> None:
    full_fwd = 2 * (2.0 * 12 * 12 * 2048 * 2048 * 128)  # QK^T and PV over the whole score matrix
    assert hk.causal_attention_flops(12, 12, 2048, 128) == pytest.approx(full_fwd / 2 * 3.5)


def test_swiglu_mlp_is_transformers_llama_mlp() -> None:
    torch.manual_seed(0)
    x, wg, wu, wd = torch.randn(5, 8), torch.randn(16, 8), torch.randn(16, 8), torch.randn(8, 16)
    by_hand = (F.silu(x @ wg.T) * (x @ wu.T)) @ wd.T
    assert torch.allclose(hk.swiglu_mlp(x, wg, wu, wd), by_hand, atol=1e-5)


def test_relative_error_is_against_the_reference_scale() -> None:
    ref = torch.tensor([4.0, -2.0, 0.5])
    got = torch.tensor([4.0, -2.5, 0.5])
    assert hk.max_rel_err(got, ref) == pytest.approx(0.125)
    assert hk.max_rel_err(torch.zeros(2), torch.zeros(2)) == 0.0


def test_fwd_bwd_returns_the_output_and_each_input_gradient() -> None:
    x = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(2, 4, requires_grad=True)
    dy = torch.ones(3, 2)
    out, (gx, gw) = hk.fwd_bwd(F.linear, [x, w], dy)
    assert torch.allclose(out, x @ w.T)
    assert torch.allclose(gx, dy @ w) and torch.allclose(gw, dy.T @ x)


def test_without_a_gpu_it_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr("sys.argv", ["hopper_kernels.py"])
    assert hk.main() == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err


def test_the_norm_case_is_transformers_rmsnorm_of_the_residual_sum() -> None:
    from transformers.models.qwen2.modeling_qwen2 import Qwen2RMSNorm

    torch.manual_seed(0)
    x, res = torch.randn(5, 8), torch.randn(5, 8)
    ref = Qwen2RMSNorm(8, eps=1e-6)
    torch.nn.init.normal_(ref.weight)
    torch.testing.assert_close(hk.rms_norm_add(x, res, ref.weight.detach()), ref(x + res).detach())
