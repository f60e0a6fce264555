"""The opt-in options in one table: what each needs, and how it applies (as torchtitan's model converters).

An ``Option`` is a ``train.<key>`` switch of the recipe (a field of ``config.TrainConfig``, off by default).
For each, the table states:

* ``needs``: a function that yields what is wrong with the recipe for the option. ``check`` runs them in the
  table's order (from ``config.validate``, so on the Ansible controller as on every rank: nothing here
  imports torch at load) and refuses with the first, as ``train.<key>: <what is wrong>``;
* ``model_types``: the transformers model types it is known to be right for, others refused by name
  (a pretrained model's type is only known from its config.json: ``check_hf_config``, before any weight);
* what a rank must have, checked by ``check_rank`` before any model is built: a CUDA device (``cuda``), bf16
  compute (``bf16``), and where the rank is on a GPU, a compute capability (``capability``) and the
  importable module (``imports``) of a package (``package``; a CPU rank runs the torch fallbacks);
* ``stage``: when ``convert(model, recipe) -> int`` of the option's own module (``kernels/<key>.py``,
  imported only when the option is on) applies it: ``build`` on the model just built
  (``models.build_model``), ``on_device`` once the strategy has moved it to its device, ``before_compile``
  once the strategy has wrapped it and made its optimizer (DDP: the only strategy the options of these two
  stages take). The int is how many modules it converted; ``counted_as`` names it in the start record;
* ``settings``: the option's other keys with their defaults, refused while the option is off.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..errors import RecipeError

if TYPE_CHECKING:
    from torch import nn

    from ..config import Recipe
    from ..runtime import Runtime

Stage = Literal["build", "on_device", "before_compile"]

# transformers causal LMs whose logits are the head's plain output (no scaling or soft-capping), so the
# fused loss computes what their forward and lm_loss compute; each is checked in the unit tests
FUSED_LOSS_HF_TYPES = ("llama", "mistral", "qwen2", "qwen3", "qwen2_moe", "qwen3_moe", "glm4", "glm4_moe")

# CUDA compute capability (major) -> architecture, for the refusals
ARCHITECTURES = {8: "Ampere", 9: "Hopper", 10: "Blackwell"}


Needs = Callable[["Recipe"], Iterator[str]]


@dataclass(frozen=True)
class Option:
    key: str  # train.<key>; its module under rdmaops_trainer/kernels has the same name
    stage: Stage
    needs: Needs | None = None  # what is wrong with the recipe for it, first things first
    model_types: tuple[str, ...] = ()
    model_types_are: str = ""  # what the listed model types are known to be (the refusal says it)
    cuda: bool = False
    bf16: bool = False
    capability: tuple[int, ...] = ()
    package: str = ""
    imports: str = ""
    counted_as: str = ""
    settings: tuple[tuple[str, object], ...] = ()

    @property
    def name(self) -> str:
        return f"train.{self.key}"

    @property
    def module(self) -> str:
        """Its own module under ``rdmaops_trainer/kernels``, whose ``convert(model, recipe)`` applies it."""
        return self.key

    def refusal(self, what: str) -> RecipeError:
        return RecipeError(f"{self.name}: {what}")


# --------------------------------------------------------------------------- what each needs of the recipe
# Each yields what is wrong (after "train.<key>: "), in the order validate() has always checked it.


def _float8(r: Recipe) -> Iterator[str]:
    if r.strategy.name != "ddp":
        yield f"true needs strategy.name ddp, not {r.strategy.name!r}"
    if r.cluster.device == "cpu" or r.train.precision == "fp32":
        yield (
            "true needs a CUDA GPU with float8 tensor cores and bf16 precision, not cluster.device "
            f"{r.cluster.device!r} with train.precision {r.train.precision!r}"
        )
    if r.lora.enabled:
        yield "true with lora.enabled: not supported (frozen float8 bases)"


def _fused_loss(r: Recipe) -> Iterator[str]:
    if r.strategy.name == "pipeline":  # the pipeline's last stage computes its own loss from the logits
        yield "true with strategy.name pipeline: not supported (set train.fused_loss=false)"


def _gpt2_ddp_bf16(key: str, r: Recipe) -> Iterator[str]:
    if r.model.kind != "gpt2" or r.strategy.name != "ddp" or r.train.precision == "fp32":
        yield (
            "true needs model.kind gpt2 with strategy.name ddp and bf16 compute, not model.kind "
            f"{r.model.kind!r}, strategy.name {r.strategy.name!r}, train.precision {r.train.precision!r} "
            f"(set train.{key}=false)"
        )


def _bf16_residual(r: Recipe) -> Iterator[str]:
    yield from _gpt2_ddp_bf16("bf16_residual", r)


def _fused_mlp(r: Recipe) -> Iterator[str]:
    yield from _gpt2_ddp_bf16("fused_mlp", r)
    # the cuBLASLt calls time their kernels at a shape's first call and set pointers per call: never tried
    # under graph capture
    if r.train.cuda_graphs:
        yield "true with train.cuda_graphs: true: not supported together"
    if not r.model.config.get("bias", True):
        yield "true needs model.config.bias true: the GELU epilogue adds the bias"


def _fused_swiglu(r: Recipe) -> Iterator[str]:
    # LoRA's wrapped projections are not plain Linear layers
    if r.model.kind != "hf" or r.lora.enabled:
        yield (
            f"true needs model.kind hf without LoRA, not model.kind {r.model.kind!r} with lora.enabled "
            f"{r.lora.enabled} (set train.fused_swiglu=false)"
        )
    if r.cluster.device != "cpu" and r.train.precision == "fp32":
        yield (
            "true needs bf16 compute on a GPU (quack's GEMMs), not train.precision 'fp32' (set "
            "train.fused_swiglu=false)"
        )


def _fused_rmsnorm(r: Recipe) -> Iterator[str]:
    if r.model.kind != "hf":
        yield f"true needs model.kind hf, not {r.model.kind!r} (set train.fused_rmsnorm=false)"


def _cuda_graphs(r: Recipe) -> Iterator[str]:
    if r.strategy.name != "ddp" or not r.train.compile or r.cluster.device == "cpu":
        yield (
            "true needs strategy.name ddp, train.compile true and a CUDA device, not strategy.name "
            f"{r.strategy.name!r}, train.compile {r.train.compile}, cluster.device {r.cluster.device!r}"
        )


# --------------------------------------------------------------------------- the table
OPTIONS: tuple[Option, ...] = (
    # torchao is imported by its converter, which names it when missing
    Option("float8", "on_device", _float8, cuda=True, package="torchao"),
    Option(
        "fused_loss",
        "build",
        _fused_loss,
        model_types=FUSED_LOSS_HF_TYPES,
        model_types_are="whose logits are known to be the head's plain output",
    ),
    Option("bf16_residual", "build", _bf16_residual, bf16=True),
    Option("fused_mlp", "build", _fused_mlp),
    Option(
        "fused_swiglu",
        "build",
        _fused_swiglu,
        imports="quack.gemm_interface",
        counted_as="fused_swiglu_mlps",
        settings=(("fused_swiglu_gemms", "quack"),),
        capability=(9, 10),
        package="quack-kernels",
    ),
    # by path: quack's package namespace binds some names (rmsnorm) to functions, not their modules
    Option(
        "fused_rmsnorm",
        "build",
        _fused_rmsnorm,
        imports="quack.rmsnorm",
        counted_as="fused_rmsnorms",
        capability=(9, 10),
        package="quack-kernels",
    ),
    Option("cuda_graphs", "before_compile", _cuda_graphs),
)
BY_KEY = {o.key: o for o in OPTIONS}


def enabled(recipe: Recipe) -> list[Option]:
    return [o for o in OPTIONS if getattr(recipe.train, o.key)]


def _check_model_type(option: Option, model_type: object) -> None:
    if option.model_types and model_type not in option.model_types:
        raise option.refusal(
            f"true: model_type {model_type!r} is not one {option.model_types_are} "
            f"({', '.join(option.model_types)}) (set {option.name}=false)"
        )


def check(recipe: Recipe) -> None:
    """The recipe checks of every option, in the table's order: the first refusal is raised."""
    m = recipe.model
    for o in OPTIONS:
        if not getattr(recipe.train, o.key):
            for setting, default in o.settings:
                value = getattr(recipe.train, setting)
                if value != default:
                    raise RecipeError(
                        f"train.{setting}: {value} needs {o.name}: true (set {o.name}=true or leave "
                        f"train.{setting} at {default})"
                    )
            continue
        for what in o.needs(recipe) if o.needs else ():
            raise o.refusal(what)
        if m.kind == "hf" and m.model_type:
            _check_model_type(o, m.model_type)


def check_hf_config(recipe: Recipe, model_type: str) -> None:
    """The model types of the enabled options against a transformers config's (read before any weight)."""
    for o in enabled(recipe):
        _check_model_type(o, model_type)


def kernels_of(key: str) -> Any:
    """The module an option's GPU kernels come from (``imports``), or a refusal naming the option and the
    package to install."""
    o = BY_KEY[key]
    try:
        return importlib.import_module(o.imports)
    except ImportError as exc:
        raise o.refusal(
            f"true needs the {o.package} package ({exc}); pip install {o.package} (set {o.name}=false)"
        ) from exc


def check_rank(recipe: Recipe, rt: Runtime) -> None:
    """What this rank must have for the enabled options (before any model is built)."""
    import torch

    for o in enabled(recipe):
        if o.cuda and not rt.is_cuda:
            raise o.refusal("true needs a CUDA device; this rank runs on the CPU")
        if o.bf16 and rt.compute_dtype != torch.bfloat16:
            # precision auto on a CPU-only rank: fp32 weights would meet bf16 activations outside autocast
            raise o.refusal(
                f"true needs bf16 compute; this rank computes in {rt.compute_dtype} (train.precision "
                f"{recipe.train.precision!r} on {rt.device.type})"
            )
        if not rt.is_cuda:
            continue
        if o.capability:
            major, minor = torch.cuda.get_device_capability(rt.device)
            if major not in o.capability:
                archs = " or ".join(ARCHITECTURES[c] for c in o.capability)
                caps = " or ".join(f"{c}.x" for c in o.capability)
                raise o.refusal(
                    f"true needs a {archs} GPU (compute capability {caps}), not {major}.{minor} (set "
                    f"{o.name}=false)"
                )
        if o.imports:
            kernels_of(o.key)


def convert(model: nn.Module, recipe: Recipe, stage: Stage) -> dict[str, int]:
    """Apply the enabled options of ``stage`` to ``model`` in the table's order; option key -> how many
    modules each converted. At ``build`` every counted option's count is set on the model (0 when off)."""
    done: dict[str, int] = {}
    for o in enabled(recipe):
        if o.stage == stage:
            module = importlib.import_module(f"{__package__}.{o.module}")
            done[o.key] = int(module.convert(model, recipe))
    if stage == "build":
        for o in OPTIONS:
            if o.counted_as:
                setattr(model, o.counted_as, done.get(o.key, 0))
    return done


def counts(model: nn.Module) -> dict[str, int]:
    """The start record's fields: how many modules each counted option converted in ``model``."""
    return {o.counted_as: int(getattr(model, o.counted_as, 0)) for o in OPTIONS if o.counted_as}
