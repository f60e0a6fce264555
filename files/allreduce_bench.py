# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""All-reduce bandwidth across every rank, like nccl-tests' all_reduce_perf.

Launch one process per node (or per GPU) with torch.distributed.run, e.g.
    python -m torch.distributed.run --nnodes 3 --nproc-per-node 1 --node-rank R \
        --master-addr 10.255.0.1 --master-port 29517 allreduce_bench.py --output /tmp/ar.json
NCCL when CUDA is available (one GPU per local rank), gloo otherwise. For each message size it times
`iters` all-reduces after `warmup` untimed ones and reports (rank 0) the mean time, the algorithm
bandwidth algbw = bytes / time and the bus bandwidth busbw = algbw * 2(n-1)/n: a ring all-reduce moves
2(n-1)/n of the buffer over each rank's link, so busbw is comparable with the link's line rate.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}


def bus_factor(world_size: int) -> float:
    """2(n-1)/n: the share of the buffer a ring all-reduce sends over each rank's link."""
    if world_size < 1:
        raise ValueError(f"world size must be at least 1, got {world_size}")
    return 2.0 * (world_size - 1) / world_size


def bandwidths(nbytes: int, seconds: float, world_size: int) -> dict[str, float]:
    """algbw and busbw in Gb/s (10^9 bit/s) for one all-reduce of nbytes taking seconds."""
    if seconds <= 0:
        raise ValueError(f"time must be positive, got {seconds}")
    algbw = nbytes * 8 / seconds / 1e9
    return {"algbw_gbps": algbw, "busbw_gbps": algbw * bus_factor(world_size)}


def parse_size(text: str) -> int:
    """'4K', '16M', '1G' (powers of 1024) or plain bytes."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    value = text.strip().upper().removesuffix("B").removesuffix("I")
    try:
        size = int(float(value[:-1]) * units[value[-1]]) if value and value[-1] in units else int(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"bad size {text!r}: use bytes or a K/M/G suffix") from exc
    if size <= 0:
        raise argparse.ArgumentTypeError(f"size {text!r} must be positive")
    return size


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1M,8M,32M", help="comma-separated message sizes (K/M/G suffixes)")
    parser.add_argument("--iters", type=int, default=10, help="timed iterations per size")
    parser.add_argument("--warmup", type=int, default=3, help="untimed iterations per size")
    parser.add_argument("--dtype", choices=sorted(DTYPE_BYTES), default="float32")
    parser.add_argument("--backend", choices=["auto", "nccl", "gloo"], default="auto")
    parser.add_argument("--timeout", type=float, default=300.0, help="process-group timeout in seconds")
    parser.add_argument("--output", help="rank 0 writes the JSON result here (also printed to stdout)")
    args = parser.parse_args(argv)
    args.sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
    if not args.sizes:
        parser.error("--sizes is empty")
    if args.iters < 1 or args.warmup < 0:
        parser.error("--iters must be >= 1 and --warmup >= 0")
    return args


def run(args: argparse.Namespace) -> dict[str, Any] | None:
    import datetime

    import torch
    import torch.distributed as dist

    backend = args.backend
    if backend == "auto":
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    dist.init_process_group(backend=backend, timeout=datetime.timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    dtype = getattr(torch, args.dtype)
    results = []
    for nbytes in args.sizes:
        count = max(1, nbytes // DTYPE_BYTES[args.dtype])
        buffer = torch.ones(count, dtype=dtype, device=device)
        # One checked reduction of ones (every element must become n), then time on zeros so that
        # repeated sums never overflow the dtype.
        dist.all_reduce(buffer)
        got = float(buffer[0].item()), float(buffer[-1].item())
        if got != (float(world), float(world)):
            raise RuntimeError(f"all-reduce of ones over {world} ranks gave {got}, expected {world}")
        buffer.zero_()
        for _warm in range(args.warmup):
            dist.all_reduce(buffer)
        if backend == "nccl":
            torch.cuda.synchronize()
        dist.barrier()
        start = time.perf_counter()
        for _iter in range(args.iters):
            dist.all_reduce(buffer)
        if backend == "nccl":
            torch.cuda.synchronize()
        elapsed = (time.perf_counter() - start) / args.iters
        # The slowest rank decides how long a collective takes.
        slowest = torch.tensor([elapsed], dtype=torch.float64, device=device)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        seconds = float(slowest.item())
        actual = count * DTYPE_BYTES[args.dtype]
        figures = bandwidths(actual, seconds, world)
        results.append(
            {
                "bytes": actual,
                "count": count,
                "time_ms": round(seconds * 1e3, 4),
                "algbw_gbps": round(figures["algbw_gbps"], 4),
                "busbw_gbps": round(figures["busbw_gbps"], 4),
            }
        )
        del buffer
    # A barrier before destroy avoids gloo aborting at exit (seen in the lab).
    dist.barrier()
    document = None
    if rank == 0:
        document = {
            "backend": backend,
            "world_size": world,
            "dtype": args.dtype,
            "iters": args.iters,
            "warmup": args.warmup,
            "torch": torch.__version__,
            "socket_ifname": os.environ.get("GLOO_SOCKET_IFNAME") or os.environ.get("NCCL_SOCKET_IFNAME"),
            "master_addr": os.environ.get("MASTER_ADDR"),
            "results": results,
        }
    dist.destroy_process_group()
    return document


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    document = run(args)
    if document is not None:
        text = json.dumps(document, sort_keys=True)
        print(text, flush=True)
        if args.output:
            tmp = f"{args.output}.tmp"
            with open(tmp, "w", encoding="utf-8") as handle:
                handle.write(text + "\n")
            os.replace(tmp, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
