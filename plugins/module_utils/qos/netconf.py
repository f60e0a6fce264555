# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The safe change of a switch's RoCE QoS over NETCONF (ncclient).

read running -> compare -> (check mode stops here) -> back up running -> lock -> edit candidate ->
validate -> confirmed commit with a timeout (persist token) -> read back and verify -> optional hold
-> a fresh session proves management still reaches the switch -> confirm -> unlock.
Any failure after the confirmed commit cancels it; if this process dies instead, the switch rolls
back by itself when the timeout expires (RFC 6241 8.4). The payloads and the comparison live in
switch_qos (pure, unit-tested); this file only talks to the device.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import re
import secrets
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch as sq

CAP_CANDIDATE = "urn:ietf:params:netconf:capability:candidate:1.0"
CAP_CONFIRMED = "urn:ietf:params:netconf:capability:confirmed-commit:1.1"
CAP_VALIDATE = "urn:ietf:params:netconf:capability:validate:1.1"
CAP_VALIDATE_10 = "urn:ietf:params:netconf:capability:validate:1.0"
CAP_WITH_DEFAULTS = "urn:ietf:params:netconf:capability:with-defaults:1.0"
MONITORING = "urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring"
NC = "urn:ietf:params:xml:ns:netconf:base:1.0"


class NetconfQosError(Exception):
    """A failure the operator must read; the message names the switch and what happened."""


@dataclass
class Target:
    name: str
    host: str
    port: int = 830
    username: str = "admin"
    password: str | None = None
    ssh_key: str | None = None
    hostkey_verify: bool = True
    timeout: int = 30


@dataclass
class Plan:
    platform: str
    qos: dict[str, Any]
    interfaces: list[str]
    names: sq.Names
    ecn: sq.Ecn


@dataclass
class Outcome:
    changed: bool = False
    differences: list[str] = field(default_factory=list)
    before: str = ""
    after: str = ""
    backup: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    # What running said before any change (switch_qos.state), for verify's QoS table.
    state: dict[str, Any] = field(default_factory=dict)


def connect(target: Target) -> Any:
    from ncclient import manager  # imported here so that the pure parts load without ncclient

    return manager.connect(
        host=target.host,
        port=target.port,
        username=target.username,
        password=target.password,
        key_filename=target.ssh_key,
        hostkey_verify=target.hostkey_verify,
        look_for_keys=False,
        allow_agent=False,
        timeout=target.timeout,
        device_params={"name": "default"},
    )


def _rpc_error_types() -> tuple[type[BaseException], ...]:
    from ncclient.operations.rpc import RPCError
    from ncclient.transport.errors import TransportError

    return (RPCError, TransportError)


def read_running(m: Any, plan: Plan) -> tuple[list[sq.Line], set[str]]:
    flt = ("subtree", sq.get_filter(plan.platform, plan.interfaces, plan.names))
    kwargs = {"with_defaults": "trim"} if CAP_WITH_DEFAULTS in _caps(m) else {}
    reply = m.get_config(source="running", filter=flt, **kwargs)
    return sq.running(plan.platform, reply.data_xml, plan.names)


def _caps(m: Any) -> set[str]:
    return {c.split("?")[0] for c in m.server_capabilities}


def lock_holder(m: Any, info: str | None) -> str:
    """'session 7 (user admin from 10.0.0.5)' for a lock-denied error, as far as the server tells."""
    sid = ""
    if info:
        try:
            body = re.sub(r"^\s*<\?xml[^>]*\?>", "", info)
            el = ET.fromstring(body if body.lstrip().startswith("<error-info") else f"<x>{body}</x>")
            found = [c for c in el.iter() if c.tag.rsplit("}", 1)[-1] == "session-id"]
            sid = (found[0].text or "").strip() if found else ""
        except ET.ParseError:
            sid = ""
    if not sid:
        return "another session"
    who = f"session {sid}"
    try:
        flt = f'<netconf-state xmlns="{MONITORING}"><sessions/></netconf-state>'
        data = ET.fromstring(m.get(filter=("subtree", flt)).data_xml)
        for session in data.iter(f"{{{MONITORING}}}session"):
            if (session.findtext(f"{{{MONITORING}}}session-id") or "").strip() == sid:
                user = session.findtext(f"{{{MONITORING}}}username") or "?"
                src = session.findtext(f"{{{MONITORING}}}source-host") or "?"
                started = session.findtext(f"{{{MONITORING}}}login-time") or "?"
                return f"{who} (user {user} from {src}, since {started})"
    except _rpc_error_types():
        pass
    return who


def _backup(m: Any, target: Target, backup_dir: str) -> str:
    data = m.get_config(source="running").data_xml
    os.makedirs(backup_dir, mode=0o700, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    path = os.path.join(backup_dir, f"{target.name}-running-{stamp}.xml")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(data if data.endswith("\n") else data + "\n")
    return path


def apply(
    target: Target,
    plan: Plan,
    check_mode: bool,
    backup_dir: str,
    confirm_timeout: int,
    hold_before_confirm: float = 0.0,
    connector: Any = connect,
    validate: str = "candidate",
) -> Outcome:
    out = Outcome()
    want = sq.intended(plan.platform, plan.qos, plan.interfaces, plan.names, plan.ecn)
    errors = _rpc_error_types()
    t0 = time.monotonic()
    try:
        m = connector(target)
    except Exception as exc:  # ncclient raises many types (socket, SSH, auth): all mean "not reached"
        raise NetconfQosError(
            f"{target.name}: cannot open a NETCONF session to {target.host}:{target.port}: {exc}"
        ) from exc
    try:
        caps = _caps(m)
        missing = [c for c in (CAP_CANDIDATE, CAP_CONFIRMED) if c not in caps]
        if missing:
            raise NetconfQosError(
                f"{target.name}: the switch lacks {', '.join(missing)}; the role changes switches only "
                "through a confirmed commit of the candidate datastore, so that a bad change rolls back by "
                "itself"
            )
        have_lines, ports = read_running(m, plan)
        unknown = sq.unknown_interfaces(plan.platform, plan.interfaces, ports)
        if unknown:
            raise NetconfQosError(
                f"{target.name}: switch_qos_interfaces lists {', '.join(unknown)}, which the switch does not "
                f"have (it has {', '.join(sorted(ports)) or 'none in its running configuration'})"
            )
        have = sq.owned_running(plan.platform, have_lines, plan.interfaces)
        out.state = sq.state(plan.platform, have, plan.interfaces)
        out.differences = sq.differences(want, have)
        out.before, out.after = sq.cli(have), sq.cli(want)
        out.seconds["read"] = round(time.monotonic() - t0, 3)
        if not out.differences:
            return out
        out.changed = True
        if check_mode:
            return out
        out.backup = _backup(m, target, backup_dir)
        locked: list[str] = []
        try:
            for store in ("running", "candidate"):
                try:
                    m.lock(target=store)
                except errors as exc:
                    if getattr(exc, "tag", "") == "lock-denied":
                        holder = lock_holder(m, getattr(exc, "info", None))
                        raise NetconfQosError(
                            f"{target.name}: the {store} datastore is locked by {holder}; nothing was "
                            "changed. Wait for it to finish, or end that session on the switch"
                        ) from exc
                    raise
                locked.append(store)
            # A candidate left edited by a session that died is not ours to commit.
            m.discard_changes()
            m.edit_config(
                target="candidate",
                config=sq.edit_config(plan.platform, plan.qos, plan.interfaces, plan.names, plan.ecn),
            )
            if validate != "none" and (CAP_VALIDATE in caps or CAP_VALIDATE_10 in caps):
                _validate(m, validate)
            token = secrets.token_hex(8)
            t1 = time.monotonic()
            m.commit(confirmed=True, timeout=str(confirm_timeout), persist=token)
            try:
                _verify(m, target, plan, want, hold_before_confirm, connector)
            except Exception as exc:
                # Our own lock on running must go first: netconfd answers <ok/> to a cancel-commit whose
                # rollback a running lock blocked. If the session is gone, the timeout rolls back instead.
                with contextlib.suppress(*errors):
                    m.unlock(target="running")
                    locked.remove("running")
                with contextlib.suppress(*errors):
                    m.cancel_commit(persist_id=token)
                restored = None
                with contextlib.suppress(*errors):
                    restored = sq.owned_running(plan.platform, read_running(m, plan)[0], plan.interfaces)
                if restored is None or sorted(restored) != sorted(have):
                    raise NetconfQosError(
                        f"{exc}; running was not seen restored after cancel-commit: the switch rolls back by "
                        f"itself when the {confirm_timeout} s confirm timeout expires"
                    ) from exc
                raise
            m.commit(persist_id=token)
            out.seconds["commit_to_confirm"] = round(time.monotonic() - t1, 3)
        except errors as exc:
            raise NetconfQosError(
                f"{target.name}: {_describe(exc)}; the switch keeps its previous configuration"
            ) from exc
        finally:
            if locked:
                with contextlib.suppress(*errors):
                    m.discard_changes()
            for store in reversed(locked):
                with contextlib.suppress(*errors):
                    m.unlock(target=store)
        return out
    finally:
        # Closing a session that already died must not hide the real error.
        with contextlib.suppress(Exception):
            m.close_session()


def _validate(m: Any, mode: str) -> None:
    """<validate> of the candidate, by name or (inline) as a <config> holding its content."""
    if mode == "candidate":
        m.validate(source="candidate")
        return
    from lxml import etree  # ncclient's own dependency

    config = etree.Element(f"{{{NC}}}config")
    for child in list(m.get_config(source="candidate").data_ele):
        config.append(child)
    m.validate(source=config)


def _verify(m: Any, target: Target, plan: Plan, want: list[sq.Line], hold: float, connector: Any) -> None:
    """After the confirmed commit: running holds exactly what was intended, and management still works."""
    got = read_running(m, plan)[0]
    got = sq.owned_running(plan.platform, got, plan.interfaces)
    diff = sq.differences(want, got)
    if diff:
        raise NetconfQosError(
            f"{target.name}: after the confirmed commit, running differs from what was sent "
            f"({'; '.join(diff)}): commit cancelled, the switch rolled back"
        )
    if hold > 0:
        time.sleep(hold)
    try:
        probe = connector(target)
        probe.close_session()
    except Exception as exc:
        raise NetconfQosError(
            f"{target.name}: after the confirmed commit a new NETCONF session to {target.host}:{target.port} "
            f"failed ({exc}): commit cancelled, the switch rolled back"
        ) from exc


def _describe(exc: BaseException) -> str:
    tag = getattr(exc, "tag", None)
    msg = getattr(exc, "message", None) or str(exc)
    path = getattr(exc, "path", None)
    return (
        f"NETCONF error {tag}: {msg}" + (f" at {path}" if path else "")
        if tag
        else f"NETCONF session failed: {msg}"
    )
