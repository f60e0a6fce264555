"""LoRA with peft: exactly the adapters the recipe asks for, and an adapter peft can load.

``lora.target_modules`` are module-name suffixes (peft's list semantics); they are expanded here to the full
names of the ``nn.Linear`` modules they match, minus ``lora.exclude_modules`` (a regex on the full name), and
injected in place (``peft.inject_adapter_in_model``), so module names, ``model.blocks()`` and gradient
checkpointing are unchanged for the strategies.

The glm4_moe trap: with transformers 5, peft rewrites LoRA configs written for transformers 4 MoE
layouts (``peft.utils.transformers_weight_conversion``; glm4_moe is mapped like qwen2_moe). Any target named
``gate_proj``/``up_proj``/``down_proj``, even a fully qualified one, becomes ``target_parameters`` on the
fused routed experts, and the dense layer-0 MLP (``first_k_dense_replace``) and the shared experts (real
``nn.Linear`` modules with those names) silently get no adapter: peft issue #3711, open in peft 0.21.2.
Our configs are written for the model as it is, so that rewrite is switched off while we inject or
reload (``targets_as_given``), and the result is checked: the adapted modules must be exactly the
expanded list.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .config import LoraConfig, RecipeError

ADAPTER_NAME = "default"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
ADAPTER_CONFIG = "adapter_config.json"
# prefix of peft's serialized keys (PeftModel -> LoraModel -> the base model)
PEFT_PREFIX = "base_model.model."


def base_module(model: nn.Module) -> nn.Module:
    """The module peft adapts: the transformers model inside ``HFCausalLM``, else the model itself."""
    from torch.nn.parallel import DistributedDataParallel

    from .models import HFCausalLM

    inner: Any = model
    while isinstance(inner, DistributedDataParallel) or hasattr(inner, "_orig_mod"):
        inner = inner.module if isinstance(inner, DistributedDataParallel) else inner._orig_mod
    found: nn.Module = inner.hf if isinstance(inner, HFCausalLM) else inner
    return found


def _matches(name: str, target: str) -> bool:
    return name == target or name.endswith(f".{target}")


def linear_targets(module: nn.Module, cfg: LoraConfig) -> list[str]:
    """Full names of the ``nn.Linear`` modules named by ``cfg.target_modules``, minus ``cfg.exclude_modules``.

    A target that matches no ``nn.Linear`` is an error naming it (a typo would otherwise train nothing).
    """
    if not cfg.target_modules:
        raise RecipeError("lora.target_modules: empty")
    try:
        exclude = re.compile(cfg.exclude_modules) if cfg.exclude_modules else None
    except re.error as exc:
        raise RecipeError(f"lora.exclude_modules: {cfg.exclude_modules!r} is not a regex: {exc}") from exc
    names: list[str] = []
    hit: set[str] = set()
    for name, mod in module.named_modules():
        if not isinstance(mod, nn.Linear):
            continue
        matched = [t for t in cfg.target_modules if _matches(name, t)]
        if not matched:
            continue
        hit.update(matched)
        if exclude is not None and exclude.fullmatch(name):
            continue
        names.append(name)
    missing = [t for t in cfg.target_modules if t not in hit]
    if missing:
        raise RecipeError(
            f"lora.target_modules: {', '.join(map(repr, missing))} match no nn.Linear module of "
            f"{type(module).__name__}"
        )
    if not names:
        raise RecipeError(f"lora.exclude_modules: {cfg.exclude_modules!r} excludes every targeted module")
    return names


@contextlib.contextmanager
def targets_as_given() -> Iterator[None]:
    """Switch off peft's transformers-4-to-5 MoE target rewrite (see the module docstring) for this block."""
    try:
        from peft.utils import transformers_weight_conversion as conversion
    except ImportError:  # transformers 4: peft has no rewrite to switch off
        yield
        return
    original = conversion.convert_peft_config_for_transformers

    def keep_config(peft_config: Any, model: nn.Module, conversions: Any) -> None:
        return None

    conversion.convert_peft_config_for_transformers = keep_config
    try:
        yield
    finally:
        conversion.convert_peft_config_for_transformers = original


def peft_config(cfg: LoraConfig, targets: list[str], base_model_path: str | None = None) -> Any:
    import peft

    return peft.LoraConfig(
        r=cfg.r,
        lora_alpha=cfg.alpha,
        lora_dropout=cfg.dropout,
        target_modules=list(targets),
        bias="none",
        base_model_name_or_path=base_model_path,
    )


def adapted_modules(module: nn.Module) -> list[str]:
    """Names of the modules that carry a LoRA adapter."""
    from peft.tuners.lora import LoraLayer

    return [name for name, mod in module.named_modules() if isinstance(mod, LoraLayer)]


def trainable_tensors(model: nn.Module) -> list[str]:
    return [name for name, p in model.named_parameters() if p.requires_grad]


def apply_lora(model: nn.Module, cfg: LoraConfig, base_model_path: str | None = None) -> nn.Module:
    """Inject LoRA in place; only the adapter tensors stay trainable. Returns ``model``.

    Raises ``RecipeError`` when peft adapted other modules than the expanded targets, or when the number of
    trainable tensors differs from ``cfg.expected_trainable_tensors``.
    """
    import peft

    if not 0.0 <= cfg.dropout < 1.0:
        raise RecipeError(f"lora.dropout: {cfg.dropout!r} must be in [0, 1)")
    if cfg.r <= 0 or cfg.alpha <= 0:
        raise RecipeError(f"lora.r / lora.alpha: {cfg.r!r} / {cfg.alpha!r} must be > 0")
    inner = base_module(model)
    targets = linear_targets(inner, cfg)
    config = peft_config(cfg, targets, base_model_path)
    with targets_as_given():
        peft.inject_adapter_in_model(config, inner, adapter_name=ADAPTER_NAME)
    for p_name, p in model.named_parameters():
        # peft freezes the base; be explicit so that nothing else can stay trainable
        p.requires_grad_(".lora_" in p_name)
    adapted = adapted_modules(inner)
    if sorted(adapted) != sorted(targets) or getattr(config, "target_parameters", None):
        extra = sorted(set(adapted) - set(targets))[:5]
        lost = sorted(set(targets) - set(adapted))[:5]
        raise RecipeError(f"lora: peft adapted other modules than requested (extra {extra}, missing {lost})")
    count = len(trainable_tensors(model))
    if cfg.expected_trainable_tensors is not None and count != cfg.expected_trainable_tensors:
        raise RecipeError(
            f"lora.expected_trainable_tensors: {cfg.expected_trainable_tensors} but the adapted model has "
            f"{count} trainable tensors ({len(targets)} adapted modules)"
        )
    # kept on the model for export
    inner.rdmaops_lora_config = config
    return model


def _peft_key(name: str) -> str:
    """A state-dict key of an adapter tensor -> the key peft writes in adapter_model.safetensors."""
    for wrapper in ("_orig_mod.", "_checkpoint_wrapped_module.", "_fsdp_wrapped_module."):
        name = name.replace(wrapper, "")
    name = name.removeprefix("module.")  # DDP
    name = name.removeprefix("hf.")
    name = name.replace(f".{ADAPTER_NAME}.", ".")
    return PEFT_PREFIX + name


def adapter_state(
    model: nn.Module, state_dict: dict[str, torch.Tensor] | None = None
) -> dict[str, torch.Tensor]:
    """The adapter tensors in peft's serialized naming, contiguous, on CPU.

    ``state_dict`` is the model's full (gathered) state dict where the strategy shards parameters; without it,
    the model's own tensors are used.
    """
    source = state_dict if state_dict is not None else dict(model.named_parameters())
    out = {_peft_key(k): v.detach().to("cpu").contiguous() for k, v in source.items() if ".lora_" in k}
    if not out:
        raise RuntimeError("lora: the model has no adapter tensors to export")
    return out


def export_adapter(model: nn.Module, path: Path, state_dict: dict[str, torch.Tensor] | None = None) -> Path:
    """Write ``adapter_model.safetensors`` + ``adapter_config.json`` under ``path`` (one process)."""
    from safetensors.torch import save_file

    inner = base_module(model)
    config = getattr(inner, "rdmaops_lora_config", None)
    if config is None:
        raise RuntimeError("lora: export_adapter on a model without apply_lora")
    tensors = adapter_state(model, state_dict)
    path.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path / ADAPTER_WEIGHTS), metadata={"format": "pt"})
    config.save_pretrained(str(path))
    # record the expansion for humans: which modules got which tensors
    summary = {"adapted_modules": len({k.rsplit(".lora_", 1)[0] for k in tensors}), "tensors": len(tensors)}
    (path / "rdmaops_lora.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return path


def gather_adapter_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """Collective (every rank): the full adapter tensors of a DDP/FSDP2/plain model, on CPU.

    Only the adapter tensors are gathered (a DTensor shard is all-gathered with ``full_tensor``), never the
    frozen base, so exporting a LoRA of a large model costs almost nothing.
    """
    from torch.distributed.tensor import DTensor

    out: dict[str, torch.Tensor] = {}
    for name, p in model.named_parameters():
        if ".lora_" not in name:
            continue
        t = p.full_tensor() if isinstance(p, DTensor) else p
        out[name] = t.detach().to("cpu")
    return out


def export_distributed(model: nn.Module, path: Path, is_main: bool) -> Path | None:
    """Collective export: every rank gathers, rank 0 writes; the path on rank 0, None elsewhere."""
    state = gather_adapter_state(model)
    return export_adapter(model, path, state) if is_main else None


def load_adapter(base_model: nn.Module, path: Path, is_trainable: bool = False) -> Any:
    """``peft.PeftModel.from_pretrained`` with the MoE target rewrite switched off (see the module docstring).

    For models peft does not rewrite (GPT-2, Qwen2, ...) this is exactly ``PeftModel.from_pretrained``.
    """
    import peft

    if not (path / ADAPTER_WEIGHTS).is_file():
        raise FileNotFoundError(f"{path / ADAPTER_WEIGHTS}: no adapter weights")
    with targets_as_given():
        return peft.PeftModel.from_pretrained(base_model, str(path), is_trainable=is_trainable)
