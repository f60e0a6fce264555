"""Several NICs per node behind switches: lab cases of mesh_network and verify.yml on a converged switched lab
with two or more ports per node (molecule scenario `fabric`: 3 nodes x 2 NICs on one bridge, the shared
subnet, where ARP flux and wrong-NIC egress happen without mesh_network's fix).

    .venv/bin/python tests/fabric/run.py --inventory inventories/molfab [--only NAME ...]

Cases:
- rails_verify: verify.yml measures every NIC against the same-rail NIC of every peer, a node's rails at
  once in each round; each measurement's bytes left by its own NIC (the port's transmit counter); the report
  has one bandwidth matrix per rail and the reachability table one per rail, every ARP answered by its NIC.
- flux (shared scheme): the fix taken away on the first node by hand (arp_ignore/arp_announce 0, the NICs'
  source rules deleted): the lab shows ARP flux (two MACs answer for one address) and one NIC's traffic
  leaving by the other; verify.yml fails, naming the NIC, its rail, the check and the MACs; --check --diff
  reports the repair on that node only and changes nothing; mesh_network repairs both (its sysctls,
  netplan_apply's drift), after which one MAC answers, the traffic leaves by its NIC and every check passes.
- lost_address (any scheme): a NIC's address deleted by hand: named by the report, --check reports the repair
  and changes nothing, a run puts it back, a second run changes nothing.
Prints one line per check, the time of each case, and "N passed, M failed"; exit status 1 if any failed.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from labkit import ROOT, check, env, lab_report, run_bounded, run_cases, tool

MAC = re.compile(r"\[([0-9a-f]{2}(?::[0-9a-f]{2}){5})\]", re.IGNORECASE)
FAST_VERIFY = ["-e", "verify_allreduce=false", "-e", "verify_qos=false", "-e", "verify_duration=2"]


class Lab:
    def __init__(self, inventory: Path) -> None:
        self.inventory = inventory
        doc = yaml.safe_load((inventory / "hosts.yml").read_text())
        group = next(iter(doc["all"]["children"]))
        hosts = doc["all"]["children"][group]["hosts"]
        self.hosts = list(hosts)
        self.addr = {h: v["ansible_host"] for h, v in hosts.items()}
        self.ports = {h: list(v["mesh_network_fabric_ports"]) for h, v in hosts.items()}
        self.key = doc["all"]["children"][group]["vars"]["ansible_ssh_private_key_file"]
        group_vars = yaml.safe_load((inventory / "group_vars" / "all.yml").read_text())
        self.scheme = str(group_vars.get("mesh_network_fabric_scheme") or "shared")

    def ssh(self, host: str, command: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        argv = ["ssh", "-i", self.key, "-o", "UserKnownHostsFile=/dev/null", "-o", "StrictHostKeyChecking=no"]
        argv += ["-o", "LogLevel=ERROR", "-o", "ConnectTimeout=5", f"root@{self.addr[host]}", command]
        return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=timeout)

    def play(
        self, playbook: str, *extra: str, timeout: float = 600, json_out: bool = False
    ) -> tuple[int, str]:
        argv = [tool("ansible-playbook"), "-i", str(self.inventory), str(ROOT / playbook), *extra]
        play_env = env()
        if json_out:
            play_env.update(ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.posix.json")
        rc, out, err = run_bounded(argv, timeout, cwd=ROOT, env=play_env)
        return rc, out + err

    def mesh(self, *extra: str) -> tuple[int, str, dict[str, int]]:
        """playbooks/mesh_network.yml (packages and LLDP in place by then): rc, output, changed per host."""
        fast = ["-e", "mesh_network_lldp=false", "-e", "mesh_network_install_packages=false"]
        rc, out = self.play("playbooks/mesh_network.yml", *fast, *extra)
        changed = {
            m.group(1): int(m.group(2))
            for m in re.finditer(r"^(\S+)\s*:\s*ok=\d+\s+changed=(\d+)", out, re.MULTILINE)
        }
        return rc, out, changed

    def address(self, host: str, ifname: str) -> str:
        links = json.loads(self.ssh(host, f"ip -j -4 addr show dev {ifname}").stdout or "[]")
        return next(info["local"] for link in links for info in link.get("addr_info", []))

    def macs_answering(self, host: str, ifname: str, address: str) -> list[str]:
        """The MACs that answer an ARP request for ADDRESS sent from HOST's IFNAME (arping, 3 requests)."""
        out = self.ssh(host, f"arping -b -c 3 -w 4 -I {ifname} {address}").stdout
        return sorted({m.lower() for m in MAC.findall(out)})

    def egress(self, host: str, dst: str, src: str) -> str:
        """The port the kernel sends HOST's traffic from SRC (empty: any source) to DST by."""
        source = f" from {src}" if src else ""
        route = json.loads(self.ssh(host, f"ip -j route get {dst}{source}").stdout or "[{}]")
        return str(route[0].get("dev"))

    def mac(self, host: str, ifname: str) -> str:
        return self.ssh(host, f"cat /sys/class/net/{ifname}/address").stdout.strip().lower()


def tail(out: str) -> str:
    lines = out.splitlines()
    starts = [i for i, line in enumerate(lines) if "fatal" in line or "FAILED" in line]
    if not starts:
        return " | ".join(lines[-20:])[-1500:]
    return " | ".join(line.strip() for line in lines[starts[-1] : starts[-1] + 30])[:2500]


def case_rails_verify(lab: Lab) -> None:
    rails = len(lab.ports[lab.hosts[0]])
    n = len(lab.hosts)
    start = time.monotonic()
    rc, out = lab.play("verify.yml", *FAST_VERIFY, timeout=900)
    took = time.monotonic() - start
    if not check(
        f"verify.yml passes on {n} nodes x {rails} NICs ({took:.0f} s)", rc == 0, tail(out) if rc else ""
    ):
        return
    report = json.loads((ROOT / "reports" / "latest" / "report.json").read_text())
    rows = report["measurements"]
    want = n * (n - 1) * rails
    check(
        f"every NIC measured against the same-rail NIC of every peer, both ways ({len(rows)} of {want})",
        len(rows) == want
        and all(
            r["client_ifname"] == r["server_ifname"] == lab.ports[r["client"]][int(r["rail"][4:])]
            for r in rows
        ),
        json.dumps([(r["label"], r.get("rail")) for r in rows]),
    )
    pairs = report["meta"]["round_pairs"]
    check(
        f"a node pair's {rails} rails are measured at once: {len(pairs)} rounds of {rails} measurements",
        len(pairs) == n * (n - 1) and all(len(p) == rails for p in pairs),
        json.dumps(pairs),
    )
    # Each measurement's bytes left by its own NIC: the client port's transmit counter grew by about the bytes
    # iperf3 sent (verify's own rule, thresholds.py: at least 90%; the counter is read when iperf3 ends, with
    # a few kB maybe still queued). A NIC whose traffic left by another shows almost nothing.
    own = [
        r
        for r in rows
        if r.get("port_tx_bytes") and r.get("bytes_sent") and r["port_tx_bytes"] >= 0.9 * r["bytes_sent"]
    ]
    check(
        f"each NIC's bytes left by that NIC ({len(own)}/{len(rows)} transmit counters >= 90% of bytes sent)",
        len(own) == len(rows),
        json.dumps([(r["label"], r.get("bytes_sent"), r.get("port_tx_bytes")) for r in rows]),
    )
    text = (ROOT / "reports" / "latest" / "report.md").read_text()
    check(
        "the report has one bandwidth matrix per rail",
        all(f"### rail{k}" in text for k in range(rails)) and "## Bandwidth per rail" in text,
        text[-2000:],
    )
    lines = [line for line in out.splitlines() if "node pairs OK" in line or "ARP" in line]
    check(
        "the reachability table has one matrix per rail, every pair OK, every ARP answered by its own NIC",
        all(f"{n * (n - 1)}/{n * (n - 1)} node pairs OK on rail{k}" in out for k in range(rails))
        and not any("ARP" in line for line in lines),
        "\n".join(lines),
    )


def case_flux(lab: Lab) -> None:
    if lab.scheme != "shared":
        print(f"-- flux: not run, the fabric's scheme is {lab.scheme} (ARP flux needs one layer-2 segment)")
        return
    a, b = lab.hosts[0], lab.hosts[1]
    nics = lab.ports[a][:2]
    own = {nic: lab.address(a, nic) for nic in nics}
    peer = {nic: lab.address(b, lab.ports[b][k]) for k, nic in enumerate(nics)}
    macs = {lab.mac(a, nic): f"{a} {nic}" for nic in nics}
    if lab.ssh(b, "command -v arping").returncode != 0:
        check(f"{b} has arping (verify.yml installs iputils-arping: run rails_verify first)", False)
        return
    sysctls = " ".join(f"net.ipv4.conf.{p}.{k}=0" for p in nics for k in ("arp_ignore", "arp_announce"))
    rules = " && ".join(f"ip rule del from {addr}" for addr in own.values())
    broke = lab.ssh(a, f"sysctl -qw {sysctls} && {rules} && ip rule")
    check(
        f"{a}: the fix taken away by hand (ARP sysctls 0, the NICs' source rules gone)",
        broke.returncode == 0 and not any(f"from {addr} " in broke.stdout for addr in own.values()),
        broke.stdout + broke.stderr,
    )
    # Without source rules every packet to the shared subnet takes the main table's first route for it (the
    # NIC whose address networkd configured first): the other NIC's traffic leaves by that one.
    first = lab.egress(a, peer[nics[0]], "")
    victim = next((nic for nic in nics if nic != first), nics[1])
    rail = f"rail{nics.index(victim)}"
    answered = lab.macs_answering(b, lab.ports[b][0], own[victim])
    check(
        f"without the fix, ARP flux: {len(answered)} MACs answer for {a} {victim}'s {own[victim]}",
        len(answered) == 2 and set(answered) == set(macs),
        f"{answered} ({macs})",
    )
    dev = lab.egress(a, peer[victim], own[victim])
    check(
        f"without the fix, {a}'s traffic from {victim}'s {own[victim]} leaves by {dev} (main's: {first})",
        dev == first != victim,
        dev,
    )
    # verify.yml fails, its report naming the NIC, its rail, the check and the MACs
    rc, out = lab.play("verify.yml", *FAST_VERIFY, timeout=900)
    report = (ROOT / "reports" / "latest" / "report.md").read_text() if rc != 124 else ""
    failures = report.partition("## Failures")[2]
    check(
        f"verify.yml fails naming {a} {victim}: ARP flux with both MACs, and the wrong egress",
        rc != 0
        and f"{a} {victim} {own[victim]} ({rail}) ARP flux" in failures
        and all(mac in failures for mac in macs)
        and f"{a} {victim} ({rail}) egress: traffic from {own[victim]}" in failures
        and f"leaves by {first}, not {victim}" in failures,
        failures.strip()[:1500] or tail(out),
    )
    before = lab.ssh(a, "ip rule; sysctl net.ipv4.conf.all.arp_ignore").stdout
    rc, out, changed = lab.mesh("--check", "--diff")
    after = lab.ssh(a, "ip rule; sysctl net.ipv4.conf.all.arp_ignore").stdout
    check(
        f"mesh_network --check --diff reports the repair on {a} only and changes nothing ({changed})",
        rc == 0
        and changed.get(a, 0) > 0
        and not any(changed.get(h) for h in lab.hosts if h != a)
        and before == after,
        tail(out) if rc else after,
    )
    rc, out, changed = lab.mesh()
    check(
        f"mesh_network repairs {a} (rc {rc}, changed {changed})",
        rc == 0 and changed.get(a, 0) > 0 and not any(changed.get(h) for h in lab.hosts if h != a),
        tail(out) if rc else "",
    )
    for nic in nics:
        answered = lab.macs_answering(b, lab.ports[b][0], own[nic])
        check(
            f"with the fix, only {a} {nic}'s MAC answers for {own[nic]}",
            answered == [lab.mac(a, nic)],
            str(answered),
        )
        dev = lab.egress(a, peer[nic], own[nic])
        check(f"with the fix, the traffic from {own[nic]} leaves by {nic}", dev == nic, dev)
    rc, table = lab_report(lab.inventory)
    text = "\n".join(table)
    check(
        "every check of the reachability report passes again",
        "FAIL" not in text and "ARP" not in text and "egress" not in text and "node pairs OK" in text,
        text,
    )


def case_lost_address(lab: Lab) -> None:
    """A NIC's address deleted by hand (any scheme): the report names the NIC and its rail, --check reports
    the repair, a run puts the address back, and a second run changes nothing."""
    a, nic = lab.hosts[-1], lab.ports[lab.hosts[-1]][-1]
    rail = f"rail{len(lab.ports[a]) - 1}"
    address = lab.address(a, nic)
    gone = lab.ssh(a, f"ip addr flush dev {nic} && ip -4 -br addr show dev {nic}")
    check(
        f"{a} {nic}'s {address} deleted by hand",
        gone.returncode == 0 and address not in gone.stdout,
        gone.stderr,
    )
    rc, table = lab_report(lab.inventory)
    text = "\n".join(table)
    check(
        f"the reachability report names {a} {nic} on {rail}",
        f"{a} {nic} ({rail})" in text and "FAIL" in text,
        text,
    )
    rc, out, changed = lab.mesh("--check", "--diff")
    check(
        f"mesh_network --check reports the repair on {a} only ({changed}), the address still gone",
        rc == 0
        and changed.get(a, 0) > 0
        and not any(changed.get(h) for h in lab.hosts if h != a)
        and address not in lab.ssh(a, f"ip -4 -br addr show dev {nic}").stdout,
        tail(out) if rc else "",
    )
    rc, out, changed = lab.mesh()
    back = lab.ssh(a, f"ip -4 -br addr show dev {nic}").stdout
    check(
        f"mesh_network puts it back ({changed})", rc == 0 and changed.get(a, 0) > 0 and address in back, back
    )
    rc, out, changed = lab.mesh()
    check(
        f"a second run changes nothing ({changed})",
        rc == 0 and not any(changed.values()),
        tail(out) if rc else "",
    )
    rc, table = lab_report(lab.inventory)
    text = "\n".join(table)
    check(
        "every check of the reachability report passes again",
        "FAIL" not in text and "node pairs OK" in text,
        text,
    )


CASES: dict[str, Callable[[Lab], None]] = {
    "rails_verify": case_rails_verify,
    "flux": case_flux,
    "lost_address": case_lost_address,
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    ap.add_argument("--inventory", required=True, type=Path)
    ap.add_argument("--only", nargs="*", choices=list(CASES))
    args = ap.parse_args()
    return run_cases(CASES, Lab(args.inventory.resolve()), args.only)


if __name__ == "__main__":
    sys.exit(main())
