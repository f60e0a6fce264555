"""module_utils/qos/netconf_change.py through netconf.apply and the scripted peer: once the confirmed commit
was sent, a failure cancels it (on a new session when this one dropped) and the message says what running then
holds, never promising a rollback that will not come."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import netconf_errors as ne

from .netconf_peer import Server
from .netconf_run import XE_FACTORY, apply, committed, ops, refusing_after_first


@pytest.mark.parametrize("kind", ["timeout", "drop", "operation-error"])
def test_a_confirmed_commit_without_a_reply_is_cancelled_not_left_live(kind: str, tmp_path: Path) -> None:
    server = Server(XE_FACTORY)
    before = server.text()
    server.inject("commit confirmed", kind, applied=True)
    with pytest.raises(ne.NetconfQosError) as exc:
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
    with pytest.raises(ne.NetconfQosError, match="nothing was committed: the switch keeps its previous"):
        apply(server, tmp_path)
    assert "cancel-commit" not in ops(server) and not committed(server)


@pytest.mark.parametrize("kind", ["rpc-error", "timeout", "drop"])
def test_a_failed_confirming_commit_cancels_the_pending_one_and_says_so(kind: str, tmp_path: Path) -> None:
    server = Server(XE_FACTORY)
    before = server.text()
    server.inject("commit", kind)
    with pytest.raises(ne.NetconfQosError) as exc:
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


def test_the_commit_is_cancelled_while_both_locks_are_held_then_unlocked(tmp_path: Path) -> None:
    server = Server(XE_FACTORY)
    # The management check (a new session after the commit) fails: the commit must be cancelled.
    with pytest.raises(ne.NetconfQosError, match=r"new NETCONF session .* failed .*commit cancelled"):
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

    with pytest.raises(ne.NetconfQosError) as exc:
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
        ne.NetconfQosError, match=r"rolls back by itself when the 60 s confirm timeout expires"
    ):
        apply(server, tmp_path, connector=refusing_after_first(server))
    assert committed(server)  # live until the timeout, as the message says
    server.advance(60)
    assert not committed(server)


# ------------------------------------------------------------------ a timed-out confirm: what running holds


def _timed_out_confirm(server: Server, tmp_path: Path, **kw: Any) -> str:
    """The message of a run whose confirming commit got no reply (and did not take)."""
    server.inject("commit", "timeout")
    with pytest.raises(ne.NetconfQosError) as exc:
        apply(server, tmp_path, **kw)
    msg = str(exc.value)
    assert msg.startswith("sw1: confirming commit: no reply in time"), msg
    return msg


def test_a_cancel_answered_ok_that_kept_the_new_configuration_promises_no_rollback(tmp_path: Path) -> None:
    server = Server(XE_FACTORY)
    server.cancel_keeps_running = True  # <ok/>, nothing pending any more, nothing rolled back
    msg = _timed_out_confirm(server, tmp_path)
    backup = next(tmp_path.iterdir())
    assert (
        "cancel-commit sent on this session, answered ok, but running still holds the new configuration: "
        f"sw1 did not roll back and will not by itself; restore the previous configuration from {backup}"
    ) in msg, msg
    assert "rolls back" not in msg and "back to its previous" not in msg, msg
    # The message is what the switch does: the new configuration stays, past any confirm timeout.
    assert committed(server) and server.pending is None
    server.advance(3600)
    assert committed(server)


def test_a_cancel_that_rolled_back_says_running_is_back(tmp_path: Path) -> None:
    server = Server(XE_FACTORY)
    before = server.text()
    msg = _timed_out_confirm(server, tmp_path)
    assert msg.endswith(
        "; commit cancelled (cancel-commit sent on this session): running is back to its previous "
        "configuration"
    ), msg
    assert "rolls back" not in msg and "still holds" not in msg, msg
    assert server.text() == before and server.pending is None


def test_a_cancel_answered_ok_with_running_unreadable_says_so(tmp_path: Path) -> None:
    server = Server(XE_FACTORY)

    def connector(target: Any) -> Any:
        session = server.connect(target)
        cancel = session.cancel_commit

        def cancel_then_lose_reads(**kw: Any) -> None:
            cancel(**kw)
            server.inject("get-config running", "rpc-error")  # this session's read of running
            server.refuse = True  # and no new session

        session.cancel_commit = cancel_then_lose_reads  # type: ignore[method-assign]
        return session

    msg = _timed_out_confirm(server, tmp_path, connector=connector)
    assert (
        "cancel-commit sent on this session, answered ok, but running could not be read back to see what it "
        "holds: check sw1 (its previous configuration is saved in "
    ) in msg, msg
    assert "rolls back" not in msg, msg


def test_a_cancel_without_a_reply_that_took_says_running_is_back(tmp_path: Path) -> None:
    server = Server(XE_FACTORY)
    before = server.text()
    server.inject("cancel-commit", "timeout", applied=True)
    # The management check's new session is refused, and so is the cancel's second try.
    with pytest.raises(ne.NetconfQosError) as exc:
        apply(server, tmp_path, connector=refusing_after_first(server))
    msg = str(exc.value)
    assert "the pending commit could not be cancelled (cancel-commit on this session: no reply in time" in msg
    assert msg.endswith("but running is back to its previous configuration"), msg
    assert "rolls back" not in msg and server.text() == before and server.pending is None
