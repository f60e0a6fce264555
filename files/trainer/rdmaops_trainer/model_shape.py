"""A model's parameters and layer widths from its config alone, before anything is built (no torch).

The memory estimate (``memory.py``) needs what a built model would tell: every parameter, the largest
transformer block (a sharding unit of FSDP2, a gathered unit of ZeRO-3), what lies outside the blocks
(embeddings, final norm, an untied head), the ``nn.Linear`` modules by the names peft matches (LoRA's
trainable share), and the widths that set a layer's activations. ``model_shape`` reads them from the recipe's
``gpt2`` config, or from a transformers config (the model directory's ``config.json``, the recipe's
``model.config`` over it) for the families the trainer runs: dense SwiGLU decoders (llama, mistral, qwen2,
qwen3) and GLM-4 MoE (``glm4_moe``). The tests hold the counts to built models.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# transformers' config defaults for the keys read here (transformers 5.x; a test holds them to the config
# classes); a key missing from a config.json means its class default
DENSE = ("llama", "mistral", "qwen2", "qwen3")
DEFAULTS: dict[str, dict[str, Any]] = {
    "llama": {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
              "num_attention_heads": 32, "tie_word_embeddings": False, "attention_bias": False,
              "mlp_bias": False},
    "mistral": {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
                "num_attention_heads": 32, "num_key_value_heads": 8, "tie_word_embeddings": False},
    "qwen2": {"vocab_size": 151936, "hidden_size": 4096, "intermediate_size": 22016, "num_hidden_layers": 32,
              "num_attention_heads": 32, "tie_word_embeddings": False},
    "qwen3": {"vocab_size": 151936, "hidden_size": 4096, "intermediate_size": 22016, "num_hidden_layers": 32,
              "num_attention_heads": 32, "head_dim": 128, "tie_word_embeddings": False,
              "attention_bias": False},
    "glm4_moe": {"vocab_size": 151552, "hidden_size": 4096, "intermediate_size": 10944,
                 "num_hidden_layers": 46, "num_attention_heads": 96, "num_key_value_heads": 8,
                 "tie_word_embeddings": False, "attention_bias": False, "moe_intermediate_size": 1408,
                 "n_routed_experts": 128, "n_shared_experts": 1, "num_experts_per_tok": 8,
                 "first_k_dense_replace": 1, "use_qk_norm": False},
}  # fmt: skip


class ShapeUnknown(ValueError):
    """The config does not say enough (or names a family not modelled here) to count the model."""


@dataclass(frozen=True)
class Linear:
    name: str  # the module's name in the model, as peft matches it (model.layers.0.self_attn.q_proj)
    inp: int
    out: int
    bias: bool

    @property
    def params(self) -> int:
        return self.inp * self.out + (self.out if self.bias else 0)


@dataclass(frozen=True)
class ModelShape:
    family: str  # gpt2, dense (SwiGLU decoders), glm4_moe
    hidden: int
    layers: int
    vocab: int
    q_dim: int  # attention heads x head dim
    kv_dim: int  # key/value heads x head dim
    ffn: int  # the dense MLP's width (gpt2: 4 x hidden)
    dense_layers: int  # layers with the dense MLP (glm4_moe: the first ones; the others route to experts)
    experts: int  # routed experts per MoE layer (0: none)
    experts_per_token: int
    expert_ffn: int  # one routed expert's width
    shared_ffn: int  # the shared experts' width (n_shared x expert width)
    params: int  # every parameter, a tied weight once
    block_params: int  # the largest transformer block
    root_params: int  # outside the blocks: embeddings, final norm, an untied head
    linears: tuple[Linear, ...]

    @property
    def blocks_params(self) -> int:
        return self.params - self.root_params


def model_shape(recipe: Any, config: Mapping[str, Any] | None = None) -> ModelShape:
    """The shape of RECIPE's model: its gpt2 config, or CONFIG (an hf model's config.json, None for one built
    from ``model.model_type``) with the recipe's ``model.config`` over it. ShapeUnknown when it cannot say."""
    m = recipe.model
    if m.kind == "gpt2":
        from .config import GPTConfig

        return _gpt2(GPTConfig(**m.config))
    if m.path and config is None:
        raise ShapeUnknown(f"{m.path}/config.json was not read")
    base = dict(config or {})
    model_type = str(base.get("model_type") or m.model_type or "")
    if model_type not in DEFAULTS:
        raise ShapeUnknown(
            f"model type {model_type or '(none)'} is not one the estimate models ({', '.join(DEFAULTS)})"
        )
    cfg = {**DEFAULTS[model_type], **base, **m.config}
    return _glm4_moe(cfg) if model_type == "glm4_moe" else _dense(cfg, model_type)


def _gpt2(c: Any) -> ModelShape:
    d, bias = c.n_embd, c.bias
    norm = 2 * d if bias else d
    linears: list[Linear] = []
    for i in range(c.n_layer):
        p = f"h.{i}"
        linears += [
            Linear(f"{p}.attn.c_attn", d, 3 * d, bias), Linear(f"{p}.attn.c_proj", d, d, bias),
            Linear(f"{p}.mlp.c_fc", d, 4 * d, bias), Linear(f"{p}.mlp.c_proj", 4 * d, d, bias),
        ]  # fmt: skip
    block = sum(lin.params for lin in linears[:4]) + 2 * norm
    root = c.vocab_size * d + c.block_size * d + norm  # the head is the token embedding (tied)
    linears.append(Linear("lm_head", d, c.vocab_size, False))
    return ModelShape(
        "gpt2", d, c.n_layer, c.vocab_size, d, d, 4 * d, c.n_layer, 0, 0, 0, 0,
        params=root + c.n_layer * block, block_params=block, root_params=root, linears=tuple(linears),
    )  # fmt: skip


def _need(cfg: Mapping[str, Any], *keys: str) -> list[int]:
    missing = [k for k in keys if not isinstance(cfg.get(k), int) or isinstance(cfg.get(k), bool)]
    if missing:
        raise ShapeUnknown(f"the model config has no integer {', '.join(missing)}")
    return [int(cfg[k]) for k in keys]


def _attention(cfg: Mapping[str, Any], model_type: str, prefix: str) -> tuple[list[Linear], int, int, int]:
    """The attention projections of one layer, the norms' parameters of the layer, and (q, kv) widths."""
    h, heads = _need(cfg, "hidden_size", "num_attention_heads")
    kv_heads = int(cfg.get("num_key_value_heads") or heads)
    head_dim = int(cfg.get("head_dim") or h // heads)
    q, kv = heads * head_dim, kv_heads * head_dim
    # qwen2 always has q/k/v biases; the others as attention_bias says; o_proj never in these families
    qkv_bias = model_type == "qwen2" or bool(cfg.get("attention_bias"))
    linears = [
        Linear(f"{prefix}.self_attn.q_proj", h, q, qkv_bias),
        Linear(f"{prefix}.self_attn.k_proj", h, kv, qkv_bias),
        Linear(f"{prefix}.self_attn.v_proj", h, kv, qkv_bias),
        Linear(f"{prefix}.self_attn.o_proj", q, h, False),
    ]
    qk_norm = model_type == "qwen3" or bool(cfg.get("use_qk_norm"))
    norms = 2 * h + (2 * head_dim if qk_norm else 0)
    return linears, norms, q, kv


def _mlp(prefix: str, h: int, width: int, bias: bool = False) -> list[Linear]:
    return [
        Linear(f"{prefix}.gate_proj", h, width, bias),
        Linear(f"{prefix}.up_proj", h, width, bias),
        Linear(f"{prefix}.down_proj", width, h, bias),
    ]


def _root(cfg: Mapping[str, Any], h: int, vocab: int) -> tuple[int, Linear]:
    tied = bool(cfg.get("tie_word_embeddings"))
    return vocab * h * (1 if tied else 2) + h, Linear("lm_head", h, vocab, False)


def _dense(cfg: Mapping[str, Any], model_type: str) -> ModelShape:
    h, ffn, layers, vocab = _need(cfg, "hidden_size", "intermediate_size", "num_hidden_layers", "vocab_size")
    linears: list[Linear] = []
    block = 0
    q = kv = 0
    for i in range(layers):
        attn, norms, q, kv = _attention(cfg, model_type, f"model.layers.{i}")
        mine = attn + _mlp(f"model.layers.{i}.mlp", h, ffn, bool(cfg.get("mlp_bias")))
        block = sum(lin.params for lin in mine) + norms
        linears += mine
    root, head = _root(cfg, h, vocab)
    return ModelShape(
        "dense", h, layers, vocab, q, kv, ffn, layers, 0, 0, 0, 0,
        params=root + layers * block, block_params=block, root_params=root, linears=(*linears, head),
    )  # fmt: skip


def _glm4_moe(cfg: Mapping[str, Any]) -> ModelShape:
    h, ffn, layers, vocab = _need(cfg, "hidden_size", "intermediate_size", "num_hidden_layers", "vocab_size")
    expert_ffn, experts, shared, top_k, first = _need(
        cfg, "moe_intermediate_size", "n_routed_experts", "n_shared_experts", "num_experts_per_tok",
        "first_k_dense_replace",
    )  # fmt: skip
    first = min(first, layers)
    linears: list[Linear] = []
    total = largest = 0
    q = kv = 0
    for i in range(layers):
        p = f"model.layers.{i}"
        attn, norms, q, kv = _attention(cfg, "glm4_moe", p)
        if i < first:
            mine = attn + _mlp(f"{p}.mlp", h, ffn)
            other = 0
        else:
            # the shared experts are one MLP of n_shared widths; the routed ones fused 3-D parameters (gate
            # and up, down) and the router a plain weight (its score-correction bias is a buffer): no
            # nn.Linear, no LoRA
            mine = attn + _mlp(f"{p}.mlp.shared_experts", h, expert_ffn * shared)
            other = experts * 3 * h * expert_ffn + experts * h
        block = sum(lin.params for lin in mine) + norms + other
        total += block
        largest = max(largest, block)
        linears += mine
    root, head = _root(cfg, h, vocab)
    return ModelShape(
        "glm4_moe", h, layers, vocab, q, kv, ffn, first, experts, top_k, expert_ffn, expert_ffn * shared,
        params=root + total, block_params=largest, root_params=root, linears=(*linears, head),
    )  # fmt: skip
