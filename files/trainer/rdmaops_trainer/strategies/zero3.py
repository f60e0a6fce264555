"""DeepSpeed ZeRO-3: parameters, gradients and optimizer state partitioned over the data-parallel ranks.

The DeepSpeed config is generated from the recipe (``ds_config``). The optimizer is the project's AdamW
(``Strategy.build_optimizer``) handed to ``deepspeed.initialize`` as a client optimizer, so that on CPU the
update is the same arithmetic as FSDP2's and the two loss curves agree. Checkpoints are DeepSpeed's own
(``engine.save_checkpoint``); a resume on another world size goes through DeepSpeed's universal checkpoint
(``ds_to_universal`` then ``load_universal``).

On CPU DeepSpeed runs with its CPU accelerator over gloo (oneCCL is optional: without
``oneccl_bindings_for_pytorch`` the accelerator falls back to gloo). The only op it would JIT-compile on
that path is the shared-memory all-reduce used by inference; it is switched off so a CPU run needs no
compiler and no build cache.
"""

from __future__ import annotations

import argparse
import math
import os
import re
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from ..config import Recipe, RecipeError
from ..layout import BatchLayout
from ..models import head_weight
from ..runtime import Runtime
from .base import Batch, Strategy

# engine.save_checkpoint(path, tag=TAG) writes path/TAG/*.pt and path/latest
TAG = "zero3"
UNIVERSAL_TAG = "zero3_universal"
_MODEL_STATES = re.compile(r"zero_pp_rank_(\d+)_mp_rank_\d+_model_states\.pt$")


def ds_config(recipe: Recipe, dp_size: int, cuda: bool) -> dict[str, Any]:
    """The DeepSpeed config for ``recipe`` on ``dp_size`` data-parallel ranks (pure: unit-tested)."""
    t, z = recipe.train, recipe.strategy.zero3
    # ZeRO-3 has no pipeline: dp_size ranks split the batch (errors call them "data-parallel ranks")
    layout = BatchLayout.from_recipe(recipe, dp_size, source=None)
    for key in ("reduce_bucket_size", "prefetch_bucket_size", "max_live_parameters", "max_reuse_distance"):
        if getattr(z, key) <= 0:
            raise RecipeError(f"strategy.zero3.{key}: {getattr(z, key)!r} must be > 0")
    if z.param_persistence_threshold < 0:
        raise RecipeError(
            f"strategy.zero3.param_persistence_threshold: {z.param_persistence_threshold!r} must be >= 0"
        )
    if t.compile and not z.leaf_blocks:
        raise RecipeError(
            "train.compile: true with strategy zero3 needs strategy.zero3.leaf_blocks: true (DeepSpeed's "
            "per-submodule hooks would break the compiled graph at every Linear)"
        )
    if t.compile and recipe.lora.enabled:
        raise RecipeError(
            "train.compile: true with strategy zero3 and lora.enabled: not supported; compiled blocks need "
            "leaf blocks, which DeepSpeed cannot use with frozen (LoRA base) weights; use train.compile: "
            "false"
        )
    precision = t.precision if t.precision != "auto" else ("bf16" if cuda else "fp32")
    if precision == "bf16" and not cuda:
        # DeepSpeed's CPU accelerator has no bf16 ZeRO-3 path worth testing; fp32 is what the CPU recipes use.
        raise RecipeError("train.precision: 'bf16' with strategy zero3 needs CUDA; use fp32 (or auto) on CPU")
    # DeepSpeed's F.linear replacement inside a compiled block made every block recompile (config.py)
    memory_efficient_linear = (
        not t.compile if z.memory_efficient_linear is None else z.memory_efficient_linear
    )
    zero: dict[str, Any] = {
        "stage": 3,
        "overlap_comm": z.overlap_comm,
        "contiguous_gradients": z.contiguous_gradients,
        "reduce_bucket_size": z.reduce_bucket_size,
        "stage3_prefetch_bucket_size": z.prefetch_bucket_size,
        "stage3_param_persistence_threshold": z.param_persistence_threshold,
        "stage3_max_live_parameters": z.max_live_parameters,
        "stage3_max_reuse_distance": z.max_reuse_distance,
        "stage3_gather_16bit_weights_on_model_save": z.gather_16bit_weights_on_model_save,
        "memory_efficient_linear": memory_efficient_linear,
    }
    if z.offload_optimizer:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": cuda}
    if z.offload_params:
        zero["offload_param"] = {"device": "cpu", "pin_memory": cuda}
    return {
        "train_micro_batch_size_per_gpu": layout.micro_batch_size,
        "gradient_accumulation_steps": layout.grad_accum,
        "gradient_clipping": t.grad_clip,
        "bf16": {"enabled": precision == "bf16"},
        "fp16": {"enabled": False},
        "zero_optimization": zero,
        # the client optimizer is torch's AdamW (or DeepSpeedCPUAdam with offload): both fine with ZeRO-3
        "zero_allow_untested_optimizer": True,
        "zero_force_ds_cpu_optimizer": False,
        # the trainer logs; DeepSpeed's own per-step prints would interleave with it
        "steps_per_print": 2**31 - 1,
        "wall_clock_breakdown": False,
    }


def saved_dp_world_size(ckpt_dir: Path) -> int:
    """World size a DeepSpeed ZeRO checkpoint (``ckpt_dir`` = the tag directory) was written with."""
    ranks = [int(m.group(1)) for p in ckpt_dir.iterdir() if (m := _MODEL_STATES.match(p.name))]
    if not ranks:
        raise FileNotFoundError(f"{ckpt_dir}: no DeepSpeed ZeRO model states (zero_pp_rank_*_model_states)")
    return max(ranks) + 1


def convert_to_universal(ckpt_root: Path, tag: str = TAG, out_tag: str = UNIVERSAL_TAG) -> Path:
    """Run DeepSpeed's ``ds_to_universal`` on ``ckpt_root/tag`` into ``ckpt_root/out_tag`` (one process)."""
    from deepspeed.checkpoint import ds_to_universal

    out = ckpt_root / out_tag
    tmp = ckpt_root / f"{out_tag}.tmp"
    args = argparse.Namespace(
        input_folder=str(ckpt_root / tag),
        output_folder=str(tmp),
        num_extract_workers=1,
        num_merge_workers=1,
        keep_temp_folder=False,
        strict=True,
        inject_missing_state=False,
    )
    ds_to_universal.main(args)
    # rename last, so a crash mid-conversion never leaves a half universal checkpoint that looks complete
    tmp.rename(out)
    return out


def _use_accelerator(cuda: bool) -> None:
    """Pin DeepSpeed's accelerator to the runtime's device (its auto-detection looks at the install)."""
    os.environ["DS_ACCELERATOR"] = "cuda" if cuda else "cpu"
    from deepspeed.accelerator import get_accelerator, set_accelerator

    if get_accelerator().device_name() == ("cuda" if cuda else "cpu"):
        return
    if cuda:
        from deepspeed.accelerator.cuda_accelerator import CUDA_Accelerator

        set_accelerator(CUDA_Accelerator())
    else:
        from deepspeed.accelerator.cpu_accelerator import CPU_Accelerator

        set_accelerator(CPU_Accelerator())


class Zero3Strategy(Strategy):
    name = "zero3"

    def __init__(self, recipe: Recipe, runtime: Runtime) -> None:
        super().__init__(recipe, runtime)
        # DeepSpeed insists on LOCAL_RANK, which a plain one-process `python -m rdmaops_trainer` lacks
        os.environ.setdefault("LOCAL_RANK", str(runtime.local_rank))
        _use_accelerator(runtime.is_cuda)
        import deepspeed
        import deepspeed.ops

        if not runtime.is_cuda:
            # the shm all-reduce op serves inference only and would be JIT-compiled at init
            deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False
        self.config = ds_config(recipe, self.dp_size, runtime.is_cuda)
        self.engine: Any = None

    @property
    def grad_accum(self) -> int:
        return int(self.config["gradient_accumulation_steps"])

    # ------------------------------------------------------------------ set-up
    def prepare(self, model: nn.Module) -> None:
        import deepspeed

        if self.rt.is_cuda:
            model = model.to(self.rt.device)
        self._blockwise(model)
        if getattr(model, "fused_loss", False):
            # the fused loss reads the head's weight in the root's forward without running the head module,
            # whose hooks would gather it: registered on the root, it is gathered for the root's forward and
            # its gradient (made in that forward) is reduced as any other
            deepspeed.zero.register_external_parameter(model, head_weight(model))
        if self.recipe.strategy.zero3.offload_optimizer:
            optimizer = self._cpu_adam(model)
        else:
            optimizer = self.build_optimizer(model.named_parameters())
        # deepspeed.initialize reuses the process group the trainer created (torch.distributed is up).
        engine, ds_optimizer, _, _ = deepspeed.initialize(
            model=model,
            optimizer=optimizer,
            config=self.config,
            dist_init_required=False,
        )
        self.engine = engine
        self.model = engine
        self.optimizer = ds_optimizer

    def _blockwise(self, model: nn.Module) -> None:
        """Blocks as ZeRO-3 units and, with ``train.compile``, compiled blocks and loss.

        A leaf block gets DeepSpeed's hooks on the block only: its parameters are fetched with one coalesced
        all-gather before its forward (and again before its backward) and released after, instead of one
        hook pair and one small all-gather per Linear and norm. Compiling then covers the block's ``forward``
        (not ``_call_impl``): DeepSpeed's hooks run eagerly around the compiled graph, which sees plain, fully
        gathered parameters, so there are no graph breaks inside a block.
        """
        z, t = self.recipe.strategy.zero3, self.recipe.train
        blocks = model.blocks() if hasattr(model, "blocks") else []
        frozen = any(not p.requires_grad for b in blocks for p in b.parameters())
        if z.leaf_blocks and frozen:
            # DeepSpeed 0.19.8's backward hook of a leaf module reduces a gradient for every parameter of the
            # module, frozen ones included (a zero gradient where there is none); with LoRA's frozen base
            # weights the first backward fails ("size of tensor a (0) must match ..."). Per-Linear hooks then.
            if self.rt.is_main:
                print("zero3: blocks with frozen parameters (LoRA): per-submodule ZeRO-3 hooks", flush=True)
        elif z.leaf_blocks:
            from deepspeed.utils import set_z3_leaf_module

            for block in blocks:
                set_z3_leaf_module(block, True)
            largest = max((sum(p.numel() for p in b.parameters()) for b in blocks), default=0)
            if self.rt.is_main and z.prefetch_bucket_size < largest:
                # the prefetch queue fills up to the bucket: smaller than a block, the next block's parameters
                # are only partly gathered ahead and the rest waits for its forward (exposed communication)
                print(
                    f"zero3: strategy.zero3.prefetch_bucket_size {z.prefetch_bucket_size} is smaller than "
                    f"one block ({largest} parameters): only part of the next block is prefetched",
                    flush=True,
                )
        if t.compile:
            for block in blocks:
                block.forward = torch.compile(block.forward)  # type: ignore[method-assign]
            self.compile_loss(model)

    def _cpu_adam(self, model: nn.Module) -> torch.optim.Optimizer:
        """With the optimizer offloaded its step runs on the CPU: DeepSpeed's AVX CPU Adam (JIT-built)."""
        from deepspeed.ops.adam import DeepSpeedCPUAdam

        t = self.recipe.train
        trainable = [p for p in model.parameters() if p.requires_grad]
        groups = [
            {"params": [p for p in trainable if p.ndim >= 2], "weight_decay": t.weight_decay},
            {"params": [p for p in trainable if p.ndim < 2], "weight_decay": 0.0},
        ]
        return DeepSpeedCPUAdam(
            [g for g in groups if g["params"]],
            lr=t.lr,
            betas=(t.beta1, t.beta2),
            eps=t.eps,
            adamw_mode=True,
        )

    def module(self) -> nn.Module:
        if self.engine is None:
            raise RuntimeError("strategy zero3: prepare() was not called")
        return self.engine.module

    # ------------------------------------------------------------------ training
    def forward_backward(self, batch: Batch, loss_scale: float, sync: bool) -> torch.Tensor:
        # DeepSpeed owns accumulation: engine.backward scales by 1/gradient_accumulation_steps and
        # engine.step() is called after every micro-batch (it only updates at the boundary).
        if not math.isclose(loss_scale, 1.0 / self.grad_accum, rel_tol=1e-9):
            raise RuntimeError(
                f"zero3: {round(1 / loss_scale)} micro-batches per step, DeepSpeed was configured for "
                f"{self.grad_accum}"
            )
        batch = self.to_device(batch)
        loss = self.engine(batch["input_ids"], batch["labels"])
        self.engine.backward(loss)
        if not sync:
            self.engine.step()
        return loss.detach().float()

    def optimizer_step(self, lr: float) -> torch.Tensor:
        if not self.engine.is_gradient_accumulation_boundary():
            raise RuntimeError("zero3: optimizer_step called before the last micro-batch of the step")
        self.set_lr(lr)
        self.engine.step()
        norm = self.engine.get_global_grad_norm()
        return torch.as_tensor(0.0 if norm is None else norm, dtype=torch.float32).detach()

    def set_lr(self, lr: float) -> None:
        # the ZeRO-3 optimizer exposes the client optimizer's param groups (over its fp32 partitions)
        for group in self.engine.optimizer.param_groups:
            group["lr"] = lr

    def eval_loss(self, batch: Batch) -> torch.Tensor:
        batch = self.to_device(batch)
        self.engine.eval()
        try:
            with torch.no_grad():
                loss = self.engine(batch["input_ids"], batch["labels"])
        finally:
            self.engine.train()
        return loss.detach().float()

    # ------------------------------------------------------------------ checkpoints
    def save(self, path: Path) -> None:
        self.engine.save_checkpoint(str(path), tag=TAG, client_state={"dp_size": self.dp_size})

    def load(self, path: Path) -> None:
        tag_dir = path / TAG
        saved = saved_dp_world_size(tag_dir)
        if saved == self.dp_size:
            load_path, _ = self.engine.load_checkpoint(str(path), tag=TAG, load_lr_scheduler_states=False)
            if load_path is None:
                raise RuntimeError(f"zero3: DeepSpeed could not load the checkpoint in {tag_dir}")
            return
        # Another world size: ZeRO partitions are per rank, so reshard through the universal format
        # (one fp32 + Adam-moment file per parameter), converted once by rank 0 next to the original.
        if self.rt.is_main and not (path / UNIVERSAL_TAG).is_dir():
            convert_to_universal(path)
        dist.barrier()
        # DeepSpeed's universal loader copies param_groups[0]'s hyperparameters onto every group, which
        # would give the no-decay group (biases, norms) weight decay; the groups' own values are restored.
        groups = self.engine.optimizer.param_groups
        hyper = [{k: v for k, v in g.items() if k != "params"} for g in groups]
        # load_universal is read from the engine's config when loading; it changes nothing else.
        self.engine._config.load_universal_checkpoint = True
        try:
            load_path, _ = self.engine.load_checkpoint(
                str(path), tag=UNIVERSAL_TAG, load_optimizer_states=True, load_lr_scheduler_states=False
            )
        finally:
            self.engine._config.load_universal_checkpoint = False
        for group, values in zip(self.engine.optimizer.param_groups, hyper, strict=True):
            group.update(values)
        # ...and it puts one shared 'step' tensor into every sub-group's state: torch's AdamW increments
        # it in place once per group, so the bias correction would run ahead. One tensor each.
        inner = self.engine.optimizer.optimizer
        for state in inner.state.values():
            if torch.is_tensor(state.get("step")):
                state["step"] = state["step"].clone()
        if load_path is None:
            raise RuntimeError(f"zero3: DeepSpeed could not load {path / UNIVERSAL_TAG}")

    def export(self, path: Path) -> Path | None:
        if not self.recipe.lora.enabled:
            return None
        import deepspeed

        from ..lora import export_distributed

        module = self.module()
        adapters = [p for name, p in module.named_parameters() if ".lora_" in name]
        # the (small) adapter tensors are gathered from their ZeRO-3 partitions on every rank; rank 0 writes
        with deepspeed.zero.GatheredParameters(adapters, modifier_rank=None):
            return export_distributed(module, path, self.rt.is_main)
