"""Running run_all.py's rows: each in its own process group with the device machine's environment, its
output streamed into the log, its figures read back (the trainer's metrics, or the script's last JSON line).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from bench_rows import HERE, REPO, TRAINER_SRC, Run, torchrun
from gpu_clocks import Sampler
from rdmaops_trainer import mfu

# The device machine's rule: no NVLink multicast anywhere (it can take the host's shared GPUs down).
SAFE_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


@dataclass
class Session:
    """Where a run_all.py call writes (set by its main)."""

    log: TextIO | None = None
    deadline: float = 0.0  # epoch seconds; 0 = none
    results_path: Path | None = None


SESSION = Session()


def log(msg: str) -> None:
    print(msg, flush=True)
    if SESSION.log is not None:
        SESSION.log.write(msg + "\n")
        SESSION.log.flush()


def trainer_path(src: Path) -> str:
    """PYTHONPATH of a row's processes: the trainer package under ``src`` first, then these scripts."""
    return os.pathsep.join(p for p in (str(src), str(HERE), os.environ.get("PYTHONPATH", "")) if p)


def child_env(gpus: int, device: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(SAFE_ENV)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONPATH"] = trainer_path(TRAINER_SRC)
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    elif gpus == 1:
        env["CUDA_VISIBLE_DEVICES"] = "0"
    return env


def run_cmd(name: str, cmd: list[str], timeout: int, env: dict[str, str]) -> tuple[int, str, float]:
    """Run one benchmark in its own process group, streaming its output into the log.

    On timeout the whole group is killed, so no torchrun worker is left holding a GPU.
    """
    deadline = SESSION.deadline
    timeout = min(timeout, int(deadline - time.time())) if deadline else timeout
    if timeout < 20:
        log(f"\n===== {name}: skipped, {timeout}s left before the deadline")
        return 125, "", 0.0
    log(f"\n===== {name} (timeout {timeout}s): {' '.join(cmd)}")
    t0 = time.perf_counter()
    lines: list[str] = []
    p = subprocess.Popen(
        cmd,
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,
    )

    def pump() -> None:
        assert p.stdout is not None
        for line in p.stdout:
            lines.append(line)
            if SESSION.log is not None:
                SESSION.log.write(line)
                SESSION.log.flush()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        rc = p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        rc = 124
    reader.join(timeout=10)
    wall = time.perf_counter() - t0
    log(f"===== {name}: rc={rc} wall={wall:.1f}s")
    return rc, "".join(lines), wall


def last_json(out: str) -> dict[str, Any] | None:
    for line in reversed(out.splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    return None


# --------------------------------------------------------------------------- environment


ENV_CODE = r"""
import json, time, torch
info = {"torch": torch.__version__, "cuda": torch.version.cuda, "gpus": torch.cuda.device_count()}
for mod in ("transformers", "accelerate", "deepspeed"):
    try:
        info[mod] = __import__(mod).__version__
    except Exception as e:
        info[mod] = repr(e)
if torch.cuda.is_available():
    info["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
    info["gpu_name"] = torch.cuda.get_device_name(0)
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(5): a @ b
    torch.cuda.synchronize(); t = time.perf_counter()
    for _ in range(20): a @ b
    torch.cuda.synchronize(); dt = (time.perf_counter() - t) / 20
    info["bf16_matmul_tflops_8192"] = round(2 * n**3 / dt / 1e12, 1)
print(json.dumps(info))
"""


def check_env(a: argparse.Namespace, results: dict[str, Any]) -> None:
    rc, out, _ = run_cmd("env", [sys.executable, "-c", ENV_CODE], 120, child_env(a.gpus, a.device))
    results["env"] = last_json(out) or {"rc": rc}
    if a.device == "cuda" and shutil.which("nvidia-smi"):
        _rc, out, _ = run_cmd("topo", ["nvidia-smi", "topo", "-m"], 60, child_env(2, a.device))
        results["env"]["topo"] = [x for x in out.splitlines() if x.startswith("GPU")]
    if a.gpus >= 2:
        env = child_env(2, a.device)
        env["NCCL_DEBUG"] = "INFO"  # which transport NCCL picked between the GPUs
        _rc, out, _ = run_cmd("nccl_bw", [*torchrun(2), str(HERE / "nccl_bw.py")], 120, env)
        results["env"]["nccl_bw"] = last_json(out)
        via = sorted({x.split(" via ")[1].strip() for x in out.splitlines() if " via " in x})
        results["env"]["nccl_transport"] = via[:6]


# --------------------------------------------------------------------------- the project's trainer


def trainer_steady(metrics_file: Path, skip: int) -> dict[str, Any]:
    """Median tokens/s per GPU over the logged windows after step `skip` (compile and warm-up left out)."""
    recs = [json.loads(x) for x in metrics_file.read_text().splitlines() if x.strip().startswith("{")]
    train = [r for r in recs if "tokens_per_s_per_gpu" in r]
    steady = [r for r in train if r.get("step", 0) > skip] or train[-1:]
    out: dict[str, Any] = {"logged_steps": [r.get("step") for r in steady]}
    vals = [float(r["tokens_per_s_per_gpu"]) for r in steady]
    out["tokens_per_s_per_gpu"] = round(statistics.median(vals), 1) if vals else None
    if steady:
        out["step_ms"] = round(1000 * statistics.median(float(r.get("step_time_s", 0)) for r in steady), 2)
        out["trainer_mfu"] = steady[-1].get("mfu")
        out["peak_mem_gib"] = steady[-1].get("peak_mem_gb")
    if train:
        out["loss_first"], out["loss_last"] = train[0].get("loss"), train[-1].get("loss")
    start = [r for r in recs if "flops_per_token" in r]
    if start:
        out["trainer_flops_per_token"] = start[0]["flops_per_token"]
        out["params"] = start[0].get("params")
    return out


def baseline_twin(run: Run, src: Path, scratch: str | None) -> Run:
    """The same trainer row on the trainer package under ``src`` (another checkout's files/trainer), named
    "<row> @base", in an output folder of its own: two commits side by side in one call."""
    assert run.trainer_dir is not None
    out = Path(tempfile.mkdtemp(prefix="bench-", dir=scratch))
    old = f"train.output_dir={run.trainer_dir}"
    cmd = [f"train.output_dir={out}" if c == old else c for c in run.cmd]
    env = {**run.env, "PYTHONPATH": trainer_path(src)}
    return replace(run, name=f"{run.name} @base", cmd=cmd, trainer_dir=out, env=env, fallback=None)


def with_baselines(a: argparse.Namespace, runs: list[Run]) -> list[Run]:
    if not a.baseline_trainer:
        return runs
    src = Path(a.baseline_trainer).resolve()
    return runs + [baseline_twin(r, src, a.scratch) for r in runs if r.trainer_dir is not None]


def cleanup(run: Run) -> None:
    for r in (run, run.fallback):
        if r is not None and r.trainer_dir is not None:
            shutil.rmtree(r.trainer_dir, ignore_errors=True)


def execute(a: argparse.Namespace, run: Run, results: dict[str, Any]) -> None:
    def go(r: Run) -> tuple[int, str, float]:
        return run_cmd(r.name, r.cmd, a.timeout, {**child_env(r.gpus, a.device), **r.env})

    with Sampler() if a.gpu_clocks else nullcontext() as clocks:
        rc, out, wall = go(run)
        if rc not in (0, 124, 125) and run.fallback is not None:
            log(f"===== {run.name}: failed (rc={rc}), running its fallback")
            cleanup(run)
            first_rc, run = rc, run.fallback
            rc, out, wall = go(run)
            run.info["fallback_after_rc"] = first_rc
        elif run.fallback is not None:
            cleanup(run.fallback)
    row: dict[str, Any] = {"name": run.name, "gpus": run.gpus, "rc": rc, "wall_s": round(wall, 1), **run.info}
    if clocks is not None:
        row["gpu_clocks"] = clocks.summary
    if run.pair:
        row["pair"] = run.pair
    prof = [x for x in out.splitlines() if x.startswith("PROFILE {")]
    if prof:
        row["profile"] = json.loads(prof[-1][len("PROFILE ") :])
    if run.trainer_dir is None:
        row.update(last_json(out) or {})
    else:
        mf = run.trainer_dir / "metrics.jsonl"
        if mf.is_file():
            row.update(trainer_steady(mf, a.trainer_skip if run.skip is None else run.skip))
            if a.out:  # one file for all rows: the device machine returns at most 8 files
                with open(Path(a.out) / "trainer_metrics.jsonl", "a") as fh:
                    for line in mf.read_text().splitlines():
                        fh.write(json.dumps({"row": run.name, **json.loads(line)}) + "\n")
        cleanup(run)
    tps = row.get("tokens_per_s_per_gpu")
    row["mfu"] = round(mfu(tps, run.fpt), 4) if tps else None
    row["flops_per_token"] = run.fpt
    results["rows"].append(row)
    log("ROW " + json.dumps(row))
    if SESSION.results_path is not None:  # after every row: a killed call still returns what finished
        SESSION.results_path.write_text(json.dumps(results, indent=1))
