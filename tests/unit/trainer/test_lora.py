"""LoRA with peft: the glm4_moe recipe gets exactly the adapters it asks for (counted against the model
config), the exported adapter loads with peft and reproduces the outputs, and bad LoRA values are rejected.

Models are built from config with random weights (no download): the real glm recipe with its layer structure
(46 layers, first_k_dense_replace 1, one shared expert) at toy widths.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import peft
import pytest
import torch
from conftest import records, run_trainer, tiny_args
from rdmaops_trainer import lora
from rdmaops_trainer.config import LoraConfig, RecipeError, load_recipe
from rdmaops_trainer.data import eval_batches, load_datasets
from rdmaops_trainer.layout import BatchLayout
from rdmaops_trainer.models import build_model
from rdmaops_trainer.tokenizer import build_tokenizer
from safetensors.torch import load_file

GLM_TOY = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "moe_intermediate_size": 16,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "vocab_size": 128,
}


def glm_recipe(**extra: Any) -> Any:
    """The glm recipe, built from config (random weights) at toy widths with GLM-4.5-Air's layer plan.

    With fewer layers than the real model the recipe's expected count no longer applies and is dropped."""
    config = {**GLM_TOY, "num_hidden_layers": 46, "first_k_dense_replace": 1, "n_shared_experts": 1, **extra}
    sets = ["model.path=null", "model.init=random", "model.model_type=glm4_moe", "model.dtype=float32"]
    if config["num_hidden_layers"] != 46:
        sets.append("lora.expected_trainable_tensors=null")
    return load_recipe("glm", [*sets, f"model.config={json.dumps(config)}"])


def expected_lora_tensors(cfg: Any, targets: list[str]) -> int:
    """Adapter tensors (A and B per adapted nn.Linear) that `targets` ask for, from the model config alone."""
    layers, dense = cfg.num_hidden_layers, cfg.first_k_dense_replace
    attn = sum(t in targets for t in ("q_proj", "k_proj", "v_proj", "o_proj"))
    mlp = sum(t in targets for t in ("gate_proj", "up_proj", "down_proj"))
    shared = (layers - dense) * mlp if cfg.n_shared_experts else 0
    return 2 * (layers * attn + dense * mlp + shared)


def _perturb_b(model: torch.nn.Module) -> None:
    """LoRA B starts at zero (the adapter is a no-op): give it values, as training would."""
    gen = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if ".lora_B." in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.1)


def test_glm_recipe_gets_exactly_the_adapters_it_asks_for() -> None:
    r = glm_recipe()
    model = lora.apply_lora(build_model(r), r.lora)
    cfg = model.hf.config
    trainable = lora.trainable_tensors(model)
    want = expected_lora_tensors(cfg, r.lora.target_modules)
    assert want == 644 == r.lora.expected_trainable_tensors
    assert len(trainable) == want
    assert all(".lora_A." in n or ".lora_B." in n for n in trainable)
    adapted = set(lora.adapted_modules(model.hf))
    # the modules peft's MoE rewrite would have skipped
    for proj in ("gate_proj", "up_proj", "down_proj"):
        assert f"model.layers.0.mlp.{proj}" in adapted
        assert f"model.layers.45.mlp.shared_experts.{proj}" in adapted
    # routed experts are fused 3-D parameters: frozen, no adapter
    assert not any(".mlp.experts" in n for n in adapted)
    assert not any(".mlp.experts." in n for n in trainable)


def test_plain_peft_rewrites_glm4_moe_targets() -> None:
    """Why lora.targets_as_given exists (peft issue #3711): if this fails, peft fixed it upstream."""
    r = glm_recipe(num_hidden_layers=3)
    model = build_model(r)
    cfg = peft.LoraConfig(r=4, lora_alpha=8, target_modules=list(r.lora.target_modules))
    pm = peft.get_peft_model(model.hf, cfg)
    adapted = set(lora.adapted_modules(pm))
    assert not any(n.endswith("layers.0.mlp.gate_proj") for n in adapted)
    assert not any("shared_experts" in n for n in adapted)


def test_expected_count_mismatch_and_bad_targets_are_rejected() -> None:
    with pytest.raises(
        RecipeError, match=r"lora.expected_trainable_tensors: 640 but the adapted model has 644"
    ):
        r = glm_recipe()
        r.lora.expected_trainable_tensors = 640
        lora.apply_lora(build_model(r), r.lora)
    r = glm_recipe(num_hidden_layers=2)
    bad = LoraConfig(enabled=True, target_modules=["q_proj", "qkv_proj"])
    with pytest.raises(RecipeError, match=r"lora.target_modules: 'qkv_proj' match no nn.Linear module"):
        lora.apply_lora(build_model(r), bad)
    bad = LoraConfig(enabled=True, target_modules=["q_proj"], exclude_modules="(")
    with pytest.raises(RecipeError, match=r"lora.exclude_modules: '\(' is not a regex"):
        lora.apply_lora(build_model(r), bad)
    bad = LoraConfig(enabled=True, target_modules=["q_proj"], exclude_modules=".*")
    with pytest.raises(RecipeError, match=r"excludes every targeted module"):
        lora.apply_lora(build_model(r), bad)
    with pytest.raises(RecipeError, match=r"lora.dropout: 1.5 must be in \[0, 1\)"):
        lora.apply_lora(build_model(r), LoraConfig(enabled=True, target_modules=["q_proj"], dropout=1.5))


def test_glm_adapter_export_and_reload_give_identical_outputs(tmp_path: Path) -> None:
    r = glm_recipe(num_hidden_layers=3)
    model = lora.apply_lora(build_model(r), r.lora)
    _perturb_b(model)
    model.eval()
    x = torch.randint(0, 128, (2, 12), generator=torch.Generator().manual_seed(0))
    want = model(x)
    out = lora.export_adapter(model, tmp_path / "adapter")
    tensors = load_file(str(out / lora.ADAPTER_WEIGHTS))
    assert len(tensors) == expected_lora_tensors(model.hf.config, r.lora.target_modules) == 42
    assert "base_model.model.model.layers.0.mlp.gate_proj.lora_A.weight" in tensors
    saved = json.loads((out / "adapter_config.json").read_text())
    assert saved["peft_type"] == "LORA" and saved["r"] == r.lora.r and saved["lora_alpha"] == r.lora.alpha

    base = build_model(r).hf.eval()
    assert not torch.allclose(base(input_ids=x).logits, want)
    reloaded = lora.load_adapter(base, out).eval()
    assert torch.allclose(reloaded(input_ids=x).logits, want, atol=1e-6, rtol=0)


def test_qwen2_adapter_reloads_with_plain_peft(tmp_path: Path) -> None:
    cfg = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4}
    cfg["num_key_value_heads"] = 2
    sets = ["model.path=null", "model.init=random", "model.model_type=qwen2", "model.dtype=float32"]
    r = load_recipe("qwen14b", [*sets, f"model.config={json.dumps({**cfg, 'vocab_size': 96})}"])
    targets = LoraConfig(
        enabled=True, r=4, alpha=16, dropout=0.0, target_modules=["q_proj", "v_proj", "down_proj"]
    )
    model = lora.apply_lora(build_model(r), targets)
    assert len(lora.trainable_tensors(model)) == 2 * 2 * 3
    _perturb_b(model)
    model.eval()
    x = torch.randint(0, 96, (2, 9), generator=torch.Generator().manual_seed(1))
    want = model(x)
    out = lora.export_adapter(model, tmp_path / "adapter")
    reloaded = peft.PeftModel.from_pretrained(build_model(r).hf.eval(), str(out)).eval()
    assert torch.allclose(reloaded(input_ids=x).logits, want, atol=1e-6, rtol=0)


LORA_SETS = [
    "lora.enabled=true",
    "lora.target_modules=[c_attn, c_proj, c_fc]",
    "lora.r=4",
    "lora.alpha=8",
    "lora.dropout=0.0",
    "lora.expected_trainable_tensors=16",
    "train.eval_every=8",
]


@pytest.fixture(scope="module")
def fsdp2_lora(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("lora") / "fsdp2"
    run_trainer(2, *tiny_args(out, 2, "strategy.name=fsdp2", *LORA_SETS))
    return out


def test_fsdp2_lora_trains_and_its_adapter_reproduces_the_eval_loss(fsdp2_lora: Path) -> None:
    """2 CPU processes, FSDP2 over a LoRA'd tiny GPT-2; the exported adapter, loaded with plain peft onto a
    fresh model from the recipe, gives the eval loss the trainer logged at the last step."""
    out = fsdp2_lora
    start = records(out, "start")[0]
    assert 0 < start["trainable_params"] < start["params"] / 10
    curve = {r["step"]: r["loss"] for r in records(out)}
    assert curve[8] < curve[1] - 0.1, curve
    adapter = Path(records(out, "end")[0]["export"])
    assert (adapter / lora.ADAPTER_WEIGHTS).is_file()
    assert len(load_file(str(adapter / lora.ADAPTER_WEIGHTS))) == 16

    r = load_recipe("tiny", ["cluster.procs_per_node=2", "data.generated_docs=600"])
    tok = build_tokenizer(r)
    _train, eval_data = load_datasets(r, tok, tok.vocab_size)
    model = peft.PeftModel.from_pretrained(build_model(r, vocab_size=tok.vocab_size), str(adapter)).eval()
    # the trainer's eval set, whole on one "rank": its mean is the mean the 2 ranks logged
    batches = eval_batches(eval_data, r.train.eval_batches, 0, BatchLayout.from_recipe(r, world_size=1))
    with torch.no_grad():
        mean = sum(float(model(b["input_ids"], b["labels"])) for b in batches) / len(batches)
    logged = records(out, "eval")[-1]["eval_loss"]
    assert abs(mean - logged) < 1e-5, (mean, logged)


def test_zero3_lora_matches_fsdp2_lora(fsdp2_lora: Path, tmp_path: Path) -> None:
    """ZeRO-3 trains the same adapter (frozen base partitioned too) and exports it from its partitions."""
    out = tmp_path / "zero3"
    run_trainer(2, *tiny_args(out, 2, "strategy.name=zero3", *LORA_SETS))
    z = {r["step"]: r["loss"] for r in records(out)}
    f = {r["step"]: r["loss"] for r in records(fsdp2_lora)}
    assert all(abs(z[s] - f[s]) < 1e-4 for s in f), (z, f)
    za = load_file(str(Path(records(out, "end")[0]["export"]) / lora.ADAPTER_WEIGHTS))
    fa = load_file(str(Path(records(fsdp2_lora, "end")[0]["export"]) / lora.ADAPTER_WEIGHTS))
    assert sorted(za) == sorted(fa) and len(za) == 16
    assert all(torch.allclose(za[k], fa[k], atol=1e-5, rtol=0) for k in za)
    assert any(float(za[k].abs().max()) > 1e-3 for k in za if ".lora_B." in k)


def test_glm_lora_with_the_fused_loss_gives_the_same_loss_and_adapter_gradients() -> None:
    """train.fused_loss through peft's wrappers: the frozen head makes no weight gradient, the adapters get
    the gradients the unfused model gives them."""
    x = torch.randint(0, 128, (2, 12), generator=torch.Generator().manual_seed(1))
    labels = x.roll(-1, dims=1)
    labels[:, -1] = -100
    got = []
    for fused in (False, True):
        r = glm_recipe(num_hidden_layers=3)
        model = lora.apply_lora(build_model(r), r.lora)
        _perturb_b(model)
        model.fused_loss = fused
        loss = model(x, labels)
        assert ("LinearCrossEntropy" in type(loss.grad_fn).__name__) == fused
        loss.backward()
        got.append((loss.detach(), {n: p.grad for n, p in model.named_parameters() if p.requires_grad}))
    (loss_a, ga), (loss_b, gb) = got
    assert torch.allclose(loss_a, loss_b, atol=1e-6)
    assert len(ga) == 42 and ga.keys() == gb.keys()
    for name in ga:
        assert torch.allclose(ga[name], gb[name], atol=1e-7, rtol=1e-4), name
