"""Run every GPU benchmark of issue 4 on one machine and print one table.

    python3 benchmarks/gpu/run_all.py                       # every core row (2x H200)
    python3 benchmarks/gpu/run_all.py --only minimal,hf_    # rows whose name contains one of these
    python3 benchmarks/gpu/run_all.py --list                # the row names (core and experiments)
    python3 benchmarks/gpu/run_all.py --tiny --device cpu   # CPU smoke test of every code path
    python3 benchmarks/gpu/run_all.py --merge a.json b.json # one table from several results.json

Rows: the minimal compiled GPT-2 (1 and 2 GPUs), the Hugging Face Trainer (bf16; bf16 + torch_compile), the
project's trainer with recipe gpt2 (DDP, 1 and 2 GPUs, at the baseline's batch and at the recipe's own
512-sequence batch) and recipe qwen1_5b (FSDP2 and ZeRO-3, 2 GPUs). Rows named "exp ..." are experiments,
run only when --only names them. MFU is computed here for every row from tokens/s per GPU with the trainer's
FLOPs count (rdmaops_trainer.mfu; the shapes in model_shapes.py). Every child gets the NVLink-multicast-off
variables that the device machine requires; one-GPU rows get CUDA_VISIBLE_DEVICES=0. Results go to OUT
(default $OUT): results.json (rewritten after every row), run_all.log (every run's own output) and
trainer_metrics.jsonl (the trainer's metrics, by row). The rows are in bench_rows.py, running one in
bench_runner.py.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_rows import Run, build_runs
from bench_runner import SAFE_ENV, SESSION, check_env, cleanup, execute, log, with_baselines


def selected(a: argparse.Namespace, run: Run) -> bool:
    if not a.only:
        return not run.name.startswith("exp ")
    return any(_match(k, run.name) for k in a.only.split(","))


def _match(key: str, name: str) -> bool:
    """An --only entry: a substring of row names, or "=name" for exactly that row."""
    return name == key[1:] if key.startswith("=") else key in name


# --------------------------------------------------------------------------- table


def table(rows: list[dict[str, Any]], markdown: bool = False) -> str:
    by = {r["name"]: r for r in rows}
    strong = by.get("minimal_gpt2 1gpu", {}).get("tokens_per_s_per_gpu")
    head = f"{'run':42} {'gpus':>4} {'tok/s/GPU':>10} {'MFU':>6} {'vs strong':>9} {'scaling':>8} {'rc':>4}"
    lines = [head]
    if markdown:
        lines = ["| run | GPUs | tokens/s per GPU | MFU | vs strong baseline | 1->2 GPU scaling | peak GiB |"]
        lines.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        tps = r.get("tokens_per_s_per_gpu")
        vs = f"{tps / strong:.3f}x" if tps and strong and "gpt2" in r["name"] else ""
        base = by.get(r.get("pair", ""), {}).get("tokens_per_s_per_gpu")
        sc = f"{100 * tps / base:.1f}%" if tps and base else ""
        t = f"{tps:,.0f}" if tps else "-"
        m = f"{100 * r['mfu']:.1f}%" if r.get("mfu") else "-"
        if markdown:
            mem = f"{r['peak_mem_gib']:.1f}" if r.get("peak_mem_gib") else ""
            lines.append(f"| {r['name']} | {r['gpus']} | {t} | {m} | {vs} | {sc} | {mem} |")
            continue
        lines.append(f"{r['name']:42} {r['gpus']:>4} {t:>10} {m:>6} {vs:>9} {sc:>8} {r.get('rc', ''):>4}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true", help="tiny shapes and few steps (CPU smoke test)")
    ap.add_argument("--gpus", type=int, default=2)
    ap.add_argument("--no-env", action="store_true", help="skip the environment check")
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=32, help="GPT-2 micro-batch per GPU, every GPT-2 row")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=15)
    ap.add_argument("--acc-steps", type=int, default=8, help="timed steps of the gb512 minimal rows")
    ap.add_argument("--hf-steps", type=int, default=20)
    ap.add_argument("--hf-warmup", type=int, default=8)
    ap.add_argument("--trainer-steps", type=int, default=70)
    ap.add_argument("--acc-trainer-steps", type=int, default=14, help="steps of the gb512 trainer rows")
    ap.add_argument("--trainer-log-every", type=int, default=10, help="trainer steps per logged rate")
    ap.add_argument("--trainer-skip", type=int, default=10, help="steps left out of the trainer's rate")
    ap.add_argument("--recipe-global-batch", type=int, default=512)
    ap.add_argument("--recipe-micro", type=int, default=64, help="micro-batch of the gb rows (the recipe's)")
    ap.add_argument("--qwen-seq", type=int, default=2048)
    ap.add_argument("--qwen-micro", type=int, default=16)
    ap.add_argument("--qwen-accum", type=int, default=1, help="micro-batches per GPU per optimizer step")
    ap.add_argument("--qwen-steps", type=int, default=25)
    ap.add_argument("--qwen-log-every", type=int, default=5)
    ap.add_argument("--qwen-set", action="append", default=[], help="extra --set for both qwen runs")
    ap.add_argument("--glm-seq", type=int, default=4096)
    ap.add_argument("--glm-micro", type=int, default=2)
    ap.add_argument("--glm-accum", type=int, default=2, help="micro-batches per optimizer step")
    ap.add_argument("--glm-steps", type=int, default=12, help="steps of the trainer's glm rows")
    ap.add_argument("--glm-log-every", type=int, default=2)
    ap.add_argument("--glm-skip", type=int, default=4, help="glm steps left out of the trainer's rate")
    ap.add_argument("--glm-hf-steps", type=int, default=8)
    ap.add_argument("--glm-hf-warmup", type=int, default=4)
    ap.add_argument("--timeout", type=int, default=300, help="seconds per run")
    only_help = "comma-separated substrings of row names (=NAME: exactly that row), run in that order"
    ap.add_argument("--only", default="", help=only_help)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--budget", type=int, default=0, help="seconds for the whole script; later runs are cut")
    ap.add_argument("--merge", nargs="+", help="results.json files: print one table (later files win)")
    ap.add_argument("--markdown", action="store_true", help="with --merge: a Markdown table")
    ap.add_argument("--out", default=os.environ.get("OUT"))
    ap.add_argument("--scratch", default=None)
    clocks_help = "sample nvidia-smi during every row: SM clock, power and slowdown reasons (gpu_clocks.py)"
    ap.add_argument("--gpu-clocks", action="store_true", help=clocks_help)
    base_help = "another checkout's files/trainer: every trainer row also as '<row> @base' on that code"
    ap.add_argument("--baseline-trainer", default=None, help=base_help)
    a = ap.parse_args()
    if a.merge:
        merged: dict[str, dict[str, Any]] = {}
        for f in a.merge:
            for r in json.loads(Path(f).read_text())["rows"]:
                merged[r["name"]] = r
        print(table(list(merged.values()), markdown=a.markdown))
        return
    if a.tiny:
        a.seq, a.batch, a.steps, a.warmup, a.hf_steps, a.hf_warmup = 64, 2, 2, 1, 2, 1
        a.trainer_steps, a.trainer_skip, a.qwen_seq, a.qwen_micro = 3, 1, 32, 2
        a.qwen_steps, a.qwen_log_every = 3, 1
        a.acc_steps, a.acc_trainer_steps, a.recipe_global_batch, a.trainer_log_every = 1, 2, 8, 1
        a.recipe_micro = 2
        a.glm_seq, a.glm_micro, a.glm_steps, a.glm_log_every, a.glm_skip = 32, 1, 3, 1, 1
        a.glm_hf_steps, a.glm_hf_warmup = 2, 1
    if a.list:
        scratch = tempfile.mkdtemp()
        a.scratch = scratch
        for r in with_baselines(a, build_runs(a)):
            print(
                ("  " if selected(a, r) else "x ")
                + r.name
                + ("  [fallback: micro/2]" if r.fallback else "")
                + (f"  [env: {' '.join(f'{k}={v}' for k, v in sorted(r.env.items()))}]" if r.env else "")
            )
        shutil.rmtree(scratch)
        return
    if a.out:
        Path(a.out).mkdir(parents=True, exist_ok=True)
        SESSION.log = open(Path(a.out) / "run_all.log", "w")  # noqa: SIM115
        SESSION.results_path = Path(a.out) / "results.json"
    if a.budget:
        SESSION.deadline = time.time() + a.budget
    results: dict[str, Any] = {"args": vars(a), "safe_env": SAFE_ENV, "rows": []}
    t0 = time.time()
    if not a.no_env:
        check_env(a, results)
    runs = with_baselines(a, build_runs(a))
    if a.only:  # in the order --only names them: the most wanted first, in case the budget runs out
        keys = a.only.split(",")
        runs.sort(key=lambda r: next((i for i, k in enumerate(keys) if _match(k, r.name)), len(keys)))
    for run in runs:
        if selected(a, run):
            execute(a, run, results)
        else:
            cleanup(run)
    results["wall_s"] = round(time.time() - t0, 1)
    tab = table(results["rows"])
    results["table"] = tab.splitlines()
    if SESSION.results_path is not None:
        SESSION.results_path.write_text(json.dumps(results, indent=1))
    log("\n" + json.dumps(results.get("env", {})))
    log(tab)


if __name__ == "__main__":
    main()
