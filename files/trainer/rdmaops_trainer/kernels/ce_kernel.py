"""Triton kernel of ``train.fused_loss``: per-row cross-entropy whose gradient overwrites the logits.

One program per row (token). The first loop over the row keeps a running max and sum of exponentials (online
softmax) and gives the row's log-sum-exp; the second loop writes ``(softmax - onehot) * scale`` over the
logits in place. The row (100 KB at GPT-2's 50,304 columns in bf16) is read by the second loop soon after the
first, mostly from L2. torch.compile's log-softmax forward and backward are two kernels, each reading the
logits from HBM (8.98 ms against this kernel's 5.75 ms on an H100, docs/benchmarks.md).

Imported only where it runs: on a CUDA device, or on the CPU under ``TRITON_INTERPRET=1`` in the tests.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def ce_rows(
    logits_ptr,
    row_stride,
    labels_ptr,
    loss_ptr,
    n_valid_ptr,
    n_cols,
    ignore_index,
    WRITE_GRAD: tl.constexpr,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    base = logits_ptr + row * row_stride
    label = tl.load(labels_ptr + row)
    offs = tl.arange(0, BLOCK)
    # every block starts inside the row, so m_new is finite and exp(m - m_new) never sees inf - inf
    m = tl.full((), float("-inf"), dtype=tl.float32)
    s = tl.full((), 0.0, dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + offs
        x = tl.load(base + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, 0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), 0)
        m = m_new
    lse = m + tl.log(s)
    valid = label != ignore_index
    safe_label = tl.where(valid, label, 0)
    target = tl.load(base + safe_label).to(tl.float32)
    tl.store(loss_ptr + row, tl.where(valid, lse - target, 0.0))
    if WRITE_GRAD:
        scale = tl.where(valid, 1.0 / tl.load(n_valid_ptr).to(tl.float32), 0.0)
        for start in range(0, n_cols, BLOCK):
            cols = start + offs
            x = tl.load(base + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
            g = tl.exp(x - lse)
            g = tl.where(cols == safe_label, g - 1.0, g) * scale
            tl.store(base + cols, g.to(logits_ptr.dtype.element_ty), mask=cols < n_cols)


def block_and_warps(n_cols: int) -> tuple[int, int]:
    """Launch shape: up to 16,384 columns per loop iteration (4 loops over GPT-2's vocabulary), 16 warps.

    The fastest of 16 shapes on an H100 at 65,536 x 50,304 bf16 (``ce_bench.py --sweep``, results/13):
    5.76 ms against 6.58 ms at 8,192 x 16 and 6.31 ms at 8,192 x 32.
    """
    block = min(16384, triton.next_power_of_2(n_cols))
    return block, 16 if block >= 4096 else 4


def launch(
    logits: torch.Tensor,
    labels: torch.Tensor,
    loss: torch.Tensor,
    n_valid: torch.Tensor,
    ignore_index: int,
    write_grad: bool,
    block: int | None = None,
    warps: int = 4,
) -> None:
    """Run ``ce_rows`` over every row of the 2-D ``logits``; ``block`` and ``warps`` override the launch shape
    (tests, benchmarks/gpu/ce_bench.py --sweep)."""
    rows, cols = logits.shape
    size, warps = block_and_warps(cols) if block is None else (block, warps)
    ce_rows[(rows,)](
        logits,
        logits.stride(0),
        labels,
        loss,
        n_valid,
        cols,
        ignore_index,
        WRITE_GRAD=write_grad,
        BLOCK=size,
        num_warps=warps,
    )
