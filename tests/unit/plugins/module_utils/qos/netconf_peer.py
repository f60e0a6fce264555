"""A scripted NETCONF server for unit tests: shared running and candidate, per-session locks, confirmed
commit with persist, with-defaults trim, and every failure injectable - as RFC 6241 / 6243 allow a device to
behave.

``Server.connect`` is the connector ``netconf.apply`` takes; each ``Session`` answers the ncclient Manager
calls the module makes and raises ncclient's own exceptions. ``Server.inject(op, kind)`` makes the next such
RPC fail:

- ``rpc-error``: the server refuses (nothing happens) and replies with an rpc-error;
- ``timeout``: no reply in time (TimeoutExpiredError); with ``applied=True`` the server did act;
- ``drop``: the session drops (SessionCloseError); with ``applied=True`` after the server acted;
- ``operation-error``: ncclient cannot use the reply (OperationError); with ``applied=True`` the server acted.

``Server.cancel_keeps_running`` makes cancel-commit answer <ok/> and end the pending commit without rolling
back, as yuma123's netconfd 2.13 does for the session that holds the running lock (so may other servers).

``log`` records every RPC as "sid op [locks held by that session]", so tests can assert the order of
operations.
"""

from __future__ import annotations

import copy
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from ncclient.operations.errors import OperationError, TimeoutExpiredError
from ncclient.operations.rpc import RPCError
from ncclient.transport.errors import SessionCloseError, TransportError
from ncclient.xml_ import to_ele

NC = "urn:ietf:params:xml:ns:netconf:base:1.0"
WD = "urn:ietf:params:netconf:capability:with-defaults:1.0"
BASE_CAPS = [
    "urn:ietf:params:netconf:base:1.1",
    "urn:ietf:params:netconf:capability:candidate:1.0",
    "urn:ietf:params:netconf:capability:confirmed-commit:1.1",
    "urn:ietf:params:netconf:capability:validate:1.1",
]
# Leaves at their YANG default, as (parent container, leaf, value): with-defaults trim leaves them out.
# From Cisco-NX-OS-device 9.3: ipqos_MTU, l1_Mtu, ipqos_PriorityLevel, ipqos_QoSMatchType,
# ipqos_PriorFlowCtrlMode.
MODEL_DEFAULTS = {
    ("mtu-items", "value", "1500"),
    ("PhysIf-list", "mtu", "1500"),
    ("prio-items", "level", "1"),
    ("CMapInst-list", "matchType", "match-all"),
    ("priorflowctrl-items", "mode", "0"),
}


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def rpc_error(tag: str, message: str, info: str = "") -> RPCError:
    return RPCError(
        to_ele(
            f'<rpc-error xmlns="{NC}"><error-type>protocol</error-type><error-tag>{tag}</error-tag>'
            ""
            f"<error-severity>error</error-severity><error-message>{message}</error-message>{info}</rpc-error>"
        )
    )


def _key(el: ET.Element) -> tuple[str, str]:
    """A list entry's identity: its tag and its key leaf (name, id or action-type), or the tag alone."""
    for child in el:
        if _local(child.tag) in ("name", "id", "action-type") and len(child) == 0:
            return el.tag, (child.text or "").strip()
    return el.tag, ""


def _merge(into: ET.Element, edit: ET.Element) -> None:
    """edit-config merge, with operation=replace on an element replacing it whole."""
    for child in edit:
        op = child.attrib.pop(f"{{{NC}}}operation", "merge")
        match = next((c for c in into if _key(c) == _key(child) and c.tag == child.tag), None)
        if op == "replace" or match is None or len(child) == 0:
            if match is not None:
                into.remove(match)
            into.append(copy.deepcopy(child))
        else:
            _merge(match, child)


def _trim(el: ET.Element) -> None:
    for child in list(el):
        if len(child):
            _trim(child)
        elif (_local(el.tag), _local(child.tag), (child.text or "").strip()) in MODEL_DEFAULTS:
            el.remove(child)


@dataclass
class Fault:
    op: str
    kind: str
    applied: bool = False
    tag: str = "operation-failed"


class Server:
    def __init__(self, running: str, basic_mode: str = "trim", also: tuple[str, ...] = ()) -> None:
        self.running = ET.fromstring(running)
        self.candidate = copy.deepcopy(self.running)
        self.dirty_by: int | None = None
        self.locks: dict[str, int] = {}
        self.pending: dict[str, Any] | None = None
        self.clock = 0.0
        self.log: list[str] = []
        self.faults: list[Fault] = []
        self.sessions: list[Session] = []
        self.refuse = False
        self.cancel_keeps_running = False
        wd = f"{WD}?basic-mode={basic_mode}" + (f"&also-supported={','.join(also)}" if also else "")
        self.capabilities = [*BASE_CAPS, wd]

    # ---- the test's levers
    def connect(self, _target: Any = None) -> Session:
        if self.refuse:
            raise TransportError("Could not open socket: connection refused")
        session = Session(self, len(self.sessions) + 1)
        self.sessions.append(session)
        self.log.append(f"{session.session_id} hello")
        return session

    def inject(self, op: str, kind: str, applied: bool = False, tag: str = "operation-failed") -> None:
        self.faults.append(Fault(op, kind, applied, tag))

    def advance(self, seconds: float) -> None:
        self.clock += seconds
        if self.pending and self.clock >= self.pending["deadline"]:
            self._rollback()

    def edit_from_elsewhere(self, config: str, sid: int = 99) -> None:
        """Another session's uncommitted edit of the candidate, without a lock."""
        data = ET.Element(f"{{{NC}}}data")
        for child in ET.fromstring(config):
            data.append(child)
        _merge(self.candidate, data)
        self.dirty_by = sid

    def text(self, store: str = "running") -> str:
        return ET.tostring(self.running if store == "running" else self.candidate, encoding="unicode")

    # ---- server behaviour
    def _rollback(self) -> None:
        assert self.pending is not None
        self.running = self.pending["before"]
        self.candidate = copy.deepcopy(self.running)
        self.pending = None

    def end(self, session: Session) -> None:
        session.connected = False
        for store in [s for s, sid in self.locks.items() if sid == session.session_id]:
            del self.locks[store]
        if self.dirty_by == session.session_id:
            self.candidate, self.dirty_by = copy.deepcopy(self.running), None
        # RFC 6241 8.4.1: without persist, a confirmed commit ends with its session.
        if self.pending and self.pending["persist"] is None and self.pending["session"] == session.session_id:
            self._rollback()


class Session:
    def __init__(self, server: Server, sid: int) -> None:
        self.server, self.session_id, self.connected = server, sid, True
        self.server_capabilities = list(server.capabilities)

    def _rpc(self, op: str, act: Any) -> Any:
        s = self.server
        held = sorted(store for store, sid in s.locks.items() if sid == self.session_id)
        s.log.append(f"{self.session_id} {op} {held}")
        if not self.connected:
            raise TransportError("Not connected to NETCONF server")
        fault = next((f for f in s.faults if f.op == op), None)
        if fault is None:
            return act()
        s.faults.remove(fault)
        if fault.kind == "rpc-error":
            raise rpc_error(fault.tag, f"injected {fault.tag} on {op}")
        if fault.applied:
            act()
        if fault.kind == "timeout":
            raise TimeoutExpiredError(f"ncclient timed out while waiting for an rpc reply to {op}")
        if fault.kind == "drop":
            s.end(self)
            raise SessionCloseError("", "")
        raise OperationError(f"could not parse the reply to {op}")

    def _locked_by_other(self, store: str) -> int | None:
        sid = self.server.locks.get(store)
        return sid if sid is not None and sid != self.session_id else None

    def _denied(self, store: str) -> None:
        other = self._locked_by_other(store)
        if other is not None:
            info = f"<error-info><session-id>{other}</session-id></error-info>"
            raise rpc_error("in-use", f"{store} is locked by session {other}", info)

    # ---- ncclient Manager calls
    def get_config(self, source: str, filter: Any = None, with_defaults: str | None = None) -> Any:
        def act() -> Any:
            tree = copy.deepcopy(self.server.running if source == "running" else self.server.candidate)
            if with_defaults == "trim":
                _trim(tree)
            return SimpleNamespace(data_xml=ET.tostring(tree, encoding="unicode"), data_ele=tree)

        return self._rpc(f"get-config {source}", act)

    def get(self, filter: Any = None) -> Any:
        def act() -> Any:
            rows = "".join(
                f"<session><session-id>{x.session_id}</session-id><username>peer</username>"
                f"<source-host>192.0.2.{x.session_id}</source-host><login-time>T</login-time></session>"
                for x in self.server.sessions
                if x.connected
            )
            mon = "urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring"
            state = f'<netconf-state xmlns="{mon}"><sessions>{rows}</sessions></netconf-state>'
            xml = f'<data xmlns="{NC}">{state}</data>'
            return SimpleNamespace(data_xml=xml)

        return self._rpc("get", act)

    def lock(self, target: str) -> None:
        def act() -> None:
            s = self.server
            holder = s.locks.get(target)
            if holder is not None:
                info = f"<error-info><session-id>{holder}</session-id></error-info>"
                raise rpc_error("lock-denied", "lock denied", info)
            if target == "candidate" and s.dirty_by not in (None, self.session_id):
                raise rpc_error(
                    "resource-denied", "candidate has uncommitted changes, discard-changes needed"
                )
            s.locks[target] = self.session_id

        self._rpc(f"lock {target}", act)

    def unlock(self, target: str) -> None:
        def act() -> None:
            if self.server.locks.get(target) != self.session_id:
                raise rpc_error("operation-failed", f"{target} is not locked by this session")
            del self.server.locks[target]

        self._rpc(f"unlock {target}", act)

    def discard_changes(self) -> None:
        def act() -> None:
            self._denied("candidate")
            self.server.candidate, self.server.dirty_by = copy.deepcopy(self.server.running), None

        self._rpc("discard-changes", act)

    def edit_config(self, target: str, config: str, **_: Any) -> None:
        def act() -> None:
            self._denied("candidate")
            data = ET.Element(f"{{{NC}}}data")
            for child in ET.fromstring(config):
                data.append(child)
            _merge(self.server.candidate, data)
            self.server.dirty_by = self.session_id

        self._rpc(f"edit-config {target}", act)

    def validate(self, source: Any) -> None:
        self._rpc("validate", lambda: None)

    def commit(
        self,
        confirmed: bool = False,
        timeout: str | None = None,
        persist: str | None = None,
        persist_id: str | None = None,
    ) -> None:
        op = "commit confirmed" if confirmed else "commit"

        def act() -> None:
            s = self.server
            self._denied("candidate")
            self._denied("running")
            if s.pending and not confirmed:
                if s.pending["persist"] is not None and persist_id != s.pending["persist"]:
                    raise rpc_error("invalid-value", "persist-id does not match the pending confirmed commit")
                s.pending, s.dirty_by = None, None
                return
            before = s.pending["before"] if s.pending else copy.deepcopy(s.running)
            s.running, s.dirty_by = copy.deepcopy(s.candidate), None
            if confirmed:
                s.pending = {
                    "before": before,
                    "persist": persist,
                    "session": self.session_id,
                    "deadline": s.clock + int(timeout or 600),
                }

        self._rpc(op, act)

    def cancel_commit(self, persist_id: str | None = None) -> None:
        def act() -> None:
            s = self.server
            if not s.pending or s.pending["persist"] != persist_id:
                raise rpc_error("operation-failed", "no confirmed commit with this persist-id is pending")
            if s.cancel_keeps_running:
                s.pending = None
                return
            s._rollback()

        self._rpc("cancel-commit", act)

    def close_session(self) -> None:
        def act() -> None:
            self.server.end(self)

        self._rpc("close-session", act)
