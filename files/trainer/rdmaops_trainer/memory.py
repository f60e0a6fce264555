"""Per-GPU memory of a training layout, estimated before launch from the model's shape (no torch).

What a rank allocates at its peak, the end of a micro-batch's forward (``torch.cuda.max_memory_allocated``,
the trainer's ``peak_mem_gb``): the model state its strategy keeps, the parameters it has gathered for
compute, the gradients accumulated from earlier micro-batches, every activation the backward needs and the
logits. ``estimate`` adds them up for a recipe on a layout:

- model state, per strategy: DDP keeps everything on every rank (parameters, gradients in DDP's buckets,
  AdamW's two moments); FSDP2 shards parameters and moments over its shard group (every rank, or a node's
  under HSDP), trainable weights in fp32, and gathers blocks in the compute dtype (two blocks at a time, or
  all of them with ``reshard_after_forward: false``; the root's embeddings and head for the whole step);
  ZeRO-3 is DeepSpeed's own count (``estimate_zero3_model_states_mem_needs``: 18 bytes per parameter over
  the ranks, 4 per parameter of the largest layer; with optimizer offload 2, with parameter offload none) plus
  its prefetch window; a pipeline stage holds its share of the blocks. With LoRA the frozen base is
  held in ``model.dtype`` and only the adapters have gradients and moments;
- gradients accumulated between micro-batches: FSDP2 keeps the unsharded gradients of the trainable weights
  (in its reduce dtype) unless ``reduce_every_micro_batch``; at the forward's end of a single micro-batch
  there are none yet (the optimizer sets them to None);
- activations per token and layer, counted from what autograd saves in a layer (16-bit; twice that in fp32):
  the norms' inputs and outputs, q, k, v and the attention output, the MLP's inner tensors (SwiGLU: gate,
  up and their product; fewer with ``train.fused_swiglu``), the routed experts' inputs and inner tensors of
  a MoE layer (each token at ``num_experts_per_tok`` experts), and LoRA's dropout and down-projection. An
  eager layer saves more than a compiled one (its norms keep fp32 copies, its SwiGLU the activation).
  Gradient checkpointing keeps a layer's input and recomputes one layer at a time;
- logits: tokens x vocabulary at 2 bytes with ``train.fused_loss`` (one bf16 copy, its gradient written in
  place), 4 with a compiled loss, 14 eager (the fp32 log-softmax and the gradients at the backward's start).

The layer counts follow the tensors autograd keeps; their totals were checked against the peaks the GPU
benchmarks recorded (tests/unit/trainer/test_memory.py). ``benchmarks/gpu/memory_estimate.py`` measures
the rest on a GPU. Allocator reserve, CUDA context and NCCL buffers come on top (``usable_bytes``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .fit import BATCH, MICRO, FitError, fit, pins
from .layout import BatchLayout
from .model_shape import ModelShape, model_shape

if TYPE_CHECKING:
    from .config import Recipe

GIB = 2**30
PARTS = ("parameters", "gradients", "optimizer", "gathered", "activations", "logits")
# what a GPU holds outside the allocator's peak: CUDA context, NCCL's buffers, cuBLAS workspaces; and the
# caching allocator's reserve over its allocated peak (segments it cannot hand back)
RESERVE_GIB = 1.5
FRAGMENTATION = 0.05
# logits bytes per element (16-bit compute; fp32 twice): the fused head + loss (one bf16 copy, its gradient
# written in place); a compiled loss (bf16 logits and their gradient); eager (the bf16 logits, their fp32
# log-softmax kept, its gradient and the input's in fp32 at the backward's start: the glm-arch row without
# train.compile, call 09, 28.6 GiB)
LOGIT_BYTES = {"fused": 2, "compiled": 4, "eager": 14}
# gradient checkpointing: the backward holds one layer's recomputed activations and their gradients, 2.5 times
# the layer's count (the glm-arch LoRA row on one H200, call 31)
RECOMPUTE = 2.5


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes per GPU by part (``PARTS``)."""

    parts: dict[str, float]

    @property
    def total(self) -> float:
        return sum(self.parts.values())

    @property
    def gib(self) -> float:
        return self.total / GIB

    def describe(self) -> str:
        """``41.3 GiB (parameters 26.5, gradients 0.1, ...)``, the parts in GiB."""
        parts = ", ".join(f"{name} {self.parts[name] / GIB:.1f}" for name in PARTS if self.parts.get(name))
        return f"{self.gib:.1f} GiB ({parts})"


def usable_bytes(total_mib: float) -> float:
    """What the allocator may use of a GPU of TOTAL_MIB MiB (nvidia-smi's memory.total)."""
    return total_mib * 2**20 * (1 - FRAGMENTATION) - RESERVE_GIB * GIB


def shard_size(recipe: Recipe, layout: BatchLayout, hybrid: bool, procs_per_node: int) -> int:
    """The ranks a parameter is sharded over: FSDP2's group (every rank, or a node's under HSDP), ZeRO-3's
    data-parallel ranks; DDP and the pipeline replicate (1)."""
    name = recipe.strategy.name
    if name == "fsdp2":
        return procs_per_node if hybrid else layout.world_size
    if name == "zero3":
        return layout.dp_size
    return 1


def lora_params(shape: ModelShape, recipe: Recipe) -> tuple[int, list[str]]:
    """(adapter parameters, adapted modules) of RECIPE's LoRA on SHAPE: the nn.Linear modules whose names end
    in a target and that ``lora.exclude_modules`` does not match, as ``lora.linear_targets`` picks them."""
    cfg = recipe.lora
    exclude = re.compile(cfg.exclude_modules) if cfg.exclude_modules else None
    adapted = [
        lin
        for lin in shape.linears
        if any(lin.name == t or lin.name.endswith(f".{t}") for t in cfg.target_modules)
        and not (exclude is not None and exclude.fullmatch(lin.name))
    ]
    return sum(cfg.r * (lin.inp + lin.out) for lin in adapted), [lin.name for lin in adapted]


def _layer_bytes(shape: ModelShape, moe: bool, compiled: bool, fused_swiglu: bool) -> float:
    """Activation bytes per token that one layer keeps for its backward, at 16 bits."""
    h, q, kv = shape.hidden, shape.q_dim, shape.kv_dim
    if shape.family == "gpt2":
        # ln inputs and outputs, q/k/v, the attention output, the MLP's 4h input to GELU and its output
        return (32 if compiled else 34) * h
    norms = 8 * h if compiled else 12 * h  # eager RMSNorm keeps an fp32 copy of its input
    attention = norms + 4 * q + 4 * kv
    per_ffn = 4 if fused_swiglu else (6 if compiled else 8)
    if not moe:
        return attention + per_ffn * shape.ffn
    k = shape.experts_per_token
    router = 4 * h + 8 * shape.experts  # fp32 input copy, logits and scores
    routed = k * (4 * h + per_ffn * shape.expert_ffn)  # each token's copy at its experts, and their outputs
    return attention + router + routed + per_ffn * shape.shared_ffn


def _lora_bytes(shape: ModelShape, recipe: Recipe, adapted: list[str]) -> float:
    """LoRA's activation bytes per token over all layers: the dropout's mask and output, the A projection."""
    cfg = recipe.lora
    widths = {lin.name: lin.inp for lin in shape.linears}
    return sum((3 * widths[name] if cfg.dropout > 0 else 0) + 2 * cfg.r for name in adapted)


def estimate(
    recipe: Recipe, shape: ModelShape, split: BatchLayout, shard: int, hybrid: bool = False, cuda: bool = True
) -> MemoryEstimate:
    """RECIPE's per-GPU peak on the batch SPLIT, parameters sharded over SHARD ranks (``shard_size``); HYBRID:
    FSDP2 runs HSDP (its default reduce dtype is then bf16); CUDA: the ranks compute on GPUs (bf16 under
    auto)."""
    from .config import compute_precision  # config imports fit, which this module builds on

    s = recipe.strategy
    cdt = 2 if compute_precision(recipe, cuda) == "bf16" else 4
    pdt = 2 if recipe.model.dtype == "bfloat16" else 4
    if recipe.lora.enabled:
        trainable, adapted = lora_params(shape, recipe)
        frozen = shape.params
    else:
        trainable, adapted, frozen = shape.params, [], 0
    accum = split.grad_accum if not split.pipelined else 1
    parts = dict.fromkeys(PARTS, 0.0)
    if s.name == "fsdp2":
        tb = 4  # FSDP2's prepare holds trainable weights in fp32
        parts["parameters"] = (frozen * pdt + trainable * tb) / shard
        parts["optimizer"] = 2 * trainable * tb / shard
        if accum > 1:
            reduce = _fsdp2_reduce_bytes(recipe, hybrid, cdt)
            parts["gradients"] = (
                trainable * tb / shard if s.fsdp2.reduce_every_micro_batch else trainable * reduce
            )
        keep_all = not s.fsdp2.reshard_after_forward or (s.fsdp2.unshard_during_accumulation and accum > 1)
        units = shape.root_params + (
            shape.blocks_params if keep_all else min(2 * shape.block_params, shape.blocks_params)
        )
        if shard == 1:  # one rank gathers nothing; it casts what is not held in the compute dtype
            cast = (trainable if tb != cdt else 0) + (frozen if pdt != cdt else 0)
            units = units * cast / (trainable + frozen)
        parts["gathered"] = units * cdt
    elif s.name == "zero3":
        z = s.zero3
        largest = max(shape.block_params, shape.vocab * shape.hidden)
        # DeepSpeed's count (no offload): 18 bytes per trainable parameter over the ranks (16-bit partition
        # and fp32 master 6, fp32 gradient partition 4, the moments 8), 4 per parameter of the largest layer;
        # optimizer offload keeps the 16-bit partition, parameter offload nothing. A frozen base (LoRA) is
        # its 16-bit partition.
        master = 4 if cdt == 2 else 0
        if not z.offload_params:
            parts["parameters"] = (frozen + trainable) * cdt / shard
            if not z.offload_optimizer:
                parts["parameters"] += trainable * master / shard
                parts["gradients"] = trainable * 4 / shard
                parts["optimizer"] = trainable * 8 / shard
        parts["gathered"] = 4 * largest + min(z.prefetch_bucket_size, shape.params) * cdt
    else:  # ddp, pipeline: every rank holds its (stage's) weights whole, in the dtype they are held in
        share = 1.0
        if s.name == "pipeline":
            share = (shape.blocks_params / split.pipeline_stages + shape.root_params) / shape.params
        parts["parameters"] = (frozen * pdt + trainable * pdt) * share
        parts["gradients"] = trainable * pdt * share
        parts["optimizer"] = 2 * trainable * pdt * share
        if cdt < pdt:  # autocast's cached bf16 copies of the weights
            parts["gathered"] = shape.params * cdt * share
    parts["activations"], parts["logits"] = _activations(recipe, shape, split, adapted, cdt)
    return MemoryEstimate(parts)


def recipe_estimate(
    recipe: Recipe, config: Mapping[str, Any] | None = None, hybrid: bool = False, cuda: bool = True
) -> MemoryEstimate:
    """RECIPE's estimate on its own cluster (``cluster.nodes`` x ``cluster.procs_per_node``) from its
    model's CONFIG (an hf model's config.json; ``model_shape`` raises ShapeUnknown when it cannot say).
    HYBRID: FSDP2 runs HSDP; CUDA: the ranks compute on GPUs."""
    layout = BatchLayout.from_recipe(recipe)
    shard = shard_size(recipe, layout, hybrid, recipe.cluster.procs_per_node)
    return estimate(recipe, model_shape(recipe, config), layout, shard, hybrid, cuda)


def _fsdp2_reduce_bytes(recipe: Recipe, hybrid: bool, cdt: int) -> int:
    """Bytes per element of FSDP2's unsharded gradients (strategy.fsdp2.reduce_dtype, as dp_mesh resolves
    it: bf16 under HSDP by default, fp32 compute always fp32)."""
    choice = recipe.strategy.fsdp2.reduce_dtype
    if cdt == 4 or choice == "float32" or (choice == "auto" and not hybrid):
        return 4
    return 2


def _activations(
    recipe: Recipe, shape: ModelShape, layout: BatchLayout, adapted: list[str], cdt: int
) -> tuple[float, float]:
    """(activations, logits) of the micro-batches a rank holds at once."""
    t = recipe.train
    compiled = t.compile
    per_layer = [
        _layer_bytes(shape, i >= shape.dense_layers, compiled, t.fused_swiglu) for i in range(shape.layers)
    ]
    lora = _lora_bytes(shape, recipe, adapted) if adapted else 0.0
    recompute = 0.0
    if t.gradient_checkpointing:
        # each layer's input kept; in the backward one layer recomputed at a time, with its gradients
        per_token = shape.layers * 2 * shape.hidden
        recompute = RECOMPUTE * (max(per_layer) + lora / shape.layers)
    else:
        per_token = sum(per_layer) + lora
    tokens = layout.micro_batch_size * layout.seq_len
    in_flight = 1
    if layout.pipelined:  # 1F1B keeps up to `stages` micro-batches in flight on the first stage; GPipe all
        stages = layout.pipeline_stages
        pipe = recipe.strategy.pipeline
        in_flight = min(stages, pipe.microbatches) if pipe.schedule == "1F1B" else pipe.microbatches
        per_token /= stages
    kind = "fused" if t.fused_loss else ("compiled" if t.compile else "eager")
    scale = cdt / 2
    logits = tokens * shape.vocab * LOGIT_BYTES[kind] * scale
    kept = tokens * in_flight * per_token * scale
    if not recompute:
        return kept, logits
    # with checkpointing the logits (forward's end) and the recomputed layer (backward) peak apart
    again = tokens * recompute * scale
    return kept + again, max(0.0, logits - again)


# ------------------------------------------------------------------------------------------- what would fit


HSDP = "strategy.fsdp2.hsdp"


def with_sets(recipe: Recipe, sets: Mapping[str, Any]) -> Recipe:
    """RECIPE with dotted keys replaced (the fit's keys, the estimate's what-ifs)."""
    return _replaced(recipe, [(key.split("."), value) for key, value in sets.items()])


def _replaced(obj: Any, changes: list[tuple[list[str], Any]]) -> Any:
    if not changes:
        return obj
    direct = {path[0]: value for path, value in changes if len(path) == 1}
    nested: dict[str, list[tuple[list[str], Any]]] = {}
    for path, value in changes:
        if len(path) > 1:
            nested.setdefault(path[0], []).append((path[1:], value))
    direct.update({name: _replaced(getattr(obj, name), sub) for name, sub in nested.items()})
    return dataclasses.replace(obj, **direct)


@dataclass(frozen=True)
class Option:
    """A layout that fits: the recipe keys to set (on NODES nodes) and its estimate."""

    nodes: int
    sets: dict[str, Any]
    estimate: MemoryEstimate


def fitting_options(
    recipe: Recipe,
    shape: ModelShape,
    procs_per_node: int,
    capacity: float,
    hybrid: bool,
    max_nodes: int = 64,
) -> list[Option]:
    """Layouts of RECIPE (already fitted to its cluster) that fit CAPACITY bytes per GPU: the fewest nodes of
    PROCS_PER_NODE GPUs (the batch refitted; under HSDP, which shards inside a node only, also plain FSDP2),
    and on its own nodes a smaller micro-batch or gradient checkpointing. Empty when none does."""
    here = recipe.cluster.nodes
    out: list[Option] = []

    def check(
        candidate: Recipe, nodes: int, extra: dict[str, Any], pinned: dict[str, str], hsdp: bool = hybrid
    ) -> Option | None:
        try:
            found = fit(candidate, nodes, procs_per_node, pinned)
        except FitError:
            return None
        fitted = with_sets(candidate, found.sets)
        hsdp = hsdp and nodes > 1
        est = estimate(
            fitted, shape, found.layout, shard_size(fitted, found.layout, hsdp, procs_per_node), hsdp
        )
        return Option(nodes, {**extra, **found.sets}, est) if est.total <= capacity else None

    base = pins(recipe)
    plain = {HSDP: False}
    for nodes in range(here, max_nodes + 1):
        option = None if nodes == here else check(recipe, nodes, {}, base)
        if option is None and hybrid and recipe.strategy.name == "fsdp2":
            option = check(with_sets(recipe, plain), nodes, plain, base, hsdp=False)
        if option is not None:
            out.append(option)
            break
    for micro in range(recipe.train.micro_batch_size - 1, 0, -1):  # the largest that keeps the batch
        kept = {**base, MICRO: "what-if", BATCH: "what-if"}
        option = check(with_sets(recipe, {MICRO: micro}), here, {MICRO: micro}, kept)
        if option is not None:
            out.append(option)
            break
    if not recipe.train.gradient_checkpointing:
        ckpt = {"train.gradient_checkpointing": True}
        option = check(with_sets(recipe, ckpt), here, ckpt, base)
        if option is not None:
            out.append(option)
    return out
