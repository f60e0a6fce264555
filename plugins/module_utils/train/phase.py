# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The train role's check and plan phases: their inputs in, ``{errors, plan}`` out, on the controller
(action plugins rdmaops.cluster.train_check and rdmaops.cluster.train_plan, built on plugin_utils/phase.py's
PhaseAction).

``check`` (tasks/validate.yml): the role's inputs, the recipe resolved with the trainer's own code and fitted
to the play's hosts (a recipe that cannot run on them is refused before any node is asked), the job's names
and paths.
``plan`` (after the preflight, tasks/preflight.yml): every node's report compared (preflight.py), the recipe
fitted to the nodes (a GPU recipe to their GPUs, gpus.py) and written out as the one recipe file every node
runs (with its sha256), its memory per GPU estimated against the GPUs' (memory.py), the GPU-to-NIC affinity
noted (nccl/affinity.py), then what each node starts: its launch directory (launch.py ``node_files``), the
unit's command, the job record. Nothing is
planned twice and no plan is rebuilt from itself.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Mapping
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl import affinity
from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl import hca as nccl_hca
from ansible_collections.rdmaops.cluster.plugins.module_utils.node.health import gate as health_gate
from ansible_collections.rdmaops.cluster.plugins.module_utils.node.train import supervisor
from ansible_collections.rdmaops.cluster.plugins.module_utils.train import gpus
from ansible_collections.rdmaops.cluster.plugins.module_utils.train import launch as tl
from ansible_collections.rdmaops.cluster.plugins.module_utils.train import order as rank_order
from ansible_collections.rdmaops.cluster.plugins.module_utils.train.memory import MODES as MEMORY_MODES
from ansible_collections.rdmaops.cluster.plugins.module_utils.train.memory import memory_check
from ansible_collections.rdmaops.cluster.plugins.module_utils.train.preflight import preflight_report
from ansible_collections.rdmaops.cluster.plugins.module_utils.train.recipe import (
    RecipeResolveError,
    hsdp_decision,
    resolve,
)
from ansible_collections.rdmaops.cluster.plugins.module_utils.train.watch_cables import watched_cables

# Hybrid sharding (the trainer's rdmaops_trainer/dp_mesh.py): train_hsdp on/off forces the recipe key; auto or
# empty leaves it to the launcher, which sets the trainer's HSDP variable from the fabric that joins the nodes
# (plan below, through recipe.hsdp_decision: the trainer's own decision and variable name).
HSDP_KEY = "strategy.fsdp2.hsdp"
HSDP_VALUES = {"on": "true", "off": "false", "auto": "auto"}
SUPERVISOR_FILE = "supervise.py"

TRAIN_CHECK_SPEC: dict[str, Any] = {
    "recipe": {"type": "str", "required": True},
    "overrides": {"type": "dict", "default": {}},
    "steps": {"type": "raw", "default": ""},
    "warmup": {"type": "raw", "default": ""},
    "lr": {"type": "raw", "default": ""},
    "hsdp": {"type": "str", "default": "", "choices": ["", "auto", "on", "off"]},
    "launcher": {"type": "str", "default": "torchrun", "choices": list(tl.LAUNCHERS)},
    "job": {"type": "str", "default": ""},
    "resume": {"type": "str", "default": "never", "choices": list(tl.RESUME)},
    "trainer_src": {"type": "path", "required": True},
    "hosts": {"type": "list", "elements": "str", "required": True},
    # the data network as the inventory describes it (mesh_network_topology, every host's mesh_network_ports)
    "topology": {"type": "str", "default": "mesh", "choices": ["mesh", "switched"]},
    "ports": {"type": "dict", "default": {}},
    # mesh_network_backup_routes: a full mesh of 3+ nodes or a ring routes node addresses round a lost cable
    "backup_routes": {"type": "bool", "default": True},
    "venv": {"type": "path", "default": "/opt/rdmaops/venv"},
    "base_dir": {"type": "path", "default": "/var/lib/rdmaops/train"},
    "log_dir": {"type": "path", "default": "/var/log/rdmaops"},
    "render_dir": {"type": "str", "default": ""},
    # train_health, train_health_thresholds, _severity, _sources (docs/health.md)
    **health_gate.MODE_SPEC,
}

TRAIN_PLAN_SPEC: dict[str, Any] = {
    "check": {"type": "dict", "required": True},
    "reports": {"type": "dict", "required": True},
    "addresses": {"type": "dict", "default": {}},
    "master_port": {"type": "int", "default": 29500},
    "min_free_gb": {"type": "float", "default": 10.0},
    "overwrite": {"type": "bool", "default": False},
    "sync_data": {"type": "bool", "default": False},
    "env_file": {"type": "path", "default": "/etc/rdmaops/nccl.env"},
    "extra_env": {"type": "dict", "default": {}},
    # per host, the rdmaops.cluster.node_health result (empty with train_health=off)
    "health": {"type": "dict", "default": {}},
    "health_mode": {"type": "str", "default": "off", "choices": list(health_gate.MODES)},
    "health_severity": {"type": "dict", "default": {}},
    # RDMA ports slower than this (Gb/s; 0: never) join the nodes by a slow link: HSDP, as on TCP
    "hsdp_rdma_below_gbps": {"type": "float", "default": 0.0},
    # the estimate of a GPU recipe's memory per GPU against the GPUs': fail refuses a layout that cannot fit
    "memory_check": {"type": "str", "default": "fail", "choices": list(MEMORY_MODES)},
}


def recipe_text(recipe: Mapping[str, Any], name: str, overrides: list[str]) -> str:
    """The resolved recipe as the file every node runs (YAML; the trainer reads it with --recipe)."""
    import yaml  # the controller's (Ansible needs PyYAML); imported here so modules can import the specs

    head = f"# Recipe {name} as train.yml resolved it on the controller"
    head += f" (overrides: {' '.join(overrides)})\n" if overrides else "\n"
    return head + yaml.safe_dump(dict(recipe), sort_keys=False, default_flow_style=False)


def check(p: Mapping[str, Any]) -> dict[str, Any]:
    """Phase 1: resolve the recipe (overrides, shorthands, HSDP choice, resume) for the play's hosts and name
    the job; the plan fits it to the nodes the preflight reads and writes it out."""
    errors: list[str] = []
    overrides: dict[str, Any] = dict(p["overrides"] or {})
    try:
        overrides = tl.merge_overrides(overrides, {"steps": p["steps"], "warmup": p["warmup"], "lr": p["lr"]})
    except tl.LaunchError as exc:
        errors.append(str(exc))
    if p["hsdp"]:
        value = HSDP_VALUES[p["hsdp"]]
        if HSDP_KEY in overrides and str(overrides[HSDP_KEY]).lower() != value:
            errors.append(
                f"train_hsdp={p['hsdp']} and recipe_overrides {HSDP_KEY}={overrides[HSDP_KEY]} disagree"
            )
        overrides[HSDP_KEY] = value
    # train.yml's resume setting wins over a train.resume in the overrides, as the trainer's last --set did
    overrides["train.resume"] = tl.resume_value(p["resume"])
    errors += health_gate.settings_errors(
        "train_health", p["health"], p["health_thresholds"], p["health_severity"], p["health_sources"]
    )
    hosts = list(p["hosts"])
    try:
        resolved = resolve(p["trainer_src"], p["recipe"], overrides, len(hosts))
    except RecipeResolveError as exc:
        return {"errors": [*errors, str(exc)]}
    launch = resolved["launch"]
    ranked = rank_order.rank_order(hosts, p["topology"], p["ports"])
    hosts = ranked["order"]
    errors += ranked["errors"]
    job = p["job"] or launch["name"]
    try:
        tl.check_job_name(job)
    except tl.LaunchError as exc:
        errors.append(str(exc))
    if p["launcher"] == "deepspeed" and launch["strategy"] == "pipeline":
        errors.append("launcher=deepspeed runs DeepSpeed-style jobs; the pipeline strategy needs torchrun")
    if errors:
        return {"errors": errors}
    workdir = f"{p['base_dir'].rstrip('/')}/{job}"
    output_dir = tl.resolve_output_dir(workdir, str(launch["output_dir"]))
    log_file = f"{p['log_dir'].rstrip('/')}/train-{job}.log"
    render = os.path.abspath(p["render_dir"]) if p["render_dir"] else ""
    return {
        "errors": [],
        "plan": {
            "job": job,
            "unit": tl.unit_name(job),
            "recipe": p["recipe"],
            "launcher": p["launcher"],
            "resume": p["resume"],
            "hosts": hosts,
            "master": hosts[0],
            "order_note": ranked["note"],
            # the data cables the watch's agents read while the job runs (train_watch's cables)
            "cables": watched_cables(hosts, p["topology"], p["ports"], bool(p.get("backup_routes", True))),
            "venv": p["venv"],
            "python": f"{p['venv'].rstrip('/')}/bin/python",
            "workdir": workdir,
            "output_dir": output_dir,
            "metrics_file": f"{output_dir}/metrics.jsonl",
            "log_file": log_file,
            "events_file": f"{log_file.removesuffix('.log')}.events.jsonl",
            "steps": int(launch["steps"]),
            "paths": tl.recipe_paths(resolved["recipe"]),
            # the recipe on the play's hosts with its own processes per node; the plan fits it to the nodes'
            # GPUs with the same inputs (recipe, overrides), so steps and the output directory stay as here
            "launch": {**launch, "job": job, "output_dir_resolved": output_dir},
            "overrides": overrides,
            "pinned": resolved["fit"]["pinned"],
            "trainer_src": p["trainer_src"],
            # an hf model's config.json, read on the master for the memory estimate
            "model_config": tl.model_config_path(resolved["recipe"]),
            "render_dir": f"{render}/{job}" if render else "",
            # a fresh token per run: the master writes it into the output directory, a node that reads it
            # back shares the master's storage (preflight)
            "token": secrets.token_hex(8),
        },
    }


def _tcp(env: Mapping[str, Any]) -> str:
    """Which TCP path a node's NCCL environment takes ('' for RDMA)."""
    if env.get("NCCL_NET_PLUGIN") == "mesh":
        return "the Mesh plugin's TCP backend" if env.get("NCCL_MESH_TRANSPORT") == "tcp" else ""
    return "NCCL's socket transport, NCCL_IB_DISABLE=1" if env.get("NCCL_IB_DISABLE") == "1" else ""


def slow_fabric(reports: Mapping[str, Any], hosts: list[str], rdma_below_gbps: float = 0) -> str:
    """How the nodes are joined when the link is much slower than their GPUs' own ('' when it is not): NCCL
    over TCP on every node (nccl_env's transport tcp: NCCL_IB_DISABLE=1; or the Mesh plugin's TCP backend),
    or RDMA on every node with the slowest active port NCCL may use (NCCL_IB_HCA) below RDMA_BELOW_GBPS."""
    tcp = [_tcp((reports.get(h) or {}).get("env") or {}) for h in hosts]
    if tcp and all(tcp):
        return f"the nodes are joined by TCP ({' and '.join(sorted(set(tcp)))})"
    if any(tcp) or rdma_below_gbps <= 0:
        return ""  # a mix of TCP and RDMA nodes (not one fabric), or no RDMA threshold
    slowest: tuple[float, str] | None = None
    for host in hosts:
        rep = reports.get(host) or {}
        hca = str((rep.get("env") or {}).get("NCCL_IB_HCA", ""))
        for port in rep.get("rdma_ports") or []:
            rate = port.get("rate_gbps")
            used = (
                port.get("active")
                and isinstance(rate, (int, float))
                and nccl_hca.selects(hca, str(port.get("device", "")), port.get("port", ""))
            )
            if used and (slowest is None or rate < slowest[0]):
                slowest = (float(rate), f"{host} {port.get('device')}/{port.get('port')}")
    if slowest is None or slowest[0] >= rdma_below_gbps:
        return ""
    return (
        f"the nodes are joined by RDMA at {slowest[0]:g} Gb/s ({slowest[1]}), below "
        f"train_hsdp_rdma_below_gbps={rdma_below_gbps:g}"
    )


def hsdp_note(recipe: Mapping[str, Any], decision: Mapping[str, Any], nodes: int, slow: str) -> str:
    """What the launch's HSDP variable means for this recipe, for the preflight notes ('' when nothing). The
    decision is the trainer's (recipe.hsdp_decision); this only words it."""
    strategy = recipe.get("strategy") or {}
    if strategy.get("name") != "fsdp2" or nodes < 2:
        return ""
    choice = (strategy.get("fsdp2") or {}).get("hsdp", "auto")
    if isinstance(choice, bool):
        return f"hsdp: strategy.fsdp2.hsdp is {str(choice).lower()} (-e hsdp=auto follows the fabric)"
    ((name, value),) = decision["env"].items()
    if decision["hybrid"]:
        dtype, why = decision["reduce_dtype"], decision["reduce_why"]
        if why == "fp32 compute":
            grads = f"in {dtype} (fp32 compute)"
        elif (strategy.get("fsdp2") or {}).get("reduce_dtype", "auto") == "auto":
            grads = f"in {dtype} (strategy.fsdp2.reduce_dtype auto; float32 keeps exact sums)"
        else:
            grads = f"in {dtype} (strategy.fsdp2.reduce_dtype)"
        return (
            f"hsdp: {slow}: {name}={value}, so FSDP2 shards inside each node and replicates across nodes "
            f"(only the gradient all-reduce crosses them, {grads}); -e hsdp=off keeps plain FSDP2"
        )
    return (
        f"hsdp: the nodes are joined by RDMA: {name}={value}, plain FSDP2 over every rank (-e hsdp=on forces "
        "HSDP; train_hsdp_rdma_below_gbps sets the rate below which RDMA counts as slow)"
    )


def _supervisor_source() -> str:
    with open(supervisor.__file__, encoding="utf-8") as fh:
        return fh.read()


def plan(p: Mapping[str, Any]) -> dict[str, Any]:
    """Phase 2: compare every node's report; fit the recipe to the nodes and write it out; estimate its
    memory; plan what each node starts (from the check's plan)."""
    c = p["check"]
    hosts = list(c["hosts"])
    reports = dict(p["reports"])
    # a GPU recipe runs one process per GPU of its nodes, unless cluster.procs_per_node is pinned
    procs_found, gpu_notes = gpus.procs_per_node(c["launch"], reports, hosts, c["pinned"])
    errors: list[str] = []
    resolved: dict[str, Any] | None = None
    try:
        resolved = resolve(c["trainer_src"], c["recipe"], c["overrides"], len(hosts), procs_found)
    except RecipeResolveError as exc:
        errors.append(str(exc))
    # unresolved, the preflight still compares the rest (the GPUs with what the recipe would have used)
    fallback = {**c["launch"], **({"procs_per_node": procs_found} if procs_found else {})}
    launch = {
        **(resolved["launch"] if resolved else fallback),
        "job": c["job"],
        "output_dir_resolved": c["output_dir"],
    }
    report = preflight_report(
        reports,
        hosts,
        launch=launch,
        launcher=c["launcher"],
        master_port=p["master_port"],
        resume=c["resume"],
        min_free_gb=p["min_free_gb"],
        overwrite=p["overwrite"],
        sync_data=p["sync_data"],
    )
    report["errors"][:0] = errors
    # Node health is part of the same report: a failing check names node, check, value and threshold next to
    # the other problems (an unreachable node is already named above).
    health = None
    if p["health_mode"] != "off":
        health = health_gate.evaluate(
            p["health"], hosts, p["health_mode"], p["health_severity"], unreachable_named_elsewhere=True
        )
        report["errors"] += health["errors"]
        report["notes"] += [f"health: {text}" for text in health["warnings"]]
    slow = slow_fabric(reports, hosts, p["hsdp_rdma_below_gbps"])
    decision: dict[str, Any] | None = None
    memory_notes: list[str] = []
    if resolved is not None:
        try:
            decision = hsdp_decision(c["trainer_src"], resolved["recipe"], bool(slow))
            if gpus.follows_gpus(str(launch["device"]), reports, hosts):
                found = memory_check(
                    c["trainer_src"],
                    resolved["recipe"],
                    (reports.get(hosts[0]) or {}).get("model_config") or None,
                    decision["hybrid"],
                    gpus.memory_mib(reports, hosts),
                    p["memory_check"],
                )
                report["errors"] += found["errors"]
                memory_notes = found["notes"]
        except RecipeResolveError as exc:
            report["errors"].append(str(exc))
    if report["errors"] or resolved is None or decision is None:
        return {"errors": report["errors"]}
    if report["sync"]:  # inputs are copied first, then the preflight and this phase run again
        return {"errors": [], "plan": {"notes": report["notes"], "sync": report["sync"]}}
    report["notes"][:0] = [
        *([c["order_note"]] if c.get("order_note") else []),
        *gpu_notes,
        *resolved["fit"]["notes"],
    ]
    text = recipe_text(resolved["recipe"], c["recipe"], resolved["overrides"])
    digest = tl.recipe_digest(text)
    master = hosts[0]
    master_addr = str(
        (reports.get(master) or {}).get("address") or (p["addresses"] or {}).get(master) or master
    )
    job, workdir = c["job"], c["workdir"]
    procs = int(launch["procs_per_node"])
    common = tl.launch_environment(decision["env"], job, p["extra_env"])
    common.update(
        MASTER_ADDR=master_addr,
        MASTER_PORT=str(p["master_port"]),
        RDMAOPS_TRAIN_WORKDIR=workdir,
        RDMAOPS_PYTHON=c["python"],
        RDMAOPS_RECIPE_SHA256=digest,
    )
    nodes: dict[str, Any] = {}
    for rank, host in enumerate(hosts):
        node_dir = f"{workdir}/launch/{host}"
        files = tl.node_files(
            job=job,
            node=host,
            node_rank=rank,
            hosts=hosts,
            launcher=c["launcher"],
            procs_per_node=procs,
            node_env=dict((reports.get(host) or {}).get("env") or {}),
            job_env={**common, "RDMAOPS_NODE": host, "RDMAOPS_NODE_RANK": str(rank)},
            recipe_text=text,
            env_file=p["env_file"],
        )
        argv = tl.launcher_argv(
            "torchrun" if c["launcher"] == "slurm" else c["launcher"],
            c["python"],
            nodes=len(hosts),
            procs_per_node=procs,
            node_rank=rank,
            master_addr=master_addr,
            master_port=p["master_port"],
            trainer=tl.trainer_args(f"{node_dir}/{tl.RECIPE_FILE}"),
            hostfile=f"{node_dir}/{tl.HOSTFILE}",
        )
        nodes[host] = {
            "node_rank": rank,
            "dir": node_dir,
            # what a person reads: the launcher as launch.sh runs it on this node
            "command": tl.command_line(argv),
            "files": files,
            # the unit: supervise.py (it records every process's exit) running launch.sh
            "unit_argv": [
                c["python"],
                "-I",
                f"{node_dir}/{SUPERVISOR_FILE}",
                "--events",
                c["events_file"],
                "--log",
                c["log_file"],
                "--",
                "/bin/bash",
                f"{node_dir}/{tl.LAUNCH_SCRIPT}",
            ],
        }
    record = {
        key: c[key]
        for key in (
            "job",
            "unit",
            "recipe",
            "launcher",
            "master",
            "workdir",
            "output_dir",
            "metrics_file",
            "log_file",
            "events_file",
            "steps",
        )
    }
    record.update(
        recipe_sha256=digest,
        # where the launch notes the run's start (metrics offset, time) for a later watch (tasks/watch.yml)
        launch_file=f"{workdir}/{tl.LAUNCH_RECORD}",
        master_addr=master_addr,
        master_port=p["master_port"],
        order=hosts,
        slurm_job_name=f"{tl.SLURM_JOB_PREFIX}{job}" if c["launcher"] == "slurm" else "",
        nodes={
            h: {"node_rank": n["node_rank"], "dir": n["dir"], "command": n["command"]}
            for h, n in nodes.items()
        },
    )
    record_text = json.dumps(record, indent=2, sort_keys=True) + "\n"
    supervise = _supervisor_source()
    for node in nodes.values():
        node["unit_files"] = {
            **{f"{node['dir']}/{name}": text for name, text in node["files"].items()},
            f"{node['dir']}/{SUPERVISOR_FILE}": supervise,
            f"{workdir}/job.json": record_text,
        }
    note = hsdp_note(resolved["recipe"], decision, len(hosts), slow)
    # Each GPU's nearest NIC and whether NCCL's NICs are close (nodes without nvidia-smi: said once).
    gpu_nic = affinity.cluster(
        {h: (reports.get(h) or {}).get("gpu_topology") or {} for h in hosts},
        {h: (reports.get(h) or {}).get("env") or {} for h in hosts},
        hosts,
    )
    result: dict[str, Any] = {
        **record,
        "notes": [
            *report["notes"],
            *affinity.notes(gpu_nic, hosts),
            *([note] if note else []),
            *memory_notes,
        ],
        "launch": launch,
        "layout": resolved["layout"],
        "recipe_text": text,
        "health": health["summary"] if health else None,
        "sync": [],
        "job_record": record,
        "nodes": nodes,
        "recipe_file": f"{workdir}/{tl.RECIPE_FILE}",
        "batch_script": "",
        "batch_script_text": "",
    }
    if c["launcher"] == "slurm":
        slurm_addresses = {}
        for host in hosts:
            rep = reports.get(host) or {}
            slurm_addresses[str(rep.get("hostname") or host)] = str(rep.get("address") or "")
        result["batch_script"] = f"{workdir}/{job}.sbatch"
        result["batch_script_text"] = tl.slurm_batch_script(
            job=job,
            recipe=c["recipe"],
            workdir=workdir,
            env_file=p["env_file"],
            python=c["python"],
            nodes=len(hosts),
            procs_per_node=procs,
            master_port=p["master_port"],
            trainer=tl.trainer_args(result["recipe_file"]),
            addresses=slurm_addresses,
            environment={
                **tl.launch_environment(decision["env"], job, p["extra_env"]),
                "RDMAOPS_RECIPE_SHA256": digest,
            },
            recipe_file=result["recipe_file"],
        )
    return {"errors": [], "plan": result}
