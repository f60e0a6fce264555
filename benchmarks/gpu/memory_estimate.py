"""The memory estimate of train.yml's preflight against the peak a short real training measures, on one GPU.

    python3 benchmarks/gpu/memory_estimate.py --out $OUT                  # every row, one GPU
    python3 benchmarks/gpu/memory_estimate.py --out $OUT --only zero3     # rows whose name contains it
    python3 benchmarks/gpu/memory_estimate.py --device cpu --tiny         # the code path here, tiny shapes
    python3 benchmarks/gpu/memory_estimate.py --out $OUT --only zero3 --set train.micro_batch_size=16 \
        --set train.global_batch_size=16                                  # rows with other values

The estimate is the trainer's (``rdmaops_trainer.recipe_estimate``: the per-GPU peak of a layout from the
model's config, what train.yml compares with the GPUs' memory before a launch). Each row trains a few
optimizer steps of a recipe through run_all.py's runner (``bench_rows.trainer_run``,
``bench_runner.execute``: its own process group, NVLink multicast off, ``CUDA_VISIBLE_DEVICES=0``) and reads
the trainer's ``peak_mem_gb`` (``torch.cuda.max_memory_allocated`` over the run). Rows:

- ``gpt2 ddp``: the ``gpt2`` recipe (DDP, compiled, fused loss and MLP, bf16 residual), micro-batch 64 x
  1024, two micro-batches per step;
- ``qwen1.5b fsdp2`` and ``qwen1.5b zero3``: the ``qwen1_5b`` recipe (Qwen2.5-1.5B shape, compiled, fused
  loss), micro-batch 12 x 2048, two per step, under FSDP2 and under DeepSpeed ZeRO-3;
- ``glm-arch lora``: the ``glm`` recipe's LoRA, bf16 and gradient checkpointing on GLM-4.5-Air's layers at
  8 layers and 32 routed experts (``model_shapes.GLM_1GPU``, 6.2 B parameters), micro-batch 2 x 4096, two
  per step.

Prints one line per row (estimate and its parts, measured peak, error in %) and a table; writes
``memory_estimate.json`` to --out. With ``--device cpu`` the peak is the process's RSS, not comparable with a
GPU estimate: the CPU run checks that every row builds, trains and is estimated, nothing more.

Needs torch, transformers and peft (the glm row), as the cluster venv has them, and DeepSpeed for the ZeRO-3
row. The lent GPU machine has no DeepSpeed: carry its wheel and hjson's and pydantic's in ``.whl`` as
docs/benchmarks.md says (``DS_BUILD_OPS=0 pip wheel --no-deps --no-build-isolation deepspeed==0.19.8``),
install them with ``pip install --no-index --no-deps --target /tmp/site .whl/*.whl`` and run with
``PYTHONPATH=/tmp/site``; without it that row fails (its rc and log name the import) and the others run.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from bench_rows import trainer_run
from bench_runner import SESSION, execute, log
from model_shapes import GLM_1GPU, TINY_GLM
from rdmaops_trainer import RecipeError, ShapeUnknown, load_recipe, recipe_estimate

# the fixed settings of a trainer row (bench_rows.trainer_run), less its output directory
FIXED = ["train.plot=false", "train.eval_every=0", "train.checkpoint_every=0"]
SYNTHETIC = ["data.kind=synthetic", "tokenizer.kind=byte", "tokenizer.path=null", "data.eval_path=null"]


def rows(tiny: bool, cpu: bool) -> dict[str, tuple[str, list[str]]]:
    """name -> (recipe, its --set values): one GPU, one node, a few steps."""
    steps = ["cluster.nodes=1", "train.steps=4" if tiny else "train.steps=10", "train.warmup_steps=1"]
    gpt2 = [*SYNTHETIC, *steps, "train.micro_batch_size=64", "train.global_batch_size=128"]
    qwen = [*SYNTHETIC, *steps, "train.micro_batch_size=12", "train.global_batch_size=24"]
    glm_shape: dict[str, Any] = dict(GLM_1GPU)
    glm = [
        *SYNTHETIC, *steps, "model.path=null", "model.init=random", "model.model_type=glm4_moe",
        "data.seq_len=4096", "train.micro_batch_size=2", "train.global_batch_size=4",
    ]  # fmt: skip
    if tiny:
        gpt2 += ["model.config.n_layer=2", "model.config.n_embd=64", "model.config.n_head=4"]
        gpt2 += ["data.seq_len=64", "model.config.block_size=64", "train.micro_batch_size=2"]
        gpt2 += ["train.global_batch_size=4"]
        qwen += ["model.config.hidden_size=64", "model.config.num_hidden_layers=2"]
        qwen += ["model.config.intermediate_size=128", "model.config.num_attention_heads=4"]
        qwen += ["model.config.vocab_size=1024", "data.seq_len=32", "train.micro_batch_size=2"]
        qwen += ["train.global_batch_size=4"]
        glm_shape = dict(TINY_GLM)
        glm += ["data.seq_len=32", "train.micro_batch_size=1", "train.global_batch_size=2"]
    if cpu:  # fp32 and eager on the CPU: the options that need a GPU or bf16 off
        gpt2 += ["train.compile=false", "train.bf16_residual=false", "train.fused_mlp=false"]
        qwen += ["train.compile=false", "train.precision=auto"]
        glm += ["train.compile=false", "train.precision=auto", "model.dtype=float32"]
    layers, first = glm_shape.get("num_hidden_layers", 46), glm_shape.get("first_k_dense_replace", 1)
    shared = glm_shape.get("n_shared_experts", 1)
    # LoRA tensors (A and B): 4 attention projections per layer, 3 dense MLP ones, 3 per shared expert MLP
    glm += [
        f"model.config={json.dumps(glm_shape)}",
        f"lora.expected_trainable_tensors={2 * (4 * layers + 3 * first + 3 * shared * (layers - first))}",
    ]
    return {
        "gpt2 ddp": ("gpt2", gpt2),
        "qwen1.5b fsdp2": ("qwen1_5b", [*qwen, "strategy.name=fsdp2"]),
        "qwen1.5b zero3": ("qwen1_5b", [*qwen, "strategy.name=zero3"]),
        "glm-arch lora": ("glm", glm),
    }


def estimate_row(recipe: str, sets: list[str], device: str) -> dict[str, Any]:
    """The trainer's estimate for a row, as its start record will say: GiB in total and by part."""
    try:
        rec = load_recipe(recipe, [*FIXED, "cluster.procs_per_node=1", f"cluster.device={device}", *sets])
        est = recipe_estimate(rec, cuda=device == "cuda")
    except (RecipeError, ShapeUnknown) as exc:
        return {"estimate_error": str(exc)}
    return {
        "estimate_gib": round(est.gib, 4),
        "estimate": est.describe(),
        "parts_gib": {k: round(v / 2**30, 2) for k, v in est.parts.items()},
    }


def error_pct(estimate: float | None, measured: float | None) -> float | None:
    """(estimate - measured) / measured in %, None where either is missing."""
    if not estimate or not measured:
        return None
    return round(100 * (estimate - measured) / measured, 1)


def table(results: list[dict[str, Any]]) -> str:
    lines = [f"{'row':18} {'estimate GiB':>13} {'measured GiB':>13} {'error':>8}  rc"]
    for r in results:
        est, peak, err = r.get("estimate_gib"), r.get("peak_mem_gib"), r.get("error_pct")
        cells = [
            f"{est:.3f}" if est else "-",
            f"{peak:.3f}" if peak else "-",
            f"{err:+.1f}%" if err is not None else "-",
        ]
        lines.append(f"{r['row']:18} {cells[0]:>13} {cells[1]:>13} {cells[2]:>8}  {r.get('rc', '')}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--tiny", action="store_true", help="tiny shapes and few steps (CPU smoke test)")
    ap.add_argument("--only", default="", help="comma-separated substrings of row names")
    ap.add_argument("--timeout", type=int, default=240, help="seconds per row")
    ap.add_argument("--out", default=os.environ.get("OUT"))
    ap.add_argument("--scratch", default=None)
    ap.add_argument("--set", action="append", default=[], help="KEY=VALUE for every row (after its own)")
    a = ap.parse_args()
    # what run_all.py's runner reads from its arguments
    a.trainer_log_every, a.trainer_skip, a.gpu_clocks = 2, 0, False
    a.out = a.out or tempfile.mkdtemp(prefix="memory-estimate-")
    Path(a.out).mkdir(parents=True, exist_ok=True)
    runner: dict[str, Any] = {"rows": []}
    results = []
    with open(Path(a.out) / "memory_estimate.log", "w", encoding="utf-8") as fh:
        SESSION.log = fh
        for name, (recipe, sets) in rows(a.tiny, a.device == "cpu").items():
            if a.only and not any(key in name for key in a.only.split(",")):
                continue
            sets = [*sets, *a.set]
            row: dict[str, Any] = {"row": name, "recipe": recipe, "sets": sets, "device": a.device}
            row.update(estimate_row(recipe, sets, a.device))
            execute(a, trainer_run(a, name, recipe, 1, sets, 0.0), runner)
            ran = runner["rows"][-1]
            row.update(rc=ran["rc"], peak_mem_gib=ran.get("peak_mem_gib"), wall_s=ran.get("wall_s"))
            row["error_pct"] = error_pct(row.get("estimate_gib"), row["peak_mem_gib"])
            results.append(row)
            log("MEMORY " + json.dumps(row))
        SESSION.log = None
    (Path(a.out) / "memory_estimate.json").write_text(json.dumps({"rows": results}, indent=1) + "\n")
    print(table(results))
    if a.device == "cpu":
        print("(cpu: the measured peak is the process's RSS, not comparable with the estimate)")


if __name__ == "__main__":
    main()
