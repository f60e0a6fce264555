"""Checkpoints: one directory per step, written collectively, marked complete last.

Layout under ``<output_dir>/checkpoints/step_00000100/``: the strategy's files (DCP shards for DDP/FSDP2,
DeepSpeed's own for ZeRO-3), ``meta.json`` (step, world size, recipe) and ``COMPLETE`` written by rank 0
after every rank has finished. A directory without ``COMPLETE`` (a crash mid-save) is ignored on resume.
The output directory must be shared by all nodes (DCP resharding reads every rank's shards).
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch import nn
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

MARKER = "COMPLETE"


def step_dir(root: Path, step: int) -> Path:
    return root / "checkpoints" / f"step_{step:08d}"


def _barrier() -> None:
    if dist.is_initialized():
        dist.barrier()


def list_checkpoints(root: Path) -> list[Path]:
    base = root / "checkpoints"
    if not base.is_dir():
        return []
    return sorted(p for p in base.glob("step_*") if (p / MARKER).is_file())


def latest_checkpoint(root: Path) -> Path | None:
    """The newest complete checkpoint, decided by rank 0 and broadcast (all ranks agree)."""
    found = list_checkpoints(root) if not dist.is_initialized() or dist.get_rank() == 0 else []
    choice: list[Any] = [str(found[-1]) if found else None]
    if dist.is_initialized():
        dist.broadcast_object_list(choice, src=0)
    return Path(choice[0]) if choice[0] else None


def completed_at(root: Path, steps: int) -> Path | None:
    """The newest complete checkpoint if it is at or past ``steps`` (the run is finished), else None.

    Reads the shared output directory without a process group, so every rank decides the same before any
    process group exists.
    """
    found = list_checkpoints(root)
    if found and int(read_meta(found[-1])["step"]) >= steps:
        return found[-1]
    return None


def save_checkpoint(strategy: Any, root: Path, step: int, meta: dict[str, Any], keep: int) -> Path:
    path = step_dir(root, step)
    rank0 = not dist.is_initialized() or dist.get_rank() == 0
    if rank0:
        if path.exists():  # a leftover of a crashed save of the same step
            shutil.rmtree(path)
        path.mkdir(parents=True)
    _barrier()
    # every node needs the directory (a no-op where output_dir is shared, as it should be)
    path.mkdir(parents=True, exist_ok=True)
    strategy.save(path)
    _barrier()
    if rank0:
        info = {"step": step, "time": time.time(), **meta}
        (path / "meta.json").write_text(json.dumps(info, indent=2, sort_keys=True, default=str))
        (path / MARKER).write_text(f"{step}\n")
        for old in list_checkpoints(root)[:-keep]:
            shutil.rmtree(old, ignore_errors=True)
    _barrier()
    return path


def read_meta(path: Path) -> dict[str, Any]:
    meta: dict[str, Any] = json.loads((path / "meta.json").read_text())
    return meta


# --------------------------------------------------------------------------- DCP (DDP and FSDP2)


def dcp_save(
    model: nn.Module, optimizer: torch.optim.Optimizer, path: Path, group: dist.ProcessGroup | None = None
) -> None:
    """Sharded save: every rank of ``group`` writes its shards; replicated tensors are written once."""
    msd, osd = get_state_dict(model, optimizer)
    dcp.save({"model": msd, "optim": osd}, checkpoint_id=str(path), process_group=group)


def dcp_load(
    model: nn.Module, optimizer: torch.optim.Optimizer, path: Path, group: dist.ProcessGroup | None = None
) -> None:
    """Load into the current sharding, whatever world size wrote the checkpoint (DCP reshards)."""
    msd, osd = get_state_dict(model, optimizer)
    state: dict[str, Any] = {"model": msd, "optim": osd}
    dcp.load(state, checkpoint_id=str(path), process_group=group)
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
