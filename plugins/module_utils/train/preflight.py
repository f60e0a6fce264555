# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""train.yml's preflight: what each node reports (collected by the train_preflight module) and the one
report the controller makes of all of them (every check runs; each failure names node, value and fix).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# Files up to this size are checksummed; larger ones (model shards) are compared by size and mtime.
SMALL_FILE_BYTES = 64 * 1024 * 1024
MAX_FILES = 5000
# The venv's versions without importing torch (seconds per node): distribution metadata only. NCCL is the
# nvidia-nccl wheel torch loads on CUDA builds; CPU builds have none.
VERSION_PROBE = r"""
import json, sys
from importlib import metadata
def v(*names):
    for n in names:
        try:
            return metadata.version(n)
        except metadata.PackageNotFoundError:
            pass
    return None
print(json.dumps({
    "python": "%d.%d.%d" % sys.version_info[:3],
    "torch": v("torch"),
    "deepspeed": v("deepspeed"),
    "trainer": v("rdmaops-trainer", "rdmaops_trainer"),
    "transformers": v("transformers"),
    "nccl": v("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11"),
}))
"""
COMPARED_VERSIONS = ("python", "torch", "nccl", "deepspeed", "trainer", "transformers")


# ---------------------------------------------------------------------------------------------- node side


def fingerprint(path: str, small: int = SMALL_FILE_BYTES) -> dict[str, Any]:
    """What two nodes compare to tell "the same data": sha256 of small files, size+mtime of large ones."""
    if not os.path.exists(path):
        return {"exists": False}
    files = [path] if os.path.isfile(path) else _walk(path)
    digest = hashlib.sha256()
    total = 0
    for f in files:
        st = os.stat(f)
        total += st.st_size
        rel = os.path.relpath(f, path) if f != path else os.path.basename(f)
        if st.st_size <= small:
            with open(f, "rb") as fh:
                content = hashlib.sha256(fh.read()).hexdigest()
            digest.update(f"{rel}\0sha256:{content}\n".encode())
        else:
            digest.update(f"{rel}\0size:{st.st_size}\0mtime:{int(st.st_mtime)}\n".encode())
    return {"exists": True, "files": len(files), "bytes": total, "fingerprint": digest.hexdigest()[:16]}


def _walk(root: str) -> list[str]:
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            out.append(os.path.join(dirpath, name))
            if len(out) > MAX_FILES:
                raise ValueError(f"{root}: more than {MAX_FILES} files; point the recipe at a smaller tree")
    return out


def parse_ifnames(env: Mapping[str, str]) -> list[str]:
    """Interfaces named in an NCCL/gloo environment that must exist on the node.

    GLOO_SOCKET_IFNAME is a comma list of exact names; NCCL_SOCKET_IFNAME is a list of prefixes, exact with a
    leading '=', and an exclusion list with '^' (which names nothing that must exist).
    """
    names: list[str] = []
    gloo = env.get("GLOO_SOCKET_IFNAME", "")
    names += [n for n in gloo.split(",") if n]
    nccl = env.get("NCCL_SOCKET_IFNAME", "")
    if nccl and not nccl.startswith("^"):
        names += [n for n in nccl.lstrip("=").split(",") if n]
    return list(dict.fromkeys(names))


def interface_state(
    links: Sequence[Mapping[str, Any]], wanted: Sequence[str], exact: bool = True
) -> dict[str, Any]:
    """From ``ip -j addr``: per wanted name, whether it exists, is administratively up, and its IPv4s."""
    out: dict[str, Any] = {}
    for name in wanted:
        match = [lk for lk in links if lk.get("ifname") == name]
        if not match:
            out[name] = {"exists": False}
            continue
        link = match[0]
        out[name] = {
            "exists": True,
            "up": "UP" in (link.get("flags") or []),
            "ipv4": [a["local"] for a in link.get("addr_info", []) if a.get("family") == "inet"],
        }
    return out


def listening_ports(proc_net_tcp: Iterable[str]) -> set[int]:
    """Ports in LISTEN state (0A) from /proc/net/tcp and tcp6 text."""
    ports = set()
    for text in proc_net_tcp:
        for line in text.splitlines()[1:]:
            fields = line.split()
            if len(fields) > 3 and fields[3] == "0A":
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def node_listening_ports() -> set[int]:
    """This node's TCP ports in LISTEN state (IPv4 and IPv6), from /proc: no ss or netstat needed."""
    texts = []
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        if os.path.exists(path):
            with open(path, encoding="ascii") as fh:
                texts.append(fh.read())
    return listening_ports(texts)


def checkpoints(output_dir: str) -> dict[str, Any]:
    """Complete and half-written checkpoints under <output_dir>/checkpoints (COMPLETE marks a whole one)."""
    base = os.path.join(output_dir, "checkpoints")
    complete: list[int] = []
    partial: list[int] = []
    if os.path.isdir(base):
        for name in sorted(os.listdir(base)):
            m = re.match(r"^step_(\d+)$", name)
            if m:
                (complete if os.path.isfile(os.path.join(base, name, "COMPLETE")) else partial).append(
                    int(m[1])
                )
    finished = None
    metrics = os.path.join(output_dir, "metrics.jsonl")
    if os.path.isfile(metrics):
        finished = last_end_step(metrics)
    return {"complete": complete, "partial": partial, "finished_step": finished}


def last_end_step(metrics_path: str) -> int | None:
    """The step of the last ``end`` record after the last ``start`` one: the run there finished."""
    end = None
    with open(metrics_path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("event") == "start":
                end = None
            elif rec.get("event") == "end":
                end = rec.get("step")
    return end


def free_gb(path: str) -> tuple[str, float]:
    """Free space where the path is (or would be created): the nearest existing ancestor."""
    probe = path
    while not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    st = os.statvfs(probe)
    return probe, round(st.f_bavail * st.f_frsize / 1e9, 2)


# ------------------------------------------------------------------------------------------ controller side


def preflight_report(
    facts: Mapping[str, Mapping[str, Any]],
    hosts: Sequence[str],
    *,
    launch: Mapping[str, Any],
    launcher: str,
    master_port: int,
    resume: str,
    min_free_gb: float,
    overwrite: bool = False,
    sync_data: bool = False,
) -> dict[str, Any]:
    """All checks over all nodes: ``{"errors": [...], "notes": [...], "sync": [...]}``. ``facts``: per host,
    the train_preflight module's result, or ``{"unreachable": True, "msg": ...}``. ``sync``: the inputs to
    copy from the first node (``sync_data``; see _check_paths)."""
    errors: list[str] = []
    notes: list[str] = []
    master = hosts[0] if hosts else ""
    reachable = []
    for host in hosts:
        f = facts.get(host) or {"unreachable": True, "msg": "no result"}
        if f.get("unreachable"):
            errors.append(
                f"{host}: unreachable ({_first_line(f.get('msg'))}); bring it back or leave it out with "
                "--limit"
            )
        elif f.get("failed"):
            errors.append(f"{host}: preflight failed: {_first_line(f.get('msg'))}")
        else:
            reachable.append(host)
    if not reachable:
        return {"errors": errors, "notes": notes, "sync": []}

    for host in reachable:
        if not facts[host].get("venv", {}).get("exists"):
            errors.append(
                f"{host}: no venv at {facts[host]['venv'].get('path')}: run site.yml (role python_env) on it"
            )
    _compare_versions(facts, reachable, errors)
    _check_world(facts, reachable, launch, errors)
    sync = _check_paths(facts, reachable, errors, notes, sync_data)
    _check_interfaces(facts, reachable, errors)
    running = [host for host in reachable if _running(facts[host].get("unit", {}))]
    if running:
        # named once; what the running job itself holds (its port, its output) is not a problem of its own
        unit = facts[running[0]].get("unit", {})
        errors.append(
            f"job {launch.get('job')} is already running on {', '.join(running)} ({unit.get('Id')}, since "
            f"{unit.get('ActiveEnterTimestamp') or '?'}): watch it with ansible-playbook "
            f"playbooks/train_status.yml -e job={launch.get('job')} -e follow=true, stop it with "
            f"playbooks/train_stop.yml -e job={launch.get('job')}, or give this run another -e job=NAME"
        )
    for host in reachable:
        where, free = facts[host].get("disk", ("?", 0.0))
        if free < min_free_gb:
            errors.append(
                f"{host}: {free} GB free at {where}, below train_min_free_gb={min_free_gb}: free space for "
                "checkpoints or lower train_min_free_gb"
            )
    if master in reachable and master_port in facts[master].get("listening", []) and master not in running:
        errors.append(
            f"{master}: rendezvous port {master_port} is already in use there: stop what listens on it "
            "(`ss -ltnp`) or pass -e train_master_port=<another port>"
        )
    if launcher == "deepspeed" and not all(facts[h].get("versions", {}).get("deepspeed") for h in reachable):
        missing = [h for h in reachable if not facts[h].get("versions", {}).get("deepspeed")]
        errors.append(f"{', '.join(missing)}: launcher=deepspeed but deepspeed is not in the venv there")
    if not running:
        _check_output(facts, reachable, master, launch, resume, overwrite, errors, notes)
    return {"errors": errors, "notes": notes, "sync": sync}


def _running(unit: Mapping[str, Any]) -> bool:
    return (
        unit.get("ActiveState") in ("active", "activating", "deactivating")
        and unit.get("SubState") != "exited"
    )


def _first_line(msg: Any) -> str:
    text = str(msg or "").strip()
    return text.splitlines()[0] if text else "no message"


def _compare_versions(facts: Mapping[str, Any], hosts: Sequence[str], errors: list[str]) -> None:
    ref = hosts[0]
    for key in COMPARED_VERSIONS:
        want = facts[ref].get("versions", {}).get(key)
        for host in hosts[1:]:
            have = facts[host].get("versions", {}).get(key)
            if have != want:
                errors.append(
                    f"{host}: {key} {have or 'missing'} differs from {ref}'s {want or 'missing'}: every "
                    "node needs "
                    "the same environment (run site.yml, role python_env, on all nodes)"
                )


def _check_world(
    facts: Mapping[str, Any], hosts: Sequence[str], launch: Mapping[str, Any], errors: list[str]
) -> None:
    if launch.get("device") != "cuda":
        return
    want = int(launch.get("procs_per_node") or 0)
    for host in hosts:
        gpus = int(facts[host].get("gpus", 0))
        if gpus < want:
            errors.append(
                f"{host}: {gpus} GPU(s) visible, the recipe needs cluster.procs_per_node={want} cuda "
                "processes per "
                f"node (world size {launch.get('world_size')} = {launch.get('nodes')} nodes x {want})"
            )


def _check_paths(
    facts: Mapping[str, Any],
    hosts: Sequence[str],
    errors: list[str],
    notes: list[str],
    sync_data: bool = False,
) -> list[dict[str, Any]]:
    """Every node must hold the first node's inputs. With ``sync_data`` a node that lacks them or holds a
    different copy is not an error but a copy to make from the first node: returned as
    ``[{"what", "path", "from", "to": [hosts]}]``. Missing on the first node is an error either way."""
    ref = hosts[0]
    sync: list[dict[str, Any]] = []
    for item in facts[ref].get("paths", []):
        what, path, ref_copy = item["what"], item["path"], item
        to: list[str] = []
        for host in hosts:
            mine = next((p for p in facts[host].get("paths", []) if p["path"] == path), {"exists": False})
            if host == ref or not ref_copy.get("exists"):
                if not mine.get("exists"):
                    errors.append(
                        f"{host}: {what} {path} does not exist: every node reads the same path (shared "
                        "storage, or the same copy on each node)"
                        + (f"; sync_data=true copies from {ref}, which needs it first" if sync_data else "")
                    )
                continue
            if mine.get("exists") and mine.get("fingerprint") == ref_copy.get("fingerprint"):
                continue
            if sync_data:
                to.append(host)
            elif not mine.get("exists"):
                errors.append(
                    f"{host}: {what} {path} does not exist: every node reads the same path (shared storage, "
                    f"or the same copy on each node; -e sync_data=true copies it from {ref})"
                )
            else:
                errors.append(
                    f"{host}: {what} {path} differs from {ref}'s ({mine.get('files')} files, "
                    f"{mine.get('bytes')} bytes): give every node the same copy "
                    f"(-e sync_data=true copies {ref}'s)"
                )
        if to:
            sync.append(
                {"what": what, "path": path, "from": ref, "to": to, "bytes": ref_copy.get("bytes", 0)}
            )
            notes.append(
                f"sync_data: {what} {path} ({ref_copy.get('files')} files, {ref_copy.get('bytes')} bytes) "
                f"is copied from {ref} to {', '.join(to)}"
            )
    return sync


def _check_interfaces(facts: Mapping[str, Any], hosts: Sequence[str], errors: list[str]) -> None:
    for host in hosts:
        for name, st in facts[host].get("interfaces", {}).items():
            if not st.get("exists"):
                errors.append(
                    f"{host}: interface {name}, named in {facts[host].get('env_file')}, does not exist: run "
                    "site.yml "
                    "(mesh_network, nccl_env) or fix the NCCL/gloo socket interface"
                )
            elif not st.get("up"):
                errors.append(f"{host}: interface {name} is down: `ip link set {name} up` or re-run site.yml")
        if facts[host].get("interfaces") and not facts[host].get("address"):
            errors.append(
                f"{host}: no IPv4 address on {', '.join(facts[host]['interfaces'])} (the NCCL/gloo socket "
                "interface): the ranks could not reach each other on it; re-run site.yml (mesh_network)"
            )


def _check_output(
    facts: Mapping[str, Any],
    hosts: Sequence[str],
    master: str,
    launch: Mapping[str, Any],
    resume: str,
    overwrite: bool,
    errors: list[str],
    notes: list[str],
) -> None:
    out = launch.get("output_dir_resolved")
    shared = [h for h in hosts if facts[h].get("shared_marker")]
    if len(hosts) > 1 and master in hosts:
        others = [h for h in hosts if h != master]
        if all(h in shared for h in others):
            notes.append(f"output {out} is shared by all nodes: checkpoints can be resumed on any nodes")
        else:
            notes.append(
                f"output {out} is not shared between nodes "
                f"({', '.join(h for h in others if h not in shared)} do "
                "not see the master's files): checkpoints stay node-local, and resume needs the same nodes "
                "in the "
                "same order"
            )
    ck = facts.get(master, {}).get("checkpoints") or {}
    complete, partial = ck.get("complete", []), ck.get("partial", [])
    newest = max(complete) if complete else None
    for step in partial:
        if newest is None or step > newest:
            notes.append(
                f"checkpoint step_{step:08d} in {out} is incomplete (no COMPLETE marker): it will be skipped"
            )
    if resume == "latest":
        if newest is None:
            notes.append(f"resume=latest: no complete checkpoint in {out}: the run starts at step 0")
        else:
            notes.append(
                f"resume=latest: continuing from step {newest} ({out}/checkpoints/step_{newest:08d})"
            )
            if ck.get("finished_step") is not None and ck["finished_step"] >= int(launch.get("steps") or 0):
                errors.append(
                    f"{master}: the run in {out} is already complete at step {ck['finished_step']} of "
                    f"{launch.get('steps')}: raise -e steps=N to train further, or start a new run with "
                    "-e job=NEW (a new output directory)"
                )
    elif overwrite:
        if newest is not None or ck.get("finished_step") is not None or partial:
            notes.append(f"overwrite: the previous run in {out} is removed before the launch")
    elif newest is not None or ck.get("finished_step") is not None:
        at = newest if newest is not None else ck.get("finished_step")
        errors.append(
            f"{master}: {out} already holds a run (checkpoint at step {at}): -e resume=latest continues it; "
            "-e job=NEW starts a new one in its own directory; -e overwrite=true replaces it"
        )
