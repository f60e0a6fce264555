"""train.yml's launch builders: unit names, launcher command lines, overrides, output paths, and each node's
launch directory, with launch.sh run for real against a stand-in python (module_utils/train/launch.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.train import launch as tl

RECIPE = "name: tiny\nseed: 1234\n"


def files(launcher: str = "torchrun", **kw: object) -> dict[str, str]:
    args: dict = {
        "job": "tiny",
        "node": "node2",
        "node_rank": 1,
        "hosts": ["node1", "node2", "node3"],
        "launcher": launcher,
        "procs_per_node": 1,
        "node_env": {"GLOO_SOCKET_IFNAME": "nodeaddr0", "NCCL_SOCKET_NTHREADS": "4", "ODD": "a b 'c' $HOME"},
        "job_env": {
            "MASTER_ADDR": "10.255.0.1",
            "MASTER_PORT": "29500",
            "RDMAOPS_TRAIN_JOB": "tiny",
            "RDMAOPS_TRAIN_WORKDIR": "/shared/train/tiny",
            "RDMAOPS_PYTHON": "/opt/rdmaops/venv/bin/python",
            "RDMAOPS_RECIPE_SHA256": tl.recipe_digest(RECIPE),
        },
        "recipe_text": RECIPE,
        "env_file": "/etc/rdmaops/nccl.env",
    }
    args.update(kw)
    return tl.node_files(**args)


def run_launch(tmp: Path, content: dict[str, str], local: str = "") -> subprocess.CompletedProcess[str]:
    """launch.sh in its directory, with RDMAOPS_PYTHON pointing at a python that prints its argv and env."""
    node = tmp / "node2"
    node.mkdir(exist_ok=True)
    for name, text in content.items():
        (node / name).write_text(text)
    fake = tmp / "python"
    fake.write_text(
        '#!/bin/bash\nfor a in "$@"; do echo "arg=$a"; done\n'
        "for v in GLOO_SOCKET_IFNAME NCCL_SOCKET_NTHREADS ODD MASTER_ADDR CUDA_VISIBLE_DEVICES; do "
        'echo "env=$v=${!v:-}"; done\necho "cwd=$PWD"\n'
    )
    fake.chmod(0o755)
    (tmp / "local.env").write_text(f"RDMAOPS_PYTHON={fake}\nRDMAOPS_TRAIN_WORKDIR={tmp}/work\n{local}")
    env = {**os.environ, "RDMAOPS_LOCAL_ENV": str(tmp / "local.env")}
    return subprocess.run(
        ["bash", str(node / "launch.sh")], capture_output=True, text=True, env=env, check=False
    )


def test_launch_directory_files() -> None:
    out = files()
    assert set(out) == {"launch.sh", "nccl.env", "job.env", "recipe.yaml"}
    assert out["recipe.yaml"] == RECIPE
    assert "GLOO_SOCKET_IFNAME=nodeaddr0" in out["nccl.env"].splitlines()
    assert "MASTER_ADDR=10.255.0.1" in out["job.env"].splitlines()
    assert out["launch.sh"].startswith("#!/bin/bash\n# Node node2 (node rank 1 of 3) of training job tiny")
    assert "--node-rank=1" in out["launch.sh"] and '--recipe "${HERE}/recipe.yaml"' in out["launch.sh"]
    assert set(files("deepspeed")) == {"launch.sh", "nccl.env", "job.env", "recipe.yaml", "hostfile"}
    assert files("deepspeed")["hostfile"] == "node1 slots=1\nnode2 slots=1\nnode3 slots=1\n"


def test_launch_sh_runs_the_launcher_on_the_resolved_recipe(tmp_path: Path) -> None:
    proc = run_launch(tmp_path, files())
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("launch.sh: job tiny on node2 (node rank 1 of 3), master 10.255.0.1:29500")
    args = [x.removeprefix("arg=") for x in lines if x.startswith("arg=")]
    assert args == [
        "-m", "torch.distributed.run", "--nnodes=3", "--nproc-per-node=1", "--node-rank=1",
        "--master-addr=10.255.0.1", "--master-port=29500", "--max-restarts=0",
        "-m", "rdmaops_trainer", "--recipe", f"{tmp_path}/node2/recipe.yaml",
    ]  # fmt: skip
    env = dict(x.removeprefix("env=").split("=", 1) for x in lines if x.startswith("env="))
    # values with blanks, quotes and $ read back as written (nccl.env is shell-quoted)
    assert env["GLOO_SOCKET_IFNAME"] == "nodeaddr0" and env["ODD"] == "a b 'c' $HOME"
    assert f"cwd={tmp_path}/work" in lines


def test_a_local_env_file_maps_the_nodes_elsewhere(tmp_path: Path) -> None:
    # a rehearsal on one machine: the master on 127.0.0.1, another interface, this "node"'s GPUs
    proc = run_launch(
        tmp_path, files(), "MASTER_ADDR=127.0.0.1\nGLOO_SOCKET_IFNAME=lo\nCUDA_VISIBLE_DEVICES=2,3\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert "arg=--master-addr=127.0.0.1" in proc.stdout.splitlines()
    assert "env=GLOO_SOCKET_IFNAME=lo" in proc.stdout and "env=CUDA_VISIBLE_DEVICES=2,3" in proc.stdout


def test_launch_sh_refuses_a_recipe_that_is_not_the_resolved_one(tmp_path: Path) -> None:
    out = files()
    out["recipe.yaml"] = RECIPE.replace("1234", "7")  # the node's copy was edited after the plan
    proc = run_launch(tmp_path, out)
    assert proc.returncode == 2 and "arg=" not in proc.stdout
    assert "recipe.yaml is not the recipe train.yml resolved" in proc.stderr


def test_deepspeed_launch_sh_has_its_hostfile_beside_it(tmp_path: Path) -> None:
    proc = run_launch(tmp_path, files("deepspeed"))
    args = [x.removeprefix("arg=") for x in proc.stdout.splitlines() if x.startswith("arg=")]
    assert args[:3] == ["-m", "deepspeed.launcher.runner", "--no_ssh"]
    assert f"--hostfile={tmp_path}/node2/hostfile" in args and "--node_rank=1" in args
    assert args[-4:] == ["--module", "rdmaops_trainer", "--recipe", f"{tmp_path}/node2/recipe.yaml"]


def test_shell_words_expand_only_the_launch_variables() -> None:
    assert tl.shell_word("--master-addr=${MASTER_ADDR}") == '"--master-addr=${MASTER_ADDR}"'
    assert tl.shell_word("a b") == "'a b'"
    assert tl.shell_word("${HOME}/x") == "'${HOME}/x'"
    assert tl.shell_word('${HERE}/"q" $x') == '"${HERE}/\\"q\\" \\$x"'
    with pytest.raises(tl.LaunchError, match="'A-B' is not a valid name"):
        tl.shell_env_text({"A-B": "1"}, "x")


def test_torchrun_and_deepspeed_command_lines() -> None:
    argv = tl.launcher_argv(
        "torchrun", "/v/bin/python", nodes=3, procs_per_node=2, node_rank=2, master_addr="10.255.0.1",
        master_port=29500, trainer=tl.trainer_args("/w/launch/n3/recipe.yaml"),
    )  # fmt: skip
    assert argv[:3] == ["/v/bin/python", "-m", "torch.distributed.run"]
    assert "--node-rank=2" in argv and "--nnodes=3" in argv and "--max-restarts=0" in argv
    assert argv[-4:] == ["-m", "rdmaops_trainer", "--recipe", "/w/launch/n3/recipe.yaml"]
    ds = tl.launcher_argv(
        "deepspeed", "/v/bin/python", nodes=2, procs_per_node=1, node_rank=1, master_addr="10.255.0.1",
        master_port=29500, trainer=tl.trainer_args("/r.yaml"), hostfile="/w/hostfile",
    )  # fmt: skip
    assert ds[1:4] == ["-m", "deepspeed.launcher.runner", "--no_ssh"]
    assert "--master_addr=10.255.0.1" in ds and "--no_local_rank" in ds  # the trainer reads LOCAL_RANK
    with pytest.raises(tl.LaunchError, match="needs the path of its hostfile"):
        tl.launcher_argv("deepspeed", "p", nodes=1, procs_per_node=1, node_rank=0, master_addr="a",
                         master_port=1, trainer=["-m", "x"])  # fmt: skip
    with pytest.raises(tl.LaunchError, match="launcher='mpirun'"):
        tl.launcher_argv("mpirun", "p", nodes=1, procs_per_node=1, node_rank=0, master_addr="a",
                         master_port=1, trainer=["-m", "x"])  # fmt: skip


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: tl.check_job_name("my job"), "train job name 'my job'"),
        (lambda: tl.resume_value("yes"), "resume='yes'"),
    ],
)
def test_bad_settings_are_named(call: object, needle: str) -> None:
    with pytest.raises(tl.LaunchError, match=needle):
        call()  # type: ignore[operator]


def test_shorthands_merge_and_conflicts_are_refused() -> None:
    assert tl.merge_overrides({"train.lr": 1e-4}, {"steps": 12000, "warmup": 100, "lr": ""}) == {
        "train.lr": 1e-4,
        "train.steps": 12000,
        "train.warmup_steps": 100,
    }
    assert tl.merge_overrides({"train.steps": "50"}, {"steps": 50}) == {"train.steps": 50}
    with pytest.raises(tl.LaunchError, match=r"-e steps=10 and recipe_overrides train.steps=20 disagree"):
        tl.merge_overrides({"train.steps": 20}, {"steps": 10})


def test_output_dirs_and_inputs() -> None:
    assert tl.resolve_output_dir("/w/job", "/data/out/") == "/data/out"
    assert tl.resolve_output_dir("/w/job/", "runs/x") == "/w/job/runs/x"
    recipe = {"model": {"path": None}, "tokenizer": {"path": "/t"}, "data": {"path": "/d", "eval_path": ""}}
    assert tl.recipe_paths(recipe) == [
        {"what": "tokenizer.path", "path": "/t"},
        {"what": "data.path", "path": "/d"},
    ]


def test_the_unit_runs_supervise_py_itself_or_wraps_a_command_in_tee() -> None:
    from ansible_collections.rdmaops.cluster.plugins.module_utils.train.unit import (
        TEE_SCRIPT,
        systemd_run_argv,
    )

    argv = ["/v/bin/python", "-I", "/w/launch/n1/supervise.py", "--", "/bin/bash", "/w/launch/n1/launch.sh"]
    common = {
        "description": "d",
        "workdir": "/w",
        "environment": {"A": "1"},
        "log_file": "/l",
        "stop_timeout": 15,
    }
    own = systemd_run_argv("u.service", argv, tee=False, **common)  # type: ignore[arg-type]
    assert own[own.index("--") + 1 :] == argv  # the unit's main process is supervise.py
    assert "--setenv=A=1" in own and "--property=KillMode=control-group" in own
    wrapped = systemd_run_argv("u.service", argv, **common)  # type: ignore[arg-type]
    assert wrapped[wrapped.index("--") + 1 :] == ["/bin/bash", "-c", TEE_SCRIPT, "/l", *argv]
