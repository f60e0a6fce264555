"""Pipeline parallelism for the GPT-2 model with torch.distributed.pipelining.

Ranks form a (data-parallel x stage) grid: rank = dp_index * stages + stage. With 2 stages and 12 layers:
stage 0 runs the embeddings + blocks 0-5, stage 1 blocks 6-11 + ln_f + head + loss. Each step's
per-replica batch is split into ``strategy.pipeline.microbatches`` micro-batches run by the schedule (1F1B
or GPipe); the schedule averages gradients over micro-batches, so it is the gradient accumulation.

The tied input/output embedding lives on two stages: stage 0's ``wte`` and the last stage's copy of it as
head weight start equal (same seeded init as the unsplit model), their gradients are summed between the two
stages every step, and both take the same AdamW update, so they stay equal - the unsplit model's arithmetic.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

from ..checkpoint import dcp_load, dcp_save
from ..config import Recipe, RecipeError
from ..models import GPT, lm_loss
from ..runtime import Runtime
from .base import Batch, StepResult, Strategy


class StageModule(nn.Module):
    """One contiguous slice of GPT: optional embeddings, some blocks, optional ln_f + head."""

    def __init__(self, gpt: GPT, first: int, last: int, has_embed: bool, has_head: bool) -> None:
        super().__init__()
        self.gradient_checkpointing = gpt.gradient_checkpointing
        self.has_embed, self.has_head = has_embed, has_head
        if has_embed:
            self.wte, self.wpe, self.drop = gpt.wte, gpt.wpe, gpt.drop
        self.h = nn.ModuleList(gpt.h[first:last])
        if has_head:
            self.ln_f = gpt.ln_f
            self.lm_head = nn.Linear(gpt.config.n_embd, gpt.config.vocab_size, bias=False)
            with torch.no_grad():
                # an untied copy: kept equal to stage 0's wte by the gradient sum in tie_gradients
                self.lm_head.weight.copy_(gpt.wte.weight)
        self.autocast_dtype: torch.dtype | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ctx = (
            torch.autocast(device_type=x.device.type, dtype=self.autocast_dtype)
            if self.autocast_dtype is not None
            else torch.autocast(device_type=x.device.type, enabled=False)
        )
        with ctx:
            if self.has_embed:
                pos = torch.arange(x.size(1), device=x.device)
                x = self.drop(self.wte(x) + self.wpe(pos))
            for block in self.h:
                if self.gradient_checkpointing and self.training:
                    x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
                else:
                    x = block(x)
            if self.has_head:
                x = self.lm_head(self.ln_f(x))
        return x

    def tied_weight(self) -> torch.Tensor | None:
        if self.has_embed:
            return self.wte.weight
        if self.has_head:
            return self.lm_head.weight
        return None


def split_layers(n_layer: int, stages: int) -> list[tuple[int, int]]:
    """Contiguous block ranges per stage, as even as possible (earlier stages get the remainder)."""
    if n_layer < stages:
        raise RecipeError(f"strategy.pipeline.stages: {stages} exceeds the model's {n_layer} layers")
    base, extra = divmod(n_layer, stages)
    bounds, start = [], 0
    for s in range(stages):
        end = start + base + (1 if s < extra else 0)
        bounds.append((start, end))
        start = end
    return bounds


class PipelineStrategy(Strategy):
    name = "pipeline"

    def __init__(self, recipe: Recipe, runtime: Runtime) -> None:
        # the base class builds self.layout: (data-parallel x stage) grid, micro-batches per replica
        super().__init__(recipe, runtime)
        self.stages = self.layout.pipeline_stages
        self.microbatches = self.layout.grad_accum
        self.mesh = init_device_mesh(runtime.device.type, self.layout.mesh_shape, mesh_dim_names=("dp", "pp"))
        self.stage_index = self.mesh.get_local_rank("pp")
        self._dp_rank = self.mesh.get_local_rank("dp")
        self.pp_group = self.mesh.get_group("pp")
        self._dp_group = self.mesh.get_group("dp")
        # first + last stage of every pipeline share the tied embedding; every rank creates every group
        self.tie_group: dist.ProcessGroup | None = None
        for d in range(self.dp_size):
            pipe = self.layout.pipeline_ranks(d)
            ranks = [pipe[0], pipe[-1]]
            group = dist.new_group(ranks)
            if runtime.rank in ranks:
                self.tie_group = group

    @property
    def dp_rank(self) -> int:
        return self._dp_rank

    @property
    def dp_group(self) -> dist.ProcessGroup | None:
        return self._dp_group

    @property
    def is_first(self) -> bool:
        return self.stage_index == 0

    @property
    def is_last(self) -> bool:
        return self.stage_index == self.stages - 1

    def prepare(self, model: nn.Module) -> None:
        if not isinstance(model, GPT):
            raise RecipeError(f"strategy.name: pipeline supports the gpt2 model, not {type(model).__name__}")
        first, last = split_layers(model.config.n_layer, self.stages)[self.stage_index]
        stage_mod = StageModule(model, first, last, self.is_first, self.is_last).to(self.rt.device)
        if self.rt.compute_dtype != torch.float32:
            stage_mod.autocast_dtype = self.rt.compute_dtype
        self.model = stage_mod
        self.stage = PipelineStage(
            stage_mod, self.stage_index, self.stages, self.rt.device, group=self.pp_group
        )
        cls = Schedule1F1B if self.recipe.strategy.pipeline.schedule == "1F1B" else ScheduleGPipe
        self.schedule = cls(self.stage, n_microbatches=self.microbatches, loss_fn=lm_loss)
        self.optimizer = self.build_optimizer(stage_mod.named_parameters())
        self.n_embd = model.config.n_embd

    # the schedule drives forward and backward; train_step is overridden as a whole
    def forward_backward(self, batch: Batch, loss_scale: float, sync: bool) -> torch.Tensor:
        raise NotImplementedError("pipeline: use train_step (the schedule runs all micro-batches)")

    def train_step(self, micro_batches: list[Batch], lr: float) -> StepResult:
        inputs = torch.cat([b["input_ids"] for b in micro_batches]).to(self.rt.device)
        labels = torch.cat([b["labels"] for b in micro_batches]).to(self.rt.device)
        losses: list[torch.Tensor] = []
        if self.is_first and self.is_last:  # pragma: no cover - stages >= 2 is validated
            raise RecipeError("strategy.pipeline.stages must be >= 2")
        if self.is_first:
            self.schedule.step(inputs)
        elif self.is_last:
            self.schedule.step(target=labels, losses=losses)
        else:
            self.schedule.step()
        loss = torch.zeros((), device=self.rt.device)
        if self.is_last:
            loss = torch.stack([x.detach().float() for x in losses]).mean()
        dist.broadcast(loss, group=self.pp_group, group_src=self.stages - 1)
        grad_norm = self.optimizer_step(lr)
        return StepResult(loss=self.average_over_dp(loss), grad_norm=grad_norm)

    def _sync_gradients(self) -> None:
        params = [p for p in self.trainable_parameters() if p.grad is not None]
        if self.dp_size > 1:
            for p in params:
                assert p.grad is not None
                dist.all_reduce(p.grad, group=self._dp_group)
                p.grad /= self.dp_size
        tied = self.module().tied_weight()  # type: ignore[operator]
        if tied is not None and tied.grad is not None and self.tie_group is not None:
            dist.all_reduce(tied.grad, group=self.tie_group)

    def optimizer_step(self, lr: float) -> torch.Tensor:
        assert self.optimizer is not None
        self._sync_gradients()
        self.set_lr(lr)
        params = [p for p in self.trainable_parameters() if p.grad is not None]
        # global norm over the whole model: per-stage sums of squares, the tied weight counted once
        sq = torch.zeros((), device=self.rt.device, dtype=torch.float32)
        dup = self.module().tied_weight() if self.is_last else None  # type: ignore[operator]
        for p in params:
            if p is not dup:
                assert p.grad is not None
                sq += p.grad.detach().float().pow(2).sum()
        dist.all_reduce(sq, group=self.pp_group)
        norm = sq.sqrt()
        clip = self.recipe.train.grad_clip
        if clip > 0 and math.isfinite(clip):
            # the same formula as torch.nn.utils.clip_grad_norm_
            coef = torch.clamp(clip / (norm + 1e-6), max=1.0)
            for p in params:
                assert p.grad is not None
                p.grad.mul_(coef)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return norm

    @torch.no_grad()
    def eval_loss(self, batch: Batch) -> torch.Tensor:
        """Forward only, with plain send/recv between neighbouring stages; the loss reaches every stage."""
        module = self.module()
        module.eval()
        try:
            b = self.to_device(batch)
            bsz, seq = b["input_ids"].shape
            pp_ranks = dist.get_process_group_ranks(self.pp_group)
            if self.is_first:
                x = b["input_ids"]
            else:
                x = torch.empty(bsz, seq, self.n_embd, device=self.rt.device)
                dist.recv(x, src=pp_ranks[self.stage_index - 1])
            out = module(x)
            loss = torch.zeros((), device=self.rt.device)
            if self.is_last:
                loss = lm_loss(out, b["labels"]).detach()
            else:
                dist.send(out.float().contiguous(), dst=pp_ranks[self.stage_index + 1])
            dist.broadcast(loss, group=self.pp_group, group_src=self.stages - 1)
            return loss
        finally:
            module.train()

    def save(self, path: Path) -> None:
        # one DCP checkpoint per stage, written by that stage's data-parallel replicas
        assert self.optimizer is not None
        dcp_save(self.module(), self.optimizer, path / f"stage{self.stage_index}", self._dp_group)

    def load(self, path: Path) -> None:
        assert self.optimizer is not None
        dcp_load(self.module(), self.optimizer, path / f"stage{self.stage_index}", self._dp_group)
