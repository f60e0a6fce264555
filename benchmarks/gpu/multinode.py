"""Multi-node training rehearsed on one GPU machine: the launch train.yml renders, run as two "nodes".

Two steps, on two machines:

    python benchmarks/gpu/multinode.py render --out .rehearsal          # here (the controller's Python)
    python3 benchmarks/gpu/multinode.py run --dir .rehearsal [--rows A,B]  # on the 4-GPU machine

``render`` builds every row's launch directories with the train role's own phases (the code behind
``train.yml -e render_dir=DIR``: ``module_utils/train/phase.py`` check and plan) for an inventory of two
nodes with two GPUs each, or one node with four. The GPU facts (how many GPUs a node has) come from a recorded
``nvidia-smi -q -x`` of the lent machine; each node's NCCL environment is the one the nccl_env and
nccl_mesh_plugin roles compute for a TCP fabric (``module_utils/nccl/phase.py``): NCCL's socket transport with
the role's socket threads, the same with NCCL's defaults (what an untuned user runs), or the Mesh plugin's TCP
backend. Nothing here sets an NCCL variable of its own.

``run`` starts each row's nodes as the units would (``supervise.py -- bash launch.sh``), node rank 0 first,
each "node" pinned to its GPUs (``CUDA_VISIBLE_DEVICES``) with its own ``NCCL_HOSTID`` so NCCL treats it as
another host, and the node addresses mapped to 127.0.0.1 through ``RDMAOPS_LOCAL_ENV`` (docs/train.md). The
train role's watcher (``module_utils/train/watch.py`` JobWatch, fed the same lines its node agents send)
decides when a job succeeded, failed or hung; on a failure every node is stopped as the role stops units.
Per row it prints one JSON line: MFU (the trainer's own, median of the logged windows after the first), the
NCCL path verdict (``module_utils/verify/nccl_path.py``: the plugin loaded where configured, channels between
nodes via NET, inside a node via P2P/SHM), and for fault rows the time from the fault to every rank gone and
the watcher's verdict. Resume rows check the loss at the first logged step after the resume against the
uninterrupted row's loss at that step.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def collections_path() -> Path:
    """A directory where ``ansible_collections.rdmaops.cluster`` is this checkout (``make venv`` makes
    .collections; the GPU machine gets a link in /tmp)."""
    made = ROOT / ".collections"
    if (made / "ansible_collections" / "rdmaops" / "cluster").exists():
        return made
    link = Path("/tmp/rdmaops-collections/ansible_collections/rdmaops/cluster")
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(ROOT)
    return link.parents[2]


sys.path.insert(0, str(collections_path()))

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.train import agent  # noqa: E402
from ansible_collections.rdmaops.cluster.plugins.module_utils.train import watch as tw  # noqa: E402
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify import nccl_path  # noqa: E402

GPU_XML = ROOT / "tests" / "unit" / "fixtures" / "health" / "nvidia-smi-q-x.h200x4.xml"
BASE = "/tmp/rdmaops-rehearsal"
QWEN = {
    "cluster.device": "cuda",
    "train.global_batch_size": 192,  # 4 GPUs x micro-batch 12 x 4: the measurement
    "train.eval_every": 0,
    "train.steps": 15,
    "train.log_every": 3,
    "train.checkpoint_every": 0,
}
BF16 = {"strategy.fsdp2.reduce_dtype": "bfloat16"}
GPT2 = {
    "cluster.device": "cuda",
    "data.kind": "synthetic",
    "tokenizer.kind": "byte",
    "train.eval_every": 0,
    "train.warmup_steps": 2,
    "train.global_batch_size": 256,
    "train.micro_batch_size": 64,
    "train.steps": 30,
    "train.log_every": 5,
    "train.checkpoint_every": 0,
}


def faults_row(job: str, **extra: Any) -> dict[str, Any]:
    """gpt2 on 2 x 2 with a checkpoint every 10 steps: uninterrupted, a fault, or the resume of one."""
    return {
        "recipe": "gpt2",
        "nodes": 2,
        "net": "socket",
        "job": job,
        "over": {**GPT2, "train.checkpoint_every": 10},
        **extra,
    }


def qwen_row(
    nodes: int, net: str = "socket", over: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    """qwen1_5b on 1 x 4 or 2 x 2 over ``net``, with more recipe overrides (``over``) and row keys."""
    return {"recipe": "qwen1_5b", "nodes": nodes, "net": net, "over": {**QWEN, **(over or {})}, **extra}


# name: recipe, nodes, GPUs per node, the fabric's NCCL choice, launcher, train_hsdp, overrides, fault, resume
ROWS: dict[str, dict[str, Any]] = {
    "qwen 1x4": qwen_row(1),
    "qwen 2x2 socket": qwen_row(2),
    "qwen 2x2 socket untuned": qwen_row(2, "socket-defaults", hsdp="off"),
    "qwen 2x2 mesh": qwen_row(2, "mesh"),
    "qwen 2x2 socket fsdp2": qwen_row(2, hsdp="off"),
    # levers for the 0.95x target: gradients reduced in bf16 (half the bytes across nodes; since then what
    # strategy.fsdp2.reduce_dtype auto does under HSDP), the same reduced after every micro-batch (fp32
    # accumulation of the shards), more NCCL channels, buffers or sockets; and HSDP with fp32 reduction
    "qwen 2x2 socket fp32reduce": qwen_row(2, over={"strategy.fsdp2.reduce_dtype": "float32"}),
    "qwen 1x4 bf16reduce": qwen_row(1, over=BF16),
    "qwen 2x2 socket bf16reduce": qwen_row(2, over=BF16),
    "qwen 2x2 socket bf16reduce rsevery": qwen_row(
        2, over={**BF16, "strategy.fsdp2.reduce_every_micro_batch": True}
    ),
    "qwen 2x2 socket bf16reduce ch4": qwen_row(2, over=BF16, extra={"NCCL_MIN_NCHANNELS": "4"}),
    "qwen 2x2 socket bf16reduce buff16m": qwen_row(2, over=BF16, extra={"NCCL_BUFFSIZE": str(16 << 20)}),
    "qwen 2x2 mesh bf16reduce": qwen_row(2, "mesh", over=BF16),
    "qwen 2x2 socket 8x8": qwen_row(2, "socket-8x8"),
    "qwen 2x2 zero3": qwen_row(2, over={"strategy.name": "zero3"}, launcher="deepspeed"),
    "gpt2 2x2 ddp": {"recipe": "gpt2", "nodes": 2, "net": "socket", "over": GPT2},
    "gpt2 2x2 ddp ckpt": faults_row("gpt2-faults"),
    "gpt2 2x2 kill": faults_row(
        "gpt2-kill", fault={"signal": "KILL", "node": 1, "local_rank": 1, "after_step": 15}
    ),
    "gpt2 2x2 kill resume": faults_row("gpt2-kill", resume="latest", same_as="gpt2 2x2 ddp ckpt"),
    "gpt2 2x2 stop": faults_row(
        "gpt2-stop", fault={"signal": "STOP", "node": 1, "local_rank": 0, "after_step": 15}
    ),
    "gpt2 2x2 stop resume": faults_row("gpt2-stop", resume="latest", same_as="gpt2 2x2 ddp ckpt"),
}
GPUS = 4
# --cpu: every row as the tiny recipe on CPU (gloo), the same launch, watcher and faults: a check of the
# runner itself here (tests/unit/benchmarks), not a measurement. ZeRO-3 needs GPUs.
CPU = {
    "cluster.device": "cpu",
    "train.steps": 30,
    "train.log_every": 5,
    "train.eval_every": 0,
    "train.checkpoint_every": 0,
    "train.global_batch_size": 8,
    "train.micro_batch_size": 2,
    "train.warmup_steps": 2,
}
# The watcher's bounds in the rehearsal: the role's defaults, except a stopped rank is named after 10 s.
WATCH = tw.Limits(stall_timeout=300.0, startup_timeout=600.0, lost_timeout=60.0)


def joined(*parts: str | None) -> str:
    return ":".join(p for p in parts if p)


def slug(name: str) -> str:
    return name.replace(" ", "-")


def gpu_count(xml_path: Path) -> int:
    """GPUs in a recorded ``nvidia-smi -q -x`` (its attached_gpus)."""
    return int(ET.parse(xml_path).getroot().findtext("attached_gpus") or 0)


# ---------------------------------------------------------------------------------------------------- render
def role_defaults(role: str) -> dict[str, Any]:
    """A role's defaults (roles/<role>/defaults/main.yml) without its prefix, what an inventory that sets
    nothing gets. Templated values stay text; the callers read only plain ones."""
    data = yaml.safe_load((ROOT / "roles" / role / "defaults" / "main.yml").read_text())
    return {k.removeprefix(f"{role}_"): v for k, v in data.items()}


def node_env(net: str, nccl_version: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The node's NCCL/gloo environment as nccl_env (and nccl_mesh_plugin) compute it for a TCP fabric."""
    from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl import phase

    env_role = role_defaults("nccl_env")
    role_threads = {k: env_role[k] for k in ("socket_nthreads", "nsocks_perthread")}
    threads = {
        "socket-defaults": {"socket_nthreads": None, "nsocks_perthread": None},
        # NCCL's ceiling: threads x sockets per thread <= 64 (a measurement row, not a role default)
        "socket-8x8": {"socket_nthreads": 8, "nsocks_perthread": 8},
    }.get(net, role_threads)
    plugin: dict[str, str] = {}
    if net == "mesh":
        mesh_role = role_defaults("nccl_mesh_plugin")
        keys = ("force", "ifname", "gid_index", "nsocks", "debug", "prefix")
        # NCCL 2.28 has no subnet-aware routing: with force false the role picks the plugin itself
        decided = phase.nccl_mesh_plugin_check(
            {**{k: mesh_role[k] for k in keys}, "nccl_version": nccl_version, "transport": "tcp"}
        )
        if decided["errors"]:
            raise SystemExit(f"nccl_mesh_plugin_check: {decided['errors']}")
        plugin = dict(decided["plan"]["env"])
    out = phase.nccl_env_plan(
        {
            "transport": "tcp",
            "ports": [],
            "socket_ifname": "nodeaddr0",
            "roce_qos": {},
            "gdr_level": env_role["gdr_level"],
            "hca": env_role["hca"],
            "gid_index": env_role["gid_index"],
            "net": plugin,
            "extra": extra or {},  # nccl_env_extra: only measurement rows set it
            **threads,
            "files": [{"dest": "/etc/rdmaops/nccl.env", "about": ""}],
            "managed": "rendered by benchmarks/gpu/multinode.py",
        }
    )
    if out["errors"]:
        raise SystemExit(f"nccl_env_plan: {out['errors']}")
    return dict(out["plan"]["env"])


def report(env: dict[str, str], gpus: int, address: str) -> dict[str, Any]:
    """One node's preflight report as the train_preflight module returns it, for a node set up by site.yml."""
    return {
        "venv": {"exists": True, "path": "/opt/rdmaops/venv"},
        "versions": {"python": "3.12", "torch": "2.11.0", "nccl": "2.28.9", "deepspeed": "0.19.8"},
        "gpus": gpus,
        "disk": (BASE, 1000.0),
        "listening": [],
        "unit": {},
        "env": env,
        "address": address,
        "hostname": "",
        "paths": [],
        "interfaces": {},
        "checkpoints": {},
    }


def spec_defaults(spec: dict[str, Any]) -> dict[str, Any]:
    """A phase's arguments as Ansible fills in those a task leaves out (the rehearsal sets the rest)."""
    return {name: opt.get("default") for name, opt in spec.items() if not opt.get("required")}


def render(out: Path, names: list[str], xml_path: Path, cpu: bool = False) -> None:
    from ansible_collections.rdmaops.cluster.plugins.module_utils.train import phase

    total = gpu_count(xml_path)
    if total < GPUS:
        raise SystemExit(f"{xml_path}: {total} GPUs, the rehearsal needs {GPUS}")
    shutil.rmtree(out, ignore_errors=True)
    for name in names:
        row = ROWS[name]
        hosts = [f"node{i + 1}" for i in range(row["nodes"])]
        per_node = GPUS // row["nodes"]
        overrides = {**row["over"], "cluster.nodes": row["nodes"], "cluster.procs_per_node": per_node}
        recipe = row["recipe"]
        if cpu:
            if row.get("launcher") == "deepspeed":
                continue
            keep = {k: v for k, v in row["over"].items() if k in ("train.checkpoint_every", "strategy.name")}
            overrides = {**CPU, **keep, "cluster.nodes": row["nodes"], "cluster.procs_per_node": per_node}
            if row["recipe"] == "gpt2":
                overrides["strategy.name"] = "ddp"
            recipe = "tiny"
        check = phase.check(
            {
                **spec_defaults(phase.TRAIN_CHECK_SPEC),
                # node health is the GPU machine's own business here: no node_health report to gate on
                "health": "off",
                "recipe": recipe,
                "overrides": overrides,
                "steps": "",
                "warmup": "",
                "lr": "",
                "hsdp": row.get("hsdp", ""),
                "launcher": row.get("launcher", "torchrun"),
                "job": row.get("job", slug(name).replace(" ", "-")),
                "resume": row.get("resume", "never"),
                "trainer_src": str(ROOT / "files" / "trainer"),
                "hosts": hosts,
                "venv": "/opt/rdmaops/venv",
                "base_dir": BASE,
                "log_dir": f"{BASE}/log",
                "render_dir": "",
            }
        )
        if check["errors"]:
            raise SystemExit(f"{name}: train_check: {check['errors']}")
        env = node_env(row["net"], "2.28.9", row.get("extra"))
        reports = {h: report(env, total // row["nodes"], f"10.255.0.{i + 1}") for i, h in enumerate(hosts)}
        planned = phase.plan(
            {
                **spec_defaults(phase.TRAIN_PLAN_SPEC),
                "check": check["plan"],
                "reports": reports,
                "addresses": {},
                "master_port": 29500,
                "min_free_gb": 10.0,
                "overwrite": True,
                "sync_data": False,
                "env_file": "/etc/rdmaops/nccl.env",
                "extra_env": {},
            }
        )
        if planned["errors"]:
            raise SystemExit(f"{name}: train_plan: {planned['errors']}")
        plan = planned["plan"]
        row_dir = out / slug(name)
        for host, node in plan["nodes"].items():
            for path, text in node["unit_files"].items():
                rel = Path(path).relative_to(plan["workdir"])
                dest = row_dir / host / rel.name if rel.parent != Path(".") else row_dir / rel.name
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_text(text)
        meta = {
            "row": name,
            "hosts": hosts,
            "gpus_per_node": per_node,
            "net": row["net"],
            "env": env,
            "notes": plan["notes"],
            "steps": plan["steps"],
            "job": plan["job"],
            "workdir": plan["workdir"],
            "metrics_file": plan["metrics_file"],
            "fault": row.get("fault"),
            "cpu": cpu,
            "same_as": row.get("same_as"),
            "commands": {h: n["command"] for h, n in plan["nodes"].items()},
        }
        (row_dir / "row.json").write_text(json.dumps(meta, indent=2) + "\n")
        print(json.dumps({"rendered": name, "dir": str(row_dir), "notes": plan["notes"]}))


# ------------------------------------------------------------------------------------------------------- run
class Node:
    """One "node" of a row: supervise.py running launch.sh, with its events, log and local env."""

    def __init__(self, row_dir: Path, host: str, rank: int, gpus: list[int], meta: dict[str, Any]) -> None:
        self.host, self.rank = host, rank
        self.dir = row_dir / host
        self.log = row_dir / f"{host}.log"
        self.events = row_dir / f"{host}.events.jsonl"
        local = {
            "MASTER_ADDR": "127.0.0.1",
            "RDMAOPS_PYTHON": sys.executable,
            "NCCL_SOCKET_IFNAME": "lo",
            "GLOO_SOCKET_IFNAME": "lo",
            "NCCL_MESH_IFNAME": "lo",
            "CUDA_VISIBLE_DEVICES": ",".join(map(str, gpus)),
            "RDMAOPS_REHEARSAL_GPUS": ",".join(map(str, gpus)),
            "NCCL_HOSTID": f"rehearsal-{host}",
            "NCCL_DEBUG": "INFO",
            "NCCL_DEBUG_SUBSYS": "INIT,NET",
            # the plugin where nccl_mesh_plugin installs it, and the trainer as python_env installs it
            "LD_LIBRARY_PATH": joined(str(ROOT / "files/plugin_src"), os.environ.get("LD_LIBRARY_PATH")),
            "PYTHONPATH": joined(
                str(HERE / "rehearsal_site"), str(ROOT / "files/trainer"), os.environ.get("PYTHONPATH")
            ),
        }
        if meta["net"] == "mesh":
            local["NCCL_MESH_NODE_ADDR"] = "127.0.0.1"
        self.local_env = row_dir / f"{host}.local.env"
        self.local_env.write_text("".join(f"{k}={v}\n" for k, v in local.items()))
        self.proc: subprocess.Popen[bytes] | None = None
        self.table = agent.ProcessTable(str(self.events))

    def start(self) -> None:
        for f in (self.log, self.events):
            f.unlink(missing_ok=True)
        env = {**os.environ, "RDMAOPS_LOCAL_ENV": str(self.local_env)}
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-I",
                str(self.dir / "supervise.py"),
                "--events",
                str(self.events),
                "--log",
                str(self.log),
                "--",
                "/bin/bash",
                str(self.dir / "launch.sh"),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def unit(self) -> dict[str, str]:
        """The properties systemd would show for the node's unit (RemainAfterExit=yes)."""
        assert self.proc is not None
        code = self.proc.poll()
        if code is None:
            return {
                "Id": f"{self.host}.service",
                "ActiveState": "active",
                "SubState": "running",
                "MainPID": str(self.proc.pid),
            }
        killed = code < 0
        status = str(-code if killed else code)
        ok = code == 0
        return {
            "Id": f"{self.host}.service",
            "ActiveState": "active" if ok else "failed",
            "SubState": "exited" if ok else "failed",
            "Result": "success" if ok else ("signal" if killed else "exit-code"),
            "ExecMainCode": "2" if killed else "1",
            "ExecMainStatus": status,
        }

    def line(self, reader: agent.MetricsReader | None) -> dict[str, Any]:
        show = self.unit()
        procs, exits = self.table.read()
        line: dict[str, Any] = {
            "t": time.time(),
            "phase": agent.unit_phase(show),
            "unit": show,
            "metrics": reader.read() if reader else [],
            "procs": procs,
            "exits": exits,
        }
        if line["phase"] != "running" or exits:
            line["log_tail"] = agent.run_tail(str(self.log))
        return line

    def pids(self) -> list[int]:
        if self.proc is None:
            return []
        parents = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                    parents[int(entry.name)] = int(stat[stat.rfind(")") + 2 :].split()[1])
                except (OSError, ValueError, IndexError):
                    continue
        out, todo = [], [self.proc.pid]
        while todo:
            pid = todo.pop()
            if pid in parents or pid == self.proc.pid:
                out.append(pid)
            todo += [c for c, p in parents.items() if p == pid]
        return [p for p in out if p in parents]

    def stop(self) -> None:
        """As train_stop: SIGTERM and SIGCONT to the whole tree (run_row kills what is left after 20 s)."""
        for sig in (signal.SIGTERM, signal.SIGCONT):
            for pid in self.pids():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)


def rank_pid(node: Node, local_rank: int) -> int | None:
    """The pid of a node's rank, from supervise.py's spawn events (the live table the watcher reads too)."""
    for info in node.table.live.values():
        if info.get("role") == "rank" and info.get("local_rank") == local_rank:
            return int(info["pid"])
    return None


def run_row(row_dir: Path, timeout: float) -> dict[str, Any]:
    meta = json.loads((row_dir / "row.json").read_text())
    hosts = meta["hosts"]
    per = meta["gpus_per_node"]
    nodes = [Node(row_dir, h, i, list(range(i * per, (i + 1) * per)), meta) for i, h in enumerate(hosts)]
    metrics = Path(meta["metrics_file"])
    offset = metrics.stat().st_size if metrics.exists() else 0
    reader = agent.MetricsReader(str(metrics), offset)
    started = time.time()
    watchman = tw.JobWatch(meta["job"], hosts, total_steps=meta["steps"], started=started, limits=WATCH)
    for n in nodes:
        n.start()
        time.sleep(1.0)  # master first, as the role starts units
    fault, fault_at, gone_at, outcome, stopped_at = meta.get("fault"), None, None, None, None
    records: list[dict[str, Any]] = []
    while time.time() - started < timeout:
        now = time.time()
        for n in nodes:
            line = n.line(reader if n.rank == 0 else None)
            records += line["metrics"]
            watchman.feed(n.host, line, now)
        step = max((r.get("step", 0) for r in records if r.get("event") == "train"), default=0)
        if fault and fault_at is None and step >= fault["after_step"]:
            target = nodes[fault["node"]]
            pid = rank_pid(target, fault["local_rank"])
            if pid:
                os.kill(pid, getattr(signal, "SIG" + fault["signal"]))
                fault_at = time.time()
        outcome = watchman.decide(now)
        if outcome is not None:
            if outcome.status != "succeeded":
                stopped_at = time.time()
                for n in nodes:
                    n.stop()
            break
        time.sleep(0.5)
    else:
        stopped_at = time.time()
        for n in nodes:
            n.stop()
    for n in nodes:  # every rank gone: the supervisors leave only when no process of the job is left
        assert n.proc is not None
        try:
            n.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            for pid in n.pids():
                os.kill(pid, signal.SIGKILL)
            n.proc.wait()
    gone_at = time.time()
    logs = {n.host: n.log.read_text(errors="replace") if n.log.exists() else "" for n in nodes}
    path = nccl_path.verdict(logs, nccl_path.expectations({}, {h: meta["env"] for h in hosts}))
    # which transports carried channels inside a node and between nodes (NET/Socket, NET/Mesh, P2P, SHM)
    kinds: dict[str, set[str]] = {"inside": set(), "between": set()}
    for c in path["channels"]:
        transport = "/".join(str(c["transport"]).split("/")[:2])
        if c.get("peer_node") == c["node"]:
            kinds["inside"].add(transport)
        elif c.get("peer_node") or transport.startswith("NET/"):  # a split communicator's NET peer
            kinds["between"].add(transport)
    trains = [r for r in records if r.get("event") == "train"]
    mfus = [r["mfu"] for r in trains[1:] if r.get("mfu") is not None]
    result: dict[str, Any] = {
        "row": meta["row"],
        "outcome": outcome.status if outcome else "timeout",
        "verdict": outcome.message if outcome else "",
        "named": {"node": outcome.node, "rank": outcome.rank} if outcome else {},
        "mfu": round(statistics.median(mfus), 4) if mfus else None,
        "steps": trains[-1]["step"] if trains else 0,
        "losses": {r["step"]: r.get("loss") for r in trains},
        "nccl_path": path["verdict"],
        "nccl_problems": path["problems"],
        "channels": {k: sorted(v) for k, v in kinds.items()},
        "plugin": {h: v["plugin"] for h, v in path["nodes"].items()},
        "wall_s": round(gone_at - started, 1),
        "notes": meta["notes"],
    }
    if fault:
        result["fault"] = fault
        result["fault_to_all_gone_s"] = round(gone_at - fault_at, 2) if fault_at else None
        result["fault_to_verdict_s"] = round(stopped_at - fault_at, 2) if fault_at and stopped_at else None
    return result


def resume_check(resumed: dict[int, float], uninterrupted: dict[int, float]) -> dict[str, Any]:
    """The resumed run's logged losses against the uninterrupted run's at the same steps: the first such
    step, the largest difference over all of them, and whether they are bit for bit the same."""
    shared = sorted(s for s in resumed if s in uninterrupted)
    diffs = [abs(resumed[s] - uninterrupted[s]) for s in shared]
    return {
        "first_step": shared[0] if shared else None,
        "loss": resumed[shared[0]] if shared else None,
        "uninterrupted": uninterrupted[shared[0]] if shared else None,
        "steps": shared,
        "max_abs_diff": max(diffs) if diffs else None,
        "identical": bool(shared) and max(diffs) == 0.0,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("render")
    r.add_argument("--out", type=Path, default=Path(".rehearsal"))
    r.add_argument("--rows", default=",".join(ROWS))
    r.add_argument("--gpu-xml", type=Path, default=GPU_XML)
    r.add_argument(
        "--cpu", action="store_true", help="the tiny recipe on CPU: checks the runner, measures nothing"
    )
    x = sub.add_parser("run")
    x.add_argument("--dir", type=Path, default=Path(".rehearsal"))
    x.add_argument("--rows", default=",".join(ROWS))
    x.add_argument("--timeout", type=float, default=300.0, help="per row")
    x.add_argument("--out", type=Path, default=None, help="keep each row's node logs here")
    sub.add_parser("list")
    a = ap.parse_args()
    if a.cmd == "list":
        for name, row in ROWS.items():
            print(f"{name:28s} {json.dumps({k: v for k, v in row.items() if k != 'over'})}")
        return 0
    names = [n.strip() for n in a.rows.split(",") if n.strip()]
    bad = [n for n in names if n not in ROWS]
    if bad:
        print(f"unknown rows {bad}; see `multinode.py list`", file=sys.stderr)
        return 2
    if a.cmd == "render":
        render(a.out, names, a.gpu_xml, a.cpu)
        return 0
    results: dict[str, dict[str, Any]] = {}
    for name in names:
        res = run_row(a.dir / slug(name), a.timeout)
        same = ROWS[name].get("same_as")
        if same and same in results:
            res["resume_check"] = resume_check(res["losses"], results[same]["losses"])
        results[name] = res
        print(json.dumps(res), flush=True)
        if a.out:
            a.out.mkdir(parents=True, exist_ok=True)
            for log in (a.dir / slug(name)).glob("*.log"):
                shutil.copy(log, a.out / f"{slug(name)}-{log.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
