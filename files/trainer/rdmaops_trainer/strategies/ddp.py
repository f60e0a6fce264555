"""DDP: every rank holds the whole model; gradients all-reduced in buckets, overlapped with backward."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from ..checkpoint import dcp_load, dcp_save
from ..kernels import registry as kernels
from .base import Batch, Strategy


class DDPStrategy(Strategy):
    name = "ddp"

    def takes_device_model(self) -> bool:
        return True

    def prepare(self, model: nn.Module) -> None:
        self.raw = model.to(self.rt.device)
        kernels.convert(self.raw, self.recipe, "on_device")
        opts = self.recipe.strategy.ddp
        if self.rt.world_size > 1:
            self.model = DDP(
                self.raw,
                device_ids=[self.rt.device.index] if self.rt.is_cuda else None,
                bucket_cap_mb=opts.bucket_cap_mb,
                gradient_as_bucket_view=opts.gradient_as_bucket_view,
            )
        else:
            self.model = self.raw
        self.optimizer = self.build_optimizer(self.raw.named_parameters())
        # compile the wrapped module: DDPOptimizer splits the graph at bucket boundaries to keep overlap,
        # unless the recipe trades that overlap for one unsplit graph
        torch._dynamo.config.optimize_ddp = opts.optimize_ddp
        # train.cuda_graphs also changes the step below (kernels/cuda_graphs.py says why)
        self.cuda_graphs = "cuda_graphs" in kernels.convert(self.raw, self.recipe, "before_compile")
        self.forward: Any = torch.compile(self.model) if self.recipe.train.compile else self.model

    def forward_backward(self, batch: Batch, loss_scale: float, sync: bool) -> torch.Tensor:
        b = self.to_device(batch)
        model = self.module()
        ctx = model.no_sync() if (not sync and isinstance(model, DDP)) else contextlib.nullcontext()
        with ctx:
            if self.cuda_graphs:
                torch.compiler.cudagraph_mark_step_begin()
            with self.autocast():
                loss = self.forward(b["input_ids"], b["labels"])
            # under train.cuda_graphs the backward's replay may reuse the buffer of the forward's loss
            value = loss.detach().clone() if self.cuda_graphs else loss.detach()
            (loss * loss_scale).backward()
        return value

    def optimizer_step(self, lr: float) -> torch.Tensor:
        assert self.optimizer is not None
        self.set_lr(lr)
        clip = self.recipe.train.grad_clip or float("inf")
        norm = torch.nn.utils.clip_grad_norm_(self.trainable_parameters(), clip)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=not self.cuda_graphs)
        return norm.detach()

    @torch.no_grad()
    def eval_loss(self, batch: Batch) -> torch.Tensor:
        b = self.to_device(batch)
        self.raw.eval()
        try:
            with self.autocast():
                return self.raw(b["input_ids"], b["labels"]).detach()
        finally:
            self.raw.train()

    def save(self, path: Path) -> None:
        assert self.optimizer is not None
        dcp_save(self.raw, self.optimizer, path)

    def load(self, path: Path) -> None:
        assert self.optimizer is not None
        dcp_load(self.raw, self.optimizer, path)
