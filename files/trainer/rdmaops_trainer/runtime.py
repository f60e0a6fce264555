"""Process-level facts: torchrun's environment, device, backend and compute dtype."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from .config import Recipe, RecipeError, compute_precision


@dataclass(frozen=True)
class Runtime:
    rank: int
    world_size: int
    local_rank: int
    device: torch.device
    backend: str
    # dtype of the matmuls (bf16 autocast / mixed precision) - fp32 on CPU.
    compute_dtype: torch.dtype

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise RecipeError(f"environment variable {name}={raw!r} is not an integer") from exc


def env_world() -> tuple[int, int, int]:
    """(rank, world_size, local_rank) from torchrun's variables; a single process without them."""
    world = _env_int("WORLD_SIZE", 1)
    rank = _env_int("RANK", 0)
    local = _env_int("LOCAL_RANK", 0)
    if not 0 <= rank < world:
        raise RecipeError(f"RANK {rank} is outside WORLD_SIZE {world}")
    return rank, world, local


def resolve_runtime(recipe: Recipe) -> Runtime:
    """Decide device/backend/dtype; no process group is created here."""
    rank, world, local = env_world()
    want = recipe.cluster.device
    if want == "cuda" and not torch.cuda.is_available():
        raise RecipeError("cluster.device: 'cuda' requested but torch sees no CUDA device")
    use_cuda = want == "cuda" or (want == "auto" and torch.cuda.is_available())
    if use_cuda:
        device = torch.device("cuda", local % max(torch.cuda.device_count(), 1))
        backend = "nccl"
    else:
        device = torch.device("cpu")
        backend = "gloo"
    dtype = torch.bfloat16 if compute_precision(recipe, use_cuda) == "bf16" else torch.float32
    return Runtime(rank, world, local, device, backend, dtype)


# the variable torch 2.11 reads (PYTORCH_ALLOC_CONF is the newer name for the same settings)
ALLOC_CONF_VARS = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")


def allocator_env(expandable_segments: bool, environ: Mapping[str, str]) -> dict[str, str]:
    """The variables to set for the CUDA caching allocator (train.expandable_segments): none when the option
    is off or the environment already sets expandable_segments; else expandable_segments:True added to a
    setting already there, or PYTORCH_CUDA_ALLOC_CONF set."""
    if not expandable_segments:
        return {}
    for var in ALLOC_CONF_VARS:
        value = environ.get(var, "")
        if "expandable_segments" in value:
            return {}
        if value:
            return {var: f"{value},expandable_segments:True"}
    return {ALLOC_CONF_VARS[0]: "expandable_segments:True"}


def init_distributed(rt: Runtime, expandable_segments: bool = False) -> None:
    if rt.is_cuda:
        # the allocator reads its settings once, when CUDA starts here (set_device): set them before
        os.environ.update(allocator_env(expandable_segments, os.environ))
        torch.cuda.set_device(rt.device)
    elif "OMP_NUM_THREADS" not in os.environ:
        # CPU ranks share the node's cores: intra-op threads per rank oversubscribe them (seen: 10x slower
        # for the tiny model with 2 threads on a loaded 2-core machine); torchrun sets this to 1 too.
        torch.set_num_threads(1)
    if not dist.is_initialized():
        if rt.world_size == 1 and "MASTER_ADDR" not in os.environ:
            # a plain `python -m rdmaops_trainer`: a one-process group on a private store
            store = dist.HashStore()
            dist.init_process_group(rt.backend, store=store, rank=0, world_size=1)
        else:
            device_id = rt.device if rt.is_cuda else None
            dist.init_process_group(rt.backend, rank=rt.rank, world_size=rt.world_size, device_id=device_id)


def shutdown_distributed() -> None:
    if dist.is_initialized():
        # gloo sometimes aborts in destroy_process_group unless every rank got here first.
        dist.barrier()
        dist.destroy_process_group()


def attention_order(name: str) -> list[Any]:
    """SDPA backends in the order torch tries them for ``train.attention`` (empty: torch's default)."""
    from torch.nn.attention import SDPBackend

    preferred = {
        "flash": SDPBackend.FLASH_ATTENTION,
        "cudnn": SDPBackend.CUDNN_ATTENTION,
        "efficient": SDPBackend.EFFICIENT_ATTENTION,
        "math": SDPBackend.MATH,
    }
    if name == "auto":
        return []
    if name not in preferred:
        raise RecipeError(f"train.attention: {name!r} is not one of auto, {', '.join(preferred)}")
    first = preferred[name]
    # the others follow as fallbacks (flash, efficient, cuDNN, math last): what the first refuses still runs
    rest = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION]
    return [first, *(b for b in rest if b != first), *([] if first == SDPBackend.MATH else [SDPBackend.MATH])]


@contextlib.contextmanager
def attention_backends(name: str) -> Iterator[None]:
    """Prefer ``train.attention``'s kernel for every SDPA call inside (forward, backward, compile traces).

    torch's default order differs between builds (2.13's CPU build lists cuDNN after math; 2.11 ran cuDNN's
    kernel on an H100 without being asked), so a recipe that wants one kernel names it.
    """
    order = attention_order(name)
    if not order:
        yield
        return
    from torch.nn.attention import sdpa_kernel

    with sdpa_kernel(order, set_priority=True):
        yield


class RecompileLimitHits(logging.Handler):
    """Records torch._dynamo's "hit config.recompile_limit" warnings: from then on the function named runs
    eager, with no error. Under ZeRO-3 every decoder layer once recompiled until the limit (8), and 20 of
    the 28 layers of the Qwen2.5-1.5B rows ran eager for three sessions unnoticed (docs/benchmarks.md,
    call 33)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.functions: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        lines = record.getMessage().splitlines()
        if lines and "hit config." in lines[0]:
            where = next((x.split("function:", 1)[1].strip() for x in lines if "function:" in x), "?")
            self.functions.append(where)


@contextlib.contextmanager
def recompile_limit_hits() -> Iterator[list[str]]:
    """The functions that hit dynamo's recompile limit inside (``'forward' (file:line)``, one per hit)."""
    watch = RecompileLimitHits()
    logger = logging.getLogger("torch._dynamo.convert_frame")
    logger.addHandler(watch)
    try:
        yield watch.functions
    finally:
        logger.removeHandler(watch)
