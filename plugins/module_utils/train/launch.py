# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What train.yml starts on each node: unit names, the launcher's command line, its environment.

Pure functions of the resolved recipe and the inventory; the role calls them through the filters in
plugins/filter/train.py, and the Slurm batch script can reuse the same command builders.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

UNIT_PREFIX = "rdmaops-train-"
LAUNCHERS = ("torchrun", "deepspeed", "slurm")
SLURM_JOB_PREFIX = "rdmaops-"
JOB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
# What users of sbatch scripts type (steps, warmup, learning rate) -> recipe keys.
SHORTHANDS = {"steps": "train.steps", "warmup": "train.warmup_steps", "lr": "train.lr"}
RESUME = {"never": "never", "latest": "auto"}


class LaunchError(ValueError):
    """A launch setting that cannot work; the message names the setting and value."""


def check_job_name(job: Any) -> str:
    if not isinstance(job, str) or not JOB_NAME.match(job):
        raise LaunchError(
            f"train job name {job!r}: use 1-63 letters, digits, '_', '.' or '-' (it names the systemd unit "
            "and the job's directory)"
        )
    return job


def unit_name(job: str) -> str:
    return f"{UNIT_PREFIX}{check_job_name(job)}.service"


def merge_overrides(overrides: Mapping[str, Any] | None, shorthands: Mapping[str, Any]) -> dict[str, Any]:
    """``-e recipe_overrides={...}`` plus ``-e steps=.. -e warmup=.. -e lr=..``; a shorthand that is set wins.

    A shorthand given twice (``-e steps=10`` and ``train.steps`` in recipe_overrides with another value) is an
    error rather than a silent choice.
    """
    merged = dict(overrides or {})
    for short, value in shorthands.items():
        if short not in SHORTHANDS:
            raise LaunchError(f"unknown shorthand {short!r}: known are {', '.join(SHORTHANDS)}")
        if value is None or value == "":
            continue
        key = SHORTHANDS[short]
        if key in merged and str(merged[key]) != str(value):
            raise LaunchError(
                f"-e {short}={value} and recipe_overrides {key}={merged[key]} disagree: give one of them"
            )
        merged[key] = value
    return merged


def resume_override(resume: Any) -> str:
    if resume not in RESUME:
        raise LaunchError(
            f"resume={resume!r}: use 'latest' (continue from the newest complete checkpoint) or 'never'"
        )
    return f"train.resume={RESUME[resume]}"


def trainer_args(recipe: str, overrides: Sequence[str], resume: str) -> list[str]:
    """``-m rdmaops_trainer --recipe R --set k=v ...``: the same for every launcher and every node."""
    args = ["-m", "rdmaops_trainer", "--recipe", recipe]
    for item in [*overrides, resume_override(resume)]:
        args += ["--set", item]
    return args


def hostfile_text(hosts: Sequence[str], slots: int) -> str:
    """DeepSpeed's hostfile: every node of the job, in node-rank order (its --node_rank indexes this list)."""
    return "".join(f"{h} slots={slots}\n" for h in hosts)


def launcher_argv(
    launcher: str,
    python: str,
    *,
    nodes: int,
    procs_per_node: int,
    node_rank: int,
    master_addr: str,
    master_port: int,
    trainer: Sequence[str],
    hostfile: str = "",
) -> list[str]:
    """The command one node's unit runs.

    torchrun: static rendezvous on node 0's address (so the store and the first connections use the mesh),
    no restarts (a restart is not coordinated across nodes: the controller decides). deepspeed: its own
    launcher per node without ssh; it needs a hostfile that lists every node, and an explicit master address
    (without one it ssh-es to the first host to ask it); the trainer reads LOCAL_RANK from the environment,
    so no --local_rank argument is appended.
    """
    if launcher not in LAUNCHERS:
        raise LaunchError(f"launcher={launcher!r}: use one of {', '.join(LAUNCHERS)}")
    if not 0 <= node_rank < nodes:
        raise LaunchError(f"node rank {node_rank} is outside 0..{nodes - 1}")
    if launcher in ("torchrun", "slurm"):  # under Slurm, one torchrun per node of the allocation
        return [
            python, "-m", "torch.distributed.run",
            f"--nnodes={nodes}", f"--nproc-per-node={procs_per_node}", f"--node-rank={node_rank}",
            f"--master-addr={master_addr}", f"--master-port={master_port}", "--max-restarts=0",
            *trainer,
        ]  # fmt: skip
    if not hostfile:
        raise LaunchError("launcher=deepspeed needs the path of its hostfile")
    module_args = list(trainer)
    if module_args[:1] != ["-m"]:
        raise LaunchError(
            "the deepspeed launcher runs the trainer as a module: trainer args must start with -m"
        )
    return [
        python, "-m", "deepspeed.launcher.runner", "--no_ssh", f"--node_rank={node_rank}",
        f"--master_addr={master_addr}", f"--master_port={master_port}", f"--hostfile={hostfile}",
        f"--num_nodes={nodes}", f"--num_gpus={procs_per_node}", "--no_local_rank",
        "--module", *module_args[1:],
    ]  # fmt: skip


def launch_environment(
    transport_env: Mapping[str, str], job: str, extra: Mapping[str, Any] | None = None
) -> dict[str, str]:
    """Variables set on the unit besides the nccl_env file it loads.

    Async error handling makes NCCL abort a rank whose peer died instead of waiting in a collective;
    unbuffered output keeps the log file and the journal current for the watcher and for ``tail -f``.
    """
    env = {
        "PYTHONUNBUFFERED": "1",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
        "RDMAOPS_TRAIN_JOB": job,
    }
    env.update({k: str(v) for k, v in transport_env.items()})
    env.update({k: str(v) for k, v in (extra or {}).items()})
    return env


def command_line(argv: Sequence[str]) -> str:
    return shlex.join(argv)


def resolve_output_dir(workdir: str, output_dir: str) -> str:
    """The recipe's output_dir as the unit sees it: relative paths are under the job's working directory."""
    if output_dir.startswith("/"):
        return output_dir.rstrip("/") or "/"
    return f"{workdir.rstrip('/')}/{output_dir}".rstrip("/")


def recipe_paths(recipe: Mapping[str, Any]) -> list[dict[str, str]]:
    """Inputs every node must hold, from a resolved recipe (trainer_recipe's ``recipe``)."""
    found = []
    for section, key in (("model", "path"), ("tokenizer", "path"), ("data", "path"), ("data", "eval_path")):
        value = (recipe.get(section) or {}).get(key)
        if value:
            found.append({"what": f"{section}.{key}", "path": str(value)})
    return found


def node_plan(
    hosts: Sequence[str],
    addresses: Mapping[str, str],
    *,
    launcher: str,
    python: str,
    procs_per_node: int,
    master_port: int,
    trainer: Sequence[str],
    hostfile: str = "",
) -> list[dict[str, Any]]:
    """Per node: its rank and command. Node 0 is the first host of the play; every node dials its address."""
    if not hosts:
        raise LaunchError("no hosts to launch on")
    master = hosts[0]
    master_addr = addresses.get(master)
    if not master_addr:
        raise LaunchError(f"{master}: no address to use as the master address")
    plan = []
    for rank, host in enumerate(hosts):
        argv = launcher_argv(
            launcher,
            python,
            nodes=len(hosts),
            procs_per_node=procs_per_node,
            node_rank=rank,
            master_addr=master_addr,
            master_port=master_port,
            trainer=trainer,
            hostfile=hostfile,
        )
        plan.append(
            {"host": host, "node_rank": rank, "master": master, "master_addr": master_addr, "argv": argv}
        )
    return plan


def slurm_batch_script(
    *,
    job: str,
    recipe: str,
    workdir: str,
    env_file: str,
    python: str,
    nodes: int,
    procs_per_node: int,
    master_port: int,
    trainer: Sequence[str],
    addresses: Mapping[str, str],
    environment: Mapping[str, str],
) -> str:
    """The sbatch script of a job: one task per node, each running torchrun with the node's own NCCL/gloo
    environment; the master is the allocation's first node, dialled on its node address (the mesh).

    Usable by hand, as users of these clusters run jobs: ``sbatch JOB.sbatch [STEPS [WARMUP [LR]]]``; the
    positional arguments override the recipe's train.steps, train.warmup_steps and train.lr.
    """
    if not addresses:
        raise LaunchError("launcher=slurm needs every node's Slurm name and address")
    for name, addr in addresses.items():
        good_name = re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name)
        if not (good_name and re.fullmatch(r"[0-9A-Za-z.:_-]+", addr)):
            raise LaunchError(f"launcher=slurm: node {name!r} address {addr!r} cannot go into a batch script")
    q = shlex.quote
    launcher = [
        python, "-m", "torch.distributed.run", f"--nnodes={nodes}", f"--nproc-per-node={procs_per_node}",
        "--master-addr=$MASTER_ADDR", f"--master-port={master_port}", "--max-restarts=0",
    ]  # fmt: skip
    # $MASTER_ADDR expands in the batch script; everything else is quoted as is.
    words = [q(w).replace("'--master-addr=$MASTER_ADDR'", '--master-addr="$MASTER_ADDR"') for w in launcher]
    words += [q(w) for w in trainer]
    cases = "".join(f"  {name}) MASTER_ADDR={q(addr)} ;;\n" for name, addr in addresses.items())
    exports = "".join(f"export {k}={q(str(v))}\n" for k, v in sorted(environment.items()))
    # Each task: the node's own NCCL/gloo environment file, and its rank (torchrun reads PET_NODE_RANK).
    task = f'set -a; . {q(env_file)}; set +a; export PET_NODE_RANK="$SLURM_NODEID"; exec "$@"'
    positional = "".join(
        f'if [ -n "${{{n}:-}}" ]; then overrides+=(--set "{key}=${n}"); fi\n'
        for n, key in (("1", SHORTHANDS["steps"]), ("2", SHORTHANDS["warmup"]), ("3", SHORTHANDS["lr"]))
    )
    # One option (with its value) per line.
    grouped: list[str] = []
    for w in words:
        if grouped and grouped[-1].startswith("-") and "=" not in grouped[-1] and not w.startswith("-"):
            grouped[-1] += f" {w}"
        else:
            grouped.append(w)
    lines = "".join(f"  {w} \\\n" for w in grouped)
    return f"""#!/bin/bash
# Training job {job} (recipe {recipe}), written by rdmaops.cluster's train.yml -e launcher=slurm.
# By hand:  sbatch {workdir}/{job}.sbatch [STEPS [WARMUP [LR]]]
# Progress: tail -f {workdir}/slurm-<jobid>.out     Stop: scancel --name={SLURM_JOB_PREFIX}{job}
#SBATCH --job-name={SLURM_JOB_PREFIX}{job}
#SBATCH --nodes={nodes}
#SBATCH --ntasks-per-node=1
#SBATCH --exclusive
#SBATCH --chdir={workdir}
#SBATCH --output={workdir}/slurm-%j.out
set -euo pipefail
# Positional arguments override the recipe (later --set wins).
overrides=()
{positional}first=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
case "$first" in
{cases}  *) echo "no node address for $first (the job's nodes: $SLURM_JOB_NODELIST)" >&2; exit 2 ;;
esac
{exports}echo "job $SLURM_JOB_ID on $SLURM_JOB_NODELIST, master $first at $MASTER_ADDR:{master_port}"
# One torchrun per node; --kill-on-bad-exit: one failed node ends every node's task at once.
exec srun --kill-on-bad-exit=1 --ntasks-per-node=1 --export=ALL bash -c {q(task)} rdmaops-task \\
{lines}  "${{overrides[@]}}"
"""


def launch_plan(
    resolved: Mapping[str, Any],
    hosts: Sequence[str],
    addresses: Mapping[str, str],
    *,
    job: str,
    recipe: str,
    launcher: str,
    resume: str,
    venv: str,
    base_dir: str,
    log_dir: str,
    master_port: int,
    transport_env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, Any] | None = None,
    slurm_addresses: Mapping[str, str] | None = None,
    env_file: str = "/etc/rdmaops/nccl.env",
) -> dict[str, Any]:
    """Everything train.yml starts, from trainer_recipe's result and the nodes' addresses: one place."""
    launch = resolved["launch"]
    job = check_job_name(job or launch["name"])
    if launcher == "deepspeed" and launch["strategy"] == "pipeline":
        raise LaunchError(
            "launcher=deepspeed runs DeepSpeed-style jobs; the pipeline strategy needs torchrun"
        )
    workdir = f"{base_dir.rstrip('/')}/{job}"
    output_dir = resolve_output_dir(workdir, str(launch["output_dir"]))
    hostfile = f"{workdir}/hostfile" if launcher == "deepspeed" else ""
    trainer = trainer_args(recipe, list(resolved.get("overrides") or []), resume)
    python = f"{venv.rstrip('/')}/bin/python"
    nodes = node_plan(
        hosts,
        addresses,
        launcher=launcher,
        python=python,
        procs_per_node=int(launch["procs_per_node"]),
        master_port=master_port,
        trainer=trainer,
        hostfile=hostfile,
    )
    for node in nodes:
        node["command"] = command_line(node["argv"])
    environment = launch_environment(transport_env or {}, job, extra_env)
    batch_script, batch_text = "", ""
    if launcher == "slurm":
        batch_script = f"{workdir}/{job}.sbatch"
        # The provisional plan (before the preflight) has no addresses: the final one writes the script.
        if slurm_addresses:
            batch_text = slurm_batch_script(
                job=job,
                recipe=recipe,
                workdir=workdir,
                env_file=env_file,
                python=python,
                nodes=len(nodes),
                procs_per_node=int(launch["procs_per_node"]),
                master_port=master_port,
                trainer=trainer,
                addresses=slurm_addresses,
                environment=environment,
            )
    return {
        "job": job,
        "unit": unit_name(job),
        "launcher": launcher,
        "master": nodes[0]["host"],
        "master_addr": nodes[0]["master_addr"],
        "master_port": master_port,
        "workdir": workdir,
        "output_dir": output_dir,
        "metrics_file": f"{output_dir}/metrics.jsonl",
        "log_file": f"{log_dir.rstrip('/')}/train-{job}.log",
        "hostfile": hostfile,
        "hostfile_text": hostfile_text(hosts, int(launch["procs_per_node"])) if hostfile else "",
        "environment": environment,
        "batch_script": batch_script,
        "batch_script_text": batch_text,
        "slurm_job_name": f"{SLURM_JOB_PREFIX}{job}" if launcher == "slurm" else "",
        "paths": recipe_paths(resolved.get("recipe") or {}),
        "steps": int(launch["steps"]),
        "nodes": {n["host"]: n for n in nodes},
        "order": [n["host"] for n in nodes],
    }
