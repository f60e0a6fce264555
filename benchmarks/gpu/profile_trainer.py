"""Profile a few optimizer steps of the project's trainer: where does a step's time go?

    torchrun --standalone --nproc-per-node 2 benchmarks/gpu/profile_trainer.py --steps-at 12 \\
        --profile-steps 2 -- --recipe qwen1_5b --set strategy.name=zero3 ...

Runs ``python -m rdmaops_trainer`` unchanged, with ``Strategy.train_step`` wrapped so that torch.profiler
records optimizer steps [steps-at, steps-at + profile-steps). Rank 0 prints one JSON line: wall time per step,
GPU busy time per step (union of kernel intervals on the device), the share of NCCL kernels, all kernel time
by family (GEMM, attention, cross-entropy, ...), and the top kernels and CPU ops, so a slow strategy can be
told apart as GPU-bound, communication-bound or host-bound.
The profiler itself slows the host side: take speed from the unprofiled rows, proportions from this.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import warnings
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile


def busy_union(intervals: list[tuple[float, float]]) -> float:
    """Total length of the union of [start, end) intervals (overlapping kernels on several streams)."""
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s  # type: ignore[operator]
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s  # type: ignore[operator]
    return total


def idle_gaps(kernels: list[tuple[float, float, str]], start: float | None, top: int = 6) -> dict[str, Any]:
    """Where the GPU idles (us in, ms out): from ``start`` (the profile's first host event) to the first
    kernel, and the longest gaps between kernels on all streams together, each with where it falls (ms
    after ``start``, or after the first kernel) and the kernels on either side."""
    if not kernels:
        return {"lead_ms": None, "gaps_ms_total": 0.0, "largest": []}
    ks = sorted(kernels)
    origin = start if start is not None else ks[0][0]
    gaps: list[tuple[float, float, str, str]] = []
    end, last = ks[0][1], ks[0][2]
    for s, e, name in ks[1:]:
        if s > end:
            gaps.append((s - end, end, last, name))
        if e > end:
            end, last = e, name
    gaps.sort(key=lambda g: -g[0])
    return {
        "lead_ms": round((ks[0][0] - start) / 1000, 3) if start is not None else None,
        "gaps_ms_total": round(sum(g[0] for g in gaps) / 1000, 3),
        "largest": [
            [round(g / 1000, 3), round((at - origin) / 1000, 2), before[:60], after[:60]]
            for g, at, before, after in gaps[:top]
        ],
    }


SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize")


def host_syncs(events: Any, depth: int = 4, top: int = 8) -> list[list[Any]]:
    """The host's waits on the GPU (CUDA runtime synchronize calls) by the ops they ran under, innermost
    first: [call < op < parent ..., count, ms]. After such a wait the GPU idles until the host launches
    again."""
    by: dict[str, list[float]] = {}
    for ev in events:
        if ev.name not in SYNC_CALLS:
            continue
        chain, parent = [ev.name], getattr(ev, "cpu_parent", None)
        while parent is not None and len(chain) <= depth:
            chain.append(parent.name[:60])
            parent = getattr(parent, "cpu_parent", None)
        entry = by.setdefault(" < ".join(chain), [0, 0.0])
        entry[0] += 1
        entry[1] += ev.time_range.elapsed_us()
    ranked = sorted(by.items(), key=lambda kv: -kv[1][1])[:top]
    return [[key, int(n), round(us / 1000, 2)] for key, (n, us) in ranked]


# GPU kernel families, first match wins: all of a step's kernel time by what it does, not only the top ones
CATEGORIES: list[tuple[str, re.Pattern[str]]] = [
    ("nccl", re.compile(r"nccl", re.I)),
    # cudnn::fusion::* are the helpers of cuDNN's fused attention backward (dO.O, dQ to 16 bits)
    ("attention", re.compile(r"sdpa|flash|fmha|attention|attn|cudnn::fusion", re.I)),
    ("gemm", re.compile(r"nvjet|gemm|cutlass|xmma|cublas|_mm_|splitk", re.I)),
    ("cross_entropy", re.compile(r"log_softmax|ce_rows|cross_entropy|nll_loss", re.I)),
    ("layer_norm", re.compile(r"layer_norm|rms_norm", re.I)),
    ("activation", re.compile(r"gelu|silu|swiglu", re.I)),
    ("optimizer", re.compile(r"adam|multi_tensor|foreach|_amp_|norm_kernel|clip", re.I)),
    ("embedding", re.compile(r"embedding|index_put|scatter|gather|index_add|sort|radix", re.I)),
    ("memset_memcpy", re.compile(r"memset|memcpy|copy_kernel|fill", re.I)),
]


def category(kernel: str) -> str:
    for name, pattern in CATEGORIES:
        if pattern.search(kernel):
            return name
    return "other_fused" if kernel.startswith("triton_") else "other"


def summarize(prof: Any, steps: int, wall_s: float, cuda: bool) -> dict[str, Any]:
    kernels: list[tuple[float, float, str]] = []
    first_host: float | None = None
    nccl_us = 0.0
    by_kernel: dict[str, float] = {}
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CPU:
            first_host = ev.time_range.start if first_host is None else min(first_host, ev.time_range.start)
        # a GPU user annotation ("nccl:_reduce_scatter_base") spans the kernel it names: not a kernel itself
        if (
            cuda
            and ev.device_type == torch.autograd.DeviceType.CUDA
            and not getattr(ev, "is_user_annotation", False)
        ):
            start = ev.time_range.start
            kernels.append((start, start + ev.time_range.elapsed_us(), ev.name))
            by_kernel[ev.name] = by_kernel.get(ev.name, 0.0) + ev.time_range.elapsed_us()
            if "nccl" in ev.name.lower():
                nccl_us += ev.time_range.elapsed_us()
    busy_us = busy_union([(s, e) for s, e, _name in kernels])
    cpu_ops = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)[:12]
    top_k = sorted(by_kernel.items(), key=lambda kv: kv[1], reverse=True)[:24]
    by_cat: dict[str, float] = {}
    for name, us in by_kernel.items():
        by_cat[category(name)] = by_cat.get(category(name), 0.0) + us
    return {
        "profiled_steps": steps,
        "wall_ms_per_step": round(1000 * wall_s / steps, 2),
        "gpu_busy_ms_per_step": round(busy_us / 1000 / steps, 2),
        "gpu_busy_fraction": round(busy_us / 1e6 / wall_s, 3) if wall_s else None,
        "nccl_kernel_ms_per_step": round(nccl_us / 1000 / steps, 2),
        # the profiled window starts right after a device sync, as a log point's read of the loss does
        "gpu_idle": idle_gaps(kernels, first_host),
        "host_syncs": host_syncs(prof.events()),
        "kernel_launches_per_step": len(kernels) // max(steps, 1),
        "kernel_ms_per_step_by_category": {
            c: round(t / 1000 / steps, 2) for c, t in sorted(by_cat.items(), key=lambda kv: -kv[1])
        },
        "top_kernels_ms_per_step": [[n[:90], round(t / 1000 / steps, 2)] for n, t in top_k],
        "top_cpu_self_ms_per_step": [
            [e.key[:90], round(e.self_cpu_time_total / 1000 / steps, 2)] for e in cpu_ops
        ],
    }


def watch_syncs(fn: Any, seen: dict[str, int]) -> Any:
    """Run ``fn`` with torch's sync debug mode on: each synchronizing torch op (item, a copy to pageable host
    memory, nonzero, ...) counted in ``seen`` by its Python caller. Other warnings pass through."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            out = fn()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    for w in caught:
        if "synchroniz" in str(w.message):
            where = f"{os.path.relpath(w.filename)}:{w.lineno}"
            seen[where] = seen.get(where, 0) + 1
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps-at", type=int, default=12, help="first profiled optimizer step (after warm-up)")
    ap.add_argument("--profile-steps", type=int, default=2)
    ap.add_argument("trainer_args", nargs=argparse.REMAINDER, help="-- then the trainer's own arguments")
    a = ap.parse_args()
    targs = a.trainer_args[1:] if a.trainer_args[:1] == ["--"] else a.trainer_args

    from rdmaops_trainer import Strategy, main

    cuda = torch.cuda.is_available()
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    state: dict[str, Any] = {"calls": 0, "prof": None, "t0": 0.0, "syncs": {}}
    original = Strategy.train_step

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    def wrapped(self: Any, micro_batches: Any, lr: float) -> Any:
        n = state["calls"]
        if n == a.steps_at:
            sync()
            state["prof"] = profile(activities=acts)
            state["prof"].__enter__()
            state["t0"] = time.perf_counter()
        if state["prof"] is not None and cuda:
            out = watch_syncs(lambda: original(self, micro_batches, lr), state["syncs"])
        else:
            out = original(self, micro_batches, lr)
        state["calls"] = n + 1
        if n == a.steps_at + a.profile_steps - 1 and state["prof"] is not None:
            sync()
            wall = time.perf_counter() - state["t0"]
            state["prof"].__exit__(None, None, None)
            if int(os.environ.get("RANK", "0")) == 0:
                res = summarize(state["prof"], a.profile_steps, wall, cuda)
                res["sync_ops_by_caller"] = state["syncs"]
                print("PROFILE " + json.dumps(res), flush=True)
            state["prof"] = None
        return out

    Strategy.train_step = wrapped  # type: ignore[method-assign]
    sys.exit(main(targs))


if __name__ == "__main__":
    main()
