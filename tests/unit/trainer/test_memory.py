"""The memory estimate before launch (model_shape.py, memory.py): the model counted from its config as the
built model has it, DeepSpeed's own ZeRO-3 count, the estimate against the peaks the GPU benchmarks recorded,
and the layouts that would fit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from conftest import TRAINER_DIR
from rdmaops_trainer import memory
from rdmaops_trainer.config import load_recipe
from rdmaops_trainer.flops import count_params
from rdmaops_trainer.layout import BatchLayout
from rdmaops_trainer.lora import linear_targets
from rdmaops_trainer.model_shape import DEFAULTS, ShapeUnknown, model_shape
from rdmaops_trainer.models import build_model

FIXTURES = TRAINER_DIR.parents[1] / "tests" / "unit" / "fixtures"
PEAKS = json.loads((FIXTURES / "memory" / "peaks.json").read_text())
GLM_1GPU = [
    "model.path=null",
    "model.init=random",
    "model.model_type=glm4_moe",
    'model.config={"num_hidden_layers": 8, "n_routed_experts": 32, "head_dim": 128, "attention_bias": true}',
]
SHAPES = {
    "tiny": ("tiny", []),
    "gpt2": ("gpt2", []),
    "qwen1_5b": ("qwen1_5b", []),
    "glm-tiny": ("glm-tiny", []),
    "glm-arch": ("glm", GLM_1GPU),
    "qwen3 small": (
        "qwen1_5b",
        [
            "model.model_type=qwen3",
            "model.config={hidden_size: 64, num_hidden_layers: 2, intermediate_size: 128, "
            "num_attention_heads: 4, "
            "num_key_value_heads: 2, vocab_size: 1000}",
        ],
    ),
}


def _hf(model: torch.nn.Module) -> torch.nn.Module:
    return getattr(model, "hf", model)


@pytest.mark.parametrize("name", SHAPES)
def test_the_shape_counts_what_the_built_model_has(name: str) -> None:
    recipe = load_recipe(*SHAPES[name])
    shape = model_shape(recipe)
    model = build_model(recipe, device="meta")
    blocks = [sum(p.numel() for p in b.parameters()) for b in model.blocks()]
    assert shape.params == count_params(model)
    assert (shape.block_params, shape.blocks_params, shape.layers) == (max(blocks), sum(blocks), len(blocks))
    linears = {
        n: (m.in_features, m.out_features)
        for n, m in _hf(model).named_modules()
        if isinstance(m, torch.nn.Linear)
    }
    assert {lin.name: (lin.inp, lin.out) for lin in shape.linears} == linears


@pytest.mark.parametrize("name", ["glm-tiny", "glm-arch"])
def test_loras_adapted_modules_are_the_trainers(name: str) -> None:
    recipe = load_recipe(*SHAPES[name])
    params, adapted = memory.lora_params(model_shape(recipe), recipe)
    hf = _hf(build_model(recipe, device="meta"))
    assert adapted == linear_targets(hf, recipe.lora)
    assert 2 * len(adapted) == recipe.lora.expected_trainable_tensors or name == "glm-arch"
    modules = dict(hf.named_modules())
    assert params == sum(recipe.lora.r * (modules[n].in_features + modules[n].out_features) for n in adapted)


def test_the_config_defaults_are_transformers() -> None:
    from transformers import AutoConfig

    for model_type, values in DEFAULTS.items():
        config = AutoConfig.for_model(model_type)
        assert {k: getattr(config, k) for k in values} == values, model_type


def test_a_config_the_estimate_cannot_read_is_named() -> None:
    with pytest.raises(ShapeUnknown, match=r"config\.json was not read"):
        model_shape(load_recipe("qwen14b"))
    with pytest.raises(ShapeUnknown, match="no integer hidden_size"):
        model_shape(load_recipe("qwen14b"), {"model_type": "qwen2", "hidden_size": "big"})
    with pytest.raises(ShapeUnknown, match="model type gemma is not one the estimate models"):
        model_shape(load_recipe("qwen14b"), {"model_type": "gemma"})


@pytest.mark.parametrize("shard", [2, 8, 24])
@pytest.mark.parametrize("offload", ["", "offload_optimizer", "offload_params"])
def test_zero3_model_states_are_deepspeeds_count(shard: int, offload: str) -> None:
    stage3 = pytest.importorskip("deepspeed.runtime.zero.stage3")
    sets = ["strategy.name=zero3", "train.precision=bf16", "cluster.device=cuda"]
    if offload:
        sets.append(f"strategy.zero3.{offload}=true")
    recipe = load_recipe("qwen1_5b", sets)
    shape = model_shape(recipe)
    est = memory.estimate(recipe, shape, BatchLayout.from_recipe(recipe), shard)
    largest = max(shape.block_params, shape.vocab * shape.hidden)
    prefetch = min(recipe.strategy.zero3.prefetch_bucket_size, shape.params) * 2
    ours = sum(est.parts[k] for k in ("parameters", "gradients", "optimizer", "gathered")) - prefetch
    _cpu, gpu, _layer = stage3.estimate_zero3_model_states_mem_needs(
        shape.params, largest, num_gpus_per_node=shard, num_nodes=1,
        cpu_offload=bool(offload), cpu_offload_params=offload == "offload_params",
    )  # fmt: skip
    assert ours == pytest.approx(gpu, rel=1e-6)


@pytest.mark.parametrize("peak", PEAKS, ids=lambda p: f"{p['call'][:2]} {p['row']}")
def test_the_estimate_is_within_15_percent_of_the_recorded_peak(peak: dict) -> None:
    recipe = load_recipe(peak["recipe"], peak["sets"])
    est = memory.recipe_estimate(recipe)
    error = est.gib / peak["peak_mem_gib"] - 1
    # the count agrees within 5% on every recorded row (ZeRO-3 on one rank: DeepSpeed's count is 2-4% over the
    # peak): the 15% the issue asks leaves room for what differs
    assert abs(error) < 0.05, (
        f"{est.describe()} against {peak['peak_mem_gib']} GiB measured: {100 * error:+.1f}%"
    )


def test_usable_memory_leaves_the_reserve() -> None:
    # an H100 80GB ran qwen1_5b at 72.0 GiB and an H200 the micro-batch 32 row at 130.4 GiB
    assert 72.1 < memory.usable_bytes(81559) / memory.GIB < 75
    assert 130.5 < memory.usable_bytes(143771) / memory.GIB < 133


def test_the_smallest_layouts_that_fit() -> None:
    cfg = json.loads((FIXTURES / "models" / "Qwen2.5-14B.config.json").read_text())
    recipe = load_recipe("qwen14b", ["cluster.nodes=1", "cluster.procs_per_node=1"])
    shape = model_shape(recipe, cfg)
    (option,) = memory.fitting_options(recipe, shape, 1, memory.usable_bytes(81559), hybrid=False)
    assert option.nodes == 5 and option.estimate.total <= memory.usable_bytes(81559)
    # HSDP shards inside a node only: more nodes do not help, plain FSDP2 over every rank does
    glm = json.loads((FIXTURES / "models" / "GLM-4.5-Air.config.json").read_text())
    recipe = load_recipe("glm", ["cluster.nodes=2", "cluster.procs_per_node=2"])
    options = memory.fitting_options(
        recipe, model_shape(recipe, glm), 2, memory.usable_bytes(81559), hybrid=True
    )
    assert options[0].nodes == 2 and options[0].sets == {"strategy.fsdp2.hsdp": False}
    # a smaller micro-batch where that is enough
    recipe = load_recipe(
        "qwen1_5b", ["cluster.procs_per_node=1", "train.micro_batch_size=24", "train.global_batch_size=96"]
    )
    options = memory.fitting_options(recipe, model_shape(recipe), 1, memory.usable_bytes(81559), hybrid=False)
    # a micro-batch that keeps the 96 sequences (12 does not fit 80 GB, 10 would move it); checkpointing
    here = [o.sets for o in options if o.nodes == 1]
    assert here == [{"train.micro_batch_size": 8}, {"train.gradient_checkpointing": True}]


def test_the_trainers_start_record_carries_the_estimate(tmp_path: Path) -> None:
    from conftest import python_code

    out = tmp_path / "run"
    code = (
        "import json, sys; from rdmaops_trainer import main\n"
        "main(['--recipe', 'tiny', '--set', 'cluster.nodes=1', '--set', 'train.steps=1', '--set', "
        "'train.warmup_steps=0', '--set', "
        f"'train.output_dir={out}', '--set', 'train.eval_every=0', '--set', 'train.checkpoint_every=0', "
        "'--set', 'train.plot=false'])\n"
    )
    python_code(code)
    start = next(json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if '"start"' in x)
    assert start["memory_estimate_gib"] == round(
        memory.recipe_estimate(load_recipe("tiny", ["cluster.nodes=1"]), cuda=False).gib, 2
    )
