"""Recipes: typed dataclasses loaded from the YAML files in ``recipes/``, validated, overridable.

A recipe file is plain data, read both by the trainer and by the playbooks (which only need
``cluster`` and ``strategy.name``). Every error names the offending key and value.
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import yaml

from .errors import RecipeError
from .kernels import registry as kernels
from .layout import BatchLayout

RECIPE_DIR = Path(__file__).resolve().parent / "recipes"
STRATEGY_NAMES = ("ddp", "fsdp2", "zero3", "pipeline")


@dataclass
class GPTConfig:
    """The package's own GPT-2 (models.GPT); here so that recipe checks need no torch (Ansible controller)."""

    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    block_size: int = 1024
    vocab_size: int = 50304
    dropout: float = 0.0
    bias: bool = True


@dataclass
class ModelConfig:
    # gpt2: the package's own GPT-2 (models.GPT); hf: transformers AutoModelForCausalLM.
    kind: Literal["gpt2", "hf"] = "gpt2"
    # hf: a local model directory (config.json, and weights when init=pretrained).
    path: str | None = None
    # pretrained: load weights from `path`; random: build from config with random weights.
    init: Literal["pretrained", "random"] = "random"
    # hf + init=random without a path: the transformers model_type (e.g. qwen2, glm4_moe).
    model_type: str | None = None
    # gpt2: GPTConfig fields; hf: overrides applied to the transformers config.
    config: dict[str, Any] = field(default_factory=dict)
    # dtype the weights are held in before the strategy wraps them (fp32 master weights by default).
    dtype: Literal["float32", "bfloat16"] = "float32"


@dataclass
class TokenizerConfig:
    # byte: built-in byte-level tokenizer (no download); hf: AutoTokenizer from a local path.
    kind: Literal["byte", "hf"] = "byte"
    path: str | None = None


@dataclass
class DataConfig:
    # generated: the project's deterministic corpus; jsonl: a local file; synthetic: random tokens
    # (throughput benchmarks only, nothing to learn).
    kind: Literal["generated", "jsonl", "synthetic"] = "generated"
    path: str | None = None
    eval_path: str | None = None
    # text: {"text": ...}; chat: {"messages": [{"role", "content"}, ...]}; auto: per line.
    format: Literal["auto", "text", "chat"] = "auto"
    # chat: compute the loss on assistant turns only.
    assistant_only_loss: bool = True
    seq_len: int = 64
    # generated corpus size (documents) and the share of blocks held out for eval.
    generated_docs: int = 4000
    eval_fraction: float = 0.05
    # synthetic: number of distinct random blocks.
    synthetic_blocks: int = 4096


@dataclass
class Fsdp2Options:
    # False: blocks keep their gathered parameters from forward to backward (one all-gather less per
    # micro-batch, one unsharded copy of the largest block set in memory)
    reshard_after_forward: bool = True
    # keep parameters gathered across the micro-batches of a step, resharding after the last backward
    # (skips the all-gathers of gradient accumulation; costs one unsharded copy of the model: small models)
    unshard_during_accumulation: bool = False
    # the dtype of the gradients' reduce-scatter (and HSDP's all-reduce) with bf16 compute: float32 (exact
    # sums of the ranks' bf16 gradients), bfloat16 (half the bytes on the wire and in NCCL's kernels, rounded
    # sums), or auto: bfloat16 under HSDP, whose all-reduce crosses the slow link, else float32 (dp_mesh.py)
    reduce_dtype: Literal["auto", "float32", "bfloat16"] = "auto"
    # reduce-scatter the gradients after every micro-batch and accumulate the shards, instead of
    # accumulating the unsharded gradients (in reduce_dtype) and reducing once after the last: more traffic,
    # overlapped with the backward, and accumulation adds on 1/world of the values
    reduce_every_micro_batch: bool = False
    # hybrid sharding (HSDP): parameters sharded over the ranks of a node and replicated across nodes, so only
    # the gradient all-reduce crosses nodes (for links much slower than the GPUs' own). auto: as the
    # launcher's RDMAOPS_HSDP says (1: on; 0 or unset: off); true or false forces it (dp_mesh.py)
    hsdp: bool | Literal["auto"] = "auto"


@dataclass
class DdpOptions:
    bucket_cap_mb: int = 25
    gradient_as_bucket_view: bool = True
    # With train.compile: split the compiled graph at the gradient bucket boundaries so each bucket's
    # all-reduce overlaps the rest of the backward (torch._dynamo.config.optimize_ddp). false: one graph per
    # forward/backward (better fusion) and the all-reduce after the backward; pays off when several
    # micro-batches share one all-reduce or the GPUs share NVLink.
    optimize_ddp: bool = True


@dataclass
class PipelineOptions:
    stages: int = 2
    schedule: Literal["1F1B", "GPipe"] = "1F1B"
    # microbatches per stage per optimizer step; replaces gradient accumulation.
    microbatches: int = 4


@dataclass
class Zero3Options:
    offload_optimizer: bool = False
    offload_params: bool = False
    overlap_comm: bool = True
    contiguous_gradients: bool = True
    reduce_bucket_size: int = 500_000_000
    prefetch_bucket_size: int = 50_000_000
    param_persistence_threshold: int = 100_000
    max_live_parameters: int = 1_000_000_000
    max_reuse_distance: int = 1_000_000_000
    # write the 16-bit consolidated weights on save (slow for big models).
    gather_16bit_weights_on_model_save: bool = False
    # treat every transformer block as one ZeRO-3 unit (DeepSpeed "leaf module"): one hook pair and one
    # coalesced all-gather per block instead of per Linear/norm, as FSDP2 shards per block. Needed for
    # train.compile (a block's forward is compiled whole, DeepSpeed's hooks stay outside the graph).
    leaf_blocks: bool = True
    # DeepSpeed's memory_efficient_linear: it replaces torch.nn.functional.linear, process-wide, with an
    # autograd.Function that reads each weight's ZeRO id. Inside a compiled block, torch 2.11's dynamo guards
    # on that id, so every block compiled again until the recompile limit (8) and the rest ran eager: 20 of
    # Qwen2.5-1.5B's 28 layers (docs/benchmarks.md, issue 15). null: off with train.compile (DeepSpeed does
    # the same for its own compile), DeepSpeed's default (on) without.
    memory_efficient_linear: bool | None = None


@dataclass
class StrategyConfig:
    name: str = "ddp"
    ddp: DdpOptions = field(default_factory=DdpOptions)
    fsdp2: Fsdp2Options = field(default_factory=Fsdp2Options)
    pipeline: PipelineOptions = field(default_factory=PipelineOptions)
    zero3: Zero3Options = field(default_factory=Zero3Options)


# The keys a launcher may change to fit a recipe to the cluster it runs on (fit.py); cluster.pinned lists
# those it must not change.
FIT_KEY = Literal[
    "cluster.nodes", "cluster.procs_per_node", "train.global_batch_size", "train.micro_batch_size"
]


@dataclass
class ClusterConfig:
    nodes: int = 1
    # GPUs per node (cuda) or processes per node (cpu).
    procs_per_node: int = 1
    device: Literal["auto", "cuda", "cpu"] = "auto"
    # train.yml fits nodes and procs_per_node to the play's hosts and the nodes' GPUs, and the batch to the
    # world size (fit.py); a key listed here is kept as written, and a cluster it does not fit is refused
    pinned: list[FIT_KEY] = field(default_factory=list)

    @property
    def world_size(self) -> int:
        return self.nodes * self.procs_per_node


@dataclass
class TrainConfig:
    steps: int = 100
    # sequences per optimizer step over all data-parallel ranks; constant across world sizes, so a
    # resume on another world size sees the same batches (gradient accumulation adapts).
    global_batch_size: int = 8
    micro_batch_size: int = 2
    lr: float = 1e-3
    min_lr: float = 1e-4
    warmup_steps: int = 10
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    eps: float = 1e-8
    grad_clip: float = 1.0
    gradient_checkpointing: bool = False
    # auto: bf16 on cuda, fp32 on cpu.
    precision: Literal["auto", "bf16", "fp32"] = "auto"
    compile: bool = False
    # scaled-dot-product attention kernel tried first on CUDA; the others stay as fallbacks for inputs it
    # does not take. auto: torch's own order, which differs between builds (torch 2.11 ran cuDNN's fused
    # attention on an H100; 2.13's CPU build lists it after math); cudnn: cuDNN's fused attention,
    # FlashAttention-3 class on Hopper.
    attention: Literal["auto", "flash", "cudnn", "efficient", "math"] = "auto"
    # The opt-in kernels and execution options, off unless a recipe turns them on: what each does and why is
    # in its module under rdmaops_trainer/kernels/, what it needs in kernels/registry.py.
    # float8 matmuls in the blocks' Linear layers (torchao; changes the numerics)
    float8: bool = False
    # the output head and the cross-entropy as one step that never keeps the (tokens x vocabulary) logits
    fused_loss: bool = False
    # each compiled forward and backward replayed as one CUDA graph
    cuda_graphs: bool = False
    # GPT-2's residual stream in bf16, not autocast's fp32 (changes the numerics)
    bf16_residual: bool = False
    # GPT-2's MLP with the bias and GELU (and its gradient) in cuBLASLt's GEMM epilogues
    fused_mlp: bool = False
    # a transformers model's SwiGLU MLPs on quack's GEMMs, the SwiGLU and its gradient in their epilogues
    fused_swiglu: bool = False
    # which GEMMs run the fused MLP's four plain products (down's forward; the backward's input and
    # weight gradients): quack's, or torch's cuBLAS. The two with the SwiGLU in their epilogues are
    # quack's either way.
    fused_swiglu_gemms: Literal["quack", "cublas"] = "quack"
    # a transformers model's RMSNorm layers through quack's one-pass kernels
    fused_rmsnorm: bool = False
    # the CUDA caching allocator's expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, set
    # before CUDA starts unless the environment already says): one growing mapping instead of fixed blocks,
    # so a run near the card's memory neither fragments nor frees and re-allocates its cache every step.
    # qwen1_5b on 2x H100 80GB, FSDP2 at 72 GiB: 55.3% MFU with, 52.1% without (docs/benchmarks.md, call 34).
    expandable_segments: bool = False
    eval_every: int = 0
    # eval set size in global batches (eval_batches * global_batch_size sequences)
    eval_batches: int = 4
    checkpoint_every: int = 0
    keep_checkpoints: int = 2
    output_dir: str = "runs/{name}"
    resume: Literal["auto", "never"] = "auto"
    log_every: int = 1
    plot: bool = True
    # stop after this many steps of this run (tests: "crash" mid-run); 0 = no limit.
    stop_after: int = 0


@dataclass
class LoraConfig:
    enabled: bool = False
    r: int = 16
    alpha: int = 32
    dropout: float = 0.05
    # module name suffixes (peft target_modules), matched against nn.Linear modules.
    target_modules: list[str] = field(default_factory=list)
    # regex of module names to leave out (e.g. the router).
    exclude_modules: str | None = None
    # fail if the adapted model has a different number of trainable tensors (None: not checked).
    expected_trainable_tensors: int | None = None


@dataclass
class Recipe:
    name: str
    description: str = ""
    seed: int = 1234
    model: ModelConfig = field(default_factory=ModelConfig)
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    data: DataConfig = field(default_factory=DataConfig)
    strategy: StrategyConfig = field(default_factory=StrategyConfig)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    lora: LoraConfig = field(default_factory=LoraConfig)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def output_dir(self) -> Path:
        return Path(self.train.output_dir.format(name=self.name))


# --------------------------------------------------------------------------- generic loader


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _describe(tp: Any) -> str:
    """What a value of ``tp`` looks like in a recipe (for a refusal that lists the alternatives)."""
    if get_origin(tp) is Literal:
        return ", ".join(map(str, get_args(tp)))
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string"}.get(
        tp, _type_name(tp)
    )


def _coerce(value: Any, tp: Any, key: str) -> Any:
    """Check `value` against the annotation `tp`; return it (ints are accepted for floats)."""
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        args = get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, key)
            except RecipeError as exc:
                errors.append(str(exc))
        if len(errors) == 1:
            raise RecipeError(errors[0])
        wanted = " or ".join(_describe(arg) for arg in args if arg is not type(None))
        raise RecipeError(f"{key}: {value!r} is not {wanted}")
    if origin is Literal:
        allowed = get_args(tp)
        if value not in allowed:
            raise RecipeError(f"{key}: {value!r} is not one of {', '.join(map(str, allowed))}")
        return value
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise RecipeError(f"{key}: expected a mapping, got {value!r}")
        return _build(tp, value, key)
    if origin is list:
        if not isinstance(value, list):
            raise RecipeError(f"{key}: expected a list, got {value!r}")
        (item_tp,) = get_args(tp)
        return [_coerce(v, item_tp, f"{key}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise RecipeError(f"{key}: expected a mapping, got {value!r}")
        return dict(value)
    if tp is Any:
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise RecipeError(f"{key}: expected true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise RecipeError(f"{key}: expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, str):
            # YAML 1.1 reads 1e-4 (no dot) as a string
            try:
                return float(value)
            except ValueError:
                pass
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise RecipeError(f"{key}: expected a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise RecipeError(f"{key}: expected a string, got {value!r}")
        return value
    raise RecipeError(f"{key}: unsupported type {tp!r}")  # pragma: no cover - schema bug


def _build(cls: Any, data: dict[str, Any], prefix: str) -> Any:
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    kwargs = {}
    for key, value in data.items():
        full = f"{prefix}.{key}" if prefix else str(key)
        if key not in names:
            close = difflib.get_close_matches(str(key), names, n=1)
            hint = f" (did you mean {prefix + '.' if prefix else ''}{close[0]}?)" if close else ""
            raise RecipeError(f"unknown key {full}{hint}")
        kwargs[key] = _coerce(value, hints[key], full)
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise RecipeError(f"{prefix or 'recipe'}: {exc}") from exc


# --------------------------------------------------------------------------- semantic checks


def _positive(value: float, key: str, allow_zero: bool = False) -> None:
    if value < 0 or (value == 0 and not allow_zero):
        raise RecipeError(f"{key}: {value!r} must be {'>= 0' if allow_zero else '> 0'}")


def validate(
    recipe: Recipe, world_size: int | None = None, local_world_size: int | None = None, cluster: bool = True
) -> None:
    """Semantic checks; with `world_size`, also those that depend on the actual process count (a world size
    the recipe was not written for is named with the fit that would run there, `local_world_size` ranks per
    node: fit.py). `cluster` False leaves out the checks of the recipe's own cluster (HSDP's nodes, the batch
    split), for a recipe that is fitted to another cluster next."""
    t, d, s = recipe.train, recipe.data, recipe.strategy
    if s.name not in STRATEGY_NAMES:
        raise RecipeError(f"strategy.name: {s.name!r} is not one of {', '.join(STRATEGY_NAMES)}")
    for key in ("steps", "global_batch_size", "micro_batch_size", "eval_batches", "log_every"):
        _positive(getattr(t, key), f"train.{key}")
    for key in ("warmup_steps", "eval_every", "checkpoint_every", "stop_after", "weight_decay", "grad_clip"):
        _positive(getattr(t, key), f"train.{key}", allow_zero=True)
    _positive(t.lr, "train.lr")
    _positive(t.min_lr, "train.min_lr", allow_zero=True)
    if t.min_lr > t.lr:
        raise RecipeError(f"train.min_lr: {t.min_lr!r} is larger than train.lr {t.lr!r}")
    if t.warmup_steps > t.steps:
        raise RecipeError(f"train.warmup_steps: {t.warmup_steps!r} exceeds train.steps {t.steps!r}")
    for key in ("beta1", "beta2"):
        if not 0.0 <= getattr(t, key) < 1.0:
            raise RecipeError(f"train.{key}: {getattr(t, key)!r} must be in [0, 1)")
    if t.keep_checkpoints < 1:
        raise RecipeError(f"train.keep_checkpoints: {t.keep_checkpoints!r} must be >= 1")
    if t.global_batch_size % t.micro_batch_size:
        raise RecipeError(
            f"train.global_batch_size: {t.global_batch_size} is not a multiple of "
            f"train.micro_batch_size {t.micro_batch_size}"
        )
    _positive(d.seq_len, "data.seq_len")
    if not 0.0 <= d.eval_fraction < 1.0:
        raise RecipeError(f"data.eval_fraction: {d.eval_fraction!r} must be in [0, 1)")
    if d.kind == "jsonl" and not d.path:
        raise RecipeError("data.path: required when data.kind is jsonl")
    if d.kind != "synthetic" and recipe.tokenizer.kind == "hf" and not recipe.tokenizer.path:
        raise RecipeError("tokenizer.path: required when tokenizer.kind is hf")
    m = recipe.model
    if m.kind == "hf":
        if m.init == "pretrained" and not m.path:
            raise RecipeError("model.path: required when model.init is pretrained")
        if not m.path and not m.model_type:
            raise RecipeError("model.model_type: required for an hf model built from config without a path")
    elif m.init == "pretrained":
        raise RecipeError("model.init: 'pretrained' needs model.kind hf (the gpt2 kind is built from config)")
    if m.kind == "gpt2":
        known = {f.name for f in dataclasses.fields(GPTConfig)}
        for key in m.config:
            if key not in known:
                raise RecipeError(
                    f"unknown key model.config.{key} for the gpt2 model ({', '.join(sorted(known))})"
                )
        shape = GPTConfig(**m.config)
        if shape.n_embd % shape.n_head:
            raise RecipeError(
                f"model.config.n_embd: {shape.n_embd} is not divisible by n_head {shape.n_head}"
            )
        if s.name == "pipeline" and s.pipeline.stages > shape.n_layer:
            # known before any process starts: found by --check, not by every rank's stage split
            raise RecipeError(
                f"strategy.pipeline.stages: {s.pipeline.stages} exceeds the model's {shape.n_layer} layers "
                "(model.config.n_layer); each stage needs at least one layer"
            )
        if "block_size" in m.config and m.config["block_size"] < d.seq_len:
            raise RecipeError(
                f"data.seq_len: {d.seq_len} exceeds model.config.block_size {m.config['block_size']}"
            )
    if s.name == "pipeline":
        if m.kind != "gpt2":
            raise RecipeError(f"strategy.name: pipeline supports model.kind gpt2 only, not {m.kind!r}")
        if s.pipeline.stages < 2:
            raise RecipeError(f"strategy.pipeline.stages: {s.pipeline.stages} must be >= 2")
        if s.pipeline.microbatches < s.pipeline.stages:
            raise RecipeError(
                f"strategy.pipeline.microbatches: {s.pipeline.microbatches} must be >= stages "
                f"{s.pipeline.stages} to keep every stage busy"
            )
    # the opt-in kernels and execution options: each states what it needs in the registry
    kernels.check(recipe)
    if recipe.lora.enabled:
        if not recipe.lora.target_modules:
            raise RecipeError("lora.target_modules: empty while lora.enabled is true")
        _positive(recipe.lora.r, "lora.r")
    _positive(recipe.cluster.nodes, "cluster.nodes")
    _positive(recipe.cluster.procs_per_node, "cluster.procs_per_node")
    if not cluster:
        return
    if s.name == "fsdp2" and s.fsdp2.hsdp is True and recipe.cluster.nodes < 2:
        raise RecipeError(
            f"strategy.fsdp2.hsdp: true needs cluster.nodes >= 2, not {recipe.cluster.nodes} (HSDP "
            "replicates across nodes; one node shards over all its ranks)"
        )
    # the batch must split evenly over the recipe's own cluster; the layout names the keys when it does not
    BatchLayout.from_recipe(recipe)
    if world_size is not None and world_size != recipe.cluster.world_size:
        from .fit import world_mismatch  # fit builds on the layout this module checks

        raise RecipeError(world_mismatch(recipe, world_size, local_world_size))


def compute_precision(recipe: Recipe, cuda: bool) -> str:
    """The matmuls' precision on a rank: train.precision, where auto is bf16 on a GPU and fp32 on the CPU (the
    runtime's choice, and the controller's when it tells what a launch will do)."""
    precision = recipe.train.precision
    if precision == "auto":
        return "bf16" if cuda else "fp32"
    return precision


def required_paths(recipe: Recipe) -> list[tuple[str, Path]]:
    """(recipe key, path) for every local path the run reads."""
    out: list[tuple[str, Path]] = []
    m, t, d = recipe.model, recipe.tokenizer, recipe.data
    if m.kind == "hf" and m.path:
        out.append(("model.path", Path(m.path)))
        out.append(("model.path", Path(m.path) / "config.json"))
    if d.kind != "synthetic" and t.kind == "hf" and t.path:
        out.append(("tokenizer.path", Path(t.path)))
    if d.kind == "jsonl":
        out.append(("data.path", Path(str(d.path))))
        if d.eval_path:
            out.append(("data.eval_path", Path(d.eval_path)))
    return out


def check_paths(recipe: Recipe) -> None:
    for key, path in required_paths(recipe):
        if not path.exists():
            raise RecipeError(f"{key}: {path} does not exist")
    if recipe.data.kind == "jsonl" and not Path(str(recipe.data.path)).is_file():
        raise RecipeError(f"data.path: {recipe.data.path} is not a file")


# --------------------------------------------------------------------------- loading


def available_recipes() -> list[str]:
    return sorted(p.stem for p in RECIPE_DIR.glob("*.yaml"))


def parse_value(text: str) -> Any:
    """A --set value: parsed as a YAML scalar/flow collection (so 1e-4, true, [a, b] work)."""
    try:
        return yaml.safe_load(text) if text != "" else ""
    except yaml.YAMLError as exc:
        raise RecipeError(f"cannot parse override value {text!r}: {exc}") from exc


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    for item in overrides:
        if "=" not in item:
            raise RecipeError(f"override {item!r} is not key=value")
        key, raw = item.split("=", 1)
        parts = key.strip().split(".")
        if not all(parts):
            raise RecipeError(f"override {item!r}: bad key {key!r}")
        node = data
        for part in parts[:-1]:
            nxt = node.setdefault(part, {})
            if not isinstance(nxt, dict):
                raise RecipeError(f"override {item!r}: {part} is not a mapping")
            node = nxt
        node[parts[-1]] = parse_value(raw)
    return data


def load_recipe_data(name_or_path: str) -> tuple[dict[str, Any], Path]:
    path = Path(name_or_path)
    if not (path.suffix in (".yaml", ".yml") and path.is_file()):
        path = RECIPE_DIR / f"{name_or_path}.yaml"
    if not path.is_file():
        raise RecipeError(
            f"recipe {name_or_path!r} not found (known: {', '.join(available_recipes())}, or a .yaml path)"
        )
    with path.open(encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    if not isinstance(data, dict):
        raise RecipeError(f"recipe {path}: top level must be a mapping")
    data.setdefault("name", path.stem)
    return data, path


def recipe_from_dict(data: dict[str, Any], cluster: bool = True) -> Recipe:
    if "name" not in data:
        raise RecipeError("recipe: missing key name")
    recipe = _build(Recipe, data, "")
    validate(recipe, cluster=cluster)
    return recipe


def load_recipe(name_or_path: str, overrides: list[str] | None = None, cluster: bool = True) -> Recipe:
    """A recipe with its overrides, checked (`cluster` False: not yet on its own cluster, see validate)."""
    data, _ = load_recipe_data(name_or_path)
    apply_overrides(data, overrides or [])
    return recipe_from_dict(data, cluster)
