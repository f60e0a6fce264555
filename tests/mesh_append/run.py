"""Appending a node must not renumber the running ones.

Records the data-network addresses of every node of a converged lab instance, grows the
instance (playbooks/lab.yml with a larger lab_nodes), re-runs site.yml, records again and
requires every address the existing nodes had to be still there, on the same interface.

    .venv/bin/python tests/mesh_append/run.py --inventory inventories/mol --nodes 4
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import yaml
from netaddr import IPAddress, IPNetwork

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from labkit import ROOT, env, run_bounded, tool


def run(argv: list[str], what: str) -> float:
    start = time.monotonic()
    rc, out, err = run_bounded(argv, 900, cwd=ROOT, env=env())
    elapsed = time.monotonic() - start
    if rc != 0:
        print(out[-4000:] + err[-2000:])
        raise SystemExit(f"{what} failed (rc={rc})")
    return elapsed


def data_addresses(inventory: Path, mgmt: IPNetwork) -> dict[str, list[str]]:
    """{node: ['ifname a.b.c.d/len', ...]} for every IPv4 address outside management and loopback."""
    ansible_env = env()
    ansible_env.update(ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.posix.json")
    argv = [tool("ansible"), "all:!switches", "-i", str(inventory), "-m", "ansible.builtin.command"]
    _rc, out, _err = run_bounded([*argv, "-a", "ip -j addr show"], 300, cwd=ROOT, env=ansible_env)
    hosts = json.loads(out)["plays"][0]["tasks"][0]["hosts"]
    out: dict[str, list[str]] = {}
    for host, result in hosts.items():
        entries = []
        for link in json.loads(result.get("stdout") or "[]"):
            for info in link.get("addr_info", []):
                addr = IPAddress(info["local"]) if info.get("family") == "inet" else None
                if addr is not None and addr not in mgmt and not addr.is_loopback():
                    entries.append(f"{link['ifname']} {info['local']}/{info['prefixlen']}")
        out[host] = sorted(entries)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--inventory", type=Path, required=True, help="the lab instance's inventory directory"
    )
    parser.add_argument("--nodes", type=int, default=4, help="node count to grow to")
    parser.add_argument(
        "--playbook",
        default="site.yml",
        help="re-run after the growth: site.yml, or playbooks/mesh_network.yml (the addresses only)",
    )
    args = parser.parse_args()
    inventory = args.inventory.resolve()
    lab_vars = yaml.safe_load((inventory / "group_vars" / "all.yml").read_text())
    lab = lab_vars["rdmaops_lab"]["name"]
    mgmt = IPNetwork(lab_vars["mesh_network_mgmt_cidr"])
    # The lab's own topology (a ring lab is a mesh of cables to mesh_network); older inventories lack it.
    topology = lab_vars["rdmaops_lab"].get("topology") or lab_vars["mesh_network_topology"]

    before = data_addresses(inventory, mgmt)
    hosts_doc = yaml.safe_load((inventory / "hosts.yml").read_text())
    switches = list((hosts_doc["all"]["children"].get("switches") or {}).get("hosts") or {})
    if len(before) >= args.nodes:
        print(f"lab {lab} already has {len(before)} nodes; nothing to append", file=sys.stderr)
        return 2
    grow = run(
        [
            tool("ansible-playbook"),
            str(ROOT / "playbooks" / "lab.yml"),
            "-e",
            json.dumps(
                {
                    "lab_state": "present",
                    "lab_name": lab,
                    "lab_nodes": args.nodes,
                    "lab_topology": topology,
                    "lab_mgmt_cidr": str(mgmt.cidr),
                    "lab_inventory_dir": str(inventory),
                    # the lab's switches stay (a lab run without them would remove them)
                    "lab_switches": switches,
                }
            ),
        ],
        f"growing lab {lab} to {args.nodes} nodes",
    )
    # The lab may restart nodes while it rewires them: wait for every node's sshd first.
    run(
        [
            tool("ansible"),
            "all:!switches",
            "-i",
            str(inventory),
            "-m",
            "ansible.builtin.wait_for_connection",
            "-a",
            "timeout=180",
        ],
        "waiting for the nodes",
    )
    site = run([tool("ansible-playbook"), "-i", str(inventory), str(ROOT / args.playbook)], args.playbook)
    after = data_addresses(inventory, mgmt)

    print(
        f"lab {lab}: grew {len(before)} -> {len(after)} nodes in {grow:.1f} s, "
        f"{args.playbook} re-run {site:.1f} s"
    )
    lost: list[str] = []
    for host in sorted(before):
        kept = [entry for entry in before[host] if entry in after.get(host, [])]
        added = [entry for entry in after.get(host, []) if entry not in before[host]]
        lost += [f"{host} {entry}" for entry in before[host] if entry not in kept]
        print(f"{host}: kept {', '.join(kept) or '-'}" + (f"; added {', '.join(added)}" if added else ""))
    for host in sorted(set(after) - set(before)):
        print(f"{host} (new): {', '.join(after[host]) or '-'}")
    if lost or not any(before.values()):
        print(f"FAIL: addresses lost or moved: {lost or 'no addresses before'}")
        return 1
    count = sum(len(v) for v in before.values())
    print(f"PASS: all {count} data addresses of the first {len(before)} nodes unchanged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
