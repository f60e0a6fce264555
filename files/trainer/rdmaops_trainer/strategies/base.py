"""The contract every parallelism strategy implements.

Life cycle, driven by ``train.py`` (the same for every strategy):

1. ``strategy = get_strategy(recipe.strategy.name)(recipe, runtime)`` after the process group exists;
   ``strategy.layout`` (``layout.BatchLayout``) is how each step's batch is split over the ranks.
2. The trainer builds the model on CPU in fp32 with the recipe's seed (``models.build_model``) inside
   ``strategy.init_context()``, applies LoRA (``lora.apply_lora(model, recipe.lora)``) when
   ``recipe.lora.enabled`` and gradient checkpointing when ``recipe.train.gradient_checkpointing``,
   then calls ``strategy.prepare(model)``. ``prepare`` moves/shards/wraps the model, and creates the optimizer
   (``self.build_optimizer`` gives the project's AdamW so strategies agree numerically).
3. Every optimizer step: ``strategy.train_step(micro_batches, lr)``. The default implementation is the one
   place where gradient accumulation lives: ``forward_backward`` per micro-batch (loss scaled by
   1/len(micro_batches), gradient sync only on the last), then ``optimizer_step(lr)``. A strategy whose engine
   owns the schedule (pipeline) overrides ``train_step`` as a whole.
4. ``eval_loss(batch)`` under ``torch.no_grad`` semantics; ``save(path)`` / ``load(path)`` are collective
   (every rank calls them); ``export(path)`` writes a deployable artefact (LoRA adapter) where there is one.

Models seen by a strategy take ``model(input_ids, labels) -> scalar mean loss`` (labels already shifted, -100
ignored) and expose ``model.blocks() -> list[nn.Module]`` (the transformer blocks, the unit of sharding and
checkpointing). A batch is ``{"input_ids": LongTensor[B, T], "labels": LongTensor[B, T]}`` on CPU; strategies
move it to their device.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import torch
import torch.distributed as dist
from torch import nn

from ..config import Recipe
from ..layout import BatchLayout
from ..models import lm_loss
from ..runtime import Runtime

Batch = dict[str, torch.Tensor]


@dataclass
class StepResult:
    # mean loss over the step's micro-batches and data-parallel ranks (same value on every rank), detached
    loss: torch.Tensor
    # total gradient norm before clipping (same value on every rank)
    grad_norm: torch.Tensor


class Strategy(abc.ABC):
    """Base class; subclasses set ``name`` and implement the abstract methods."""

    name: ClassVar[str] = ""

    def __init__(self, recipe: Recipe, runtime: Runtime) -> None:
        self.recipe = recipe
        self.rt = runtime
        # how each step's batch is split over this run's ranks (the one place it is computed)
        self.layout = BatchLayout.from_recipe(recipe, runtime.world_size)
        self.model: nn.Module | None = None
        self.optimizer: torch.optim.Optimizer | None = None

    # ------------------------------------------------------------------ topology
    @property
    def dp_rank(self) -> int:
        """This process's index among the data-parallel replicas (selects its share of each batch)."""
        return self.rt.rank

    @property
    def dp_size(self) -> int:
        return self.layout.dp_size

    @property
    def dp_group(self) -> dist.ProcessGroup | None:
        """Group over which the loss is averaged (None: the whole world)."""
        return None

    @property
    def micro_batch_size(self) -> int:
        """Sequences per micro-batch handed to ``train_step`` on this rank."""
        return self.layout.micro_batch_size

    # ------------------------------------------------------------------ set-up
    def init_context(self) -> contextlib.AbstractContextManager[object]:
        """Context the trainer builds the model in (e.g. ``deepspeed.zero.Init`` to build it partitioned)."""
        return contextlib.nullcontext()

    def build_on_meta(self) -> bool:
        """True: the trainer builds this rank's model on the meta device (shapes only) and ``prepare``
        fills the weights (e.g. broadcast from rank 0), so a node does not hold one full copy per rank."""
        return False

    def takes_device_model(self) -> bool:
        """True: ``prepare`` also takes a model built on this rank's GPU (see ``train.build_device``)."""
        return False

    def start_fields(self) -> dict[str, Any]:
        """What the start record says about this strategy's layout, once ``prepare`` ran."""
        return {}

    @abc.abstractmethod
    def prepare(self, model: nn.Module) -> None:
        """Take ownership of ``model`` (fp32; on the CPU, or on this rank's GPU where ``takes_device_model``):
        move, shard or wrap it, then create ``self.optimizer``."""

    def build_optimizer(
        self, params: Iterator[tuple[str, nn.Parameter]] | None = None
    ) -> torch.optim.Optimizer:
        """The project's AdamW: decay on matrices only, fused on CUDA, plain for-loop on CPU (bit-stable)."""
        t = self.recipe.train
        named = list(params if params is not None else self.module().named_parameters())
        decay = [p for _, p in named if p.requires_grad and p.ndim >= 2]
        no_decay = [p for _, p in named if p.requires_grad and p.ndim < 2]
        groups = [
            {"params": decay, "weight_decay": t.weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ]
        groups = [g for g in groups if g["params"]]
        cuda = self.rt.is_cuda
        return torch.optim.AdamW(
            groups,
            lr=t.lr,
            betas=(t.beta1, t.beta2),
            eps=t.eps,
            fused=cuda,
            foreach=False if not cuda else None,
        )

    def module(self) -> nn.Module:
        """The (possibly wrapped) model."""
        if self.model is None:
            raise RuntimeError(f"strategy {self.name}: prepare() was not called")
        return self.model

    def trainable_parameters(self) -> list[nn.Parameter]:
        return [p for p in self.module().parameters() if p.requires_grad]

    # ------------------------------------------------------------------ training
    @abc.abstractmethod
    def forward_backward(self, batch: Batch, loss_scale: float, sync: bool) -> torch.Tensor:
        """Forward + backward of one micro-batch with loss * loss_scale; return the unscaled loss, detached.

        ``sync`` is False for all but the last micro-batch of a step: a strategy may skip its gradient
        reduction then (DDP no_sync, FSDP2 set_requires_gradient_sync(False)).
        """

    @abc.abstractmethod
    def optimizer_step(self, lr: float) -> torch.Tensor:
        """Set the learning rate, clip gradients to recipe.train.grad_clip (0: no clipping), step, zero grads.

        Returns the total gradient norm before clipping (a tensor; the caller decides when to sync).
        """

    def train_step(self, micro_batches: list[Batch], lr: float) -> StepResult:
        n = len(micro_batches)
        total = torch.zeros((), device=self.rt.device)
        for i, mb in enumerate(micro_batches):
            total += self.forward_backward(mb, loss_scale=1.0 / n, sync=i == n - 1)
        grad_norm = self.optimizer_step(lr)
        return StepResult(loss=self.average_over_dp(total / n), grad_norm=grad_norm)

    @abc.abstractmethod
    def eval_loss(self, batch: Batch) -> torch.Tensor:
        """Loss of one batch without gradients, detached, on this rank (not averaged)."""

    def average_over_dp(self, value: torch.Tensor) -> torch.Tensor:
        value = value.detach().clone()
        if dist.is_initialized() and self.dp_size > 1:
            # gloo has no ReduceOp.AVG
            dist.all_reduce(value, op=dist.ReduceOp.SUM, group=self.dp_group)
            value /= self.dp_size
        return value

    def set_lr(self, lr: float) -> None:
        assert self.optimizer is not None
        for group in self.optimizer.param_groups:
            group["lr"] = lr

    def to_device(self, batch: Batch) -> Batch:
        if not self.rt.is_cuda:
            return batch
        # pinned source: the copy is queued on the stream and the host does not wait for the GPU
        return {k: v.pin_memory().to(self.rt.device, non_blocking=True) for k, v in batch.items()}

    @staticmethod
    def compile_loss(model: nn.Module) -> None:
        """For train.compile: the compiled loss fuses the fp32 upcast into log-softmax, so no fp32 copy of
        the (batch x seq x vocab) logits is made. Models without a swappable ``loss_fn`` stay as they are."""
        if hasattr(model, "loss_fn"):
            model.loss_fn = torch.compile(lm_loss)

    def autocast(self) -> contextlib.AbstractContextManager[None]:
        """bf16 autocast for strategies that keep fp32 weights and no mixed-precision policy of their own."""
        if self.rt.compute_dtype == torch.float32:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.rt.device.type, dtype=self.rt.compute_dtype)

    # ------------------------------------------------------------------ checkpoints
    @abc.abstractmethod
    def save(self, path: Path) -> None:
        """Collective: write model + optimizer state under the directory ``path`` (created by the caller)."""

    @abc.abstractmethod
    def load(self, path: Path) -> None:
        """Collective: restore what ``save`` wrote, possibly from a run with another world size."""

    def export(self, path: Path) -> Path | None:
        """Write a deployable artefact (e.g. the LoRA adapter as safetensors) under ``path``; None if none.

        Collective. The default exports the LoRA adapter of a DDP/FSDP2/plain model (rank 0 writes).
        """
        if not self.recipe.lora.enabled:
            return None
        from ..lora import export_distributed

        return export_distributed(self.module(), path, self.rt.is_main)
