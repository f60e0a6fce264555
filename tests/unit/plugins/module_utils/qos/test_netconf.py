"""module_utils/qos/netconf.py against a scripted NETCONF peer (netconf_peer.py) that behaves as RFC 6241
allows: the order of operations, every failure before the confirmed commit ending with a message naming the
switch, the step and a known switch state, locks held by others, the confirm timing, and read-back under the
models' defaults. The lab runs the same flow against netconfd (tests/switch_qos/run.py).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import netconf as nq
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import netconf_errors as ne
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import netconf_session as ns
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch_models as sm

from .netconf_peer import Server
from .netconf_run import NX_FACTORY, TARGET, XE_FACTORY, apply, committed, ops, plan

# ------------------------------------------------------------------ the path that works


def test_check_mode_reads_only(tmp_path: Path) -> None:
    server = Server(XE_FACTORY)
    out = nq.apply(TARGET, plan(), True, str(tmp_path), 60, connector=server.connect)
    assert out.changed and "+ class-map match-any ROCE / match dscp 26" in out.differences
    assert ops(server) == ["hello", "get-config running", "close-session"]
    assert list(tmp_path.iterdir()) == []


def test_change_goes_through_a_verified_confirmed_commit(tmp_path: Path) -> None:
    server = Server(XE_FACTORY)
    out = apply(server, tmp_path)
    assert out.changed and out.backup and Path(out.backup).read_text().startswith("<")
    assert ops(server) == [
        "hello", "get-config running", "lock running", "lock candidate", "get-config running",
        "discard-changes", "edit-config candidate", "validate", "commit confirmed", "get-config running",
        "commit", "discard-changes", "unlock candidate", "unlock running", "close-session",
    ]  # fmt: skip
    assert ops(server, 2) == ["hello", "close-session"]  # the management check
    assert server.pending is None and committed(server)
    again = Server(server.text())
    assert not apply(again, tmp_path).changed and ops(again) == [
        "hello",
        "get-config running",
        "close-session",
    ]


def test_the_backup_is_taken_under_the_locks_and_only_then(tmp_path: Path) -> None:
    server = Server(XE_FACTORY)
    server.locks["candidate"] = 7
    with pytest.raises(ne.NetconfQosError):
        apply(server, tmp_path)
    assert list(tmp_path.iterdir()) == [], "a backup was written although the change never started"
    server = Server(XE_FACTORY)
    apply(server, tmp_path)
    seq = ops(server)
    assert seq.index("lock candidate") < seq.index("get-config running", seq.index("lock running"))


# ------------------------------------------------------------------ any ncclient exception, before the commit


STEPS_BEFORE_COMMIT = [
    "lock running",
    "lock candidate",
    "discard-changes",
    "edit-config candidate",
    "validate",
]


@pytest.mark.parametrize("kind", ["timeout", "drop", "operation-error", "rpc-error"])
@pytest.mark.parametrize("step", STEPS_BEFORE_COMMIT)
def test_a_failure_before_the_commit_changes_nothing_and_says_where(
    kind: str, step: str, tmp_path: Path
) -> None:
    server = Server(XE_FACTORY)
    before = server.text()
    server.inject(step, kind)
    with pytest.raises(ne.NetconfQosError) as exc:
        apply(server, tmp_path)
    msg = str(exc.value)
    assert msg.startswith("sw1: ") and step.split()[0] in msg, msg
    assert "nothing was" in msg and "commit" not in [o for o in ops(server) if o.startswith("commit")]
    assert server.text() == before and server.pending is None
    # No lock is left behind by this run, and its own edit is not left in the candidate.
    assert server.locks == {} and "ROCE" not in server.text("candidate")


# ------------------------------------------------------------------ locks held by others


def test_another_sessions_uncommitted_candidate_survives_and_the_message_is_true(tmp_path: Path) -> None:
    server = Server(XE_FACTORY)
    theirs = (
        f'<config xmlns="{sm.NC}"><native xmlns="{sm.XE}"><policy><class-map xmlns="{sm.XE_POLICY}">'
        "<name>THEIRS</name><prematch>match-any</prematch></class-map></policy></native></config>"
    )
    server.edit_from_elsewhere(theirs)
    with pytest.raises(ne.NetconfQosError) as exc:
        apply(server, tmp_path)
    assert "uncommitted changes of another session" in str(exc.value)
    assert "left as they are" in str(exc.value) and "nothing was changed" in str(exc.value)
    assert "THEIRS" in server.text("candidate"), "this run discarded a candidate it did not lock"
    assert "discard-changes" not in ops(server) and server.locks == {}


def test_a_candidate_locked_by_another_session_is_not_touched(tmp_path: Path) -> None:
    server = Server(XE_FACTORY)
    server.locks["candidate"] = 7
    with pytest.raises(
        ne.NetconfQosError, match=r"^sw1: the candidate datastore is locked by session 7; nothing was changed"
    ):
        apply(server, tmp_path)
    assert "discard-changes" not in ops(server) and server.locks == {"candidate": 7}


def test_running_locked_by_the_cli_is_refused_naming_it(tmp_path: Path) -> None:
    server = Server(XE_FACTORY)
    server.locks["running"] = 0
    with pytest.raises(ne.NetconfQosError, match=r"running datastore is locked by a non-NETCONF session"):
        apply(server, tmp_path)


# ------------------------------------------------------------------ timing, before any session


@pytest.mark.parametrize(
    ("confirm", "hold", "reply", "message"),
    [
        (
            10,
            60,
            3,
            "switch_qos_hold_before_confirm 60 s is not shorter than switch_qos_confirm_timeout 10 s",
        ),
        (120, -1, 30, "switch_qos_hold_before_confirm must be 0 or more seconds, got -1"),
        (60, 0, 30, "switch_qos_confirm_timeout 60 s is too short to verify before the switch rolls back"),
        (0, 0, 30, "switch_qos_confirm_timeout must be 1..3600 seconds, got 0"),
    ],
)
def test_hold_and_confirm_timeout_are_checked_together_before_any_session(
    confirm: int, hold: int, reply: int, message: str, tmp_path: Path
) -> None:
    def connector(_t: Any) -> Any:
        raise AssertionError("a session was opened")

    target = ns.Target(name="sw1", host="192.0.2.1", password="x", timeout=reply)
    with pytest.raises(ne.NetconfQosError) as exc:
        nq.apply(target, plan(), False, str(tmp_path), confirm, hold, connector=connector)
    assert message in str(exc.value) and "no session was opened" in str(exc.value)
    assert nq.timing_errors(120, 0, 30) == [] and nq.timing_errors(20, 10, 3) == []


# ------------------------------------------------------------------ read-back with the model's defaults


@pytest.mark.parametrize("mtu", [1500, 9216])
def test_nx_os_network_qos_mtu_at_its_default_reads_back_under_trim(mtu: int, tmp_path: Path) -> None:
    server = Server(NX_FACTORY, basic_mode="trim")
    out = apply(server, tmp_path, plan("nx-os", mtu=mtu))
    assert out.changed and committed(server) and server.pending is None
    if mtu == 1500:
        assert ":value>1500</" in server.text()  # stored; a trimmed reply leaves it out
    again = Server(server.text(), basic_mode="trim")
    second = apply(again, tmp_path, plan("nx-os", mtu=mtu))
    assert not second.changed, second.differences


@pytest.mark.parametrize("level", [1, 2])
def test_priority_level_reads_back_equal_to_and_different_from_the_default(
    level: int, tmp_path: Path
) -> None:
    for platform, factory in (("ios-xe", XE_FACTORY), ("nx-os", NX_FACTORY)):
        server = Server(factory, basic_mode="trim")
        p = plan(platform, priority_level=level)
        assert apply(server, tmp_path, p).changed
        assert not apply(Server(server.text(), basic_mode="trim"), tmp_path, p).changed


def test_a_named_with_defaults_mode_the_switch_lacks_is_refused_before_any_change(tmp_path: Path) -> None:
    server = Server(XE_FACTORY, basic_mode="explicit", also=("trim",))
    p = plan()
    p.with_defaults = "report-all"
    with pytest.raises(ne.NetconfQosError, match=r"^sw1: the switch does not offer with-defaults report-all"):
        apply(server, tmp_path, p)
    assert ops(server) == ["hello", "close-session"] and not committed(server)
    p.with_defaults = "trim"
    assert apply(Server(XE_FACTORY, basic_mode="explicit", also=("trim",)), tmp_path, p).changed


def test_the_test_hook_stops_the_module_after_the_verified_commit_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RDMAOPS_SWITCH_QOS_PAUSE=verified: one SIGSTOP to itself, once the commit is read back and verified
    and before the management session (the lab's switch cases make their fault there)."""
    stops: list[tuple[int, int, list[str], int]] = []
    server = Server(XE_FACTORY)

    def kill(pid: int, sig: int) -> None:
        stops.append((pid, sig, ops(server), len(server.sessions)))

    monkeypatch.setattr(nq.os, "kill", kill)
    apply(server, tmp_path)
    assert stops == []  # unset: never
    monkeypatch.setenv(nq.PAUSE_ENV, "verified")
    server = Server(XE_FACTORY)
    apply(server, tmp_path)
    assert [(pid, sig) for pid, sig, _seen, _sessions in stops] == [(os.getpid(), signal.SIGSTOP)]
    _pid, _sig, seen, sessions = stops[0]
    # the commit read back on the first session; the management check's session not opened yet
    assert seen[-2:] == ["commit confirmed", "get-config running"] and sessions == 1
    assert len(server.sessions) == 2 and committed(server)
