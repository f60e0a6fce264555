"""The training loop, the same for every strategy."""

from __future__ import annotations

import math
import os
from typing import Any

import torch

from . import checkpoint as ckpt
from .config import Recipe
from .data import StepSampler, eval_batches, load_datasets
from .flops import count_params, flops_per_token, peak_flops
from .kernels import registry as kernels
from .metrics import MetricsLogger, TrainLog, plot_loss
from .models import build_model, enable_gradient_checkpointing
from .pause import pause_at, pause_point
from .runtime import Runtime, attention_backends, recompile_limit_hits
from .strategies import Strategy, get_strategy
from .tokenizer import build_tokenizer


def lr_at(recipe: Recipe, step: int) -> float:
    """Linear warmup to train.lr, then cosine decay to train.min_lr at the last step."""
    t = recipe.train
    if step < t.warmup_steps:
        return t.lr * (step + 1) / t.warmup_steps
    span = max(1, t.steps - t.warmup_steps)
    progress = min(1.0, (step - t.warmup_steps) / span)
    return t.min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (t.lr - t.min_lr)


def step_seed(seed: int, step: int, rank: int) -> int:
    """RNG state (dropout, ...) is a function of the step, so a resume needs no saved RNG state."""
    return (seed * 1_000_003 + step * 7_919 + rank * 104_729) % (2**63 - 1)


def _model_vocab(recipe: Recipe) -> int:
    if recipe.model.kind == "gpt2":
        return int(recipe.model.config.get("vocab_size", 50304))
    from .models import hf_config

    return int(hf_config(recipe).vocab_size)


def _memory_estimate(recipe: Recipe, model: Any, strategy: Strategy, rt: Runtime) -> float | None:
    """The estimate of this layout's peak per GPU in GiB, from the built model's config (None where the
    estimate does not model it)."""
    from .memory import recipe_estimate
    from .model_shape import ShapeUnknown

    config = model.hf.config.to_dict() if hasattr(model, "hf") else None
    hybrid = bool(getattr(getattr(strategy, "mesh_plan", None), "hybrid", False))
    try:
        return round(recipe_estimate(recipe, config, hybrid, rt.is_cuda).gib, 2)
    except ShapeUnknown:
        return None


def fits_on_device(need_bytes: int, free_bytes: int) -> bool:
    """A full model may be built on the GPU when it takes at most half of the free memory (the other
    half: activations, gradients and optimizer state, and for FSDP2 the shards made from it)."""
    return need_bytes <= free_bytes // 2


def build_device(recipe: Recipe, rt: Runtime, strategy: Strategy, vocab: int) -> torch.device | str:
    """Where this rank builds its model.

    A random init runs on the GPU when the strategy takes such a model and it fits: on the CPU it is slow (a
    6.2 B-parameter GLM-architecture model had not started training after 220 s on a 16-core GPU machine;
    the same init on its H100 takes seconds). Pretrained weights and models too big for the GPU are built
    on the CPU.
    """
    if not (rt.is_cuda and recipe.model.init == "random" and strategy.takes_device_model()):
        return "cpu"
    shapes = build_model(recipe, vocab_size=vocab, device="meta")
    need = sum(p.numel() * p.element_size() for p in shapes.parameters())
    free, _total = torch.cuda.mem_get_info(rt.device)
    return rt.device if fits_on_device(need, free) else "cpu"


def run(recipe: Recipe, rt: Runtime) -> dict[str, Any]:
    """Train (or resume) the recipe; the process group must exist. Returns a summary (every rank)."""
    with attention_backends(recipe.train.attention), recompile_limit_hits() as hits:
        return _run(recipe, rt, hits)


def _run(recipe: Recipe, rt: Runtime, recompile_hits: list[str]) -> dict[str, Any]:
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    out = recipe.output_dir
    pause = pause_point(os.environ)  # a test hook; a bad value is named before anything is built
    logger = MetricsLogger(out / "metrics.jsonl" if rt.is_main else None)
    strategy: Strategy = get_strategy(recipe.strategy.name)(recipe, rt)

    tok = build_tokenizer(recipe) if recipe.data.kind != "synthetic" else None
    vocab = tok.vocab_size if tok is not None else _model_vocab(recipe)
    train_data, eval_data = load_datasets(recipe, tok, vocab)

    # what the opt-in options need of this rank (a GPU they run on, their package), before any model is built
    kernels.check_rank(recipe, rt)
    where = "meta" if strategy.build_on_meta() else build_device(recipe, rt, strategy, vocab)
    with strategy.init_context():
        model = build_model(recipe, vocab_size=vocab, device=where)
    n_params = count_params(model)
    converted = kernels.counts(model)
    fpt = flops_per_token(model, recipe.data.seq_len)
    if recipe.lora.enabled:
        from .lora import apply_lora  # owned by the LoRA work; imports peft

        model = apply_lora(model, recipe.lora)
    if recipe.train.gradient_checkpointing:
        enable_gradient_checkpointing(model)
    model.train()
    strategy.prepare(model)

    start_step = 0
    if recipe.train.resume == "auto":
        latest = ckpt.latest_checkpoint(out)
        if latest is not None:
            strategy.load(latest)
            start_step = int(ckpt.read_meta(latest)["step"])
    t = recipe.train
    layout = strategy.layout
    peak = peak_flops(rt.device, rt.compute_dtype)
    logger.log(
        "start",
        recipe=recipe.name,
        strategy=recipe.strategy.name,
        world_size=rt.world_size,
        **strategy.start_fields(),
        device=str(rt.device.type),
        dtype=str(rt.compute_dtype).replace("torch.", ""),
        params=n_params,
        # a ZeRO-3 parameter is an empty placeholder outside its gather; ds_numel is its full size
        trainable_params=sum(getattr(p, "ds_numel", p.numel()) for p in strategy.trainable_parameters()),
        flops_per_token=fpt,
        **converted,
        train_blocks=len(train_data),
        eval_blocks=len(eval_data),
        micro_batches_per_step=layout.grad_accum,
        # what train.yml's preflight compared with the GPUs' memory (memory.py), beside peak_mem_gb
        memory_estimate_gib=_memory_estimate(recipe, model, strategy, rt),
        start_step=start_step,
        steps=t.steps,
    )

    sampler = StepSampler(len(train_data), layout.global_batch_size, recipe.seed)
    evals = eval_batches(eval_data, t.eval_batches, strategy.dp_rank, layout)
    train_log = TrainLog(logger, rt.device, layout.tokens_per_step, rt.world_size, fpt, peak)
    last_eval: float | None = None
    pause_at(pause, "start")
    steps_run = 0
    step = start_step
    for step in range(start_step, t.steps):
        torch.manual_seed(step_seed(recipe.seed, step, rt.rank))
        lr = lr_at(recipe, step)
        batches = sampler.micro_batches(train_data, step, strategy.dp_rank, layout)
        result = strategy.train_step(batches, lr)
        steps_run += 1
        done = step + 1
        log_point = done % t.log_every == 0 or done == t.steps
        train_log.step_done(done, lr, result.loss, result.grad_norm, log_point)
        evaluate_now = bool(t.eval_every) and done % t.eval_every == 0
        save_now = bool(t.checkpoint_every) and (done % t.checkpoint_every == 0 or done == t.steps)
        stop_now = bool(t.stop_after) and steps_run >= t.stop_after
        if done == t.steps or evaluate_now or save_now or stop_now:
            train_log.flush()
        if evaluate_now:
            last_eval = evaluate(strategy, evals)
            logger.log("eval", step=done, eval_loss=last_eval)
            train_log.restart_window()
        if save_now:
            meta = {"recipe": recipe.name, "world_size": rt.world_size, "loss": train_log.last_loss}
            path = ckpt.save_checkpoint(strategy, out, done, meta, t.keep_checkpoints)
            logger.log("checkpoint", step=done, path=str(path))
            pause_at(pause, f"checkpoint@{done}")
            train_log.restart_window()
        if stop_now:
            break
    final_step = step + 1 if steps_run else start_step
    exported = strategy.export(out / "export") if final_step == t.steps else None
    end: dict[str, Any] = {"step": final_step, "loss": train_log.last_loss, "eval_loss": last_eval}
    if t.compile:
        # how much of the model dynamo captured on this rank: graph breaks show up as extra graphs
        from torch._dynamo.utils import counters

        end["compiled_graphs"] = int(counters["stats"]["unique_graphs"])
        end["graph_breaks"] = int(sum(counters["graph_break"].values()))
        end["recompile_limit_hits"] = list(recompile_hits)
        if recompile_hits and rt.is_main:
            print(
                f"warning: train.compile: {', '.join(recompile_hits)} hit torch._dynamo's recompile limit "
                "and ran eager from then on (TORCH_LOGS=recompiles shows why)",
                flush=True,
            )
    pause_at(pause, "end")
    logger.log("end", **end, export=str(exported or ""))
    if logger.active:
        logger.close()
        if t.plot:
            plot_loss(out / "metrics.jsonl", out / "loss.png", f"{recipe.name} ({recipe.strategy.name})")
    return {"step": final_step, "loss": train_log.last_loss, "eval_loss": last_eval}


def evaluate(strategy: Strategy, batches: list[dict[str, torch.Tensor]]) -> float:
    total = torch.zeros((), device=strategy.rt.device)
    for b in batches:
        total += strategy.eval_loss(b)
    return float(strategy.average_over_dp(total / len(batches)).item())
