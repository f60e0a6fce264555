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
