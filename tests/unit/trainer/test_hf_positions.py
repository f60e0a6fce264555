"""HFCausalLM skips transformers' packed-sequence check (a device sync per forward on a GPU): the trainer's
rows are never packed, and the model's output is the same."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from conftest import tiny_qwen2_config
from rdmaops_trainer.models import HFCausalLM
from transformers import AutoModelForCausalLM, masking_utils


@pytest.fixture()
def checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Calls of transformers' check, counted; it still runs as before."""
    original = masking_utils.find_packed_sequence_indices
    calls: list[int] = []

    def counted(position_ids: torch.Tensor) -> Any:
        calls.append(1)
        return original(position_ids)

    monkeypatch.setattr(masking_utils, "find_packed_sequence_indices", counted)
    return calls


def tiny_qwen() -> HFCausalLM:
    torch.manual_seed(0)
    hf = AutoModelForCausalLM.from_config(tiny_qwen2_config(), attn_implementation="sdpa")
    return HFCausalLM(hf).eval()


@pytest.mark.parametrize("fused_loss", [False, True])
def test_forward_skips_the_packed_check_with_the_same_result(checks: list[int], fused_loss: bool) -> None:
    model = tiny_qwen()
    ids = torch.randint(0, 300, (3, 16))
    labels = torch.randint(0, 300, (3, 16))
    with torch.no_grad():
        logits = model.hf(input_ids=ids, use_cache=False).logits
        assert len(checks) == 1  # transformers' own forward runs it
        want = torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())
        model.fused_loss = fused_loss
        got = model(ids, labels)
        assert len(checks) == 1  # the trainer's does not
        assert torch.allclose(got, want, atol=1e-5)
        assert torch.equal(model(ids), logits)
    assert len(checks) == 1
    # the check is back in place after each forward
    masking_utils.find_packed_sequence_indices(torch.arange(4).unsqueeze(0))
    assert len(checks) == 2
