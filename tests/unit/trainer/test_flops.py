"""FLOPs per token and MFU, one count for the trainer and the benchmarks: a built model's count against the
shape formulas, and the peak of a GPU by its name."""

from __future__ import annotations

import pytest
import torch
from rdmaops_trainer import flops
from rdmaops_trainer.config import GPTConfig
from rdmaops_trainer.models import GPT


def test_a_built_gpt2_counts_what_the_shape_formula_gives() -> None:
    model = GPT(GPTConfig(n_layer=3, n_head=4, n_embd=48, block_size=32, vocab_size=1000))
    assert flops.count_params(model) - model.wpe.weight.numel() == flops.gpt2_matmul_params(1000, 48, 3)
    want = flops.transformer_flops_per_token(flops.gpt2_matmul_params(1000, 48, 3), 3, 48, 32)
    assert flops.flops_per_token(model, 32) == want


def test_mfu_is_the_trainers_and_the_benchmarks_formula() -> None:
    # the train records' mfu: FLOPs x tokens/s over the peak of all GPUs; a benchmark row's: per GPU
    assert flops.mfu(2000.0, 6.0, 1000.0, gpus=2) == 6.0 * 2000.0 / (1000.0 * 2)
    assert flops.mfu(500_000, 855.38e6) == 500_000 * 855.38e6 / 989e12
    assert flops.H100_H200_BF16_PEAK == flops.PEAK_BF16_FLOPS["H200"] == 989e12


@pytest.mark.parametrize(
    ("name", "peak"),
    [
        ("NVIDIA H100 80GB HBM3", 989e12),
        ("NVIDIA H100 PCIe", 756e12),
        ("NVIDIA H200", 989e12),
        ("Tesla T4", None),
    ],
)
def test_the_peak_is_found_by_the_gpus_name(
    name: str, peak: float | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda _d=None: name)
    assert flops.peak_flops(torch.device("cuda", 0), torch.bfloat16) == peak
    assert flops.peak_flops(torch.device("cuda", 0), torch.float32) is None
    assert flops.peak_flops(torch.device("cpu"), torch.bfloat16) is None
