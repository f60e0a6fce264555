"""FSDP2: ``fully_shard`` on every transformer block, then on the root (embeddings, final norm, head).

The mesh is one dimension over every rank, or with HSDP (``strategy.fsdp2.hsdp``, ``dp_mesh.py``) two:
("replicate", "shard"), a node's ranks along "shard", one rank per node along "replicate". FSDP2 then
reduce-scatters and all-gathers inside a node and all-reduces the gradient shards across nodes.

On CUDA with bf16: MixedPrecisionPolicy(param bf16, reduce as strategy.fsdp2.reduce_dtype says: fp32, or bf16
under HSDP by default, ``dp_mesh.reduce_dtype``) over fp32 sharded master weights.
On CPU (gloo) everything stays fp32, deterministic, so runs can be compared exactly.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.tensor import DTensor

from .. import dp_mesh
from ..checkpoint import dcp_load, dcp_save
from ..config import Recipe
from ..runtime import Runtime
from .base import Batch, Strategy


def mp_policy(compute_dtype: torch.dtype, reduce_dtype: str) -> MixedPrecisionPolicy:
    """No casts when computing in fp32; else parameters gathered in the compute dtype, gradients reduced in
    ``reduce_dtype`` (float32 or bfloat16: strategy.fsdp2.reduce_dtype as ``dp_mesh.reduce_dtype`` resolves
    it)."""
    if compute_dtype == torch.float32:
        return MixedPrecisionPolicy()
    return MixedPrecisionPolicy(param_dtype=compute_dtype, reduce_dtype=getattr(torch, reduce_dtype))


class FSDP2Strategy(Strategy):
    name = "fsdp2"

    def __init__(self, recipe: Recipe, runtime: Runtime) -> None:
        super().__init__(recipe, runtime)
        # plain FSDP2 or HSDP: the recipe, or the launcher's RDMAOPS_HSDP under strategy.fsdp2.hsdp auto
        self.mesh_plan = dp_mesh.plan(recipe, runtime.world_size, os.environ)
        fp32 = runtime.compute_dtype == torch.float32
        self.reduce_dtype, self.reduce_from = dp_mesh.reduce_dtype(recipe, self.mesh_plan, fp32)
        self.mesh_ranks: list[list[int]] = []

    def device_mesh(self) -> DeviceMesh:
        p = self.mesh_plan
        if not p.hybrid:
            return init_device_mesh(self.rt.device.type, (self.rt.world_size,))
        return init_device_mesh(self.rt.device.type, (p.replicate, p.shard), mesh_dim_names=dp_mesh.DIMS)

    def start_fields(self) -> dict[str, Any]:
        # the mesh as built: rows shard together (a node under HSDP), columns replicate
        return {
            "hsdp": self.mesh_plan.hybrid,
            "mesh": self.mesh_ranks,
            "mesh_from": self.mesh_plan.why,
            "reduce_dtype": self.reduce_dtype,
            "reduce_from": self.reduce_from,
        }

    @property
    def _broadcast_init(self) -> bool:
        # pretrained weights are read by rank 0 only and broadcast shard by shard after fully_shard
        m = self.recipe.model
        return m.kind == "hf" and m.init == "pretrained" and self.rt.world_size > 1

    def build_on_meta(self) -> bool:
        return self._broadcast_init and self.rt.rank != 0

    def takes_device_model(self) -> bool:
        # fully_shard shards a CUDA model in place; a broadcast init keeps rank 0's copy on the CPU
        return not self._broadcast_init

    def prepare(self, model: nn.Module) -> None:
        # trainable weights train in fp32 (frozen LoRA bases may stay bf16)
        for p in model.parameters():
            if p.requires_grad and p.dtype != torch.float32:
                p.data = p.data.float()
        full_sd = (model.state_dict() if self.rt.rank == 0 else {}) if self._broadcast_init else None
        mesh = self.device_mesh()
        self.mesh_ranks = mesh.mesh.reshape(-1, mesh.mesh.size(-1)).tolist()
        mp = mp_policy(self.rt.compute_dtype, self.reduce_dtype)
        reshard = self.recipe.strategy.fsdp2.reshard_after_forward
        blocks = model.blocks()  # type: ignore[operator]
        self.blocks = blocks
        for block in blocks:
            if self.recipe.train.compile:
                block.compile()
            fully_shard(block, mesh=mesh, reshard_after_forward=reshard, mp_policy=mp)
        fully_shard(model, mesh=mesh, reshard_after_forward=reshard, mp_policy=mp)
        if full_sd is not None:
            if any(p.is_meta for p in model.parameters()):
                model.to_empty(device=self.rt.device)
            opts = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True)
            set_model_state_dict(model, full_sd, options=opts)
            # non-persistent buffers (rotary inv_freq) are not in the state dict
            for buf in model.buffers():
                dist.broadcast(buf, src=0)
        if self.recipe.train.compile:
            self.compile_loss(model)
        self.model = model
        self.optimizer = self.build_optimizer(model.named_parameters())

    def forward_backward(self, batch: Batch, loss_scale: float, sync: bool) -> torch.Tensor:
        b = self.to_device(batch)
        model = self.module()
        opts = self.recipe.strategy.fsdp2
        # skip the reduce-scatter on all but the last micro-batch (gradients accumulate unsharded), unless
        # the shards accumulate (reduce_every_micro_batch)
        model.set_requires_gradient_sync(sync or opts.reduce_every_micro_batch)  # type: ignore[operator]
        if opts.unshard_during_accumulation:
            for block in self.blocks:
                block.set_reshard_after_forward(opts.reshard_after_forward if sync else False)  # type: ignore[operator]
            model.set_reshard_after_backward(sync)  # type: ignore[operator]
        loss = model(b["input_ids"], b["labels"])
        (loss * loss_scale).backward()
        return loss.detach()

    def optimizer_step(self, lr: float) -> torch.Tensor:
        assert self.optimizer is not None
        self.set_lr(lr)
        clip = self.recipe.train.grad_clip or float("inf")
        norm = torch.nn.utils.clip_grad_norm_(self.trainable_parameters(), clip)
        if isinstance(norm, DTensor):
            norm = norm.full_tensor()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return norm.detach()

    @torch.no_grad()
    def eval_loss(self, batch: Batch) -> torch.Tensor:
        b = self.to_device(batch)
        model = self.module()
        model.eval()
        try:
            return model(b["input_ids"], b["labels"]).detach()
        finally:
            model.train()

    def save(self, path: Path) -> None:
        assert self.optimizer is not None
        dcp_save(self.module(), self.optimizer, path)

    def load(self, path: Path) -> None:
        assert self.optimizer is not None
        dcp_load(self.module(), self.optimizer, path)
