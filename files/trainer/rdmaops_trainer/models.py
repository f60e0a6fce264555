"""Models: the package's own GPT-2 and a thin wrapper around transformers causal LMs.

Both follow the strategy contract: ``model(input_ids, labels) -> mean loss`` (``labels`` already shifted,
-100 ignored; without labels the logits) and ``model.blocks()`` -> the transformer blocks.
"""

from __future__ import annotations

import contextlib
import inspect
import math
from collections.abc import Iterator
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from .config import GPTConfig, Recipe, RecipeError
from .kernels import fused_mlp, registry
from .kernels.fused_loss import linear_cross_entropy


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        if cfg.n_embd % cfg.n_head:
            raise RecipeError(f"model.config.n_embd: {cfg.n_embd} is not divisible by n_head {cfg.n_head}")
        self.n_head = cfg.n_head
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd, bias=cfg.bias)
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=cfg.bias)
        self.dropout = cfg.dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q = q.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        k = k.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        v = v.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(
            q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0
        )
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))


class MLP(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd, bias=cfg.bias)
        self.c_proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd, bias=cfg.bias)
        # train.fused_mlp: bias + GELU in cuBLASLt's GEMM epilogues (kernels/fused_mlp.py, whose converter
        # knows this module by its shape and sets this switch)
        self.fused = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.fused:
            return fused_mlp.mlp(x, self.c_fc, self.c_proj)
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


def lm_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    # fp32 log-softmax whatever the compute dtype
    return F.cross_entropy(logits.float().view(-1, logits.size(-1)), labels.view(-1), ignore_index=-100)


class GPT(nn.Module):
    """GPT-2 with tied input/output embeddings, SDPA attention, GPT-2 initialisation."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.config = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.drop = nn.Dropout(cfg.dropout)
        self.h = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight
        self.gradient_checkpointing = False
        # train.fused_loss: the head and the loss as one step (kernels/fused_loss.py)
        self.fused_loss = False
        # train.bf16_residual: the dtype of the residual stream; None leaves it as autocast makes it (fp32)
        self.residual_dtype: torch.dtype | None = None
        self.apply(self._init_weights)
        # GPT-2: residual projections scaled by 1/sqrt(2 * n_layer)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def blocks(self) -> list[nn.Module]:
        return list(self.h)

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(input_ids.size(1), device=input_ids.device)
        x = self.drop(self.wte(input_ids) + self.wpe(pos))
        # every block adds its bf16 output to x, so the stream keeps x's dtype from here on
        return x if self.residual_dtype is None else x.to(self.residual_dtype)

    def run_blocks(self, x: torch.Tensor, blocks: nn.ModuleList | list[nn.Module]) -> torch.Tensor:
        for block in blocks:
            if self.gradient_checkpointing and self.training:
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        return x

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
        x = self.ln_f(self.run_blocks(self.embed(input_ids), self.h))
        if labels is None:
            return self.lm_head(x)
        if self.fused_loss:
            return linear_cross_entropy(x, self.lm_head.weight, labels)
        return lm_loss(self.lm_head(x), labels)


def _no_packed_sequences(position_ids: torch.Tensor) -> None:
    return None


@contextlib.contextmanager
def positions_not_packed() -> Iterator[None]:
    """transformers' mask code looks for several sequences packed into one row in the position ids, and
    reads the answer on the host: a device sync at every forward (4 per step, each followed by a GPU gap,
    in the qwen1_5b profile). The trainer passes no position ids, so the model makes them from an arange:
    one sequence per row, the answer the check would give. Skipped here, eagerly only (a compiled forward
    does not run the check)."""
    try:
        from transformers import masking_utils
    except ImportError:
        yield
        return
    original = getattr(masking_utils, "find_packed_sequence_indices", None)
    if original is None or torch.compiler.is_compiling():
        yield
        return
    masking_utils.find_packed_sequence_indices = _no_packed_sequences
    try:
        yield
    finally:
        masking_utils.find_packed_sequence_indices = original


class HFCausalLM(nn.Module):
    """A transformers causal LM behind the package's model contract."""

    def __init__(self, hf_model: nn.Module) -> None:
        super().__init__()
        self.hf = hf_model
        # a strategy may swap in a compiled version
        self.loss_fn: Any = lm_loss
        # train.fused_loss: the decoder's hidden states and the output head's weight go to
        # fused_loss.linear_cross_entropy; the model's own head forward (and its logits) is skipped
        self.fused_loss = False

    @property
    def config(self) -> Any:
        return self.hf.config

    def blocks(self) -> list[nn.Module]:
        # the decoder layers: the first ModuleList named *.layers (works through peft's wrappers too)
        for name, module in self.hf.named_modules():
            if isinstance(module, nn.ModuleList) and name.split(".")[-1] in ("layers", "h"):
                return list(module)
        raise RuntimeError(f"no decoder layer list found in {type(self.hf).__name__}")

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
        with positions_not_packed():
            if labels is not None and self.fused_loss:
                hf: Any = self.hf
                # under FSDP2 the root's forward has gathered the head's weight: the gradient made in the
                # fused forward reaches the unsharded parameter and is reduce-scattered with the rest
                hidden = hf.get_decoder()(input_ids=input_ids, use_cache=False).last_hidden_state
                return linear_cross_entropy(hidden, head_weight(self), labels)
            logits = self.hf(input_ids=input_ids, use_cache=False).logits
        if labels is None:
            return logits
        return self.loss_fn(logits, labels)


def head_weight(model: nn.Module) -> nn.Parameter:
    """The output head's weight (the token embedding's when tied): what train.fused_loss multiplies by."""
    if isinstance(model, GPT):
        return model.lm_head.weight
    if isinstance(model, HFCausalLM):
        hf: Any = model.hf
        return hf.get_output_embeddings().weight
    raise TypeError(f"no output head known for {type(model).__name__}")


# --------------------------------------------------------------------------- construction


def gpt_config(recipe: Recipe, vocab_size: int | None = None) -> GPTConfig:
    cfg = GPTConfig(**recipe.model.config)
    if vocab_size is not None and vocab_size > cfg.vocab_size:
        raise RecipeError(
            f"model.config.vocab_size: {cfg.vocab_size} is smaller than the tokenizer's {vocab_size} tokens"
        )
    if recipe.data.seq_len > cfg.block_size:
        raise RecipeError(
            f"data.seq_len: {recipe.data.seq_len} exceeds model.config.block_size {cfg.block_size}"
        )
    return cfg


def hf_config(recipe: Recipe) -> Any:
    from transformers import AutoConfig

    m = recipe.model
    if m.path:
        base = AutoConfig.from_pretrained(m.path)
    else:
        try:
            base = AutoConfig.for_model(str(m.model_type))
        except ValueError as exc:
            raise RecipeError(f"model.model_type: {m.model_type!r} is not known to transformers") from exc
    # catch typos: a key must be a constructor argument, an attribute, or one of the legacy keys the
    # constructors still translate (rope_theta -> rope_parameters) or modeling code reads (head_dim)
    known = set(inspect.signature(type(base).__init__).parameters) | set(base.to_dict())
    known |= {"head_dim", "rope_theta", "rope_scaling"}
    for key in m.config:
        if key not in known:
            raise RecipeError(f"model.config.{key}: not a field of {type(base).__name__}")
    # overrides go through the constructor so derived fields stay consistent
    cfg = AutoConfig.from_pretrained(m.path, **m.config) if m.path else type(base)(**m.config)
    cfg.use_cache = False
    return cfg


def build_model(
    recipe: Recipe, vocab_size: int | None = None, device: torch.device | str = "cpu"
) -> nn.Module:
    """Build the recipe's model with weights seeded by ``recipe.seed`` (identical on every rank).

    ``device="meta"`` builds shapes only (a strategy that loads weights itself, or FLOP counting). The
    recipe's opt-in options of the build stage are applied here (``kernels.registry``).
    """
    m = recipe.model
    dtype = torch.bfloat16 if m.dtype == "bfloat16" else torch.float32
    torch.manual_seed(recipe.seed)
    if m.kind == "gpt2":
        with torch.device(device):
            gpt = GPT(gpt_config(recipe, vocab_size))
        registry.convert(gpt, recipe, "build")
        return gpt.to(dtype) if dtype != torch.float32 else gpt
    from transformers import AutoModelForCausalLM

    cfg = hf_config(recipe)
    # a pretrained model's type is only known here, from its config.json
    registry.check_hf_config(recipe, cfg.model_type)
    if vocab_size is not None and vocab_size > cfg.vocab_size:
        raise RecipeError(f"model: vocab_size {cfg.vocab_size} is smaller than the tokenizer's {vocab_size}")
    if m.init == "pretrained" and str(device) != "meta":
        hf = AutoModelForCausalLM.from_pretrained(
            str(m.path), config=cfg, dtype=dtype, attn_implementation="sdpa"
        )
    else:
        with torch.device(device):
            hf = AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation="sdpa")
    model = HFCausalLM(hf)
    registry.convert(model, recipe, "build")
    return model


def enable_gradient_checkpointing(model: nn.Module) -> None:
    if isinstance(model, GPT):
        model.gradient_checkpointing = True
    elif isinstance(model, HFCausalLM):
        hf: Any = model.hf
        hf.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    else:
        raise TypeError(f"gradient checkpointing: unsupported model {type(model).__name__}")
