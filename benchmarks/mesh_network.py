"""Time site.yml on a fresh lab: the cold run and the idempotent re-run, for several node counts.

For each node count: build a lab instance from scratch (playbooks/lab.yml), run site.yml
(cold), run it again (must report changed=0), tear the instance down. Prints one row per
node count with the whole site.yml and its mesh_network play separately (per-play times
from the json callback). Needs root and the lab's host packages, like `make lab-up`.

    .venv/bin/python benchmarks/mesh_network.py --nodes 3 8
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MESH_PLAY = "Address the data ports"


def tool(name: str) -> str:
    local = Path(sys.executable).with_name(name)
    return str(local) if local.exists() else name


def env(json_output: bool = False) -> dict[str, str]:
    out = dict(os.environ)
    out.update(
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1", ANSIBLE_DEPRECATION_WARNINGS="False"
    )
    if json_output:
        out.update(ANSIBLE_STDOUT_CALLBACK="ansible.posix.json")
    return out


def lab(state: str, name: str, nodes: int, cidr: str, topology: str, inventory: Path) -> float:
    extra = {
        "lab_state": state,
        "lab_name": name,
        "lab_nodes": nodes,
        "lab_mgmt_cidr": cidr,
        "lab_topology": topology,
        "lab_inventory_dir": str(inventory),
    }
    start = time.monotonic()
    proc = subprocess.run(
        [tool("ansible-playbook"), str(ROOT / "playbooks" / "lab.yml"), "-e", json.dumps(extra)],
        cwd=ROOT,
        env=env(),
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-1000:], file=sys.stderr)
        raise SystemExit(f"lab {state} with {nodes} nodes failed")
    return time.monotonic() - start


def _seconds(duration: dict[str, str]) -> float:
    fmt = "%Y-%m-%dT%H:%M:%S.%fZ"
    return (
        datetime.strptime(duration["end"], fmt) - datetime.strptime(duration["start"], fmt)
    ).total_seconds()


def site(inventory: Path, playbook: Path) -> dict[str, Any]:
    start = time.monotonic()
    proc = subprocess.run(
        [tool("ansible-playbook"), "-i", str(inventory), str(playbook)],
        cwd=ROOT,
        env=env(json_output=True),
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - start
    data = json.loads(proc.stdout)
    plays = {p["play"]["name"]: _seconds(p["play"]["duration"]) for p in data["plays"]}
    stats = data["stats"]
    return {
        "rc": proc.returncode,
        "wall": wall,
        "mesh": plays.get(MESH_PLAY, float("nan")),
        "changed": sum(s["changed"] for s in stats.values()),
        "failed": sum(s["failures"] + s["unreachable"] for s in stats.values()),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, nargs="+", default=[3, 8])
    parser.add_argument(
        "--name", default="mesh", help="lab instance name (its netns/links are prefixed with it)"
    )
    parser.add_argument("--cidr", default="10.97.0.0/24", help="management network of the instance")
    parser.add_argument("--topology", default="mesh", choices=["mesh", "switched"])
    parser.add_argument(
        "--playbook",
        type=Path,
        default=ROOT / "site.yml",
        help="playbooks/mesh_network.yml: the data network alone",
    )
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="rdmaops-bench-") as tmp:
        # Outside the repo, so no committed inventory (inventories/mesh) is ever overwritten.
        inventory = Path(tmp) / "inventory"
        lab("absent", args.name, 1, args.cidr, args.topology, inventory)
        for nodes in args.nodes:
            up = lab("present", args.name, nodes, args.cidr, args.topology, inventory)
            try:
                cold = site(inventory, args.playbook.resolve())
                warm = site(inventory, args.playbook.resolve())
            finally:
                down = lab("absent", args.name, nodes, args.cidr, args.topology, inventory)
            rows.append((nodes, up, cold, warm, down))
            print(
                f"{nodes} nodes: lab up {up:.1f} s; {args.playbook.name} cold {cold['wall']:.1f} s "
                f"(mesh_network play {cold['mesh']:.1f} s, changed={cold['changed']}, rc={cold['rc']}); "
                f"re-run {warm['wall']:.1f} s (mesh_network play {warm['mesh']:.1f} s, "
                f"changed={warm['changed']}, rc={warm['rc']}); lab down {down:.1f} s",
                flush=True,
            )
    print()
    print(
        f"| nodes | topology | {args.playbook.name} cold (s) | of which mesh_network (s) | re-run (s) "
        "| of which mesh_network (s) | re-run changed |"
    )
    print("|---|---|---|---|---|---|---|")
    for nodes, _up, cold, warm, _down in rows:
        print(
            f"| {nodes} | {args.topology} | {cold['wall']:.1f} | {cold['mesh']:.1f} | {warm['wall']:.1f} "
            f"| {warm['mesh']:.1f} | {warm['changed']} |"
        )
    bad = [r for r in rows if r[2]["rc"] or r[3]["rc"] or r[3]["changed"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
