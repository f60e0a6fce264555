"""Shared helpers for the trainer tests: the package is imported from files/trainer, and multi-process
runs go through the real CLI under ``python -m torch.distributed.run`` (gloo on CPU)."""

from __future__ import annotations

import atexit
import json
import os
import select
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

TRAINER_DIR = Path(__file__).resolve().parents[3] / "files" / "trainer"
if str(TRAINER_DIR) not in sys.path:
    sys.path.insert(0, str(TRAINER_DIR))


def _import_dynamo_with_builtin_intern() -> None:
    """ansible-core's module_utils, imported by the collection's other tests in the same pytest process,
    replace ``sys.intern`` with a callable object; ``torch._dynamo`` (imported by transformers) then refuses
    to load ("substitute_in_graph expects a function"). Import it now (this conftest may load before or after
    that patch) with the builtin in place."""
    patched = sys.intern
    sys.intern = getattr(patched, "unpatched_implementation", patched)
    try:
        import torch._dynamo  # noqa: F401
    finally:
        sys.intern = patched


_import_dynamo_with_builtin_intern()


def refusal(recipe: str, overrides: list[str]) -> str:
    """The RecipeError message load_recipe gives for the recipe with these overrides (it must refuse)."""
    from rdmaops_trainer.config import RecipeError, load_recipe

    with pytest.raises(RecipeError) as err:
        load_recipe(recipe, overrides)
    return str(err.value)


def assert_refused(recipe: str, base: list[str], cases: dict[str, str], every: str = "") -> None:
    """Each override of ``cases`` added to ``base`` is refused with its message (and with ``every``)."""
    for override, message in cases.items():
        refused = refusal(recipe, [*base, override])
        assert message in refused, override
        assert every in refused, override


def trainer_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TRAINER_DIR), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["OMP_NUM_THREADS"] = "1"
    env.pop("WORLD_SIZE", None)
    env.pop("RANK", None)
    env.pop("MASTER_ADDR", None)
    return env


def python_code(code: str, *args: str, env: dict[str, str] | None = None, timeout: float = 300) -> str:
    """stdout of ``python -c code args`` in a fresh interpreter (trainer_env() unless ``env``), which must
    exit 0."""
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        env=trainer_env() if env is None else env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _Spawner:
    """rank_spawner.py in a fresh interpreter (not this one: ansible's module_utils patch sys.intern here),
    started on the first launch and kept for the session."""

    def __init__(self) -> None:
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (kept open for the process's life)
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("rank_spawner.py"))],
            env=trainer_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
        )
        self._reply(300)

    def _reply(self, timeout: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        ready = select.select([self.proc.stdout], [], [], timeout)[0]
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self.close()
            self._stderr.seek(0)
            err = self._stderr.read().decode(errors="replace")
            pytest.fail(f"the rank spawner gave no answer within {timeout} s:\n{err[-3000:]}")
        return dict(json.loads(line))

    def launch(self, args: tuple[str, ...], ranks: list[dict[str, Any]], timeout: float) -> list[int]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"argv": list(args), "ranks": ranks, "timeout": timeout}) + "\n")
        self.proc.stdin.flush()
        # the spawner kills the ranks at the timeout itself; the margin is for its own reply
        return [int(c) for c in self._reply(timeout + 60)["codes"]]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self._stderr):
            if stream is not None:
                stream.close()


_SPAWNERS: list[_Spawner] = []


def _spawner() -> _Spawner:
    if not _SPAWNERS or _SPAWNERS[0].proc.poll() is not None:
        _SPAWNERS[:] = [_Spawner()]
        atexit.register(_SPAWNERS[0].close)
    return _SPAWNERS[0]


def run_trainer(
    nproc: int,
    *args: str,
    torchrun: bool = False,
    timeout: float = 240,
    nodes: int = 1,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the CLI on ``nproc`` CPU processes (gloo), with ``env`` added to their environment.

    ``torchrun=True``: under ``python -m torch.distributed.run --standalone``, as the launcher does.
    Otherwise one process per rank with torchrun's environment variables set directly, forked by the rank
    spawner (rank_spawner.py) after its one import of torch and the trainer: the same code path in the
    trainer (the CLI's ``main``), without some 5 s of imports per process (the suite runs on 2 shared
    cores). ``nodes``: the ranks split into that many "nodes" as torchrun numbers them on a cluster (node n:
    ranks n * nproc / nodes ..., its ``GROUP_RANK``, ``LOCAL_RANK`` and ``LOCAL_WORLD_SIZE``).
    """
    trainer = ["-m", "rdmaops_trainer", *args]
    if torchrun:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}"]
        proc = subprocess.run(
            [*cmd, *trainer],
            env={**trainer_env(), **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        outputs = [(proc.returncode, proc.stdout, proc.stderr)]
    else:
        port = free_port()
        per_node = nproc // nodes
        with tempfile.TemporaryDirectory(prefix="trainer-ranks-") as logs:
            ranks = []
            for rank in range(nproc):
                rank_env = {**trainer_env(), **(env or {})}
                rank_env.update(
                    RANK=str(rank),
                    LOCAL_RANK=str(rank % per_node),
                    GROUP_RANK=str(rank // per_node),
                    WORLD_SIZE=str(nproc),
                    LOCAL_WORLD_SIZE=str(per_node),
                    MASTER_ADDR="127.0.0.1",
                    MASTER_PORT=str(port),
                )
                # files, not pipes: a rank blocked on a full pipe would stall the collectives of the others
                out = Path(logs) / f"rank{rank}"
                ranks.append({"env": rank_env, "out": str(out) + ".out", "err": str(out) + ".err"})
            codes = _spawner().launch(args, ranks, timeout)
            outputs = [
                (code, Path(r["out"]).read_text(), Path(r["err"]).read_text())
                for code, r in zip(codes, ranks, strict=True)
            ]
    # report the rank that failed by itself, not one killed above
    failed = sorted((o for o in outputs if o[0] != 0), key=lambda o: o[0] == -9)
    if failed:
        code, out, err = failed[0]
        pytest.fail(f"trainer failed ({code}): {' '.join(trainer)}\n{out[-3000:]}\n{err[-6000:]}")
    return subprocess.CompletedProcess(trainer, 0, outputs[0][1], outputs[0][2])


def tiny_qwen2_config() -> Any:
    """A 2-layer Qwen2 config with grouped-query attention and tied embeddings, for tests of the HF path."""
    from transformers import Qwen2Config

    return Qwen2Config(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=300,
        max_position_embeddings=128,
        tie_word_embeddings=True,
    )


# the qwen1_5b recipe shrunk to a 2-layer model on the CPU, for the tests of its options
TINY_QWEN_SETS = [
    "model.config.hidden_size=64",
    "model.config.intermediate_size=128",
    "model.config.num_hidden_layers=2",
    "model.config.num_attention_heads=4",
    "model.config.num_key_value_heads=2",
    "model.config.vocab_size=300",
    "train.precision=auto",
    "cluster.device=cpu",
]


def qwen_pair(option: str, *sets: str) -> list[Any]:
    """The tiny qwen1_5b model without ``option``, then with it on (``sets`` apply to that one alone)."""
    from rdmaops_trainer.config import load_recipe
    from rdmaops_trainer.models import build_model

    return [
        build_model(load_recipe("qwen1_5b", [*TINY_QWEN_SETS, f"{option}=false"])),
        build_model(load_recipe("qwen1_5b", [*TINY_QWEN_SETS, f"{option}=true", *sets])),
    ]


def assert_trains_alike(plain: Any, fused: Any, part: str) -> None:
    """One forward and backward of both models on the same tokens: the same loss and the same gradient for
    every parameter, among them one whose name has ``part``."""
    import torch

    ids = torch.randint(0, 300, (2, 16), generator=torch.Generator().manual_seed(6))
    out = []
    for model in (plain, fused):
        model.zero_grad(set_to_none=True)
        loss = model(ids, ids.roll(-1, dims=1))
        loss.backward()
        out.append((loss.detach(), {n: p.grad for n, p in model.named_parameters() if p.grad is not None}))
    (loss_a, ga), (loss_b, gb) = out
    torch.testing.assert_close(loss_b, loss_a)
    assert ga.keys() == gb.keys() and any(part in n for n in ga)
    for name in ga:
        torch.testing.assert_close(gb[name], ga[name], msg=name)


def tiny_args(out: Path, nproc: int, *extra: str) -> list[str]:
    """The tiny recipe on ``nproc`` CPU processes, small and short enough for the unit suite."""
    sets = [
        "cluster.nodes=1",
        f"cluster.procs_per_node={nproc}",
        f"train.output_dir={out}",
        "train.steps=8",
        "train.warmup_steps=2",
        "train.log_every=1",
        "train.eval_every=0",
        "train.checkpoint_every=0",
        "train.plot=false",
        "data.generated_docs=600",
        *extra,
    ]
    args = ["--recipe", "tiny"]
    for s in sets:
        args += ["--set", s]
    return args


def records(out: Path, event: str = "train") -> list[dict[str, Any]]:
    path = out / "metrics.jsonl"
    return [
        r for r in (json.loads(x) for x in path.read_text().splitlines() if x.strip()) if r["event"] == event
    ]


def losses(out: Path) -> dict[int, float]:
    """step -> loss; on a resumed run (appended log) the later record of a step wins."""
    return {int(r["step"]): float(r["loss"]) for r in records(out)}


def eval_losses(out: Path) -> dict[int, float]:
    return {int(r["step"]): float(r["eval_loss"]) for r in records(out, "eval")}


def assert_close(a: dict[int, float], b: dict[int, float], tol: float, steps: range) -> None:
    for s in steps:
        assert abs(a[s] - b[s]) <= tol, f"step {s}: {a[s]!r} vs {b[s]!r} (tolerance {tol})"
