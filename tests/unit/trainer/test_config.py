"""Recipes: every shipped recipe validates; bad values are rejected with messages naming them; the CLI
checks paths before any process group exists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch.distributed as dist
import yaml
from conftest import refusal
from rdmaops_trainer.__main__ import completed_message, main
from rdmaops_trainer.config import (
    RecipeError,
    apply_overrides,
    available_recipes,
    load_recipe,
    load_recipe_data,
    recipe_from_dict,
    validate,
)
from rdmaops_trainer.metrics import readable

SHIPPED = ["glm", "gpt2", "gpt2-pipeline", "qwen14b", "qwen1_5b", "tiny"]


def test_shipped_recipes_validate() -> None:
    assert set(SHIPPED) <= set(available_recipes())
    expected = {
        "glm": ("fsdp2", 16),
        "qwen14b": ("zero3", 24),
        "gpt2": ("ddp", 8),
        "gpt2-pipeline": ("pipeline", 2),
        "tiny": ("fsdp2", 3),
    }
    for name, (strategy, world) in expected.items():
        r = load_recipe(name)
        assert (r.strategy.name, r.cluster.world_size) == (strategy, world)
        validate(r, world_size=world)
    glm = load_recipe("glm")
    assert glm.lora.enabled and glm.train.gradient_checkpointing and glm.cluster.nodes == 2
    q = load_recipe("qwen14b")
    assert q.model.path == "/shared/models/Qwen2.5-14B" and q.train.gradient_checkpointing
    assert q.train.precision == "bf16" and q.cluster.nodes == 3


def test_recipe_files_are_plain_yaml_data() -> None:
    # the playbooks read the same files with a YAML parser, no Python involved
    data, path = load_recipe_data("qwen14b")
    assert yaml.safe_load(path.read_text())["strategy"]["name"] == "zero3"
    assert data["cluster"] == {"nodes": 3, "procs_per_node": 8, "device": "cuda"}


def test_overrides_are_typed_yaml_scalars() -> None:
    r = load_recipe(
        "tiny", ["train.lr=1e-4", "train.min_lr=0", "train.gradient_checkpointing=true", "strategy.name=ddp"]
    )
    assert r.train.lr == 1e-4 and r.train.gradient_checkpointing is True and r.strategy.name == "ddp"
    r = load_recipe("glm", ["lora.target_modules=[q_proj, v_proj]"])
    assert r.lora.target_modules == ["q_proj", "v_proj"]
    data = apply_overrides({"a": {"b": 1}}, ["a.c.d=x"])
    assert data == {"a": {"b": 1, "c": {"d": "x"}}}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["train.lrr=1"], "unknown key train.lrr (did you mean train.lr?)"),
        (["trian.lr=1"], "unknown key trian"),
        (["train.steps=ten"], "train.steps: expected an integer, got 'ten'"),
        (["train.steps=1.5"], "train.steps: expected an integer, got 1.5"),
        (["train.gradient_checkpointing=maybe"], "train.gradient_checkpointing: expected true or false"),
        (["strategy.name=zero2"], "strategy.name: 'zero2' is not one of ddp, fsdp2, zero3, pipeline"),
        (["train.precision=fp8"], "train.precision: 'fp8' is not one of auto, bf16, fp32"),
        (
            ["strategy.fsdp2.reduce_dtype=float16"],
            "strategy.fsdp2.reduce_dtype: 'float16' is not one of auto, float32, bfloat16",
        ),
        (["train.lr=-1"], "train.lr: -1.0 must be > 0"),
        (["train.min_lr=1"], "train.min_lr: 1.0 is larger than train.lr"),
        (["train.warmup_steps=500"], "train.warmup_steps: 500 exceeds train.steps 200"),
        (
            ["train.micro_batch_size=5"],
            "train.global_batch_size: 12 is not a multiple of train.micro_batch_size 5",
        ),
        (["cluster.procs_per_node=5"], "is not a multiple of train.micro_batch_size 2 * cluster.nodes"),
        (["data.seq_len=128"], "data.seq_len: 128 exceeds model.config.block_size 64"),
        (["model.config.n_layers=4"], "unknown key model.config.n_layers"),
        (
            ["strategy.name=pipeline", "cluster.procs_per_node=3"],
            "strategy.pipeline.stages: 2 does not divide",
        ),
        (
            ["strategy.name=pipeline", "strategy.pipeline.stages=1"],
            "strategy.pipeline.stages: 1 must be >= 2",
        ),
        (
            # a 2-layer model cannot have 3 stages: found by --check, not by every rank at start
            ["strategy.name=pipeline", "strategy.pipeline.stages=3", "strategy.pipeline.microbatches=3"],
            "strategy.pipeline.stages: 3 exceeds the model's 2 layers",
        ),
        (["model.config.n_head=5"], "model.config.n_embd: 64 is not divisible by n_head 5"),
        (["data.kind=jsonl"], "data.path: required when data.kind is jsonl"),
        (["model.init=pretrained"], "model.init: 'pretrained' needs model.kind hf"),
        (["data.eval_fraction=1.5"], "data.eval_fraction: 1.5 must be in [0, 1)"),
        (["train.beta2=1"], "train.beta2: 1.0 must be in [0, 1)"),
        (["lora.enabled=true"], "lora.target_modules: empty while lora.enabled is true"),
        (["train.steps"], "override 'train.steps' is not key=value"),
    ],
)
def test_bad_values_are_named(overrides: list[str], message: str) -> None:
    assert message in refusal("tiny", overrides)


def test_world_size_mismatch_is_named() -> None:
    r = load_recipe("tiny")
    with pytest.raises(
        RecipeError, match=r"WORLD_SIZE 2 does not match cluster.nodes \* cluster.procs_per_node"
    ):
        validate(r, world_size=2)


def test_unknown_recipe_and_bad_file(tmp_path: Path) -> None:
    with pytest.raises(RecipeError, match="recipe 'nope' not found"):
        load_recipe("nope")
    bad = tmp_path / "bad.yaml"
    bad.write_text("- a\n- b\n")
    with pytest.raises(RecipeError, match="top level must be a mapping"):
        load_recipe(str(bad))
    with pytest.raises(RecipeError, match="missing key name"):
        recipe_from_dict({})


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().err


def test_cli_names_missing_paths_before_any_process_group(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = ["--set", "cluster.nodes=1", "--set", "cluster.procs_per_node=1"]
    missing = tmp_path / "absent.jsonl"
    code, err = _cli(
        capsys, "--recipe", "tiny", *one, "--set", "data.kind=jsonl", "--set", f"data.path={missing}"
    )
    assert code == 2 and f"data.path: {missing} does not exist" in err
    # qwen14b on this machine: the shared model path does not exist
    code, err = _cli(capsys, "--recipe", "qwen14b", *one)
    assert code == 2 and "model.path: /shared/models/Qwen2.5-14B does not exist" in err
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    code, err = _cli(capsys, "--recipe", "qwen14b", *one, "--set", f"model.path={model_dir}")
    assert code == 2 and f"model.path: {model_dir / 'config.json'} does not exist" in err
    code, err = _cli(capsys, "--recipe", "tiny")
    assert code == 2 and "WORLD_SIZE 1 does not match" in err
    assert not dist.is_initialized()


def test_cli_check_prints_resolved_recipe(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--recipe", "gpt2", "--set", "data.kind=synthetic", "--check"]) == 0
    out = capsys.readouterr().out
    assert '"name": "gpt2"' in out and '"kind": "synthetic"' in out
    assert main(["--list"]) == 0
    assert "qwen14b" in capsys.readouterr().out


def test_cli_error_is_said_by_rank_0_only(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # under torchrun every rank finds the same recipe error; one line, not one per rank
    bad = ["--recipe", "tiny", "--set", "strategy.name=pipeline", "--set", "strategy.pipeline.stages=3"]
    monkeypatch.setenv("WORLD_SIZE", "3")
    for rank, said in (("0", True), ("1", False), ("2", False)):
        monkeypatch.setenv("RANK", rank)
        code, err = _cli(capsys, *bad)
        assert code == 2
        assert ("strategy.pipeline.stages: 3 exceeds the model's 2 layers" in err) is said, (rank, err)
    monkeypatch.setenv("RANK", "0")
    assert main([*bad, "--check"]) == 2
    assert "strategy.pipeline.stages: 3 exceeds" in capsys.readouterr().err


def _finished_run(out: Path, step: int) -> None:
    """The files a finished run leaves (checkpoint.save_checkpoint's layout): meta.json, then COMPLETE."""
    ckpt = out / "checkpoints" / f"step_{step:08d}"
    ckpt.mkdir(parents=True)
    (ckpt / "meta.json").write_text(
        json.dumps({"step": step, "world_size": 1, "recipe": "tiny", "loss": 2.5})
    )
    (ckpt / "COMPLETE").write_text("")


def test_rerun_of_a_finished_run_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sets = ["cluster.nodes=1", "cluster.procs_per_node=1", "train.steps=50"]
    one = [arg for kv in sets for arg in ("--set", kv)]
    out = tmp_path / "run"
    _finished_run(out, 50)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.delenv("RANK", raising=False)
    assert main(["--recipe", "tiny", *one, "--set", f"train.output_dir={out}"]) == 0
    said = capsys.readouterr().out
    assert f"the run in {out} is already complete at step 50" in said
    assert "--set train.steps=100" in said and "--set train.resume=never" in said
    assert "nan" not in said and not dist.is_initialized()
    # an unfinished checkpoint (no COMPLETE) or a higher train.steps is not "complete"
    assert (
        completed_message(load_recipe("tiny", [*sets, "train.steps=60", f"train.output_dir={out}"])) is None
    )
    assert (
        completed_message(load_recipe("tiny", [*sets, "train.resume=never", f"train.output_dir={out}"]))
        is None
    )
    (out / "checkpoints" / "step_00000050" / "COMPLETE").unlink()
    assert completed_message(load_recipe("tiny", [*sets, f"train.output_dir={out}"])) is None


def test_readable_leaves_out_values_never_computed() -> None:
    line = readable({"event": "end", "time": 1.0, "step": 50, "loss": None, "eval_loss": 2.7, "export": ""})
    assert line == "[end] step=50, eval_loss=2.7"


def test_fsdp2_mixed_precision_policy_follows_reduce_dtype() -> None:
    import torch
    from rdmaops_trainer.strategies.fsdp2 import mp_policy

    # fp32 compute (the CPU runs): no casts at all, whatever reduce_dtype says
    fp32 = mp_policy(torch.float32, "bfloat16")
    assert (fp32.param_dtype, fp32.reduce_dtype) == (None, None)
    assert mp_policy(torch.bfloat16, "float32").reduce_dtype == torch.float32
    bf16 = mp_policy(torch.bfloat16, "bfloat16")
    assert (bf16.param_dtype, bf16.reduce_dtype) == (torch.bfloat16, torch.bfloat16)
    assert load_recipe("qwen1_5b").strategy.fsdp2.reduce_dtype == "auto"


def test_compute_precision_is_bf16_on_a_gpu_and_fp32_on_the_cpu_unless_the_recipe_says() -> None:
    from rdmaops_trainer.config import compute_precision, load_recipe

    auto = load_recipe("tiny", ["train.precision=auto"])
    assert (compute_precision(auto, True), compute_precision(auto, False)) == ("bf16", "fp32")
    for fixed in ("bf16", "fp32"):
        recipe = load_recipe("tiny", [f"train.precision={fixed}"])
        assert compute_precision(recipe, True) == compute_precision(recipe, False) == fixed
