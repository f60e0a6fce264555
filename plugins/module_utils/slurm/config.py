# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm facts and configuration logic, plain Python: what `slurmd -C`, `slurmd -V`, `nvidia-smi -L`,
`sinfo` and slurm.conf say, the node definitions they give, the checks of the inventory against them, and
whether a change of slurm.conf needs the daemons restarted or only `scontrol reconfigure`."""

from __future__ import annotations

import re
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.values import whole

# slurmd -C prints the node as slurmd detects it, in slurm.conf's own syntax.
_HARDWARE_KEYS = ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore", "RealMemory")

# slurm.conf keys a running daemon does not re-read on `scontrol reconfigure` (slurm.conf(5), "the
# following parameters require a restart"): the daemons' addresses, ports, auth, plugins and state paths.
RESTART_KEYS = frozenset(
    k.lower()
    for k in (
        "AuthType",
        "AuthAltTypes",
        "ClusterName",
        "CredType",
        "GresTypes",
        "JobAcctGatherType",
        "MpiDefault",
        "PluginDir",
        "ProctrackType",
        "SelectType",
        "SelectTypeParameters",
        "SlurmctldHost",
        "SlurmctldPort",
        "SlurmctldPidFile",
        "SlurmdPort",
        "SlurmdPidFile",
        "SlurmdSpoolDir",
        "SlurmUser",
        "StateSaveLocation",
        "SwitchType",
        "TaskPlugin",
    )
)


class SlurmError(ValueError):
    """An input that Slurm would reject, or that disagrees with the node; the message names it."""


def parse_slurmd_c(text: str) -> dict[str, Any]:
    """`slurmd -C` -> {'NodeName': str, 'CPUs': int, ..., 'RealMemory': int} (MiB)."""
    for line in text.splitlines():
        if not line.startswith("NodeName="):
            continue
        fields = dict(tok.split("=", 1) for tok in line.split() if "=" in tok)
        out: dict[str, Any] = {"NodeName": fields["NodeName"]}
        for key in _HARDWARE_KEYS:
            if key not in fields:
                raise SlurmError(f"slurmd -C gave no {key}: {line!r}")
            out[key] = int(fields[key])
        return out
    raise SlurmError(f"slurmd -C printed no NodeName line: {text.strip()[:200]!r}")


def parse_version(text: str) -> list[int]:
    """`slurmd -V` ('slurm 22.05.8', 'slurm-wlm 23.11.4') -> [22, 5, 8]."""
    m = re.search(r"\b(\d+)\.(\d+)\.(\d+)", text)
    if not m:
        raise SlurmError(f"no Slurm version in {text.strip()[:100]!r}")
    return [int(g) for g in m.groups()]


def count_gpus(nvidia_smi_l: str) -> int:
    """GPUs listed by `nvidia-smi -L` ('GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)'); MIG lines are not."""
    return sum(1 for line in nvidia_smi_l.splitlines() if re.match(r"GPU \d+: ", line))


def gpu_files(dev_names: list[str]) -> list[str]:
    """The GPU device files among /dev entries, in minor order (not nvidiactl, nvidia-uvm)."""
    minors = sorted(int(n[len("nvidia") :]) for n in dev_names if re.fullmatch(r"nvidia\d+", n))
    return [f"/dev/nvidia{m}" for m in minors]


def cgroup_usable(cgroup2_controllers: str | None, virtualization: str) -> tuple[bool, str]:
    """Whether slurmd's cgroup plugins can run, and why not.

    They need the unified hierarchy (cgroup v2) with the cpuset and memory controllers delegated to the
    host's root, and a host of its own: inside a container systemd owns only the container's subtree.
    """
    if virtualization in ("systemd-nspawn", "lxc", "docker", "podman", "container", "openvz"):
        return False, f"the node is a container ({virtualization}): its cgroups belong to the host"
    if cgroup2_controllers is None:
        return False, "/sys/fs/cgroup is not the unified (v2) hierarchy"
    have = set(cgroup2_controllers.split())
    missing = sorted({"cpuset", "memory"} - have)
    if missing:
        return False, f"cgroup v2 lacks the {', '.join(missing)} controller(s)"
    return True, "cgroup v2 with cpuset and memory"


def parse_meminfo(text: str) -> int:
    """/proc/meminfo -> MemTotal in MiB, as slurmd -C reports RealMemory (before slurmd is installed)."""
    m = re.search(r"^MemTotal:\s+(\d+) kB", text, re.M)
    if not m:
        raise SlurmError("no MemTotal in /proc/meminfo")
    return int(m.group(1)) // 1024


def _declared(host: str, name: str, value: Any) -> int | None:
    if value is None or value == "":
        return None
    number = whole(value)
    if number is None or number < 0:
        raise SlurmError(f"{host}: {name} must be a whole number, got {value!r}")
    return number


def hardware_errors(info: dict[str, dict[str, Any]]) -> list[str]:
    """Each node's declared memory and GPUs against what it has; one NodeName per node.

    info: {host: {'hardware': slurmd -C dict or None, 'memory_mib': int, 'gpus': int,
    'declared_memory': int|None, 'declared_gpus': int|None}}. A declared RealMemory may be lower than found
    (headroom for the OS), never higher: slurmctld would drain the node as 'Low RealMemory'.
    """
    errors = []
    names: dict[str, str] = {}
    for host, node in info.items():
        hardware = node.get("hardware")
        found = hardware["RealMemory"] if hardware else node["memory_mib"]
        try:
            memory = _declared(host, "slurm_real_memory", node.get("declared_memory"))
            gpus = _declared(host, "slurm_gpus", node.get("declared_gpus"))
        except SlurmError as exc:
            errors.append(str(exc))
            continue
        if memory is not None and memory > found:
            errors.append(
                f"{host}: slurm_real_memory {memory} MiB is above what the node has ({found} MiB); "
                "Slurm would drain it as 'Low RealMemory'"
            )
        if gpus is not None and gpus > node["gpus"]:
            errors.append(
                f"{host}: slurm_gpus {gpus} declared but nvidia-smi finds {node['gpus']} GPU(s) there"
            )
        if hardware:
            other = names.setdefault(hardware["NodeName"], host)
            if other != host:
                errors.append(
                    f"{other} and {host} are the same node (both say hostname {hardware['NodeName']}): "
                    "a host listed twice under two names?"
                )
    return errors


def node_definitions(info: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """NodeName entries in inventory order: slurmd's hardware, memory and GPUs as declared or found.

    info as for hardware_errors plus 'addr' (where slurmctld reaches the node); call after it found nothing.
    """
    nodes = []
    for host, node in info.items():
        hardware = node.get("hardware")
        if not hardware:
            raise SlurmError(f"{host}: no slurmd -C output (slurmd not installed yet?)")
        memory = _declared(host, "slurm_real_memory", node.get("declared_memory"))
        gpus = _declared(host, "slurm_gpus", node.get("declared_gpus"))
        entry: dict[str, Any] = {"host": host, "name": hardware["NodeName"], "addr": node["addr"]}
        entry.update({k: hardware[k] for k in _HARDWARE_KEYS})
        if memory is not None:
            entry["RealMemory"] = memory
        entry["gpus"] = node["gpus"] if gpus is None else gpus
        nodes.append(entry)
    return nodes


def node_line(node: dict[str, Any]) -> str:
    """The slurm.conf line of one node definition."""
    parts = [f"NodeName={node['name']}", f"NodeAddr={node['addr']}"]
    parts += [f"{k}={node[k]}" for k in _HARDWARE_KEYS]
    if node["gpus"]:
        parts.append(f"Gres=gpu:{node['gpus']}")
    parts.append("State=UNKNOWN")
    return " ".join(parts)


def controller_errors(controllers: list[str], play_hosts: list[str], group: str) -> list[str]:
    """The one controller must exist, be alone, and be in this run."""
    if not controllers:
        return [f"no Slurm controller: inventory group '{group}' is empty or missing; put one host in it"]
    if len(controllers) > 1:
        return [
            f"two or more Slurm controllers in group '{group}': {', '.join(controllers)}; Slurm here has one"
        ]
    if controllers[0] not in play_hosts:
        return [
            f"the Slurm controller {controllers[0]} is not in this run (--limit?): slurm.conf and the munge "
            "key come from it; include it"
        ]
    return []


def node_errors(nodes: list[str], inventory_hosts: list[str], play_hosts: list[str]) -> list[str]:
    """Every node slurm.conf will list must be an inventory host in this run (its hardware is read there)."""
    errors = []
    missing = [n for n in nodes if n not in inventory_hosts]
    if missing:
        errors.append(f"Slurm nodes not in the inventory: {', '.join(missing)}")
    left_out = [n for n in nodes if n in inventory_hosts and n not in play_hosts]
    if left_out:
        errors.append(
            f"Slurm nodes left out of this run (--limit?): {', '.join(left_out)}; slurm.conf lists every "
            "node and must be the same on all, so run on all of them"
        )
    return errors


def failed_earlier_errors(hosts: list[str], play_hosts: list[str], running: list[str]) -> list[str]:
    """Slurm hosts of this run that failed or were unreachable in an earlier task (in ``play_hosts``, no
    longer in ``running``): slurm.conf is planned from every node's hardware, so Slurm cannot be configured
    without them."""
    gone = [h for h in dict.fromkeys(hosts) if h in play_hosts and h not in running]
    if not gone:
        return []
    return [
        f"Slurm hosts that failed or were unreachable earlier in this run: {', '.join(gone)} "
        "(their errors are above); slurm.conf is planned from every node's hardware and is the same on all, "
        "so Slurm is not configured in this run: fix them and run again"
    ]


def partition_errors(partitions: Any, groups: dict[str, list[str]], nodes: list[str]) -> list[str]:
    """slurm_partitions: [{name, group, default}] on existing groups of Slurm nodes, one default."""
    if not isinstance(partitions, list) or not partitions:
        return [f"slurm_partitions must be a non-empty list of {{name, group}}, got {partitions!r}"]
    errors = []
    seen: set[str] = set()
    for part in partitions:
        if not isinstance(part, dict) or not part.get("name") or not part.get("group"):
            errors.append(f"a partition needs a name and an inventory group: {part!r}")
            continue
        name, group = str(part["name"]), str(part["group"])
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
            errors.append(f"partition name {name!r} has characters slurm.conf does not allow")
        if name in seen:
            errors.append(f"partition {name!r} is listed twice")
        seen.add(name)
        if group not in groups or not groups[group]:
            errors.append(f"partition {name!r}: inventory group {group!r} is missing or empty")
            continue
        outside = [h for h in groups[group] if h not in nodes]
        if outside:
            errors.append(f"partition {name!r}: {', '.join(outside)} of group {group!r} are not Slurm nodes")
    defaults = [str(p.get("name")) for p in partitions if isinstance(p, dict) and p.get("default")]
    if len(defaults) > 1:
        errors.append(f"more than one default partition: {', '.join(defaults)}")
    return errors


def partition_lines(
    partitions: list[dict[str, Any]], groups: dict[str, list[str]], nodes: list[dict[str, Any]]
) -> list[str]:
    """PartitionName lines: each group's hosts by their NodeName, in inventory order."""
    name_of = {n["host"]: n["name"] for n in nodes}
    lines = []
    for i, part in enumerate(partitions):
        members = [name_of[h] for h in groups[part["group"]] if h in name_of]
        default = part.get("default", i == 0 and not any(p.get("default") for p in partitions))
        lines.append(
            f"PartitionName={part['name']} Nodes={','.join(members)} Default={'YES' if default else 'NO'} "
            f"MaxTime={part.get('max_time', 'INFINITE')} State=UP"
        )
    return lines


def parse_conf(text: str) -> dict[str, Any]:
    """slurm.conf -> {'keys': {lower key: value}, 'nodes': {name: line}, 'partitions': {name: line}}."""
    keys: dict[str, str] = {}
    nodes: dict[str, str] = {}
    partitions: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if "=" not in line:
            continue
        key, value = line.split("=", 1)
        first = value.split()[0] if value.split() else ""
        if key.lower() == "nodename":
            nodes[first] = line
        elif key.lower() == "partitionname":
            partitions[first] = line
        else:
            keys[key.strip().lower()] = value.strip()
    return {"keys": keys, "nodes": nodes, "partitions": partitions}


def conf_change(old: str | None, new: str) -> dict[str, Any]:
    """What a slurm.conf change asks of the running daemons.

    'restart' when a key of RESTART_KEYS changed or nodes were added or removed (22.05 and 23.11 need the
    daemons restarted for that); 'reconfigure' when only node attributes, partitions or other keys changed
    (`scontrol reconfigure` makes slurmctld and every slurmd re-read the file); 'none' when equal.
    """
    if old is None:
        return {"action": "restart", "why": ["no slurm.conf yet"]}
    a, b = parse_conf(old), parse_conf(new)
    if a == b:
        return {"action": "none", "why": []}
    why = []
    for key in sorted(set(a["keys"]) | set(b["keys"])):
        if key in RESTART_KEYS and a["keys"].get(key) != b["keys"].get(key):
            why.append(f"{key} changed")
    if set(a["nodes"]) != set(b["nodes"]):
        added = sorted(set(b["nodes"]) - set(a["nodes"]))
        removed = sorted(set(a["nodes"]) - set(b["nodes"]))
        parts = [f"added {added}"] if added else []
        parts += [f"removed {removed}"] if removed else []
        why.append("nodes " + ", ".join(parts))
    if why:
        return {"action": "restart", "why": why}
    changed = sorted(n for n in b["nodes"] if a["nodes"][n] != b["nodes"][n])
    why = [f"node {n} changed" for n in changed]
    if a["partitions"] != b["partitions"]:
        why.append("partitions changed")
    other = sorted(k for k in set(a["keys"]) | set(b["keys"]) if a["keys"].get(k) != b["keys"].get(k))
    why += [f"{k} changed" for k in other]
    return {"action": "reconfigure", "why": why}


def parse_sinfo_nodes(text: str) -> dict[str, str]:
    """`sinfo -h -N -o '%N %t'` -> {node: state} (a node in two partitions is listed twice, same state)."""
    states: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            states[parts[0]] = parts[1]
    return states
