"""module_utils/qos/netconf.py: the order of NETCONF operations, with a recorded-behaviour stand-in manager.

The stand-in keeps running and candidate as data trees and answers the calls the module makes the way
netconfd does; the lab runs the same flow against the real server (tests/switch_qos/run.py).
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

PORTS = ["HundredGigE1/0/1"]
FACTORY = (
    f'<data xmlns="{sq.NC}"><native xmlns="{sq.XE}"><interface><HundredGigE><name>1/0/1</name></HundredGigE>'
    "</interface></native></data>"
)


class FakeManager:
    def __init__(self, running: str, lose_on_commit: bool = False) -> None:
        self.running = running
        self.calls: list[str] = []
        self.lose_on_commit = lose_on_commit
        self.server_capabilities = [nq.CAP_CANDIDATE, nq.CAP_CONFIRMED, nq.CAP_VALIDATE]

    def get_config(self, source: str, filter: Any = None, **_: Any) -> Any:
        self.calls.append(f"get-config {source}")
        return SimpleNamespace(data_xml=self.running)

    def lock(self, target: str) -> None:
        self.calls.append(f"lock {target}")

    def unlock(self, target: str) -> None:
        self.calls.append(f"unlock {target}")

    def discard_changes(self) -> None:
        self.calls.append("discard-changes")

    def edit_config(self, target: str, config: str) -> None:
        self.calls.append(f"edit-config {target}")
        self.pending = config

    def validate(self, source: str) -> None:
        self.calls.append(f"validate {source}")

    def commit(
        self,
        confirmed: bool = False,
        timeout: str | None = None,
        persist: str | None = None,
        persist_id: str | None = None,
    ) -> None:
        self.calls.append("commit confirmed" if confirmed else "commit confirm")
        if confirmed and not self.lose_on_commit:
            data = ET.Element(f"{{{sq.NC}}}data")
            data.append(ET.fromstring(self.pending)[0])
            self.before, self.running = self.running, ET.tostring(data, encoding="unicode")

    def cancel_commit(self, persist_id: str | None = None) -> None:
        self.calls.append("cancel-commit")
        self.running = getattr(self, "before", self.running)

    def close_session(self) -> None:
        self.calls.append("close")


def _apply(m: FakeManager, tmp_path: Path, check: bool = False) -> nq.Outcome:
    target = nq.Target(name="sw1", host="192.0.2.1", username="admin", password="x")
    plan = nq.Plan("ios-xe", rq.settings({}), PORTS, sq.Names(), sq.Ecn())
    probe = FakeManager(FACTORY)
    return nq.apply(target, plan, check, str(tmp_path), 30, connector=lambda _t: m if not m.calls else probe)


def test_check_mode_reads_only(tmp_path: Path) -> None:
    m = FakeManager(FACTORY)
    out = _apply(m, tmp_path, check=True)
    assert out.changed and "+ class-map match-any ROCE / match dscp 26" in out.differences
    assert m.calls == ["get-config running", "close"]
    assert list(tmp_path.iterdir()) == []


def test_change_goes_through_a_verified_confirmed_commit(tmp_path: Path) -> None:
    m = FakeManager(FACTORY)
    out = _apply(m, tmp_path)
    assert out.changed and out.backup and Path(out.backup).read_text().startswith("<data")
    assert m.calls == [
        "get-config running", "get-config running", "lock running", "lock candidate", "discard-changes",
        "edit-config candidate", "validate candidate", "commit confirmed", "get-config running",
        "commit confirm", "discard-changes", "unlock candidate", "unlock running", "close",
    ]  # fmt: skip
    again = FakeManager(m.running)
    assert not _apply(again, tmp_path).changed and again.calls == ["get-config running", "close"]


def test_a_commit_that_did_not_take_is_cancelled_not_confirmed(tmp_path: Path) -> None:
    m = FakeManager(FACTORY, lose_on_commit=True)
    with pytest.raises(nq.NetconfQosError, match="after the confirmed commit, running differs"):
        _apply(m, tmp_path)
    assert "cancel-commit" in m.calls and "commit confirm" not in m.calls
    assert m.calls.index("unlock running") < m.calls.index("cancel-commit")


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
