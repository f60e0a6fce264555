"""module_utils/qos/netconf.py against a scripted NETCONF peer (netconf_peer.py) that behaves as RFC 6241
allows: the order of operations, and every failure path ending with a message naming the switch, the step and
a known switch state. The lab runs the same flow against netconfd (tests/switch_qos/run.py).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import netconf as nq
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import roce as rq
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch as sq

from .netconf_peer import Server

XE_PORTS = ["HundredGigE1/0/1"]
NX_PORTS = ["Ethernet1/1"]
XE_FACTORY = (
    f'<data xmlns="{sq.NC}"><native xmlns="{sq.XE}"><interface><HundredGigE><name>1/0/1</name></HundredGigE>'
    "</interface></native></data>"
)
NX_FACTORY = (
    f'<data xmlns="{sq.NC}"><System xmlns="{sq.NX}"><intf-items><phys-items><PhysIf-list><id>eth1/1</id>'
    "</PhysIf-list></phys-items></intf-items></System></data>"
)
TARGET = nq.Target(name="sw1", host="192.0.2.1", username="admin", password="x", timeout=5)


def plan(platform: str = "ios-xe", **qos: Any) -> nq.Plan:
    ports = XE_PORTS if platform == "ios-xe" else NX_PORTS
    return nq.Plan(platform, rq.settings(qos), ports, sq.Names(), sq.Ecn())


def apply(server: Server, tmp_path: Path, p: nq.Plan | None = None, **kw: Any) -> nq.Outcome:
    args: dict[str, Any] = {"confirm_timeout": 60, "connector": server.connect} | kw
    return nq.apply(TARGET, p or plan(), kw.pop("check", False), str(tmp_path), **args)


def ops(server: Server, sid: int = 1) -> list[str]:
    """The RPCs one session sent, without the locks it held."""
    return [line.split(" [")[0].split(" ", 1)[1] for line in server.log if line.startswith(f"{sid} ")]


def committed(server: Server) -> bool:
    return "ROCE-OUT" in server.text()


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
    with pytest.raises(nq.NetconfQosError):
        apply(server, tmp_path)
    assert list(tmp_path.iterdir()) == [], "a backup was written although the change never started"
    server = Server(XE_FACTORY)
    apply(server, tmp_path)
    seq = ops(server)
    assert seq.index("lock candidate") < seq.index("get-config running", seq.index("lock running"))


# ------------------------------------------------------------------ any ncclient exception, at any step

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
    with pytest.raises(nq.NetconfQosError) as exc:
        apply(server, tmp_path)
    msg = str(exc.value)
    assert msg.startswith("sw1: ") and step.split()[0] in msg, msg
    assert "nothing was" in msg and "commit" not in [o for o in ops(server) if o.startswith("commit")]
    assert server.text() == before and server.pending is None
    # No lock is left behind by this run, and its own edit is not left in the candidate.
    assert server.locks == {} and "ROCE" not in server.text("candidate")


@pytest.mark.parametrize("kind", ["timeout", "drop", "operation-error"])
def test_a_confirmed_commit_without_a_reply_is_cancelled_not_left_live(kind: str, tmp_path: Path) -> None:
    server = Server(XE_FACTORY)
    before = server.text()
    server.inject("commit confirmed", kind, applied=True)
    with pytest.raises(nq.NetconfQosError) as exc:
        apply(server, tmp_path)
    msg = str(exc.value)
    assert "confirmed commit" in msg and "commit cancelled" in msg, msg
    assert "running is back to its previous configuration" in msg
    # At once, not when the confirm timeout expires (a new session cancels if this one dropped).
    assert server.text() == before and server.pending is None
    assert any(line.endswith("cancel-commit []") or "cancel-commit" in line for line in server.log)


def test_a_refused_confirmed_commit_leaves_nothing_to_cancel(tmp_path: Path) -> None:
    server = Server(XE_FACTORY)
    server.inject("commit confirmed", "rpc-error")
    with pytest.raises(nq.NetconfQosError, match="nothing was committed: the switch keeps its previous"):
        apply(server, tmp_path)
    assert "cancel-commit" not in ops(server) and not committed(server)


@pytest.mark.parametrize("kind", ["rpc-error", "timeout", "drop"])
def test_a_failed_confirming_commit_cancels_the_pending_one_and_says_so(kind: str, tmp_path: Path) -> None:
    server = Server(XE_FACTORY)
    before = server.text()
    server.inject("commit", kind)
    with pytest.raises(nq.NetconfQosError) as exc:
        apply(server, tmp_path)
    msg = str(exc.value)
    assert "confirming commit" in msg and "commit cancelled" in msg, msg
    assert "keeps its previous configuration" not in msg
    assert server.text() == before and server.pending is None, (
        "the new configuration stays live until the timeout"
    )


def test_a_confirming_commit_whose_reply_was_lost_but_took_is_reported_as_done(tmp_path: Path) -> None:
    server = Server(XE_FACTORY)
    server.inject("commit", "timeout", applied=True)
    out = apply(server, tmp_path)
    assert out.changed and committed(server) and server.pending is None
    assert out.warnings and "which is confirmed" in out.warnings[0]


def refusing_after_first(server: Server) -> Any:
    """A connector whose second and later sessions are refused (management lost after the commit)."""

    def connector(target: Any) -> Any:
        if server.sessions:
            raise OSError("connection refused")
        return server.connect(target)

    return connector


def test_the_commit_is_cancelled_while_both_locks_are_held_then_unlocked(tmp_path: Path) -> None:
    server = Server(XE_FACTORY)
    # The management check (a new session after the commit) fails: the commit must be cancelled.
    with pytest.raises(nq.NetconfQosError, match=r"new NETCONF session .* failed .*commit cancelled"):
        apply(server, tmp_path, connector=refusing_after_first(server))
    cancel = next(line for line in server.log if " cancel-commit " in line)
    assert cancel.endswith("['candidate', 'running']"), cancel
    seq = ops(server)
    assert seq.index("cancel-commit") < seq.index("unlock running") and not committed(server)


def test_a_dropped_session_is_reconnected_to_cancel_with_the_persist_token(tmp_path: Path) -> None:
    server = Server(XE_FACTORY)
    before = server.text()

    def connector(target: Any) -> Any:
        session = server.connect(target)
        if len(server.sessions) == 1:
            commit = session.commit

            def commit_then_drop(**kw: Any) -> None:
                commit(**kw)
                if kw.get("confirmed"):  # the session drops before the read-back
                    server.inject("get-config running", "drop")

            session.commit = commit_then_drop  # type: ignore[method-assign]
        return session

    with pytest.raises(nq.NetconfQosError) as exc:
        apply(server, tmp_path, connector=connector)
    msg = str(exc.value)
    assert "read back after the confirmed commit: the session dropped" in msg, msg
    assert "cancel-commit sent on a new session" in msg and "running is back to its previous" in msg, msg
    # At once, not when the confirm timeout expires.
    assert server.text() == before and server.pending is None


def test_no_session_to_cancel_says_when_the_switch_rolls_back(tmp_path: Path) -> None:
    server = Server(XE_FACTORY)
    server.inject("commit confirmed", "drop", applied=True)
    with pytest.raises(
        nq.NetconfQosError, match=r"rolls back by itself when the 60 s confirm timeout expires"
    ):
        apply(server, tmp_path, connector=refusing_after_first(server))
    assert committed(server)  # live until the timeout, as the message says
    server.advance(60)
    assert not committed(server)


# ------------------------------------------------------------------ locks held by others


def test_another_sessions_uncommitted_candidate_survives_and_the_message_is_true(tmp_path: Path) -> None:
    server = Server(XE_FACTORY)
    theirs = (
        f'<config xmlns="{sq.NC}"><native xmlns="{sq.XE}"><policy><class-map xmlns="{sq.XE_POLICY}">'
        "<name>THEIRS</name><prematch>match-any</prematch></class-map></policy></native></config>"
    )
    server.edit_from_elsewhere(theirs)
    with pytest.raises(nq.NetconfQosError) as exc:
        apply(server, tmp_path)
    assert "uncommitted changes of another session" in str(exc.value)
    assert "left as they are" in str(exc.value) and "nothing was changed" in str(exc.value)
    assert "THEIRS" in server.text("candidate"), "this run discarded a candidate it did not lock"
    assert "discard-changes" not in ops(server) and server.locks == {}


def test_a_candidate_locked_by_another_session_is_not_touched(tmp_path: Path) -> None:
    server = Server(XE_FACTORY)
    server.locks["candidate"] = 7
    with pytest.raises(
        nq.NetconfQosError, match=r"^sw1: the candidate datastore is locked by session 7; nothing was changed"
    ):
        apply(server, tmp_path)
    assert "discard-changes" not in ops(server) and server.locks == {"candidate": 7}


def test_a_lock_held_by_session_0_is_the_cli() -> None:
    info = f'<error-info xmlns="{sq.NC}"><session-id>0</session-id></error-info>'
    holder = nq.lock_holder(SimpleNamespace(), info)
    assert holder.startswith("a non-NETCONF session (session-id 0") and "session 0 " not in holder


def test_lock_holder_is_named_from_error_info() -> None:
    info = f'<?xml version="1.0"?><error-info xmlns="{sq.NC}"><session-id>7</session-id></error-info>'
    sessions = (
        f'<data xmlns="{sq.NC}"><netconf-state xmlns="{nq.MONITORING}"><sessions><session>'
        "<session-id>7</session-id><username>alice</username><source-host>10.0.0.5</source-host>"
        "<login-time>T</login-time></session></sessions></netconf-state></data>"
    )
    m = SimpleNamespace(get=lambda **_: SimpleNamespace(data_xml=sessions))
    assert nq.lock_holder(m, info) == "session 7 (user alice from 10.0.0.5, since T)"
    assert nq.lock_holder(m, None) == "another session"


def test_running_locked_by_the_cli_is_refused_naming_it(tmp_path: Path) -> None:
    server = Server(XE_FACTORY)
    server.locks["running"] = 0
    with pytest.raises(nq.NetconfQosError, match=r"running datastore is locked by a non-NETCONF session"):
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

    target = nq.Target(name="sw1", host="192.0.2.1", password="x", timeout=reply)
    with pytest.raises(nq.NetconfQosError) as exc:
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


def test_with_defaults_mode_prefers_explicit_then_trim() -> None:
    base = nq.CAP_WITH_DEFAULTS
    assert nq.with_defaults_mode([f"{base}?basic-mode=explicit&also-supported=trim,report-all"]) == "explicit"
    assert nq.with_defaults_mode([f"{base}?basic-mode=report-all&also-supported=trim"]) == "trim"
    assert nq.with_defaults_mode([f"{base}?basic-mode=report-all"]) == "report-all"
    assert nq.with_defaults_mode([nq.CAP_CANDIDATE]) is None


def test_a_trimmed_reply_of_the_edit_payload_is_what_was_sent() -> None:
    # The peer trims as the model does; the edit payload itself is never trimmed.
    root = ET.fromstring(sq.edit_config("nx-os", rq.settings({"mtu": 1500}), NX_PORTS, sq.Names(), sq.Ecn()))
    assert any((el.text or "") == "1500" for el in root.iter())


def test_a_named_with_defaults_mode_the_switch_lacks_is_refused_before_any_change(tmp_path: Path) -> None:
    server = Server(XE_FACTORY, basic_mode="explicit", also=("trim",))
    p = plan()
    p.with_defaults = "report-all"
    with pytest.raises(nq.NetconfQosError, match=r"^sw1: the switch does not offer with-defaults report-all"):
        apply(server, tmp_path, p)
    assert ops(server) == ["hello", "close-session"] and not committed(server)
    p.with_defaults = "trim"
    assert apply(Server(XE_FACTORY, basic_mode="explicit", also=("trim",)), tmp_path, p).changed
