"""Prove that bad inventories fail before anything on a node changes.

For each case in cases.yml: copy a working (lab) inventory, apply the case's edits, run
site.yml, and require a failure whose output names the bad value, raised before any task
that changes a node. A snapshot of every node's netplan and networkd files (checksums and
mtimes), addresses and routes is taken before and after all cases and must be identical.

    .venv/bin/python tests/bad_inventories/run.py --inventory inventories/mol
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from labkit import add_tier, run_bounded

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT_CMD = (
    'for f in /etc/netplan/* /run/systemd/network/*; do [ -f "$f" ] && '
    'echo "$(sha256sum < "$f" | cut -c1-16) $(stat -c %Y "$f") $f"; done; ip -br addr; ip route'
)
# Tasks of mesh_network that change a node; none may start for a bad inventory.
CHANGING_TASKS = ("Install netplan", "Enable and start systemd-networkd", "Apply the data-port netplan")


def ansible_env() -> dict[str, str]:
    env = dict(os.environ)
    env["ANSIBLE_CONFIG"] = str(ROOT / "ansible.cfg")
    env["ANSIBLE_NOCOLOR"] = "1"
    env["ANSIBLE_DEPRECATION_WARNINGS"] = "False"
    return env


def bin_path(name: str) -> str:
    local = Path(sys.executable).with_name(name)
    return str(local) if local.exists() else name


def ansible_output(tool: str, *argv: str) -> str:
    """The standard output of an Ansible command that must succeed, run from the repo as the tests run it."""
    rc, out, err = run_bounded([bin_path(tool), *argv], 300, cwd=ROOT, env=ansible_env())
    if rc != 0:
        raise RuntimeError(f"{tool} {' '.join(argv)}: rc={rc}\n{err[-2000:]}")
    return out


def list_hosts(inventory: Path) -> list[str]:
    out = ansible_output("ansible", "all:!switches", "-i", str(inventory), "--list-hosts")
    return [line.strip() for line in out.splitlines()[1:] if line.strip()]


def snapshot(inventory: Path) -> dict[str, str]:
    env = ansible_env()
    env.update(ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.posix.json")
    argv = [bin_path("ansible"), "all:!switches", "-i", str(inventory), "-m", "ansible.builtin.shell"]
    _rc, out, _err = run_bounded([*argv, "-a", SNAPSHOT_CMD], 300, cwd=ROOT, env=env)
    data = json.loads(out)
    hosts = data["plays"][0]["tasks"][0]["hosts"]
    return {host: str(result.get("stdout", result.get("msg", ""))) for host, result in hosts.items()}


def get_path(doc: dict[str, Any], dotted: str) -> Any:
    node: Any = doc
    for key in dotted.split("."):
        node = node[key]
    return node


def set_path(doc: dict[str, Any], dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    node = doc
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    node[keys[-1]] = value


def fill(value: Any, names: dict[str, str]) -> Any:
    if isinstance(value, str):
        return value.format(**names)
    if isinstance(value, list):
        return [fill(v, names) for v in value]
    if isinstance(value, dict):
        return {fill(k, names): fill(v, names) for k, v in value.items()}
    return value


def effective_vars(inventory: Path, host: str) -> dict[str, Any]:
    """The host's variables as the inventory defines them (inline, host_vars and group_vars)."""
    return dict(json.loads(ansible_output("ansible-inventory", "-i", str(inventory), "--host", host)))


def make_inventory(source: Path, case: dict[str, Any], names: dict[str, str], workdir: Path) -> Path:
    """Copy the inventory and write the case's edits into the named host_vars / group_vars file.

    Edited top-level variables start from their effective value (wherever the inventory
    defines them), so an edit changes only the named key and a vars file overrides the rest.
    """
    inv = workdir / "inventory"
    shutil.copytree(source, inv)
    # The cases are about the nodes: the lab's switch (its own play, over NETCONF) stays out of them.
    hosts = yaml.safe_load((inv / "hosts.yml").read_text())
    if hosts["all"]["children"].pop("switches", None) is not None:
        (inv / "hosts.yml").write_text(yaml.safe_dump(hosts, sort_keys=False))
    rel = Path(fill(case["file"], names))
    host = rel.stem if rel.parts[0] == "host_vars" else names["host0"]
    effective = effective_vars(source, host)
    path = inv / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = (yaml.safe_load(path.read_text()) if path.exists() else None) or {}
    edits = fill(case.get("set", {}), names)
    deletes = fill(case.get("delete", []), names)
    for dotted in [*edits, *deletes]:
        top = dotted.split(".")[0]
        if top not in doc and top in effective:
            doc[top] = json.loads(json.dumps(effective[top]))
    for dotted, value in edits.items():
        if isinstance(value, str) and value.startswith("="):
            value = get_path(effective, value[1:])
        set_path(doc, dotted, value)
    for dotted in deletes:
        keys = dotted.split(".")
        parent = get_path(doc, ".".join(keys[:-1])) if len(keys) > 1 else doc
        del parent[keys[-1]]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return inv


def run_case(
    source: Path, site: Path, case: dict[str, Any], names: dict[str, str]
) -> tuple[bool, str, float]:
    with tempfile.TemporaryDirectory(prefix="rdmaops-badinv-") as tmp:
        inv = make_inventory(source, case, names, Path(tmp))
        start = time.monotonic()
        # a refusal comes before any change; 600 s bounds a run that wrongly goes on
        rc, out, err = run_bounded(
            [bin_path("ansible-playbook"), "-i", str(inv), str(site)], 600, cwd=ROOT, env=ansible_env()
        )
        elapsed = time.monotonic() - start
    output = out + err
    expect = fill(case["expect"], names)
    started = [task for task in CHANGING_TASKS if f"TASK [rdmaops.cluster.mesh_network : {task}" in output]
    message = next((line.strip() for line in output.splitlines() if expect in line), "")
    problems = []
    if rc == 0:
        problems.append("site.yml succeeded")
    if not message:
        problems.append(f"no output line contains {expect!r}")
    once = fill(case.get("expect_once", ""), names)
    if message and once and message.count(once) != 1:
        problems.append(f"{once!r} is named {message.count(once)} times in: {message}")
    if started:
        problems.append(f"changing tasks started: {started}")
    return not problems, message if not problems else "; ".join(problems) + "\n" + output[-3000:], elapsed


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--inventory", type=Path, required=True, help="a working inventory (e.g. inventories/mol)"
    )
    parser.add_argument("--site", type=Path, default=ROOT / "site.yml")
    parser.add_argument("--jobs", type=int, default=3, help="cases run at once")
    parser.add_argument("--cases", type=Path, default=Path(__file__).with_name("cases.yml"))
    add_tier(parser)  # ci: the cases not marked `tier: full` in cases.yml
    args = parser.parse_args()
    inventory = args.inventory.resolve()
    hosts = list_hosts(inventory)
    if len(hosts) < 3:
        print(f"need an inventory with at least 3 hosts, {inventory} has {hosts}", file=sys.stderr)
        return 2
    names = {f"host{i}": host for i, host in enumerate(hosts)}
    # {addr0}: the management address of the first node (for "one node under two names").
    names["addr0"] = str(effective_vars(inventory, hosts[0]).get("ansible_host", hosts[0]))
    cases = [
        case
        for case in yaml.safe_load(args.cases.read_text())
        if args.tier == "full" or case.get("tier", "ci") == "ci"
    ]
    before = snapshot(inventory)
    rejected = 0
    # Cases are independent (each has its own copy of the inventory): run a few at once.
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda case: run_case(inventory, args.site.resolve(), case, names), cases))
    for case, (ok, detail, elapsed) in zip(cases, results, strict=True):
        rejected += ok
        print(f"{'PASS' if ok else 'FAIL'} {case['name']} ({elapsed:.1f} s): {detail}", flush=True)
    after = snapshot(inventory)
    changed = sorted(host for host in before if before[host] != after.get(host))
    unchanged = bool(before) and not changed
    if not unchanged:
        print(f"FAIL node state changed on {changed or 'no snapshot'}")
        for host in changed:
            print(f"--- {host} before\n{before[host]}\n--- {host} after\n{after.get(host)}")
    else:
        print(f"PASS node files, addresses and routes unchanged on {', '.join(sorted(before))}")
    print(f"{rejected}/{len(cases)} bad inventories rejected before any change")
    return 0 if rejected == len(cases) and unchanged else 1


if __name__ == "__main__":
    sys.exit(main())
