"""all_reduce through the Mesh NCCL net plugin's TCP backend, side by side with NCCL's socket transport.

    make -C files/plugin_src && python benchmarks/gpu/nccl_mesh_plugin.py

Two processes (on GPU 0, or one GPU each with --gpus 0,1) carry different NCCL_HOSTID values, so NCCL
sees two nodes: no P2P or SHM, all traffic goes through the network. Each mode is its own pair of processes:

- mesh: NCCL_NET_PLUGIN=<files/plugin_src/libnccl-net-mesh.so>, NCCL_NET=Mesh, NCCL_MESH_TRANSPORT=tcp
- socket: NCCL_NET_PLUGIN=none, NCCL_NET=Socket (NCCL's own socket transport, its defaults)
- socket-tuned: the same with NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4

Both over loopback. Every size is checked (each rank adds rank+1, every element must equal the sum)
and timed; bus bandwidth as nccl-tests defines it for all_reduce: 2(n-1)/n x bytes / time. The NCCL
log of each run must show the plugin loaded and the channels `via NET/Mesh` (resp. `via NET/Socket`).
Prints one JSON line per run (modes alternate, --rounds each) and a final JSON line with the
median bus bandwidth per size and mode.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "files" / "plugin_src" / "libnccl-net-mesh.so"
WORLD = 2


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


MODES = ("mesh", "socket", "socket-tuned")


def mode_env(mode: str, plugin: Path, by_name: bool = False) -> dict[str, str]:
    env = {
        "NCCL_DEBUG": "INFO",
        "NCCL_DEBUG_SUBSYS": "INIT,NET",
        "NCCL_SOCKET_IFNAME": "lo",
        "NCCL_IB_DISABLE": "1",
        "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", "0"),
    }
    if mode == "mesh":
        env |= {
            # by name, as the nccl_mesh_plugin role writes it (the library on the loader's path)
            "NCCL_NET_PLUGIN": "mesh" if by_name else str(plugin),
            "NCCL_NET": "Mesh",
            "NCCL_MESH_TRANSPORT": "tcp",
            "NCCL_MESH_IFNAME": "lo",
        }
        if by_name:
            env["LD_LIBRARY_PATH"] = ":".join(
                filter(None, [str(plugin.parent), os.environ.get("LD_LIBRARY_PATH")])
            )
    else:
        env |= {"NCCL_NET_PLUGIN": "none", "NCCL_NET": "Socket"}
        if mode == "socket-tuned":
            env |= {"NCCL_SOCKET_NTHREADS": "4", "NCCL_NSOCKS_PERTHREAD": "4"}
    return env


def worker(rank: int, port: int, sizes_mib: list[int], iters: int) -> None:
    import torch
    import torch.distributed as dist

    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    store = dist.TCPStore("127.0.0.1", port, WORLD, rank == 0)
    dist.init_process_group("nccl", store=store, rank=rank, world_size=WORLD, device_id=dev)
    expected = float(sum(r + 1 for r in range(WORLD)))
    rows: dict[str, dict[str, float | bool]] = {}
    for mib in sizes_mib:
        numel = mib * 2**20 // 4
        buf = torch.full((numel,), float(rank + 1), device=dev, dtype=torch.float32)
        dist.all_reduce(buf)
        torch.cuda.synchronize()
        correct = bool(torch.all(buf == expected).item())
        for _ in range(2):
            dist.all_reduce(buf)
        torch.cuda.synchronize()
        n_iter = max(3, iters * 64 // max(mib, 64)) if mib >= 64 else iters
        t0 = time.perf_counter()
        for _ in range(n_iter):
            dist.all_reduce(buf)
        torch.cuda.synchronize()
        dt = (time.perf_counter() - t0) / n_iter
        rows[f"{mib}MiB"] = {
            "correct": correct,
            "busbw_GBps": round(2 * (WORLD - 1) / WORLD * numel * 4 / dt / 1e9, 3),
            "time_ms": round(dt * 1e3, 2),
        }
    dist.barrier()
    if rank == 0:
        nccl = ".".join(map(str, torch.cuda.nccl.version()))
        print("RESULT " + json.dumps({"nccl": nccl, "rows": rows}), flush=True)
    dist.destroy_process_group()


def run_mode(
    mode: str,
    plugin: Path,
    sizes: list[int],
    iters: int,
    timeout: int,
    by_name: bool = False,
    gpus: list[str] | None = None,
) -> dict[str, object]:
    port = free_port()
    procs = []
    for rank in range(WORLD):
        env = os.environ | mode_env(mode, plugin, by_name) | {"NCCL_HOSTID": f"mesh-bench-host-{rank}"}
        if gpus:
            env["CUDA_VISIBLE_DEVICES"] = gpus[rank % len(gpus)]
        cmd = [sys.executable, __file__, "--worker", str(rank), "--port", str(port), "--iters", str(iters)]
        cmd += ["--sizes", ",".join(map(str, sizes))]
        procs.append(
            subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        )
    logs = []
    codes = []
    for p in procs:
        out, _ = p.communicate(timeout=timeout)
        logs.append(out)
        codes.append(p.returncode)
    text = "\n".join(logs)
    result = next((json.loads(line[7:]) for line in text.splitlines() if line.startswith("RESULT ")), None)
    net = "Mesh" if mode == "mesh" else "Socket"
    checks = {
        "exit_codes": codes,
        "plugin_loaded": bool(re.search(r"NET/Plugin: Loaded net plugin Mesh", text)),
        f"channels_via_NET/{net}": len(re.findall(rf"via NET/{net}", text)),
        "channels_via_other": len(re.findall(r"via (P2P|SHM|NET/(?!" + net + r"))", text)),
    }
    loaded = [
        line.strip() for line in text.splitlines() if "Loaded net plugin" in line or "Using network" in line
    ]
    return {
        "mode": mode,
        "checks": checks,
        "log_lines": loaded[:4],
        "result": result,
        "log_tail": text[-3000:],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--sizes", default="1,4,16,64,256", help="MiB per all_reduce, comma-separated")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--plugin", type=Path, default=PLUGIN)
    ap.add_argument("--timeout", type=int, default=240)
    ap.add_argument(
        "--by-name", action="store_true", help="NCCL_NET_PLUGIN=mesh + LD_LIBRARY_PATH, not a path"
    )
    ap.add_argument(
        "--rounds", type=int, default=3, help="runs per mode, alternating; the table is the median"
    )
    ap.add_argument("--modes", default="mesh,socket", help=f"comma-separated, of {', '.join(MODES)}")
    ap.add_argument("--gpus", default="", help="GPU of each rank, comma-separated (default: GPU 0 for both)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    modes = [m for m in args.modes.split(",") if m]
    bad = [m for m in modes if m not in MODES]
    if bad:
        print(f"unknown mode(s) {bad}: expected some of {', '.join(MODES)}", file=sys.stderr)
        return 2
    gpus = [g for g in args.gpus.split(",") if g]
    if args.worker is not None:
        worker(args.worker, args.port, sizes, args.iters)
        return 0
    if not args.plugin.exists():
        print(f"{args.plugin} is missing: run make -C files/plugin_src", file=sys.stderr)
        return 2
    ok = True
    per_mode: dict[str, list[dict[str, dict[str, float | bool]]]] = {m: [] for m in modes}
    for rnd in range(args.rounds):  # alternate the modes: drift on the machine hits all alike
        for mode in modes:
            run = run_mode(mode, args.plugin.resolve(), sizes, args.iters, args.timeout, args.by_name, gpus)
            print(json.dumps({"round": rnd} | {k: v for k, v in run.items() if k != "log_tail"}))
            result, checks = run["result"], run["checks"]
            assert isinstance(checks, dict)
            net = "Mesh" if mode == "mesh" else "Socket"
            good = (
                isinstance(result, dict)
                and all(c == 0 for c in checks["exit_codes"])
                and checks[f"channels_via_NET/{net}"] > 0
                and checks["channels_via_other"] == 0
                and (checks["plugin_loaded"] if mode == "mesh" else True)
                and all(row["correct"] for row in result["rows"].values())
            )
            if not good or not isinstance(result, dict):
                ok = False
                print(f"--- {mode}: log tail ---\n{run['log_tail']}", file=sys.stderr)
                continue
            per_mode[mode].append(result["rows"])
    # One row per size: the median bus bandwidth of each mode, and mesh against each socket mode.
    table = []
    done = [m for m in modes if per_mode[m]]
    for key in per_mode[done[0]][0] if done else []:
        row: dict[str, object] = {"size": key}
        med = {m: statistics.median(float(r[key]["busbw_GBps"]) for r in per_mode[m]) for m in done}
        row |= {f"{m}_GBps": v for m, v in med.items()}
        if "mesh" in med:
            row |= {f"mesh/{m}": round(med["mesh"] / v, 2) for m, v in med.items() if m != "mesh" and v}
        table.append(row)
    print(json.dumps({"bench": "nccl_mesh_plugin", "ok": ok, "table": table}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
