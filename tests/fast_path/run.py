"""site.yml's fast path on a converged lab: a no-change run runs no role; drift on one node is named and
converges every node, which repairs it. With --lab-play, lab.yml's fast path too: a re-run of the playbook
that built the lab does nothing, and a hand-edited inventory file is named and written again.

    .venv/bin/python tests/fast_path/run.py --inventory inventories/mol --lab-play molecule/default/create.yml
    .venv/bin/python tests/fast_path/run.py --inventory inventories/lab \
        --lab-play "playbooks/lab.yml -e lab_state=present -e lab_nodes=3 -e lab_topology=mesh"

Runs with RDMAOPS_FAST_PATH=1 whatever the caller's environment says (molecule turns the fast path off for
its converge, idempotence and check-mode steps, so that those test the roles themselves).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from labkit import check, run_cases
from train.run import Lab

RECAP = re.compile(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)
SKIPPED = "no role runs"
FILE = "/etc/nccl.conf"  # watched by nccl_env
SERVICE = "slurmd"  # watched by slurm


def changed(out: str) -> dict[str, int]:
    return {host: int(c) + int(u) + int(f) for host, c, u, f in RECAP.findall(out)}


def roles_run(out: str) -> list[str]:
    return sorted(set(re.findall(r"^TASK \[rdmaops\.cluster\.(\w+) :", out, re.M)))


def case_no_change(lab: Lab) -> None:
    # After molecule's converge (fast path off, run with --skip-tags: it records no stamp) the first run runs
    # every role: it is the idempotence check (changed=0 on every host) and records the stamp. On a lab
    # converged with these inputs it is already a no-change run, changed=0 too. The second may run no role.
    rc, out, took = lab.play("site.yml")
    counts = changed(out)
    check(
        "site.yml on the converged lab: changed=0 on every host (idempotent), the stamp recorded",
        rc == 0 and bool(counts) and all(n == 0 for n in counts.values()),
        f"{took:.1f} s, recap {counts}, roles run: {', '.join(roles_run(out)) or 'none'}"
        + ("" if rc == 0 and all(n == 0 for n in counts.values()) else "\n" + out[-3000:]),
    )
    rc, out, took = lab.play("site.yml")
    counts = changed(out)
    check(
        "site.yml again: no node play runs, changed=0 everywhere",
        rc == 0 and SKIPPED in out and all(n == 0 for n in counts.values()),
        f"{took:.1f} s, recap {counts}, roles run: {', '.join(roles_run(out)) or 'none'}",
    )
    check(
        "only the switch's own play touches a role",
        set(roles_run(out)) <= {"switch_qos"},
        f"roles run: {', '.join(roles_run(out)) or 'none'}",
    )


def case_drift(lab: Lab) -> None:
    edit, stop = lab.hosts[1], lab.hosts[-1]
    before = lab.ssh(edit, f"sha256sum {FILE}").stdout.split()[:1]
    lab.ssh(edit, f"echo NCCL_DEBUG=TRACE >> {FILE}", check=True)
    lab.ssh(stop, f"systemctl stop {SERVICE}", check=True)
    rc, out, took = lab.play("site.yml")
    flat = " ".join(out.split())  # the callback folds long messages
    named_file = f"{edit} differs from its last converge: nccl_env: {FILE} changed" in flat
    named_service = re.search(
        rf"{stop} differs from its last converge:[^']*slurm: service {SERVICE} was active/enabled, is \w+",
        flat,
    )
    check(
        "an edited file and a stopped service are named, per node",
        bool(named_file and named_service),
        "; ".join(re.findall(r"\S+ differs from its last converge: [^']*", flat))[:600],
    )
    after = lab.ssh(edit, f"sha256sum {FILE}").stdout.split()[:1]
    active = lab.ssh(stop, f"systemctl is-active {SERVICE}").stdout.strip()
    check(
        "every node converges, which repairs both",
        rc == 0 and "slurm" in roles_run(out) and after == before and active == "active",
        f"{took:.1f} s, rc={rc}, {FILE} restored: {after == before}, {SERVICE} on {stop}: {active}",
    )
    rc, out, took = lab.play("site.yml")
    check("and the next run is a no-change run again", rc == 0 and SKIPPED in out, f"{took:.1f} s")


LAB_CURRENT = "is as the last run of lab.yml left it: nothing to do"


def case_lab(lab: Lab, play: list[str]) -> None:
    # the first run may be a full one (the lab may have been built with the fast path off); the second may not
    rc, out, took = lab.play(*play)
    check("the lab's playbook runs", rc == 0, f"{took:.1f} s, recap {changed(out)}")
    rc, out, took = lab.play(*play)
    check(
        "again: nothing to do, changed=0",
        rc == 0 and LAB_CURRENT in out and changed(out).get("localhost") == 0,
        f"{took:.1f} s, recap {changed(out)}",
    )
    hosts = lab.inventory / "hosts.yml"
    before = hosts.read_text()
    hosts.write_text(before + "# edited by hand\n")
    rc, out, took = lab.play(*play)
    flat = " ".join(out.split())
    check(
        "an edited inventory file is named and written again",
        rc == 0 and "hosts.yml changed since the last run" in flat and hosts.read_text() == before,
        f"{took:.1f} s, rc={rc}, restored: {hosts.read_text() == before}, "
        + "; ".join(re.findall(r"lab \w+: [^\"]*changed since the last run", flat))[:300],
    )
    rc, out, took = lab.play(*play)
    check("and the next run does nothing again", rc == 0 and LAB_CURRENT in out, f"{took:.1f} s")


CASES = {"no_change": case_no_change, "drift": case_drift}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--inventory", type=Path, required=True, help="a converged lab inventory")
    parser.add_argument(
        "--lab-play",
        help="the playbook (and -e options) that built the lab, as one string: adds the case 'lab'",
    )
    parser.add_argument(
        "--only", nargs="+", choices=[*CASES, "lab"], help="run only these cases, in this order"
    )
    args = parser.parse_args()
    os.environ["RDMAOPS_FAST_PATH"] = "1"
    cases = dict(CASES)
    if args.lab_play:
        play = shlex.split(args.lab_play)
        cases["lab"] = lambda lab: case_lab(lab, play)
    return run_cases(cases, Lab(args.inventory), args.only)


if __name__ == "__main__":
    sys.exit(main())
