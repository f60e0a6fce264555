"""The data network is safe by construction: lab cases of mesh_network on a converged lab instance.

Each case runs ansible-playbook as a user would, on a copy of the instance's inventory edited the way
people edit inventories, and checks what it printed, what it left on the nodes (netplan files,
addresses, routes) and that the management network still answers. Every case leaves the instance as
it found it (the mesh as the lab built it).

    .venv/bin/python tests/mesh/run.py --inventory inventories/mol [--only NAME ...]

Cases: the LLDP map that discover.yml writes; a swapped pair of ports named before the apply; a
rollback that gives the management port back; reorder, removal of a middle node, append (two nodes
with --nodes 5 on a 5-node instance); renumbering only with mesh_network_renumber=true; a cable taken
down: exactly the node pairs routed over it fail, verify.yml's report names the cable, and every path
returns once it is up (any cabling: ring, chain, rails); site.yml with a node unreachable refused before any
node changes, naming it; a management CIDR without the nodes' addresses refused, naming them.
Prints one line per check, the time of each case, and "N passed, M failed"; exit status 1 if any failed.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / ".collections"))
from labkit import ROOT, check, env, finish, lab_report, run_bounded, run_cases, spawn, tool

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import cabling

NETPLAN = "/etc/netplan/60-rdmaops-mesh.yaml"
# What must not change when a run is refused: files (checksum), addresses, routes.
SNAPSHOT = (
    f'for f in {NETPLAN} /run/systemd/network/*; do [ -f "$f" ] && '
    'echo "$(sha256sum < "$f" | cut -c1-16) $f"; done; ip -br -4 addr; ip -4 route'
)
APPLY_TASK = "TASK [rdmaops.cluster.mesh_network : Apply the data-port netplan"


class Lab:
    def __init__(self, inventory: Path) -> None:
        self.inventory = inventory
        self.doc = yaml.safe_load((inventory / "hosts.yml").read_text())
        self.group = next(iter(self.doc["all"]["children"]))
        hosts = self.doc["all"]["children"][self.group]["hosts"]
        self.hosts = list(hosts)
        self.addr = {h: v["ansible_host"] for h, v in hosts.items()}
        self.ports = {h: dict(v.get("mesh_network_ports") or {}) for h, v in hosts.items()}
        self.key = self.doc["all"]["children"][self.group]["vars"]["ansible_ssh_private_key_file"]
        self.tmp = Path(tempfile.mkdtemp(prefix="rdmaops-mesh-"))

    def ssh(self, host: str, command: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        argv = ["ssh", "-i", self.key, "-o", "UserKnownHostsFile=/dev/null", "-o", "StrictHostKeyChecking=no"]
        argv += ["-o", "LogLevel=ERROR", "-o", "ConnectTimeout=5", f"root@{self.addr[host]}", command]
        return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=timeout)

    def inventory_copy(self, name: str, hosts: list[str] | None = None, **host_edits: Any) -> Path:
        """A copy of the inventory with only ``hosts`` (in that order) and per-host variable edits."""
        dest = self.tmp / name
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(self.inventory, dest)
        doc = json.loads(json.dumps(self.doc))
        group = doc["all"]["children"][self.group]
        order = hosts or self.hosts
        group["hosts"] = {h: group["hosts"][h] for h in order}
        for values in group["hosts"].values():
            ports = values.get("mesh_network_ports") or {}
            values["mesh_network_ports"] = {p: port for p, port in ports.items() if p in order}
        for host, edits in host_edits.items():
            group["hosts"][host].update(edits)
        (dest / "hosts.yml").write_text(yaml.safe_dump(doc, sort_keys=False))
        return dest

    def play(
        self, playbook: str, inventory: Path | None = None, *extra: str, timeout: float = 300
    ) -> tuple[int, str, float]:
        argv = [
            tool("ansible-playbook"),
            "-i",
            str(inventory or self.inventory),
            str(ROOT / playbook),
            *extra,
        ]
        start = time.monotonic()
        rc, out, err = run_bounded(argv, timeout, cwd=ROOT, env=env())
        return rc, out + err, time.monotonic() - start

    def mesh(self, inventory: Path | None = None, *extra: str, lldp: bool = False) -> tuple[int, str, float]:
        """playbooks/mesh_network.yml; the addressing cases skip the LLDP check and the package tasks
        (lldpd and netplan are installed by then), about half the tasks of a run."""
        fast = [] if lldp else ["-e", "mesh_network_lldp=false", "-e", "mesh_network_install_packages=false"]
        return self.play("playbooks/mesh_network.yml", inventory, *fast, *extra)

    def snapshot(self, hosts: list[str] | None = None) -> dict[str, str]:
        return {h: self.ssh(h, SNAPSHOT).stdout for h in hosts or self.hosts}

    def data_addresses(self, hosts: list[str] | None = None) -> dict[str, list[str]]:
        """{host: ['ifname a.b.c.d/len']} of the data ports and the node-address bridge."""
        out: dict[str, list[str]] = {}
        for host in hosts or self.hosts:
            links = json.loads(self.ssh(host, "ip -j -4 addr show").stdout or "[]")
            out[host] = sorted(
                f"{link['ifname']} {info['local']}/{info['prefixlen']}"
                for link in links
                if link["ifname"] not in ("lo", "mgmt0")
                for info in link.get("addr_info", [])
            )
        return out

    def mgmt_ok(self) -> bool:
        try:
            return all(self.ssh(h, "true", timeout=20).returncode == 0 for h in self.hosts)
        except subprocess.TimeoutExpired:
            return False

    def restore(self) -> bool:
        """Back to the mesh as the lab built it: the lab's inventory, renumbered to list positions."""
        rc, out, _took = self.mesh(None, "-e", "mesh_network_renumber=true")
        if rc != 0:
            print(out[-3000:])
        return rc == 0


def tail(out: str) -> str:
    """The last failure in a play's output, whole enough to say why (the YAML callback folds msg)."""
    lines = out.splitlines()
    starts = [i for i, line in enumerate(lines) if "fatal" in line or "FAILED" in line]
    if not starts:
        return " | ".join(line for line in lines if "msg" in line)[-600:]
    return " | ".join(line.strip() for line in lines[starts[-1] : starts[-1] + 40])[:3000]


def case_discover(lab: Lab) -> None:
    dest = lab.tmp / "discovered"
    rc, out, took = lab.play("playbooks/discover.yml", None, "-e", f"mesh_network_discover_dir={dest}")
    found = {}
    for host in lab.hosts:
        path = dest / host / "mesh_network_ports.yml"
        found[host] = (
            (yaml.safe_load(path.read_text()) or {}).get("mesh_network_ports") if path.exists() else None
        )
    wrong = {h: found[h] for h in lab.hosts if found[h] != lab.ports[h]}
    check(
        f"discover.yml writes the port map the lab was built with ({len(lab.hosts)} nodes, {took:.1f} s)",
        rc == 0 and not wrong,
        f"rc={rc} differs: {wrong} {tail(out)}" if rc or wrong else "",
    )


def case_swapped(lab: Lab) -> None:
    first, second, third = lab.hosts[:3]
    ports = lab.ports[first]
    swapped = {second: ports[third], third: ports[second]}
    inv = lab.inventory_copy("swapped", **{first: {"mesh_network_ports": swapped}})
    before = lab.snapshot()
    rc, out, took = lab.mesh(inv, lldp=True)
    # Which port of `third` faces `first`: the one the lab declared on `third` for `first`.
    want = f"{first} {ports[third]} faces {third} {lab.ports[third][first]}, the inventory says {second}"
    check(
        f"a swapped pair is named before the apply ({took:.1f} s)",
        rc != 0 and want in out and APPLY_TASK not in out,
        "" if want in out else f"rc={rc}, no {want!r}: {tail(out)}",
    )
    check("nothing changed on the nodes after the refused swap", lab.snapshot() == before and lab.mgmt_ok())


def case_rollback_management(lab: Lab) -> None:
    """A netplan file that takes over the management port is rolled back and the port comes back."""
    host = lab.hosts[0]
    before = lab.snapshot([host])
    content = (
        "network:\n  version: 2\n  ethernets:\n    mgmt0:\n      renderer: networkd\n"
        "      addresses: [172.31.254.1/24]\n"
    )
    args = json.dumps(
        {
            "dest": "/etc/netplan/70-rdmaops-test-takeover.yaml",
            "content": content,
            "check_targets": [lab.addr[host].rsplit(".", 1)[0] + ".1"],
            "expect_addresses": [{"ifname": "mgmt0", "address": "172.31.254.1/24"}],
            "timeout": 8,
        }
    )
    start = time.monotonic()
    proc = subprocess.run(
        [tool("ansible"), host, "-i", str(lab.inventory), "-m", "rdmaops.cluster.netplan_apply", "-a", args],
        cwd=ROOT,
        env=env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=180,
    )
    took = time.monotonic() - start
    out = proc.stdout + proc.stderr
    # the module's own figure: from the reload until the restored file answered (its bound: three timeouts)
    waited = re.search(r'^\s*"?waited"?: ([0-9.]+)', out, re.MULTILINE)  # the YAML or the JSON callback
    check(
        f"a file taking over the management port is rolled back within the bound (the module: "
        f"{waited and waited[1]} s; the ad-hoc run {took:.1f} s)",
        proc.returncode != 0
        and "restored and answers again" in out
        and waited is not None
        and float(waited[1]) <= 8 * 3,
        tail(out) if "restored and answers again" not in out else "",
    )
    after = lab.snapshot([host])
    check(
        "the management port has its address again and the node's files, addresses and routes are as before",
        lab.mgmt_ok() and after == before,
        "" if after == before else f"before {before[host]!r} after {after[host]!r}",
    )


def case_reorder(lab: Lab) -> None:
    before = lab.data_addresses()
    inv = lab.inventory_copy("reordered", hosts=sorted(lab.hosts, reverse=True))
    rc, out, took = lab.mesh(inv)
    after = lab.data_addresses()
    check(
        f"a reordered inventory keeps every address ({took:.1f} s)",
        rc == 0 and after == before,
        tail(out) if rc else "",
    )


def case_renumber_flag(lab: Lab) -> None:
    """With mesh_network_renumber=true a reordered inventory is renumbered from the list positions."""
    before = lab.data_addresses()
    inv = lab.inventory_copy("reordered", hosts=sorted(lab.hosts, reverse=True))
    rc, out, took = lab.mesh(inv, "-e", "mesh_network_renumber=true")
    moved = lab.data_addresses()
    check(
        f"with mesh_network_renumber=true the reordered mesh is renumbered ({took:.1f} s)",
        rc == 0 and moved != before and "changed=" in out,
        tail(out) if rc else "",
    )
    check("restored to the lab's numbering", lab.restore() and lab.data_addresses() == before)


def case_renumber_refused(lab: Lab) -> None:
    before = lab.snapshot()
    rc, out, took = lab.mesh(None, "-e", "mesh_network_link_pool=192.168.104.0/22")
    first, second = lab.hosts[:2]
    check(
        f"a new link pool without the flag fails listing the links that would change ({took:.1f} s)",
        rc != 0
        and f"{first}-{second} 192.168.100.0/30 is outside mesh_network_link_pool" in out
        and "mesh_network_renumber=true" in out
        and APPLY_TASK not in out,
        "" if rc != 0 and APPLY_TASK not in out else tail(out),
    )
    check(
        "nothing changed on the nodes after the refused renumber", lab.snapshot() == before and lab.mgmt_ok()
    )


def case_remove_middle(lab: Lab) -> None:
    before = lab.data_addresses()
    middle = lab.hosts[1]
    rest = [h for h in lab.hosts if h != middle]
    inv = lab.inventory_copy("removed", hosts=rest)
    rc, out, took = lab.mesh(inv)
    after = lab.data_addresses(rest)
    # Every address but those of the ports that faced the removed node is still there.
    kept = all(
        {a for a in before[h] if not a.startswith(lab.ports[h][middle] + " ")} <= set(after[h]) for h in rest
    )
    check(
        f"removing the middle node {middle} keeps every other address ({took:.1f} s)",
        rc == 0 and kept,
        f"before {before} after {after} {tail(out)}" if not kept or rc else "",
    )
    # Back: the removed node's file still names its links, so they come back with their subnets.
    rc, out, took = lab.mesh(None)
    check(
        f"adding {middle} back restores its links as they were ({took:.1f} s)",
        rc == 0 and lab.data_addresses() == before,
        tail(out) if rc else "",
    )


def case_append(lab: Lab) -> None:
    """Append nodes to a running mesh: existing addresses stay, new pairs get new subnets."""
    if len(lab.hosts) < 5:
        first = lab.hosts[:2]
        label = f"{len(lab.hosts) - 2} node(s)"
    else:
        first = lab.hosts[:3]
        label = "two nodes"
    new = [h for h in lab.hosts if h not in first]
    # Start from a mesh of the first nodes only, the new ones without any data-network file (new servers).
    for host in new:
        flush = "; ".join(f"ip -4 addr flush dev {port}" for port in lab.ports[host].values())
        lab.ssh(host, f"rm -f {NETPLAN}; netplan generate; networkctl reload; ip link del nodeaddr0; {flush}")
    rc, out, _took = lab.mesh(lab.inventory_copy("small", hosts=first), "--limit", ",".join(first))
    small = lab.data_addresses(first)
    rc2, out2, took2 = lab.mesh(None)
    grown = lab.data_addresses()
    link_addresses = [a.split()[1] for h in lab.hosts for a in grown[h] if not a.startswith("nodeaddr")]
    kept = all(set(small[h]) <= set(grown[h]) for h in first)
    check(
        f"appending {label} keeps every address of the running mesh ({took2:.1f} s)",
        rc == 0 and rc2 == 0 and kept,
        f"{tail(out)} {tail(out2)}" if rc or rc2 else ("" if kept else f"small {small} grown {grown}"),
    )
    pairs = len(lab.hosts) * (len(lab.hosts) - 1) // 2
    check(
        f"the appended nodes' links got subnets of their own ({pairs} pairs)",
        len(set(link_addresses)) == 2 * pairs and len(grown[new[0]]) == len(lab.hosts),
        "" if len(set(link_addresses)) == 2 * pairs else f"{grown}",
    )
    check("restored to the lab's numbering", lab.restore() and lab.mgmt_ok())


def case_management_path(lab: Lab) -> None:
    """A data port that carries the default route, and one with an address on the management network."""
    host = lab.hosts[0]
    first, second = (lab.ports[host][p] for p in lab.hosts[1:3])
    mgmt_net = lab.addr[host].rsplit(".", 1)[0]
    peer_link = lab.ssh(host, f"ip -j -4 route show dev {first} scope link").stdout
    via = json.loads(peer_link or "[]")[0]["dst"].split("/")[0].rsplit(".", 1)[0]
    setup = f"ip route add default via {via}.2 dev {first}; ip addr add {mgmt_net}.211/24 dev {second}"
    lab.ssh(host, setup)
    try:
        before = lab.snapshot()
        rc, out, took = lab.mesh()
        want = [
            f"is '{first}', the interface of the default route",
            f"is '{second}', which has {mgmt_net}.211 on the management network",
        ]
        missing = [w for w in want if w not in out]
        check(
            f"data ports on the default route or the management network are refused ({took:.1f} s)",
            rc != 0 and not missing and APPLY_TASK not in out,
            f"missing {missing}: {tail(out)}" if missing or rc == 0 else "",
        )
        check(
            "nothing changed on the nodes after the refused run", lab.snapshot() == before and lab.mgmt_ok()
        )
    finally:
        lab.ssh(host, f"ip route del default dev {first}; ip addr del {mgmt_net}.211/24 dev {second}")


def case_unreachable(lab: Lab) -> None:
    """site.yml with the last node's address wrong (a typo after an edit) and a new MTU: refused before any
    node changes, naming the node, instead of moving the others' ends of its cables alone."""
    host = lab.hosts[-1]
    mgmt_net = lab.addr[host].rsplit(".", 1)[0]
    wrong = f"{mgmt_net}.249"
    inventory = lab.inventory_copy("unreachable", **{host: {"ansible_host": wrong}})
    before = lab.snapshot()
    rc, out, took = lab.play(
        "playbooks/site.yml", inventory, "-e", "mesh_network_mtu=8000", "-e", "ansible_ssh_timeout=5"
    )
    want = f"{host}: Ansible cannot reach it in this run"
    check(
        f"site.yml with {host} unreachable ({wrong}) is refused naming it ({took:.1f} s)",
        rc != 0 and want in out and "mesh_network_allow_unreachable=true" in out and APPLY_TASK not in out,
        tail(out),
    )
    check("nothing changed on the nodes after the refused run", lab.snapshot() == before and lab.mgmt_ok())


def case_mgmt_cidr(lab: Lab) -> None:
    """A management CIDR that holds no node's management address: refused, naming every node."""
    other = "10.254.254.0/24"
    rc, out, took = lab.mesh(None, "-e", f"mesh_network_mgmt_cidr={other}")
    named = all(f"{h} ({lab.addr[h]})" in out for h in lab.hosts)
    check(
        f"mesh_network_mgmt_cidr {other} is refused naming every node and its address ({took:.1f} s)",
        rc != 0
        and f"mesh_network_mgmt_cidr {other} does not contain the management address of" in out
        and named,
        tail(out),
    )


def first_port(value: Any) -> str:
    """The first port a node lists for a peer (a list for rails)."""
    return str(value[0] if isinstance(value, list) else value)


def reachability(lab: Lab) -> tuple[int, dict[tuple[str, str], str], str]:
    """playbooks/lab_report.yml: (rc, {(from, to): the node-address cell's verdict, FAIL, DEGRADED or OK}, the
    table)."""
    rc, table = lab_report(lab.inventory)
    cells: dict[tuple[str, str], str] = {}
    header = next((k for k, line in enumerate(table) if line.startswith("from \\ to")), None)
    if header is not None:
        for row in table[header + 1 : header + 1 + len(lab.hosts)]:
            parts = [c.strip() for c in row.split("  ") if c.strip()]
            for dst, cell in zip(lab.hosts, parts[1:], strict=False):
                if cell.startswith("FAIL"):
                    cells[(parts[0], dst)] = "FAIL"
                elif cell != "-":
                    cells[(parts[0], dst)] = "DEGRADED" if "DEGRADED" in cell else "OK"
    return rc, cells, "\n".join(table)


def with_verdict(cells: dict[tuple[str, str], str], verdict: str) -> set[tuple[str, str]]:
    return {pair for pair, v in cells.items() if v == verdict}


def case_cable_down(lab: Lab) -> None:
    """One cable down (its first node's end set down, as a pulled cable leaves the other end without carrier):
    exactly the pairs routed over it fail, verify.yml names it, and everything answers once it is up."""
    lab_vars = yaml.safe_load((lab.inventory / "group_vars" / "all.yml").read_text())
    name = lab_vars["rdmaops_lab"]["name"]
    graph = cabling.Graph(lab.hosts, cabling.cables(lab.hosts, lab.ports)[0])
    cable = graph.cables[0]
    label = cabling.cable_label(cable)
    want = set(graph.cut_by(cable))
    # with backup routes (the role's default; a ring and a full mesh of 3+ have them) those pairs go round
    backups = bool(graph.backup_kind()) and lab_vars.get("mesh_network_backup_routes", True)
    netns = f"{name}-{cable['a']}"
    subprocess.run(["ip", "-n", netns, "link", "set", first_port(cable["a_port"]), "down"], check=True)
    try:
        rc, cells, table = reachability(lab)
        ends = {(cable["a"], cable["b"]), (cable["b"], cable["a"])}
        if backups:
            # the cable's own ends fail (its link check) while their node addresses answer the long
            # way round (DEGRADED lines); every other pair routed over it answers: DEGRADED where the
            # route's first cable is the lost one or the replies cross more hops, else plain OK (a ping's
            # replies cannot show that its requests were turned round further on)
            degraded = with_verdict(cells, "DEGRADED")
            ok = with_verdict(cells, "FAIL") == ends and bool(degraded) and degraded <= want - ends
            ok = ok and all(f"DEGRADED {src} -> {dst} node address" in table for src, dst in ends)
            fails, rounds = sorted(with_verdict(cells, "FAIL")), sorted(with_verdict(cells, "DEGRADED"))
            said = f"FAIL {fails} DEGRADED {rounds}"
        else:
            ok = with_verdict(cells, "FAIL") == want
            said = f"FAIL {sorted(with_verdict(cells, 'FAIL'))}"
        check(
            f"with {label} down the cable fails and the {len(want)} node pairs routed over it "
            + ("still answer, the long way round" if backups else "fail"),
            rc != 0 and ok and f"cable {label} FAILED" in table,
            f"rc={rc} {said}, routed over it {sorted(want)}\n{table}",
        )
        fast = ["-e", "verify_allreduce=false", "-e", "verify_qos=false", "-e", "verify_duration=2"]
        rc, out, took = lab.play("verify.yml", None, *fast, timeout=900)
        report = (ROOT / "reports" / "latest" / "report.md").read_text() if rc != 124 else ""
        check(
            f"verify.yml fails naming the cable in its output and report ({took:.1f} s)",
            rc != 0 and f"(cable {label})" in out and f"cable {label} FAILED" in report,
            "" if rc != 0 and f"cable {label}" in report else tail(out),
        )
    finally:
        subprocess.run(["ip", "-n", netns, "link", "set", first_port(cable["a_port"]), "up"], check=False)
    # networkd configures the port again by itself: no run of the role. A wait, not a timing: on a 2-core
    # machine that runs the unit tests beside this lab, networkd may take well over 30 s to get to it.
    deadline = time.monotonic() + 120
    while True:
        rc, cells, table = reachability(lab)
        if rc == 0 or time.monotonic() > deadline:
            break
        time.sleep(2)
    check(
        "every path answers again, direct, once the cable is up",
        rc == 0 and set(cells.values()) == {"OK"},
        table,
    )


# netplan_apply's test hook (its module notes): while this file exists on a node, the module stops itself
# right after the reload, before its probes, and writes its PID to HOLD.pid.
HOLD = "/run/rdmaops-test/netplan_apply.hold"


def in_node(lab: Lab, host: str, command: str) -> subprocess.CompletedProcess[str]:
    """COMMAND in all of HOST's namespaces through nsenter from the lab's host: works without the node's
    management link (docs/lab.md, "A shell in a node")."""
    name = yaml.safe_load((lab.inventory / "group_vars" / "all.yml").read_text())["rdmaops_lab"]["name"]
    nspawn = Path(f"/run/rdmaops-lab/{name}/{host}.pid").read_text().strip()
    init = subprocess.run(["pgrep", "-P", nspawn], capture_output=True, text=True, check=False).stdout.split()
    argv = ["nsenter", "--target", init[0] if init else "0", "--all", "sh", "-c", command]
    return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)


def case_cut_off(lab: Lab) -> None:
    """A node whose management link dies during the apply fails the play, named, within the apply task's
    bound. The module holds right after its reload (netplan_apply's test hook) while the link is cut, so the
    cut lands inside the apply by construction; the node rolls back by itself, and answers again."""
    host = lab.hosts[0]
    name = yaml.safe_load((lab.inventory / "group_vars" / "all.yml").read_text())["rdmaops_lab"]["name"]
    link = f"{name}-m{lab.hosts.index(host) + 1}"
    lab.ssh(host, f"mkdir -p {Path(HOLD).parent} && rm -f {HOLD}.pid && touch {HOLD}")
    argv = [tool("ansible-playbook"), "-i", str(lab.inventory), str(ROOT / "playbooks/mesh_network.yml")]
    argv += ["-e", "mesh_network_mtu=8000", "-e", "mesh_network_apply_timeout=5"]
    proc = spawn(argv, cwd=ROOT, env=env())
    held_pid = f'p=$(cat {HOLD}.pid 2>/dev/null) && [ "$(ps -o stat= -p "$p" | cut -c1)" = T ]'
    wait = f"end=$(( $(date +%s) + 240 )); until {held_pid}; do "
    wait += '[ "$(date +%s)" -ge "$end" ] && exit 1; sleep 0.2; done'
    cut = False
    try:
        held = proc.poll() is None and lab.ssh(host, wait, timeout=270).returncode == 0
        lab.ssh(host, f"rm -f {HOLD}")  # one apply holds, not the rollback's
        if held:
            subprocess.run(["ip", "link", "set", link, "down"], check=True)
            cut = True
    finally:
        # the module goes on, cut off (or was never held): SIGCONT through nsenter, the link being down
        in_node(lab, host, f"rm -f {HOLD}; p=$(cat {HOLD}.pid 2>/dev/null) && kill -CONT $p")
    start = time.monotonic()
    try:
        out = finish(proc, 300)
    finally:
        took = time.monotonic() - start
        subprocess.run(["ip", "link", "set", link, "up"], check=False)
    bound = 5 * 3 + 30  # the apply task's timeout (roles/mesh_network/tasks/netplan.yml)
    named = [line for line in out.splitlines() if line.startswith(f"fatal: [{host}]")]
    timed_out = bool(named) and f"Timed out after {bound} second" in out  # in the result below the fatal line
    check(
        f"a node cut off during the apply fails the play, named, at the apply task's {bound} s bound",
        held and cut and proc.returncode != 0 and timed_out,
        f"held after the reload {held}, the play ended {took:.1f} s after the cut; {named[:1]}"
        + ("" if timed_out else "\n" + tail(out)),
    )
    # a wait for the node's SSH over the restored link (bounded), then the restore
    deadline = time.monotonic() + 60
    while not lab.mgmt_ok() and time.monotonic() < deadline:
        time.sleep(1)
    check(
        "the node answers again once its link is back, and the mesh is restored",
        lab.mgmt_ok() and lab.restore(),
    )


CASES: dict[str, Callable[[Lab], None]] = {
    "discover": case_discover,
    "swapped": case_swapped,
    "rollback_management": case_rollback_management,
    "management_path": case_management_path,
    "unreachable": case_unreachable,
    "mgmt_cidr": case_mgmt_cidr,
    "cut_off": case_cut_off,
    "cable_down": case_cable_down,
    "renumber_refused": case_renumber_refused,
    "reorder": case_reorder,
    "renumber_flag": case_renumber_flag,
    "remove_middle": case_remove_middle,
    "append": case_append,
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    ap.add_argument("--inventory", required=True, type=Path)
    ap.add_argument("--only", nargs="*", choices=list(CASES))
    args = ap.parse_args()
    lab = Lab(args.inventory.resolve())
    try:
        return run_cases(CASES, lab, args.only)
    finally:
        shutil.rmtree(lab.tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
