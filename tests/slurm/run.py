"""Slurm on a converged lab instance: the role's checks and change handling, its refusals, and train.yml's
Slurm launcher with a real fault.

    .venv/bin/python tests/slurm/run.py --inventory inventories/mol [--only NAME ...]

Each case runs ansible-playbook as a user would (on a copy of the inventory where a case edits it) and checks
what it printed and what the nodes hold afterwards. One line per check, "N passed, M failed" at the end.
"""

from __future__ import annotations

import argparse
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
from labkit import check, finish, run_cases
from train.run import (
    SMI_XML,
    TRAINER,
    Lab,
    counters_while_held,
    gone_after,
    metrics,
    pause_args,
    paused,
    resume_all,
    smi_with_ecc_errors,
    wait_for_step,
)

CONTROLLER = "slurm_controller"
# What a refused run must leave as it was, per node.
STATE = (
    "sha256sum /etc/slurm/slurm.conf /etc/munge/munge.key | cut -c1-16; "
    "systemctl show -p MainPID --value slurmd slurmctld munge | tr '\\n' ' '"
)


class SlurmLab(Lab):
    def edited(self, change: Callable[[dict[str, Any]], None]) -> Path:
        """A copy of the inventory with hosts.yml changed by CHANGE (group_vars kept)."""
        dest = Path(tempfile.mkdtemp(prefix="slurm-inv-"))
        shutil.copytree(self.inventory, dest, dirs_exist_ok=True)
        doc = yaml.safe_load((dest / "hosts.yml").read_text())
        change(doc)
        (dest / "hosts.yml").write_text(yaml.safe_dump(doc, sort_keys=False))
        return dest

    def play_on(self, inventory: Path, playbook: str, *extra: str) -> tuple[int, str, float]:
        saved, self.inventory = self.inventory, inventory
        try:
            return self.play(playbook, *extra)
        finally:
            self.inventory = saved

    def state(self) -> dict[str, str]:
        return {h: self.ssh(h, STATE).stdout for h in self.hosts}

    def pids(self, units: str = "slurmd slurmctld") -> dict[str, str]:
        show = f"systemctl show -p MainPID --value {units} | tr '\\n' ' '"
        return {h: self.ssh(h, show).stdout for h in self.hosts}


def _group(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return doc["all"]["children"].setdefault(name, {"hosts": {}})


def _cluster(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["all"]["children"]["cluster"]["hosts"]


def handler_result(out: str, name: str) -> str:
    """'changed', 'skipping' or 'absent' for a handler of the slurm role in a play's output."""
    marker = f"RUNNING HANDLER [rdmaops.cluster.slurm : {name}]"
    if marker not in out:
        return "absent"
    block = out.split(marker, 1)[1].split("\n\n", 1)[0]
    return "changed" if "changed:" in block else "skipping"


IDLE_WAIT_S = 90


def idle_nodes(lab: SlurmLab) -> tuple[list[str], str]:
    """The nodes sinfo shows idle (not idle*, which is not responding), and sinfo's lines."""
    out = lab.ssh(lab.hosts[0], "sinfo --noheader --Node --format='%N %t'").stdout
    return sorted(line.split()[0] for line in out.splitlines() if line.endswith(" idle")), out


def case_srun(lab: SlurmLab) -> None:
    # A node slurmctld could not reach at its last ping shows "idle*" (not responding) and srun waits for it:
    # ci29 hung 60 s here right after the mesh safety step, whose netplan changes and rollbacks touch the
    # nodes' networking. So wait (bounded) for every node to be idle, and show sinfo if one is not.
    start = time.monotonic()
    idle, states = idle_nodes(lab)
    while idle != sorted(lab.hosts) and time.monotonic() - start < IDLE_WAIT_S:
        time.sleep(2)
        idle, states = idle_nodes(lab)
    waited = time.monotonic() - start
    check(
        "every node idle in sinfo",
        idle == sorted(lab.hosts),
        f"after {waited:.1f} s; sinfo: {' / '.join(states.splitlines())}",
    )
    start = time.monotonic()
    res = lab.ssh(lab.hosts[0], f"srun -N{len(lab.hosts)} --ntasks-per-node=1 hostname")
    took = time.monotonic() - start
    names = sorted(res.stdout.split())
    check(
        f"srun -N{len(lab.hosts)} hostname answers from every node",
        res.returncode == 0 and names == sorted(lab.hosts),
        f"{', '.join(names)} in {took:.2f} s (with the ssh)",
    )


def case_bad_inputs(lab: SlurmLab) -> None:
    first, second, third = lab.hosts[:3]

    def no_controller(doc: dict[str, Any]) -> None:
        _group(doc, CONTROLLER)["hosts"] = {}

    def two_controllers(doc: dict[str, Any]) -> None:
        _group(doc, CONTROLLER)["hosts"] = {first: None, second: None}

    cases: list[tuple[str, Callable[[dict[str, Any]], None] | None, list[str], list[str]]] = [
        ("no controller (empty group)", no_controller, [], ["no Slurm controller", f"'{CONTROLLER}'"]),
        ("two controllers", two_controllers, [], ["two or more Slurm controllers", f"{first}, {second}"]),
        (
            "declared memory above what the node has",
            lambda doc: _cluster(doc)[second].update(slurm_real_memory=99999999),
            [],
            [second, "slurm_real_memory 99999999 MiB is above what the node has"],
        ),
        (
            "GPUs declared where nvidia-smi finds none",
            lambda doc: _cluster(doc)[third].update(slurm_gpus=2),
            [],
            [third, "slurm_gpus 2 declared but nvidia-smi finds 0"],
        ),
        (
            "--limit leaves the controller out",
            None,
            ["--limit", f"{second},{third}"],
            [f"the Slurm controller {first} is not in this run"],
        ),
    ]
    before = lab.state()
    for name, change, extra, wanted in cases:
        inv = lab.edited(change) if change else lab.inventory
        rc, out, took = lab.play_on(inv, "playbooks/slurm.yml", *extra)
        flat = " ".join(out.split())
        missing = [w for w in wanted if w not in flat]
        after = lab.state()
        check(
            f"refused: {name}",
            rc != 0 and not missing and after == before and not re.search(r"^changed: \[", out, re.M),
            f"{took:.1f} s"
            + (f"; message lacks {missing}" if missing else "")
            + ("" if after == before else "; a node changed!"),
        )
        if change:
            shutil.rmtree(inv, ignore_errors=True)


def case_train(lab: SlurmLab) -> None:
    # Detached, like tests/train/run.py's traffic case: the counters' window then holds the job's traffic and
    # not the play's own SSH (whose module uploads grow with a slow machine's longer watch). The same job is
    # then stopped by train_stop.yml. The watched Slurm launch is case_kill_task's.
    job = "t-slurm"
    subprocess.run(["rm", "-rf", str(lab.shared(f"/shared/train/{job}"))], check=False)
    # the ranks hold before their first step (RDMAOPS_TRAINER_PAUSE=start) while the counters are read
    rc, _out, took = lab.play(
        "train.yml", "-e", "recipe=tiny", "-e", f"job={job}", "-e", "launcher=slurm", "-e", "steps=2000",
        "-e", "detach=true", *pause_args("start"),
    )  # fmt: skip
    held, before = counters_while_held(lab)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not any(
        r.get("event") == "train" and r.get("step", 0) >= 30 for r in metrics(lab, job)
    ):
        time.sleep(1)
    after = lab.counters()
    records = metrics(lab, job)
    step = max((r.get("step", 0) for r in records if r.get("event") == "train"), default=0)
    start = [r for r in records if r.get("event") == "start"]
    check(
        "train.yml -e launcher=slurm -e detach=true trains across every node",
        rc == 0 and step >= 30 and bool(start) and start[-1].get("world_size") == len(lab.hosts),
        f"launch {took:.1f} s, world size {start[-1].get('world_size') if start else '?'}, step {step}",
    )
    mesh = sum(after[h][i] - before[h].get(i, 0) for h in lab.hosts for i in after[h] if i.startswith("data"))
    mgmt = sum(after[h][i] - before[h].get(i, 0) for h in lab.hosts for i in after[h] if i.startswith("mgmt"))
    check(
        "its traffic is on the mesh links",
        held and mesh > 20 * mgmt and mesh > 1e6,
        f"held before step 1 {held}, to step {step}: mesh ports {mesh / 1e6:.1f} MB, management "
        f"{mgmt / 1e6:.2f} MB (Slurm's own messages included)",
    )
    running = lab.ssh(lab.hosts[0], f"squeue --noheader --name=rdmaops-{job} --format=%T").stdout.strip()
    src, _out, took = lab.play("playbooks/train_stop.yml", "-e", f"job={job}")
    left = {h: lab.ssh(h, f"pgrep -f '{TRAINER}' || true").stdout.split() for h in lab.hosts}
    queued = lab.ssh(lab.hosts[0], f"squeue --noheader --name=rdmaops-{job}").stdout.strip()
    check(
        "the detached Slurm job is cancelled by train_stop.yml, nothing left on any node",
        running == "RUNNING" and src == 0 and not queued and not any(left.values()),
        f"stop took {took:.1f} s; state before {running or '?'}; trainers left {left}; "
        f"squeue {queued or 'empty'}",
    )
    script = lab.shared(f"/shared/train/{job}/{job}.sbatch")
    # the kept script carries the job's environment, the hold before step 1 included: released once held
    by_hand = lab.ssh_async(
        lab.hosts[0], f"cd /shared/train/{job} && sbatch --parsable --wait {job}.sbatch 40 2 1e-3"
    )
    try:
        held = paused(lab)
    finally:
        resume_all(lab)
    try:
        stdout, _err = by_hand.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        by_hand.kill()
        stdout, _err = by_hand.communicate()
    job_id = stdout.strip().splitlines()[-1] if stdout.strip() else "?"
    records = metrics(lab, job)
    runs = [r for r in records if r.get("event") == "start"]
    check(
        "the kept script runs by hand: sbatch JOB.sbatch 40 2 1e-3",
        script.exists()
        and held
        and by_hand.returncode == 0
        and bool(runs)
        and runs[-1].get("steps") == 40
        and [r for r in records if r.get("event") == "end"][-1]["step"] == 40,
        f"slurm job {job_id}, steps {runs[-1].get('steps') if runs else '?'}",
    )


def case_kill_task(lab: SlurmLab) -> None:
    job = "t-slurm-kill"
    subprocess.run(["rm", "-rf", str(lab.shared(f"/shared/train/{job}"))], check=False)
    proc = lab.play_async(
        "train.yml", "-e", "recipe=tiny", "-e", f"job={job}", "-e", "launcher=slurm", "-e", "steps=2000",
        "-e", "train_progress_interval=5",
    )  # fmt: skip
    victim = lab.hosts[1]
    if not wait_for_step(lab, job, 10, proc):
        check("slurm job reached step 10 before the fault", False, finish(proc, 0.1)[-800:])
        return
    slurm_id = lab.ssh(lab.hosts[0], f"squeue --noheader --name=rdmaops-{job} --format=%i").stdout.strip()
    # the kill's moment on the victim's clock, and below the job's end as Slurm recorded it (nodes share the
    # host's clock): the figure is the product's, not this script's view of it
    stamped = lab.ssh(victim, f"date +%s.%N; pkill -9 -f -o '{TRAINER}' && echo killed").stdout.split()
    out = finish(proc, 120)
    # scancel ends the job step's tasks asynchronously: a bounded wait for every node's trainers to go
    gone = gone_after(lab, time.time(), 30)
    left = {h: lab.ssh(h, f"pgrep -f '{TRAINER}' || true").stdout.split() for h in lab.hosts}
    queued = lab.ssh(lab.hosts[0], f"squeue --noheader --name=rdmaops-{job}").stdout.strip()
    end_time = lab.ssh(
        lab.hosts[0],
        f"date -d \"$(scontrol show job {slurm_id or 0} -o | grep -o 'EndTime=[^ ]*' | cut -d= -f2)\" +%s",
    ).stdout.strip()
    ended = float(end_time) - float(stamped[0]) if end_time.isdigit() and stamped else None
    check(
        f"kill -9 of one trainer on {victim}: the job and the play fail, nothing left running",
        stamped[1:] == ["killed"]
        and proc.returncode not in (0, None)
        and ended is not None
        and ended <= 30
        and not any(left.values())
        and not queued
        and "the Slurm job was cancelled" in out,
        f"Slurm job {slurm_id or '?'} ended {ended if ended is None else round(ended)} s after the kill (its "
        f"EndTime), every rank gone {gone and round(gone, 1)} s after the play; trainers left: {left}; "
        f"squeue: {queued or 'empty'}",
    )


HEALTH_INTERVAL_S = 10
HEALTH_WAIT_S = 60


def node_reason(lab: SlurmLab, node: str) -> tuple[str, str]:
    """(the node's state in sinfo, its reason in sinfo -R or '')."""
    first = lab.hosts[0]
    state = lab.ssh(first, f"sinfo --noheader --Node --nodes={node} --format=%t").stdout.strip()
    reasons = lab.ssh(first, "sinfo -R --noheader --format='%n|%E'").stdout.splitlines()
    mine = [r.split("|", 1)[1] for r in reasons if r.split("|", 1)[0] == node]
    return state, (mine[0] if mine else "")


def wait_node(lab: SlurmLab, node: str, ok: Callable[[str, str], bool]) -> tuple[float | None, str, str]:
    start = time.monotonic()
    while True:
        state, reason = node_reason(lab, node)
        if ok(state, reason):
            return time.monotonic() - start, state, reason
        if time.monotonic() - start > HEALTH_WAIT_S:
            return None, state, reason
        time.sleep(1)


def munge_checks(lab: SlurmLab, key_b64: str, out: str) -> None:
    pieces = [key_b64[i : i + 24] for i in range(0, len(key_b64) - 24, 24)]
    leaked = [p for p in pieces if p in out]
    check(
        "the munge key never appears in the -vvv output",
        len(key_b64) > 100 and not leaked,
        f"{len(out)} characters of output searched for {len(pieces)} pieces of the key: {len(leaked)} found",
    )
    stats = {
        h: lab.ssh(
            h, "stat -c '%a %U %G' /etc/munge/munge.key; sha256sum < /etc/munge/munge.key"
        ).stdout.split("\n")
        for h in lab.hosts
    }
    modes = {h: s[0] for h, s in stats.items()}
    digests = {s[1] for s in stats.values()}
    check(
        "one key on every node, mode 0400, owned by munge",
        set(modes.values()) == {"400 munge munge"} and len(digests) == 1,
        f"{modes}",
    )
    cred = lab.ssh(lab.hosts[0], "munge -n").stdout
    decoded = [
        lab.ssh(h, f"echo {cred.strip()} | unmunge >/dev/null && echo ok").stdout.strip() for h in lab.hosts
    ]
    check("a credential of the controller decodes on every node", decoded == ["ok"] * len(lab.hosts))


def stale_munged(lab: SlurmLab, host: str) -> bool:
    """Leave HOST's munged on another key than its key file, as a site.yml run stopped between the key's
    install and its handler does (the file rewritten after munged started: one second later, as the role
    compares whole seconds); True when a credential of the controller then fails there."""
    lab.ssh(
        host,
        "set -e; cp -p /etc/munge/munge.key /root/cluster.key;"
        " mungekey --create --force --keyfile /root/other.key;"
        " install -m 0400 -o munge -g munge /root/other.key /etc/munge/munge.key; systemctl restart munge;"
        " cat /root/cluster.key > /etc/munge/munge.key; rm -f /root/cluster.key /root/other.key;"
        # the file a second newer than munged's start, as the role compares whole seconds: set, not waited for
        " started=$(systemctl show munge -P ExecMainStartTimestamp --timestamp=unix | tr -d @);"
        ' touch -d "@$((started + 1))" /etc/munge/munge.key',
    )
    cred = lab.ssh(lab.hosts[0], "munge -n").stdout.strip()
    decoded = lab.ssh(host, f"echo {cred} | unmunge >/dev/null 2>&1 && echo ok || echo failed").stdout
    return decoded.strip() == "failed"


def case_reconfigure(lab: SlurmLab) -> None:
    """One edited inventory, two changes that need only `scontrol reconfigure`: node2's declared memory
    lowered, and node3's health check made to read a GPU report (the recorded H200 XML, the file the node's
    check reads in place of nvidia-smi) every 10 s. slurmd then drains node3 when uncorrectable ECC errors are
    written into the report, with the check as the reason, and resumes it when they are gone. The inventory
    as it was, run with -vvv, puts everything back with another reconfigure, and the munge key is never in
    that output. (The no-change run is molecule's idempotence step, which runs this role in site.yml.)"""
    mem_node, node = lab.hosts[1], lab.hosts[2]
    key_b64 = lab.ssh(lab.hosts[0], "base64 -w0 /etc/munge/munge.key").stdout.strip()
    found = int(lab.ssh(mem_node, "slurmd -C | sed -n 's/.*RealMemory=\\([0-9]*\\).*/\\1/p'").stdout.strip())
    declared = found - 1024
    folder = lab.shared("/shared/health-test")
    folder.mkdir(parents=True, exist_ok=True)
    smi = folder / f"{node}-nvidia-smi.xml"
    smi.write_text(SMI_XML.read_text())

    def change(doc: dict[str, Any]) -> None:
        _cluster(doc)[mem_node].update(slurm_real_memory=declared)
        _cluster(doc)[node].update(slurm_health_sources={"nvidia_smi": f"/shared/health-test/{smi.name}"})

    inv = lab.edited(change)
    try:
        before = lab.pids()
        rc, out, took = lab.play_on(
            inv, "playbooks/slurm.yml", "-e", f"slurm_health_check_interval={HEALTH_INTERVAL_S}"
        )
        after = lab.pids()
        shown = lab.ssh(lab.hosts[0], f"scontrol show node {mem_node}").stdout
        conf = lab.ssh(node, "grep ^HealthCheck /etc/slurm/slurm.conf; cat /etc/rdmaops/health.json").stdout
        check(
            f"{mem_node}'s declared memory lowered: scontrol reconfigure, nothing restarted",
            rc == 0
            and handler_result(out, "Reconfigure Slurm") == "changed"
            and handler_result(out, "Restart slurmctld") == "skipping"
            and handler_result(out, "Restart slurmd") == "skipping"
            and before == after
            and f"RealMemory={declared} " in shown,
            f"RealMemory {found} -> {declared} MiB in {took:.1f} s; daemon PIDs before {before}, "
            f"after {after}" + ("" if rc == 0 else "\n" + out[-2000:]),
        )
        check(
            f"the same run sets the HealthCheckProgram (every {HEALTH_INTERVAL_S} s) with that reconfigure",
            "HealthCheckProgram=/usr/local/sbin/rdmaops-health" in conf
            and f"HealthCheckInterval={HEALTH_INTERVAL_S}" in conf
            and '"slurm": true' in conf,
            " ".join(conf.split())[:200],
        )
        smi.write_text(smi_with_ecc_errors())
        drained, state, reason = wait_node(lab, node, lambda st, why: "drain" in st and bool(why))
        check(
            f"{node} is drained with the check as the reason (sinfo -R)",
            drained is not None
            and reason.startswith(
                "rdmaops-health: gpu.ecc_volatile GPU 1 (00000000:00:07.0): 2 uncorrectable ECC errors"
            )
            and "(value 2, threshold 0)" in reason,
            f"after {drained if drained is None else round(drained, 1)} s: state {state}, reason {reason!r}",
        )
        smi.write_text(SMI_XML.read_text())
        resumed, state, reason = wait_node(lab, node, lambda st, why: st == "idle" and not why)
        check(
            f"{node} is resumed when the check passes again",
            resumed is not None,
            f"after {resumed if resumed is None else round(resumed, 1)} s: state {state}, reason {reason!r}",
        )
    finally:
        stale = stale_munged(lab, mem_node)
        munged = lab.pids("munge")
        rc, out, took = lab.play("playbooks/slurm.yml", "-vvv")
        restarted = [h for h, pid in lab.pids("munge").items() if pid != munged[h]]
        check(
            f"{mem_node}'s munged, on another key than its file (a run stopped before its restart handler), "
            "is restarted by the next run, and only it",
            stale and restarted == [mem_node],
            f"a credential failed on {mem_node} before the run: {stale}; munged restarted on {restarted}",
        )
        state, reason = node_reason(lab, node)
        if reason.startswith("rdmaops-health:"):  # leave the lab as converged whatever happened above
            lab.ssh(lab.hosts[0], f"scontrol update NodeName={node} State=RESUME")
        conf = lab.ssh(node, "grep ^HealthCheckInterval /etc/slurm/slurm.conf").stdout.strip()
        shown = lab.ssh(lab.hosts[0], f"scontrol show node {mem_node}").stdout
        check(
            "slurm.yml -vvv with the inventory as it was: reconfigured back, interval 300, every node idle",
            rc == 0
            and handler_result(out, "Reconfigure Slurm") == "changed"
            and f"RealMemory={found} " in shown
            and "State=IDLE" in shown
            and conf == "HealthCheckInterval=300"
            and state == "idle",
            f"{took:.1f} s; {conf}; {node} {state}",
        )
        shutil.rmtree(inv, ignore_errors=True)
        smi.unlink(missing_ok=True)
    munge_checks(lab, key_b64, out)


CASES: dict[str, Callable[[SlurmLab], None]] = {
    "srun": case_srun,
    "bad_inputs": case_bad_inputs,
    "train": case_train,
    "kill_task": case_kill_task,
    "reconfigure": case_reconfigure,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inventory", type=Path, required=True)
    parser.add_argument("--only", nargs="*", choices=list(CASES))
    args = parser.parse_args()
    return run_cases(CASES, SlurmLab(args.inventory.resolve()), args.only)


if __name__ == "__main__":
    sys.exit(main())
