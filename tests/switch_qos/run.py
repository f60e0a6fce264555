"""Switch QoS against the lab's switch (netconfd with the project's Cisco-namespace YANG, NETCONF over SSH).

    .venv/bin/python tests/switch_qos/run.py --inventory inventories/mol [--only NAME ...]

Each case resets the switch to its factory configuration, runs playbooks/switch_qos.yml as a user would,
and checks the switch through a NETCONF session of its own: what running holds, that candidate was left
equal to running, how many sessions were opened. One line per check, "N passed, M failed" at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from ncclient import manager
from ncclient.transport import AuthenticationError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from labkit import (
    ROOT,
    add_tier,
    check,
    chosen,
    env,
    finish,
    process_tree,
    run_bounded,
    run_cases,
    signal_tree,
    spawn,
    tool,
)

PLAYBOOK = "playbooks/switch_qos.yml"
MONITORING = "urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring"
NC = "urn:ietf:params:xml:ns:netconf:base:1.0"


class Switch:
    def __init__(self, inventory: Path) -> None:
        self.inventory = inventory
        doc = yaml.safe_load((inventory / "hosts.yml").read_text())
        group = doc["all"]["children"]["switches"]
        self.name, host = next(iter(group["hosts"].items()))
        self.addr = host["ansible_host"]
        self.ports = host["switch_qos_interfaces"]
        self.vars = group["vars"]
        self.key = self.vars["switch_qos_ssh_key"]

    def session(self) -> Any:
        return manager.connect(
            host=self.addr,
            port=830,
            username=self.vars["switch_qos_username"],
            key_filename=self.key,
            hostkey_verify=False,
            look_for_keys=False,
            allow_agent=False,
            timeout=30,
        )

    def ssh(self, command: str) -> subprocess.CompletedProcess[str]:
        argv = ["ssh", "-i", self.key, "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no"]
        argv += ["-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", f"root@{self.addr}", command]
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)

    def datastores(self) -> tuple[str, str]:
        """Digests of running and candidate (16 hex characters each)."""
        with self.session() as m:
            run = m.get_config(source="running").data_xml
            cand = m.get_config(source="candidate").data_xml
        return _digest(run), _digest(cand)

    def running(self) -> str:
        with self.session() as m:
            return str(m.get_config(source="running").data_xml)

    def factory(self) -> None:
        """Running (and candidate) back to the lab's factory configuration."""
        text = self.ssh("cat /etc/rdmaops-lab/factory-cfg.xml").stdout
        config = re.sub(r"<\?xml[^>]*\?>", "", text)
        with self.session() as m:
            m.lock(target="candidate")
            try:
                m.discard_changes()
                m.edit_config(target="candidate", config=config, default_operation="replace")
                m.commit()
            finally:
                m.unlock(target="candidate")

    def play(self, *extra: str, timeout: float = 300) -> tuple[int, str, float]:
        argv = [tool("ansible-playbook"), "-i", str(self.inventory), "--limit", self.name, PLAYBOOK, *extra]
        start = time.monotonic()
        rc, out, err = run_bounded(argv, timeout, cwd=ROOT, env=env())
        return rc, out + err, time.monotonic() - start

    def play_async(self, *extra: str, pause: str = "") -> subprocess.Popen[str]:
        """The play in the background; PAUSE: the switch_qos module's test hook (RDMAOPS_SWITCH_QOS_PAUSE)."""
        argv = [tool("ansible-playbook"), "-i", str(self.inventory), "--limit", self.name, PLAYBOOK, *extra]
        return spawn(
            argv,
            cwd=ROOT,
            env={**env(), "RDMAOPS_SWITCH_QOS_PAUSE": pause} if pause else env(),
            start_new_session=True,
        )


def _digest(xml: str) -> str:
    return hashlib.sha256(xml.encode()).hexdigest()[:16]


def _changed(out: str) -> str:
    m = re.search(r"changed=(\d+)", out)
    return m.group(1) if m else "?"


def _msg(out: str) -> str:
    m = re.search(r'"msg": "([^"]*)"|msg: (.*)', out)
    return (m.group(1) or m.group(2)) if m else out[-300:]


def _nx(switch: Switch) -> list[str]:
    return ["-e", "switch_qos_platform=nx-os", "-e", '{"switch_qos_interfaces": ["Ethernet1/1", "eth1/2"]}']


BACKUPS = Path.home() / ".rdmaops" / "switch-backups"


def case_apply(sw: Switch) -> None:
    sw.factory()
    factory = sw.running()
    kept = set(BACKUPS.glob("*.xml")) if BACKUPS.is_dir() else set()
    rc, out, took = sw.play()
    text = sw.running()
    want = ["<dscp>26</dscp>", "<qos-group-value>3</qos-group-value>", "<level>1</level>", "<mtu>9216</mtu>"]
    new = sorted(set(BACKUPS.glob("*.xml")) - kept) if BACKUPS.is_dir() else []
    check(
        "IOS-XE apply: class-maps, policy-maps and the ports' service-policies and MTU are in running",
        rc == 0 and _changed(out) == "1" and all(w in text for w in want) and "ROCE-OUT" in text,
        f"rc={rc} changed={_changed(out)} {took:.1f} s",
    )
    check(
        "IOS-XE apply warns that PFC was not configured (no YANG model for it)",
        "PFC on CoS 3 was NOT configured" in out,
    )
    saved = new[0].read_text() if len(new) == 1 else ""
    check(
        "the running configuration before the change is kept on the controller (mode 0600)",
        len(new) == 1
        and "HundredGigE" in saved
        and "ROCE" not in saved
        and "ROCE" not in factory
        and (new[0].stat().st_mode & 0o777) == 0o600,
        f"{new[0] if new else 'no new backup'}",
    )
    rc, out, took = sw.play()
    check("IOS-XE re-apply: changed=0", rc == 0 and _changed(out) == "0", f"no-change run {took:.1f} s")


def case_check_mode(sw: Switch) -> None:
    sw.factory()
    before = sw.datastores()
    rc, out, took = sw.play("--check", "--diff")
    after = sw.datastores()
    check(
        "check mode: reports the change and shows the diff",
        rc == 0
        and _changed(out) == "1"
        and "+ match dscp 26" in out
        and "service-policy input ROCE-IN" in out,
        f"rc={rc} changed={_changed(out)} {took:.1f} s",
    )
    check(
        "check mode: running and candidate untouched (candidate equals running)",
        before == after and after[0] == after[1],
        f"running/candidate digests before {before} after {after}",
    )


def case_nx_os(sw: Switch) -> None:
    sw.factory()
    rc, out = sw.play(*_nx(sw))[:2]
    text = sw.running()
    want = ["<pfcCos3>true</pfcCos3>", "<mode>1</mode>", "c-8q-nq3", "<ecn>true</ecn>", "<val>26</val>"]
    # The blueprint's design: CNP (DSCP 48) to qos-group 7 on the strict queue, RoCE weighted, PFC watchdog.
    want += [
        "<val>48</val>",
        "c-out-8q-q7",
        "setRemBW-items",
        "<val>60</val>",
        "<watchDogInterval>1<",
        "c-8q-nq-default",
    ]
    check(
        "NX-OS apply: qos (RoCE and CNP), network-qos (pause pfc-cos 3, MTU) and queuing (CNP strict, RoCE "
        "weighted with ECN) policies, PFC mode on and its watchdog, MTU on the ports",
        rc == 0 and _changed(out) == "1" and all(w in text for w in want),
        f"rc={rc} changed={_changed(out)}; missing {[w for w in want if w not in text]}",
    )
    rc, out, took = sw.play(*_nx(sw))
    check("NX-OS re-apply: changed=0", rc == 0 and _changed(out) == "0", f"no-change run {took:.1f} s")
    sw.factory()


def case_bad_inputs(sw: Switch) -> None:
    sw.factory()
    before = sw.datastores()
    cases = [
        (["-e", '{"roce_qos": {"dscp": 64}}'], "roce_qos.dscp must be an integer 0..63, got 64", True),
        (
            ["-e", '{"roce_qos": {"priority_level": 3}}'],
            "roce_qos.priority_level must be an integer 1..2, got 3",
            True,
        ),
        (["-e", '{"roce_qos": {"cos": 8}}'], "roce_qos.cos must be an integer 0..7, got 8", True),
        (
            ["-e", '{"switch_qos_interfaces": ["HundredGigE1/0/1", "HundredGigE1/0/9"]}'],
            "lists HundredGigE1/0/9, which the switch does not have",
            False,
        ),
        (
            ["-e", '{"switch_qos_interfaces": ["HundredGigE1/0/1", "HundredGigE1/0/1"]}'],
            "interface 'HundredGigE1/0/1' is listed twice",
            True,
        ),
        (
            ["-e", '{"switch_qos_interfaces": ["HundredGigE1/0/1", "HundredGigE01/0/01"]}'],
            "interface 'HundredGigE01/0/01' is listed twice (also as 'HundredGigE1/0/1')",
            True,
        ),
        (
            ["-e", '{"switch_qos_ecn": {"min_kbytes": "150k"}}'],
            "switch_qos_ecn.min_kbytes must be a whole number 0..52428800 kbytes, got '150k'",
            True,
        ),
        (
            ["-e", "switch_qos_confirm_timeout=10", "-e", "switch_qos_hold_before_confirm=60"],
            "switch_qos_hold_before_confirm 60 s is not shorter than switch_qos_confirm_timeout 10 s",
            True,
        ),
    ]
    for extra, expected, no_session in cases:
        rc, out, took = sw.play(*extra)
        # The module task is where the NETCONF session opens: a value error must stop the play before it.
        module_ran = "TASK [rdmaops.cluster.switch_qos : Apply RoCE QoS" in out
        check(
            f"refused: {expected}",
            rc != 0 and expected in out and sw.datastores() == before and module_ran != no_session,
            f"{took:.1f} s; "
            f"{'read running, no lock or edit' if module_ran else 'before any NETCONF session'}; "
            f"{_msg(out)[:200]}",
        )


def _held(proc: subprocess.Popen[str], limit: float = 120) -> bool:
    """Until a process of the play is stopped (state T): the switch_qos module where its test hook holds it
    (RDMAOPS_SWITCH_QOS_PAUSE=verified: the confirmed commit read back and verified, before the hold and the
    management check). Bounded by LIMIT; False if the play ended first."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and proc.poll() is None:
        for pid in process_tree(proc.pid):
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "T":
                    return True
        time.sleep(0.1)
    return False


class Events:
    """The switch's own account of confirmed commits (RFC 6470 netconf-confirmed-commit notifications, which
    netconfd sends): a subscription opened before a case, read after it."""

    NOTIF = "urn:ietf:params:xml:ns:yang:ietf-netconf-notifications"

    def __init__(self, sw: Switch) -> None:
        self.m = sw.session()
        self.m.create_subscription()
        self.seen: list[str] = []

    def until(self, wanted: str, limit: float) -> list[str]:
        """Read notifications until a confirmed commit's event WANTED (or LIMIT s): every event so far, as
        'start', 'cancel', 'timeout', 'complete' or 'session-end'."""
        deadline = time.monotonic() + limit
        while wanted not in self.seen and time.monotonic() < deadline:
            note = self.m.take_notification(block=True, timeout=1)
            if note is None:
                continue
            root = note.notification_ele
            event = root.find(f"{{{self.NOTIF}}}netconf-confirmed-commit/{{{self.NOTIF}}}confirm-event")
            if event is not None and event.text:
                self.seen.append(event.text)
            elif root.find(f"{{{self.NOTIF}}}netconf-session-end") is not None:
                self.seen.append("session-end")
        return self.seen

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.m.close_session()


def _wait_for(sw: Switch, text: str, present: bool, limit: float) -> float | None:
    """Seconds until running does (or no longer does) hold text, polled once a second on one session
    (netconfd's confirmed-commit timer runs late while sessions are opened many times a second)."""
    start = time.monotonic()
    m = None
    while time.monotonic() - start < limit:
        try:
            m = m or sw.session()
            if (text in m.get_config(source="running").data_xml) == present:
                m.close_session()
                return time.monotonic() - start
        except Exception:  # a session refused while the switch blocks new ones: try again
            m = None
        time.sleep(1.0)
    return None


# New NETCONF logins refused (port 830 only: the case still reaches the switch's shell on port 22); sessions
# already open, the module's, carry on. The second command undoes it.
DENY_NETCONF = (
    "printf 'Match LocalPort 830\\n  DenyUsers root\\n' > /etc/ssh/sshd_config.d/zz-test-deny.conf; "
    "systemctl reload ssh"
)
ALLOW_NETCONF = "rm -f /etc/ssh/sshd_config.d/zz-test-deny.conf; systemctl reload ssh"


def _refused(sw: Switch, limit: float = 30) -> bool:
    """Until a new NETCONF session is refused (sshd has read the deny): bounded by LIMIT."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            sw.session().close_session()
        except AuthenticationError:  # refused: the deny holds
            return True
        except Exception:  # e.g. a reset while sshd re-reads its configuration: ask again
            pass
        time.sleep(0.5)
    return False


def case_verify_fails(sw: Switch) -> None:
    """After the confirmed commit the module's fresh management session is refused: it must cancel. The module
    holds right after the verified commit (its test hook) while new NETCONF logins are denied, so its
    management check meets the deny by construction."""
    sw.factory()
    base = sw.datastores()[0]
    proc = sw.play_async(pause="verified")
    held = _held(proc)
    try:
        committed = "ROCE-OUT" in sw.running() if held else False
        if held:
            sw.ssh(DENY_NETCONF)
        denied = held and _refused(sw)
    finally:
        signal_tree(proc.pid, signal.SIGCONT)
    try:
        out = finish(proc, 180)
    finally:
        sw.ssh(ALLOW_NETCONF)
    back = _wait_for(sw, "ROCE-OUT", False, 30)
    check(
        "a failed verification after the commit cancels it: the play fails, the switch is back as before",
        held
        and committed
        and denied
        and proc.returncode != 0
        and "commit cancelled" in out
        and back is not None
        and sw.datastores()[0] == base,
        f"held after the verified commit {held} (running holds it {committed}), new logins refused {denied}; "
        f"{_msg(out)[:220]}; back after {back} s",
    )


def case_killed(sw: Switch) -> None:
    """The controller dies between commit and confirm: the switch rolls back when the timeout expires. The
    module holds right after the verified commit (its test hook) and is killed there; the switch's own
    notifications must then say: the commit started, its session ended, and the confirm timed out (nothing
    cancelled or confirmed it), after which running is as before."""
    sw.factory()
    base = sw.datastores()[0]
    timeout = 20
    events = Events(sw)
    try:
        proc = sw.play_async("-e", f"switch_qos_confirm_timeout={timeout}", "-e", "switch_qos_timeout=3",
                             pause="verified")  # fmt: skip
        held = _held(proc)
        killed = signal_tree(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        seen = events.until("timeout", timeout + 60)
    finally:
        events.close()
    ends = [e for e in seen if e != "session-end"]
    check(
        f"play killed between commit and confirm: rolled back by the switch after the {timeout} s timeout",
        held
        and ends == ["start", "timeout"]
        and seen.index("session-end", seen.index("start")) < seen.index("timeout")
        and sw.datastores()[0] == base,
        f"held after the verified commit {held}; {killed} processes killed; the switch's events {seen}",
    )


def case_locked(sw: Switch) -> None:
    sw.factory()
    before = sw.datastores()
    with sw.session() as holder:
        holder.lock(target="candidate")
        sid = holder.session_id
        rc, out, took = sw.play()
        holder.unlock(target="candidate")
    check(
        "a locked datastore: refused with the holder's session, user and address, nothing changed",
        rc != 0 and f"locked by session {sid} (user root from" in out and sw.datastores() == before,
        f"{took:.1f} s; {_msg(out)[:220]}",
    )


def case_others_candidate(sw: Switch) -> None:
    """Another session edited the candidate and did not commit: the play refuses and leaves that edit."""
    sw.factory()
    before = sw.datastores()[0]
    theirs = (
        f'<config xmlns="{NC}"><native xmlns="http://cisco.com/ns/yang/Cisco-IOS-XE-native"><policy>'
        '<class-map xmlns="http://cisco.com/ns/yang/Cisco-IOS-XE-policy"><name>THEIRS</name>'
        "<prematch>match-any</prematch></class-map></policy></native></config>"
    )
    with sw.session() as other:
        other.edit_config(target="candidate", config=theirs)
        rc, out, took = sw.play()
        kept = "THEIRS" in other.get_config(source="candidate").data_xml
        other.discard_changes()
    check(
        "another session's uncommitted candidate: refused, its edit left in the candidate, running untouched",
        rc != 0 and "uncommitted changes of another session" in out and kept and sw.datastores()[0] == before,
        f"{took:.1f} s; candidate kept the other edit: {kept}; {_msg(out)[:200]}",
    )


def case_defaults(sw: Switch) -> None:
    """Values equal to the model's defaults (NX-OS MTU 1500, priority level 1) under with-defaults trim, which
    leaves them out of every reply: the change is verified and the re-run changes nothing."""
    sw.factory()
    qos = ["-e", '{"roce_qos": {"mtu": 1500, "priority_level": 1}}', "-e", "switch_qos_with_defaults=trim"]
    for label, platform in (("NX-OS", _nx(sw)), ("IOS-XE", [])):
        rc, out, took = sw.play(*platform, *qos)
        first = (rc, _changed(out))
        rc2, out2, took2 = sw.play(*platform, *qos)
        check(
            f"{label} MTU 1500 and priority level 1 under with-defaults trim: applied, re-run changed=0",
            first == (0, "1") and rc2 == 0 and _changed(out2) == "0",
            f"first rc={first[0]} changed={first[1]} {took:.1f} s; re-run rc={rc2} changed={_changed(out2)} "
            f"{took2:.1f} s; {_msg(out if first[0] else out2)[:160]}",
        )
        sw.factory()


def case_nic_qos_veth(sw: Switch) -> None:
    """The host side on a lab node: its data port (a veth) has no DCB, which is said, not failed."""
    doc = yaml.safe_load((sw.inventory / "hosts.yml").read_text())
    # the last node: molecule's verify runs these cases beside the cut-off case, which takes the first node
    # off the management network
    node = list(doc["all"]["children"]["cluster"]["hosts"])[-1]
    env_ = env()
    env_.update(ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.posix.json")
    argv = [tool("ansible"), "-i", str(sw.inventory), node, "-m", "rdmaops.cluster.nic_qos"]
    argv += ["-a", '{"devices": ["data0"], "dscp": 26, "cos": 3}']
    proc = subprocess.run(argv, cwd=ROOT, env=env_, capture_output=True, text=True, timeout=120, check=False)
    try:
        result = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"][node]
    except (ValueError, KeyError, IndexError):
        result = {}
    check(
        "nic_qos on a veth: no DCB support, said and skipped, nothing changed",
        proc.returncode == 0
        and result.get("changed") is False
        and result.get("unsupported") == ["data0: no DCB support (Attribute read: Operation not supported)"],
        f"{node}: {result.get('skipped') or proc.stdout[-300:]}",
    )


CASES: dict[str, Callable[[Switch], None]] = {
    "apply": case_apply,
    "check_mode": case_check_mode,
    "nx_os": case_nx_os,
    "bad_inputs": case_bad_inputs,
    "verify_fails": case_verify_fails,
    "killed": case_killed,
    "locked": case_locked,
    "others_candidate": case_others_candidate,
    "defaults": case_defaults,
    "nic_qos_veth": case_nic_qos_veth,
}
# What make test runs (--tier ci). The input refusals, a locked datastore and another session's candidate are
# also cases of the scripted NETCONF peer's unit tests (tests/unit/plugins/module_utils/qos/); --tier full.
CI = ["apply", "check_mode", "nx_os", "verify_fails", "killed", "defaults", "nic_qos_veth"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inventory", type=Path, required=True)
    parser.add_argument("--only", nargs="*", choices=list(CASES))
    add_tier(parser)
    args = parser.parse_args()
    sw = Switch(args.inventory.resolve())
    status = run_cases(CASES, sw, chosen(CI, args.only, args.tier))
    # Leave the switch configured as site.yml left it (molecule's later steps expect a converged lab).
    sw.factory()
    rc, out = sw.play()[:2]
    if rc != 0:
        print(out[-2000:])
    return status or rc


if __name__ == "__main__":
    sys.exit(main())
