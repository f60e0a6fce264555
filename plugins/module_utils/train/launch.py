# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What train.yml starts on each node: unit names, the launcher's command line, and the files a node runs.

Pure functions of the resolved recipe and the preflight reports; the role's phases (``phase.py``) call
them. Each node gets one directory of files (``node_files``): ``launch.sh``, the exact script its unit runs,
``nccl.env`` (the node's NCCL/gloo settings as its preflight read them), ``job.env`` (the job's settings),
``recipe.yaml`` (the recipe the controller resolved; its sha256 is checked before the launcher starts) and,
for DeepSpeed, ``hostfile``. The same files are what ``-e render_dir=DIR`` writes on the controller.
"""

from __future__ import annotations

import hashlib
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
# The files of one node's launch directory (see the module docstring and docs/train.md).
LAUNCH_SCRIPT = "launch.sh"
NODE_ENV_FILE = "nccl.env"
JOB_ENV_FILE = "job.env"
RECIPE_FILE = "recipe.yaml"
HOSTFILE = "hostfile"
# In the job's directory on the master: where its run starts in metrics.jsonl and when (tasks/start_units.yml
# writes it; train_status.yml -e follow=true watches from there)
LAUNCH_RECORD = "launch.json"
# Variables launch.sh expands in the launcher's command line (set by job.env, or by a runner's local env).
SCRIPT_VARS = ("HERE", "MASTER_ADDR", "MASTER_PORT", "RDMAOPS_PYTHON")


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


def resume_value(resume: Any) -> str:
    """The trainer's train.resume for the role's resume setting."""
    if resume not in RESUME:
        raise LaunchError(
            f"resume={resume!r}: use 'latest' (continue from the newest complete checkpoint) or 'never'"
        )
    return RESUME[resume]


def trainer_args(recipe_file: str) -> list[str]:
    """``-m rdmaops_trainer --recipe FILE``: the same for every launcher and every node. FILE is the recipe
    the controller resolved (overrides and resume included), so no node reads its own copy of a recipe."""
    return ["-m", "rdmaops_trainer", "--recipe", recipe_file]


def recipe_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


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
    master_port: int | str,
    trainer: Sequence[str],
    hostfile: str = "",
) -> list[str]:
    """The launcher command of one node.

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
    """Variables every node's launcher gets besides its NCCL/gloo env file.

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


_REF = re.compile(r"(\$\{(?:" + "|".join(SCRIPT_VARS) + r")\})")


def shell_word(word: str) -> str:
    """One argument for launch.sh: quoted as is, except the ``${VAR}`` references of SCRIPT_VARS, which the
    script expands (inside double quotes, so a value with blanks stays one argument)."""
    if not _REF.search(word):
        return shlex.quote(word)
    parts = _REF.split(word)
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(part)
        else:
            out.append(re.sub(r'([\\"$`])', r"\\\1", part))
    return '"' + "".join(out) + '"'


def shell_env_text(env: Mapping[str, Any], comment: str) -> str:
    """``KEY='value'`` lines, sorted, for ``set -a; . FILE``: any value (blanks, quotes) reads back as is."""
    lines = [f"# {line}".rstrip() for line in comment.splitlines()]
    for key in sorted(env):
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(key)):
            raise LaunchError(f"environment variable name {key!r} is not a valid name")
        lines.append(f"{key}={shlex.quote(str(env[key]))}")
    return "".join(f"{line}\n" for line in lines)


def launch_script(
    *,
    job: str,
    node: str,
    node_rank: int,
    nodes: int,
    launcher: str,
    argv: Sequence[str],
) -> str:
    """launch.sh: read the env files beside it, check the recipe's digest, start the launcher (exec, so the
    launcher is the script's own process and its exit status is the script's)."""
    lines = []
    for w in argv:
        word = shell_word(w)
        # one option (with its value) per line, as a person would write it
        if lines and lines[-1].startswith("-") and "=" not in lines[-1] and not w.startswith("-"):
            lines[-1] += f" {word}"
        else:
            lines.append(word)
    command = " \\\n  ".join(lines)
    return f"""#!/bin/bash
# Node {node} (node rank {node_rank} of {nodes}) of training job {job}, {launcher}: written by
# rdmaops.cluster's train.yml. The job's systemd unit runs this script (under supervise.py); by hand:
# bash launch.sh.
# Beside it: {NODE_ENV_FILE} (this node's NCCL/gloo settings as the preflight read them), {JOB_ENV_FILE} (the
# job's: master address and port, workdir, python, recipe digest), {RECIPE_FILE} (the recipe resolved on
# the controller). A file named by RDMAOPS_LOCAL_ENV is read last: settings for a run elsewhere
# (docs/train.md).
set -euo pipefail
HERE=$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)
set -a
. "$HERE/{NODE_ENV_FILE}"
. "$HERE/{JOB_ENV_FILE}"
if [ -n "${{RDMAOPS_LOCAL_ENV:-}}" ]; then . "$RDMAOPS_LOCAL_ENV"; fi
set +a
if ! echo "$RDMAOPS_RECIPE_SHA256  $HERE/{RECIPE_FILE}" | sha256sum --check --status; then
  echo "launch.sh: $HERE/{RECIPE_FILE} is not the recipe train.yml resolved" \
    "(sha256 $RDMAOPS_RECIPE_SHA256)" >&2
  exit 2
fi
mkdir -p "$RDMAOPS_TRAIN_WORKDIR"
cd "$RDMAOPS_TRAIN_WORKDIR"
echo "launch.sh: job $RDMAOPS_TRAIN_JOB on {node} (node rank {node_rank} of {nodes})," \
  "master $MASTER_ADDR:$MASTER_PORT, recipe sha256 ${{RDMAOPS_RECIPE_SHA256:0:16}}"
exec {command}
"""


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


def model_config_path(recipe: Mapping[str, Any]) -> str:
    """The config.json of a resolved recipe's transformers model directory ('' for a model without one)."""
    model = recipe.get("model") or {}
    return (
        f"{str(model['path']).rstrip('/')}/config.json"
        if model.get("kind") == "hf" and model.get("path")
        else ""
    )


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
    recipe_file: str = "",
) -> str:
    """The sbatch script of a job: one task per node, each running torchrun with the node's own NCCL/gloo
    environment. ``addresses`` maps each node's Slurm name to its node address in node-rank order (train.yml's
    order: along the cabling on a ring or chain): each task takes its rank from its node's name, not from
    Slurm's own node order, and rank 0 is the master, dialled on its node address (the mesh). With
    ``recipe_file`` (and RDMAOPS_RECIPE_SHA256 in ``environment``), each task checks the digest of that file
    on its node before it starts.

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
    names = list(addresses)
    order = " ".join(names)
    # the names were checked above: safe inside the quoted task and in case patterns
    ranks = "".join(f"{name}) export PET_NODE_RANK={i} ;; " for i, name in enumerate(names))
    allocated = 'scontrol show hostnames "$SLURM_JOB_NODELIST" | LC_ALL=C sort | tr "\\n" " "'
    expected = q(" ".join(sorted(names)) + " ")
    exports = "".join(f"export {k}={q(str(v))}\n" for k, v in sorted(environment.items()))
    # Each task: the node's NCCL/gloo environment file, its rank by its name (torchrun reads PET_NODE_RANK).
    check = ""
    if recipe_file:
        check = (
            f'echo "$RDMAOPS_RECIPE_SHA256  {recipe_file}" | sha256sum --check --status || '
            f'{{ echo "$(hostname): {recipe_file} is not the recipe train.yml resolved" >&2; exit 2; }}; '
        )
    task = (
        f'set -a; . {q(env_file)}; set +a; {check}case "$SLURMD_NODENAME" in {ranks}'
        f'*) echo "$SLURMD_NODENAME has no node rank (ranks: {order})" >&2; exit 2 ;; esac; exec "$@"'
    )
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
{positional}# Node ranks in train.yml's order ({order}), not in Slurm's: the allocation must be exactly
# these nodes.
if [ "$({allocated})" != {expected} ]; then
  echo "the job's nodes $SLURM_JOB_NODELIST are not the nodes ranked {order}" >&2; exit 2
fi
MASTER_ADDR={q(addresses[names[0]])}
{exports}echo "job $SLURM_JOB_ID on $SLURM_JOB_NODELIST, master {names[0]} at $MASTER_ADDR:{master_port}, \
ranks {order}"
# One torchrun per node, its rank from its node's name; --kill-on-bad-exit: a failed node ends every task.
exec srun --kill-on-bad-exit=1 --ntasks-per-node=1 --export=ALL bash -c {q(task)} rdmaops-task \\
{lines}  "${{overrides[@]}}"
"""


def node_files(
    *,
    job: str,
    node: str,
    node_rank: int,
    hosts: Sequence[str],
    launcher: str,
    procs_per_node: int,
    node_env: Mapping[str, str],
    job_env: Mapping[str, str],
    recipe_text: str,
    env_file: str,
) -> dict[str, str]:
    """One node's launch directory: file name -> content (see the module docstring)."""
    hostfile = "${HERE}/" + HOSTFILE if launcher == "deepspeed" else ""
    argv = launcher_argv(
        launcher,
        "${RDMAOPS_PYTHON}",
        nodes=len(hosts),
        procs_per_node=procs_per_node,
        node_rank=node_rank,
        master_addr="${MASTER_ADDR}",
        master_port="${MASTER_PORT}",
        trainer=trainer_args("${HERE}/" + RECIPE_FILE),
        hostfile=hostfile,
    )
    files = {
        LAUNCH_SCRIPT: launch_script(
            job=job, node=node, node_rank=node_rank, nodes=len(hosts), launcher=launcher, argv=argv
        ),
        NODE_ENV_FILE: shell_env_text(
            node_env, f"{node}'s NCCL/gloo environment: {env_file} there (nccl_env, nccl_mesh_plugin roles)"
        ),
        JOB_ENV_FILE: shell_env_text(job_env, f"training job {job} on {node} (node rank {node_rank})"),
        RECIPE_FILE: recipe_text,
    }
    if launcher == "deepspeed":
        files[HOSTFILE] = hostfile_text(hosts, procs_per_node)
    return files
