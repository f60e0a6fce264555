"""NCCL bandwidth between the GPUs of one machine, for the collectives the strategies use.

    torchrun --standalone --nproc-per-node 2 benchmarks/gpu/nccl_bw.py

all_reduce (DDP gradients), all_gather_into_tensor (FSDP2/ZeRO-3 parameters) and reduce_scatter_tensor
(FSDP2/ZeRO-3 gradients) on bf16 buffers of several sizes; bus bandwidth as nccl-tests defines it
(all_reduce: 2(n-1)/n x bytes / time; all-gather and reduce-scatter: (n-1)/n x total bytes / time).
Rank 0 prints one JSON line. Run with NCCL_DEBUG=INFO to see which transport NCCL picked (P2P, SHM, NET).
"""

from __future__ import annotations

import json
import os
import time

import torch
import torch.distributed as dist


def timed(fn, iters: int, cuda: bool) -> float:  # type: ignore[no-untyped-def]
    for _ in range(3):
        fn()
    if cuda:
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    if cuda:
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) / iters


def main() -> None:
    cuda = torch.cuda.is_available()  # without CUDA: gloo on the CPU, only to check the code path
    local = int(os.environ.get("LOCAL_RANK", "0"))
    dev = torch.device("cuda", local) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(dev)
        dist.init_process_group("nccl", device_id=dev)
    else:
        dist.init_process_group("gloo")
    n, rank = dist.get_world_size(), dist.get_rank()
    dtype = torch.bfloat16 if cuda else torch.float32
    res: dict[str, dict[str, float]] = {}
    for mib in (8, 64, 256) if cuda else (1,):
        numel = mib * 2**20 // dtype.itemsize
        full = torch.randn(numel, device=dev, dtype=dtype)
        shard = torch.randn(numel // n, device=dev, dtype=dtype)
        iters = 20 if cuda else 2
        nbytes = numel * dtype.itemsize
        t_ar = timed(lambda: dist.all_reduce(full), iters, cuda)  # noqa: B023
        t_ag = timed(lambda: dist.all_gather_into_tensor(full, shard), iters, cuda)  # noqa: B023
        row = {
            "all_reduce_busbw_GBps": round(2 * (n - 1) / n * nbytes / t_ar / 1e9, 1),
            "all_gather_busbw_GBps": round((n - 1) / n * nbytes / t_ag / 1e9, 1),
        }
        if cuda:  # gloo has no reduce_scatter_tensor
            t_rs = timed(lambda: dist.reduce_scatter_tensor(shard, full), iters, cuda)  # noqa: B023
            row["reduce_scatter_busbw_GBps"] = round((n - 1) / n * nbytes / t_rs / 1e9, 1)
        res[f"{mib}MiB"] = row
    if rank == 0:
        nccl = ".".join(map(str, torch.cuda.nccl.version())) if cuda else None
        print(json.dumps({"bench": "nccl_bw", "world_size": n, "nccl": nccl, **res}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
