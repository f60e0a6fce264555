"""Run every GPU benchmark of issue 4 on one machine and print one table.

    python3 benchmarks/gpu/run_all.py                       # everything (2x H200)
    python3 benchmarks/gpu/run_all.py --phases env,baselines
    python3 benchmarks/gpu/run_all.py --tiny --device cpu   # CPU smoke test of every code path

Rows: the minimal compiled GPT-2 (1 and 2 GPUs), the Hugging Face Trainer (bf16; bf16 + torch_compile), the
project's trainer with recipe gpt2 (DDP, 1 and 2 GPUs) and recipe qwen1_5b (FSDP2 and ZeRO-3, 2 GPUs). MFU is
computed here for every row from tokens/s per GPU with benchmarks/gpu/flops.py. Every child process gets the
NVLink-multicast-off variables that the device machine requires. Results go to OUT (default $OUT) as
results.json and run_all.log; each run's own output is in the log.
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
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
TRAINER_SRC = REPO / "files" / "trainer"
sys.path.insert(0, str(HERE))
from flops import QWEN15B, gpt2_matmul_params, gpt_flops_per_token, mfu, qwen2_matmul_params  # noqa: E402

# The device machine's rule: no NVLink multicast anywhere (it can take the host's shared GPUs down).
SAFE_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}

LOG: Any = None
DEADLINE = 0.0  # epoch seconds; 0 = none
RESULTS_PATH: Path | None = None


def log(msg: str) -> None:
    print(msg, flush=True)
    if LOG is not None:
        LOG.write(msg + "\n")
        LOG.flush()


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(SAFE_ENV)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(TRAINER_SRC), str(HERE), env.get("PYTHONPATH", "")) if p
    )
    return env


def run_cmd(name: str, cmd: list[str], timeout: int) -> tuple[int, str, float]:
    """Run one benchmark in its own process group, streaming its output into the log.

    On timeout the whole group is killed, so no torchrun worker is left holding a GPU.
    """
    timeout = min(timeout, int(DEADLINE - time.time())) if DEADLINE else timeout
    if timeout < 20:
        log(f"\n===== {name}: skipped, {timeout}s left before the deadline")
        return 125, "", 0.0
    log(f"\n===== {name} (timeout {timeout}s): {' '.join(cmd)}")
    t0 = time.perf_counter()
    lines: list[str] = []
    p = subprocess.Popen(
        cmd,
        env=child_env(),
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
            if LOG is not None:
                LOG.write(line)
                LOG.flush()

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


def wanted(a: argparse.Namespace, name: str) -> bool:
    return not a.only or any(s in name for s in a.only.split(","))


def torchrun(nproc: int) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}"]


# --------------------------------------------------------------------------- phases


def phase_env(a: argparse.Namespace, results: dict[str, Any]) -> None:
    code = r"""
import json, os, time, torch
info = {"torch": torch.__version__, "cuda": torch.version.cuda, "gpus": torch.cuda.device_count()}
try:
    import transformers; info["transformers"] = transformers.__version__
except Exception as e: info["transformers"] = repr(e)
try:
    import deepspeed; info["deepspeed"] = deepspeed.__version__
except Exception as e: info["deepspeed"] = repr(e)
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
    rc, out, _ = run_cmd("env", [sys.executable, "-c", code], 120)
    results["env"] = last_json(out) or {"rc": rc}
    if a.device == "cuda":
        for name, cmd in (("nvidia-smi", ["nvidia-smi"]), ("topo", ["nvidia-smi", "topo", "-m"])):
            if shutil.which(cmd[0]):
                rc, out, _ = run_cmd(name, cmd, 60)
                results["env"][name] = out.strip().splitlines()[-12:] if name == "topo" else None


def gpt2_fpt(seq: int, tiny: bool) -> float:
    if tiny:
        return gpt_flops_per_token(gpt2_matmul_params(50304, 64, 2), 2, 64, seq)
    return gpt_flops_per_token(gpt2_matmul_params(50304), 12, 768, seq)


def add_row(results: dict[str, Any], row: dict[str, Any], fpt: float) -> None:
    tps = row.get("tokens_per_s_per_gpu")
    if tps:
        row["mfu"] = round(mfu(tps, fpt), 4)
    results["rows"].append(row)
    log("ROW " + json.dumps(row))
    if RESULTS_PATH is not None:  # after every row: a killed call still returns what finished
        RESULTS_PATH.write_text(json.dumps(results, indent=1))


def phase_baselines(a: argparse.Namespace, results: dict[str, Any]) -> None:
    seq, batch = a.seq, a.batch
    common = ["--batch", str(batch), "--seq", str(seq), "--device", a.device] + (["--tiny"] if a.tiny else [])
    mini = str(HERE / "minimal_gpt2.py")
    steps = ["--steps", str(a.steps), "--warmup", str(a.warmup)]
    runs: list[tuple[str, list[str], int]] = [
        ("minimal_gpt2 1gpu", [sys.executable, mini, *common, *steps], 1)
    ]
    if a.gpus >= 2:
        runs.append(("minimal_gpt2 ddp", [*torchrun(a.gpus), mini, *common, *steps], a.gpus))
    hf = str(HERE / "hf_trainer_baseline.py")
    hf_steps = ["--steps", str(a.hf_steps), "--warmup", str(a.hf_warmup)]
    runs.append(("hf_trainer bf16", [sys.executable, hf, *common, *hf_steps], 1))
    runs.append(("hf_trainer bf16+compile", [sys.executable, hf, *common, *hf_steps, "--compile"], 1))
    for name, cmd, gpus in runs:
        if not wanted(a, name):
            continue
        rc, out, wall = run_cmd(name, cmd, a.timeout)
        res = last_json(out) or {}
        row = {"name": name, "gpus": gpus, "rc": rc, "wall_s": round(wall, 1), **res}
        add_row(results, row, gpt2_fpt(seq, a.tiny))


# --------------------------------------------------------------------------- the project's trainer


def trainer_steady_tps(metrics_file: Path, skip: int) -> dict[str, Any]:
    """Tokens/s per GPU over the logged steps after `skip` (compile, allocator and NCCL warm-up)."""
    recs = [json.loads(x) for x in metrics_file.read_text().splitlines() if x.strip().startswith("{")]
    train = [r for r in recs if "tokens_per_s" in r or "tokens_per_s_per_gpu" in r]
    steady = [r for r in train if r.get("step", 0) > skip] or train[-1:]
    key = "tokens_per_s_per_gpu" if steady and "tokens_per_s_per_gpu" in steady[0] else "tokens_per_s"
    vals = [float(r[key]) for r in steady]
    out: dict[str, Any] = {"logged_steps": [r.get("step") for r in steady], "tps_key": key}
    out["tokens_per_s_logged"] = round(statistics.median(vals), 1) if vals else None
    out["loss_first"] = train[0].get("loss") if train else None
    out["loss_last"] = train[-1].get("loss") if train else None
    out["trainer_mfu"] = steady[-1].get("mfu") if steady else None
    out["peak_mem_gib"] = steady[-1].get("peak_mem_gb") if steady else None
    return out


def find_metrics(run_dir: Path) -> Path | None:
    cands = sorted(run_dir.rglob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    return cands[-1] if cands else None


def run_trainer(
    a: argparse.Namespace,
    results: dict[str, Any],
    name: str,
    recipe: str,
    gpus: int,
    sets: list[str],
    fpt: float,
) -> None:
    if not wanted(a, name):
        return
    run_dir = Path(tempfile.mkdtemp(prefix="bench-", dir=a.scratch))
    user_sets = list(sets)
    sets = [
        *sets,
        f"train.output_dir={run_dir}",
        "train.plot=false",
        "train.eval_every=0",
        "train.checkpoint_every=0",
        f"train.log_every={a.trainer_log_every}",
        f"cluster.procs_per_node={gpus}",
        f"cluster.device={a.device}",
    ]
    args = ["-m", "rdmaops_trainer", "--recipe", recipe]
    for s in sets:
        args += ["--set", s]
    cmd = [*torchrun(gpus), *args] if gpus > 1 else [sys.executable, *args]
    rc, _out, wall = run_cmd(name, cmd, a.timeout)
    row: dict[str, Any] = {
        "name": name,
        "gpus": gpus,
        "rc": rc,
        "wall_s": round(wall, 1),
        "recipe": recipe,
        "sets": user_sets,
    }
    mf = find_metrics(run_dir)
    if mf is not None:
        try:
            row.update(trainer_steady_tps(mf, a.trainer_skip))
        except (ValueError, KeyError, json.JSONDecodeError) as exc:
            row["parse_error"] = repr(exc)
        if a.out:
            shutil.copy(mf, Path(a.out) / f"metrics-{name.replace(' ', '_')}.jsonl")
    tps = row.get("tokens_per_s_logged")
    if tps is not None and row.get("tps_key") == "tokens_per_s":
        tps = tps / gpus  # the trainer logged the global rate
    row["tokens_per_s_per_gpu"] = tps
    add_row(results, row, fpt)
    shutil.rmtree(run_dir, ignore_errors=True)


def phase_trainer(a: argparse.Namespace, results: dict[str, Any]) -> None:
    seq, steps = a.seq, a.trainer_steps
    gpt2_sets = [
        "data.kind=synthetic",
        "tokenizer.kind=byte",
        f"data.seq_len={seq}",
        f"train.steps={steps}",
        f"train.micro_batch_size={a.batch}",
        "train.warmup_steps=2",
    ]
    if a.tiny:
        gpt2_sets += [
            "model.config.n_layer=2",
            "model.config.n_embd=64",
            "model.config.n_head=4",
            f"model.config.block_size={seq}",
        ]
    for gpus in [1, 2] if a.gpus >= 2 else [1]:
        sets = [*gpt2_sets, f"train.global_batch_size={a.batch * gpus}"]
        run_trainer(a, results, f"trainer gpt2 ddp {gpus}gpu", "gpt2", gpus, sets, gpt2_fpt(seq, a.tiny))
    if a.gpus < 2:
        return
    q = dict(QWEN15B)
    q_seq, q_mb = a.qwen_seq, a.qwen_micro
    q_sets = [
        f"data.seq_len={q_seq}",
        f"train.steps={steps}",
        f"train.micro_batch_size={q_mb}",
        f"train.global_batch_size={q_mb * 2 * a.qwen_accum}",
        "train.warmup_steps=2",
    ]
    if a.tiny:
        q.update({"d": 64, "layers": 2, "ffn": 128, "heads": 4, "kv_heads": 2, "vocab": 1024})
        q_sets += [
            "model.config.hidden_size=64",
            "model.config.num_hidden_layers=2",
            "model.config.intermediate_size=128",
            "model.config.num_attention_heads=4",
            "model.config.vocab_size=1024",
        ]
    if a.device == "cpu":
        q_sets.append("train.precision=auto")  # ZeRO-3 bf16 needs CUDA
    qfpt = gpt_flops_per_token(qwen2_matmul_params(**q), q["layers"], q["d"], q_seq)
    for strat in ("fsdp2", "zero3"):
        extra = [*q_sets, f"strategy.name={strat}", *a.qwen_set]
        run_trainer(a, results, f"trainer qwen1.5b {strat} 2gpu", "qwen1_5b", 2, extra, qfpt)


# --------------------------------------------------------------------------- table


def table(results: dict[str, Any]) -> str:
    rows = results["rows"]
    by = {r["name"]: r for r in rows}
    strong = by.get("minimal_gpt2 1gpu", {}).get("tokens_per_s_per_gpu")
    lines = [f"{'run':34} {'gpus':>4} {'tok/s/GPU':>11} {'MFU':>6} {'vs strong':>9} {'scaling':>8} {'rc':>4}"]
    one = {"minimal_gpt2 ddp": "minimal_gpt2 1gpu", "trainer gpt2 ddp 2gpu": "trainer gpt2 ddp 1gpu"}
    for r in rows:
        tps = r.get("tokens_per_s_per_gpu")
        vs = f"{tps / strong:.2f}x" if tps and strong and "gpt2" in r["name"] else ""
        base = by.get(one.get(r["name"], ""), {}).get("tokens_per_s_per_gpu")
        sc = f"{100 * tps / base:.1f}%" if tps and base else ""
        if sc:
            r["scaling_pct"] = round(100 * tps / base, 1)
        t = f"{tps:,.0f}" if tps else "-"
        m = f"{100 * r['mfu']:.1f}%" if r.get("mfu") is not None else "-"
        lines.append(f"{r['name']:34} {r['gpus']:>4} {t:>11} {m:>6} {vs:>9} {sc:>8} {r.get('rc', ''):>4}")
    return "\n".join(lines)


def main() -> None:
    global LOG, DEADLINE, RESULTS_PATH
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--phases", default="env,baselines,trainer")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true", help="tiny shapes and few steps (CPU smoke test)")
    ap.add_argument("--gpus", type=int, default=2)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=32, help="GPT-2 micro-batch per GPU, every GPT-2 row")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=15)
    ap.add_argument("--hf-steps", type=int, default=20)
    ap.add_argument("--hf-warmup", type=int, default=8)
    ap.add_argument("--trainer-steps", type=int, default=40)
    ap.add_argument("--trainer-log-every", type=int, default=10, help="the trainer syncs at log points")
    ap.add_argument(
        "--trainer-skip", type=int, default=10, help="logged steps left out of the trainer's rate"
    )
    ap.add_argument("--qwen-seq", type=int, default=2048)
    ap.add_argument("--qwen-micro", type=int, default=4)
    ap.add_argument("--qwen-accum", type=int, default=1)
    ap.add_argument("--qwen-set", action="append", default=[], help="extra --set for both qwen runs")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per run")
    ap.add_argument("--only", default="", help="comma-separated substrings of run names to run")
    ap.add_argument("--budget", type=int, default=0, help="seconds for the whole script; later runs are cut")
    ap.add_argument("--out", default=os.environ.get("OUT"))
    ap.add_argument("--scratch", default=None)
    a = ap.parse_args()
    if a.tiny:
        a.seq, a.batch, a.steps, a.warmup, a.hf_steps, a.hf_warmup = 64, 2, 2, 1, 2, 1
        a.trainer_steps, a.trainer_skip, a.qwen_seq, a.qwen_micro = 3, 1, 32, 1
        a.trainer_log_every = 1
    if a.device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    if a.out:
        Path(a.out).mkdir(parents=True, exist_ok=True)
        LOG = open(Path(a.out) / "run_all.log", "w")  # noqa: SIM115
        RESULTS_PATH = Path(a.out) / "results.json"
    if a.budget:
        DEADLINE = time.time() + a.budget
    results: dict[str, Any] = {"args": vars(a), "safe_env": SAFE_ENV, "rows": []}
    t0 = time.time()
    for ph in a.phases.split(","):
        {"env": phase_env, "baselines": phase_baselines, "trainer": phase_trainer}[ph](a, results)
    results["wall_s"] = round(time.time() - t0, 1)
    tab = table(results)
    results["table"] = tab.splitlines()
    if a.out:
        (Path(a.out) / "results.json").write_text(json.dumps(results, indent=1))
    log("\n" + json.dumps(results.get("env", {})))
    log(tab)


if __name__ == "__main__":
    main()
