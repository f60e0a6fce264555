"""Data packing and order, tokenizers, LR schedule, models (native GPT-2 and transformers from config)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from rdmaops_trainer.config import RecipeError, load_recipe
from rdmaops_trainer.data import (
    IGNORE,
    StepSampler,
    eval_batches,
    generate_corpus,
    load_datasets,
    pack,
    read_jsonl,
    tokenize_records,
)
from rdmaops_trainer.flops import count_params, flops_per_token
from rdmaops_trainer.layout import BatchLayout
from rdmaops_trainer.models import GPT, HFCausalLM, build_model, gpt_config
from rdmaops_trainer.tokenizer import ByteTokenizer
from rdmaops_trainer.train import lr_at


def test_generated_corpus_is_deterministic() -> None:
    a, b = generate_corpus(50, seed=7), generate_corpus(50, seed=7)
    assert a == b and a != generate_corpus(50, seed=8)
    assert any("plus" in d for d in a) and any(d.startswith("Counting:") for d in a)


def test_byte_tokenizer_and_chat_mask() -> None:
    tok = ByteTokenizer()
    assert tok.decode(tok.encode("héllo")) == "héllo"
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    ids, trainable = tok.encode_chat(msgs)
    assert len(ids) == len(trainable)
    # only the assistant's body (content, newline, eos) is trained on
    trained = [i for i, t in zip(ids, trainable, strict=True) if t]
    assert trained == [*tok.encode("yo\n"), tok.eos_id]


def test_pack_shifts_and_masks(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    rows = [
        {"text": "abcdefgh"},
        {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    tok = ByteTokenizer()
    ids, trainable = tokenize_records(read_jsonl(path, "auto"), tok, assistant_only=True)
    blocks = pack(ids, trainable, seq_len=8)
    assert len(blocks) == len(ids) // 9
    batch = blocks.batch([0])
    assert batch["input_ids"].shape == (1, 8)
    assert batch["input_ids"][0].tolist() == tok.encode("abcdefgh")
    assert batch["labels"][0].tolist() == [*tok.encode("bcdefgh"), tok.eos_id]
    # the user turn of the chat record is masked out
    assert (blocks.targets == IGNORE).any()
    with pytest.raises(RecipeError, match=r"d.jsonl:1: record has no \"messages\""):
        list(read_jsonl(path, "chat"))
    with pytest.raises(RecipeError, match="not enough for one block"):
        pack(ids[:5], trainable[:5], seq_len=8)


def test_step_order_is_a_function_of_step_and_independent_of_world_size() -> None:
    s1, s2 = StepSampler(100, 12, seed=3), StepSampler(100, 12, seed=3)
    assert (s1.global_indices(17) == s2.global_indices(17)).all()
    # every block once per epoch: steps 0..(100*3/12) cover three epochs evenly
    seen = np.concatenate([s1.global_indices(s) for s in range(25)])
    assert sorted(np.bincount(seen, minlength=100).tolist()) == [3] * 100
    tok = ByteTokenizer()
    blocks = pack(*tokenize_records(({"text": t} for t in generate_corpus(200, 1)), tok, True), 16)
    sampler = StepSampler(len(blocks), 12, seed=3)

    def layout(dp: int, micro: int) -> BatchLayout:
        return BatchLayout.build(world_size=dp, global_batch_size=12, seq_len=16, micro_batch_size=micro)

    def step_ids(dp: int, micro: int) -> list[list[int]]:
        mbs = [mb for r in range(dp) for mb in sampler.micro_batches(blocks, 5, r, layout(dp, micro))]
        return sorted(row.tolist() for mb in mbs for row in mb["input_ids"])

    assert step_ids(1, 2) == step_ids(2, 2) == step_ids(3, 4) == step_ids(6, 1)
    assert len(eval_batches(blocks, 3, 0, layout(2, 2))) == 9

    def eval_ids(dp: int, micro: int) -> list[list[int]]:
        mbs = [mb for r in range(dp) for mb in eval_batches(blocks, 3, r, layout(dp, micro))]
        return sorted(row.tolist() for mb in mbs for row in mb["input_ids"])

    assert eval_ids(1, 4) == eval_ids(2, 2) == eval_ids(3, 1)


def test_lr_schedule_warmup_then_cosine() -> None:
    r = load_recipe("tiny", ["train.steps=110", "train.warmup_steps=10", "train.lr=1.0", "train.min_lr=0.1"])
    assert lr_at(r, 0) == pytest.approx(0.1) and lr_at(r, 9) == pytest.approx(1.0)
    assert lr_at(r, 60) == pytest.approx(0.55)
    assert lr_at(r, 109) == pytest.approx(0.1 + 0.45 * (1 + math.cos(math.pi * 99 / 100)))
    assert all(lr_at(r, s) >= lr_at(r, s + 1) for s in range(10, 109))


def test_gpt_shapes_tied_weights_and_flops() -> None:
    r = load_recipe("tiny")
    model = build_model(r, vocab_size=257)
    assert isinstance(model, GPT) and model.lm_head.weight is model.wte.weight
    x = torch.randint(0, 257, (2, 64))
    assert model(x).shape == (2, 64, 320)
    loss = model(x, torch.roll(x, -1, 1))
    assert abs(loss.item() - math.log(320)) < 0.3  # untrained: close to uniform
    n = count_params(model)
    assert flops_per_token(model, 64) == 6 * (n - 64 * 64) + 12 * 2 * 64 * 64
    # identical init on every rank: a function of the seed
    assert torch.equal(build_model(r).h[0].attn.c_attn.weight, model.h[0].attn.c_attn.weight)
    model.gradient_checkpointing = True
    model(x, torch.roll(x, -1, 1)).backward()
    gpt2 = gpt_config(load_recipe("gpt2"))
    assert (gpt2.n_layer, gpt2.n_embd, gpt2.vocab_size) == (12, 768, 50304)
    with pytest.raises(RecipeError, match="smaller than the tokenizer's 400 tokens"):
        build_model(r, vocab_size=400)


def test_generated_datasets_split_train_and_eval() -> None:
    r = load_recipe("tiny", ["data.generated_docs=300"])
    train, evl = load_datasets(r, ByteTokenizer(), 257)
    assert len(evl) == int((len(train) + len(evl)) * 0.05)
    # the gpt2 recipe (jsonl, with an eval_path) switched to the generated corpus, as the GPU benchmark's
    # convergence rows do: its eval_path (not on this machine) is not read, the corpus gives the eval split
    r = load_recipe("gpt2", ["data.kind=generated", "data.generated_docs=300", "data.seq_len=64"])
    assert r.data.eval_path and not Path(r.data.eval_path).exists()
    train, evl = load_datasets(r, ByteTokenizer(), 257)
    assert len(evl) == int((len(train) + len(evl)) * 0.05) > 0
    syn_train = load_datasets(load_recipe("qwen1_5b", ["data.synthetic_blocks=8"]), None, 1000)[0]
    assert syn_train.tokens.shape == (8, 2049) and int(syn_train.tokens.max()) < 1000


def _reduced(name: str, config: dict[str, object], model_type: str) -> list[str]:
    sets = ["model.path=null", "model.init=random", f"model.model_type={model_type}", "model.dtype=float32"]
    return [*sets, f"model.config={json.dumps(config)}"]


def test_qwen14b_recipe_builds_a_reduced_qwen2_from_config() -> None:
    cfg = {
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 300,
    }
    r = load_recipe("qwen14b", _reduced("qwen14b", cfg, "qwen2"))
    model = build_model(r)
    assert isinstance(model, HFCausalLM) and type(model.hf).__name__ == "Qwen2ForCausalLM"
    assert len(model.blocks()) == 2
    x = torch.randint(0, 300, (2, 16))
    loss = model(x, torch.roll(x, -1, 1))
    assert torch.isfinite(loss) and abs(loss.item() - math.log(300)) < 0.5
    # untied: the input embedding is a lookup, left out; the lm_head is a matmul, counted
    assert flops_per_token(model, 16) == 6 * (count_params(model) - 300 * 64) + 12 * 2 * 4 * 16 * 16


def test_glm_recipe_builds_a_reduced_glm4_moe_from_config() -> None:
    # the glm recipe at glm-tiny's shape (what the lab trains): the same model code at a CPU size
    cfg = load_recipe("glm-tiny").model.config
    r = load_recipe("glm", _reduced("glm", cfg, "glm4_moe"))
    model = build_model(r)
    assert type(model.hf).__name__ == "Glm4MoeForCausalLM"
    names = [n for n, _p in model.named_parameters()]
    # layer 0 dense MLP, layer 1 MoE with fused routed experts and a shared expert: what the LoRA targets meet
    assert "hf.model.layers.0.mlp.gate_proj.weight" in names
    assert "hf.model.layers.1.mlp.shared_experts.up_proj.weight" in names
    assert any(".mlp.experts." in n for n in names)
    # MFU counts only the active share of the routed experts
    dense = 6 * count_params(model)
    assert flops_per_token(model, 1) < dense
    with pytest.raises(RecipeError, match=r"model\.config\.not_a_field: not a field of Glm4MoeConfig"):
        build_model(load_recipe("glm", _reduced("glm", {"not_a_field": 1}, "glm4_moe")))


def test_hf_tokenizer_from_local_path_with_chat_template(tmp_path: Path) -> None:
    """A tokenizer trained here (no download), saved like a model's tokenizer directory."""
    from rdmaops_trainer.tokenizer import HFTokenizer
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.BPE(unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<unk>", "<|end|>", "<|user|>", "<|assistant|>"]
    )
    raw.train_from_iterator(generate_corpus(200, seed=1), trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="<|end|>", unk_token="<unk>")
    tok.chat_template = "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
    tok.save_pretrained(tmp_path / "tok")

    hf = HFTokenizer(str(tmp_path / "tok"))
    assert hf.eos_id == tok.convert_tokens_to_ids("<|end|>")
    msgs = [{"role": "user", "content": "the cat sees"}, {"role": "assistant", "content": "a green apple"}]
    ids, trainable = hf.encode_chat(msgs)
    user_len = len(hf._template_ids(msgs[:1]))
    assert not any(trainable[:user_len]) and all(trainable[user_len:])
    assert tok.decode(ids[user_len:]) == "<|assistant|>a green apple<|end|>"
    r = load_recipe(
        "tiny", ["tokenizer.kind=hf", f"tokenizer.path={tmp_path / 'tok'}", "data.generated_docs=50"]
    )
    train, _evl = load_datasets(r, hf, hf.vocab_size)
    assert int(train.tokens.max()) < hf.vocab_size


# --------------------------------------------------------------------------- train.attention


@pytest.mark.parametrize("name", ["flash", "cudnn", "efficient", "math"])
def test_attention_order_puts_the_chosen_kernel_first_and_keeps_fallbacks(name: str) -> None:
    from rdmaops_trainer.runtime import attention_order
    from torch.nn.attention import SDPBackend

    order = attention_order(name)
    assert order[0].name.lower().startswith(name)
    assert len(order) == len(set(order)) == 4  # every kernel, once: an input the first refuses still runs
    assert SDPBackend.MATH in order


def test_attention_backends_set_torch_priority_only_inside() -> None:
    from rdmaops_trainer.runtime import attention_backends
    from torch.nn.attention import SDPBackend

    before = torch._C._get_sdp_priority_order()
    assert before[0] != int(SDPBackend.CUDNN_ATTENTION)
    with attention_backends("cudnn"):
        assert torch._C._get_sdp_priority_order()[0] == int(SDPBackend.CUDNN_ATTENTION)
        assert torch.backends.cuda.cudnn_sdp_enabled() and torch.backends.cuda.flash_sdp_enabled()
    assert torch._C._get_sdp_priority_order() == before
    with attention_backends("auto"):  # torch's own order, untouched
        assert torch._C._get_sdp_priority_order() == before


def test_attention_rejects_an_unknown_kernel_by_name() -> None:
    from rdmaops_trainer.runtime import attention_order

    with pytest.raises(RecipeError, match=r"train\.attention: 'flash3' is not one of"):
        attention_order("flash3")
    with pytest.raises(RecipeError, match=r"train\.attention"):
        load_recipe("tiny", ["train.attention=flash3"])


# --------------------------------------------------------------------------- where the model is built


def test_a_random_init_is_built_on_the_gpu_only_when_it_fits_in_half_the_free_memory() -> None:
    from rdmaops_trainer.train import fits_on_device

    gib = 2**30
    assert fits_on_device(12 * gib, 70 * gib)  # the 6.2 B GLM-architecture row on an 80 GB H100
    assert not fits_on_device(36 * gib, 70 * gib)
    assert fits_on_device(35 * gib, 70 * gib)


STRATEGIES = ("ddp", "fsdp2", "zero3", "pipeline")


def test_cpu_runs_and_strategies_that_cannot_take_a_gpu_model_build_on_the_cpu() -> None:
    import dataclasses

    from rdmaops_trainer.runtime import resolve_runtime
    from rdmaops_trainer.strategies import get_strategy
    from rdmaops_trainer.strategies.base import Strategy
    from rdmaops_trainer.train import build_device

    r = load_recipe("tiny", ["cluster.device=cpu", "cluster.nodes=1", "cluster.procs_per_node=1"])
    rt = resolve_runtime(r)
    assert build_device(r, rt, get_strategy("ddp")(r, rt), 256) == "cpu"
    overrides = {n: get_strategy(n).takes_device_model is not Strategy.takes_device_model for n in STRATEGIES}
    assert overrides == {"ddp": True, "fsdp2": True, "zero3": False, "pipeline": False}
    # FSDP2 with pretrained weights on several ranks: rank 0 reads them on the CPU and broadcasts
    assert get_strategy("fsdp2")(r, rt).takes_device_model()
    glm = load_recipe("glm", ["cluster.nodes=1", "cluster.procs_per_node=2"])
    two = dataclasses.replace(rt, world_size=2)
    assert not get_strategy("fsdp2")(glm, two).takes_device_model()
