# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The safe change of a switch's RoCE QoS over NETCONF (ncclient).

read running -> compare -> (check mode stops here) -> lock running and candidate -> back up running ->
discard-changes -> edit candidate -> validate -> confirmed commit with a timeout (persist token) -> read
back and verify -> optional hold -> a fresh session proves management still reaches the switch -> confirm
-> unlock.

Every RPC is a named step, and any exception there (an rpc-error, a reply that times out, a session that
drops, an ncclient OperationError) ends in one message naming the switch, the step and the state the switch
is left in. Before the confirmed commit nothing is live: the candidate this run locked is discarded and the
locks are released. Once the confirmed commit was sent (even when its reply was lost), a failure cancels it
while this run still holds the locks, reconnecting to do so when the session dropped (the persist token lets
any session cancel, RFC 6241 8.4); when no session can be had, the switch rolls back by itself when the
confirm timeout expires. A candidate this run did not lock is never discarded: it may hold another
session's edits. The payloads and the comparison live in switch.py (pure, unit-tested); this file only
talks to the device.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import re
import secrets
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch as sq

CAP_CANDIDATE = "urn:ietf:params:netconf:capability:candidate:1.0"
CAP_CONFIRMED = "urn:ietf:params:netconf:capability:confirmed-commit:1.1"
CAP_VALIDATE = "urn:ietf:params:netconf:capability:validate:1.1"
CAP_VALIDATE_10 = "urn:ietf:params:netconf:capability:validate:1.0"
CAP_WITH_DEFAULTS = "urn:ietf:params:netconf:capability:with-defaults:1.0"
MONITORING = "urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring"
NC = "urn:ietf:params:xml:ns:netconf:base:1.0"
# With-defaults modes in the order read-back prefers them (RFC 6243): explicit reports what a client set even
# when it equals the default; trim leaves defaults out (switch.py applies them); report-all reports them all
# (switch.py ignores leaves at their default).
WITH_DEFAULTS_PREFERENCE = ("explicit", "trim", "report-all")
# yuma123's netconfd (the lab's switch) answers <ok/> to a cancel-commit sent by the session that holds the
# running lock, but does not roll back, and the commit is then no longer pending (measured on netconfd 2.13,
# tests/switch_qos/run.py): for a server that names its yuma modules in its capabilities the running lock is
# released just before the cancel-commit, the candidate lock still held. Every other server is sent the
# cancel-commit while both locks are held, as RFC 6241 expects.
YUMA_CAPABILITY = "http://netconfcentral.org/ns/"
# After the confirmed commit: the read-back, the new management session and the confirm may each take up to
# one reply timeout, beside the hold.
REPLIES_AFTER_COMMIT = 3


class NetconfQosError(Exception):
    """A failure the operator must read; the message names the switch, the step and the switch's state."""


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

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Target:
        """From switch_qos's options of the same names."""
        return cls(**{f.name: params[f.name] for f in fields(cls)})


@dataclass
class Plan:
    platform: str
    qos: dict[str, Any]
    interfaces: list[str]
    names: sq.Names
    ecn: sq.Ecn
    # auto: the first of WITH_DEFAULTS_PREFERENCE the switch offers; or one mode by name.
    with_defaults: str = "auto"


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
    warnings: list[str] = field(default_factory=list)


def _number(value: Any) -> float | None:
    """A number of seconds given as a number or its ASCII digits; None for anything else (a bool too)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]+(\.[0-9]+)?", value):
        return float(value) if "." in value else int(value)
    return None


def timing_errors(confirm_timeout: Any, hold_before_confirm: Any, timeout: Any) -> list[str]:
    """The confirm timing, checked together before any session opens (the role's check and the module's)."""
    confirm, hold, reply = _number(confirm_timeout), _number(hold_before_confirm), _number(timeout)
    out = []
    if confirm is None or confirm != int(confirm) or not 1 <= confirm <= 3600:
        out.append(f"switch_qos_confirm_timeout must be 1..3600 seconds, got {confirm_timeout!r}")
    if hold is None or hold < 0:
        out.append(f"switch_qos_hold_before_confirm must be 0 or more seconds, got {hold_before_confirm!r}")
    if reply is None or reply < 1:
        out.append(f"switch_qos_timeout must be at least 1 second, got {timeout!r}")
    if out or confirm is None or hold is None or reply is None:
        return out
    if hold >= confirm:
        return [
            f"switch_qos_hold_before_confirm {hold:g} s is not shorter than switch_qos_confirm_timeout "
            f"{confirm} s: the switch would roll back before the confirm"
        ]
    need = hold + REPLIES_AFTER_COMMIT * reply
    if confirm < need:
        out.append(
            f"switch_qos_confirm_timeout {confirm:g} s is too short to verify before the switch rolls back: "
            f"after the confirmed commit come the read-back, the {hold:g} s hold, a new management session "
            f"and the confirm, each allowed switch_qos_timeout {reply:g} s; set it to at least {need:g} s"
        )
    return out


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


def _is_yuma(m: Any) -> bool:
    return any(str(c).startswith(YUMA_CAPABILITY) for c in m.server_capabilities)


def _caps(m: Any) -> set[str]:
    return {c.split("?")[0] for c in m.server_capabilities}


def with_defaults_mode(capabilities: Any, wanted: str = "auto") -> str | None:
    """The with-defaults mode to ask for, from the capability's basic-mode and also-supported (RFC 6243).

    ``auto`` picks the first the switch offers in WITH_DEFAULTS_PREFERENCE (None when it offers none); a named
    mode the switch does not offer is a NetconfQosError.
    """
    modes: set[str] = set()
    for cap in capabilities:
        base, query = str(cap).partition("?")[::2]
        if base == CAP_WITH_DEFAULTS:
            params = dict(p.partition("=")[::2] for p in query.split("&") if p)
            modes = {params.get("basic-mode", "")} | set(params.get("also-supported", "").split(","))
    modes.discard("")
    if wanted == "auto":
        return next((mode for mode in WITH_DEFAULTS_PREFERENCE if mode in modes), None)
    if wanted not in modes:
        offered = ", ".join(sorted(modes)) or "none"
        raise NetconfQosError(f"the switch does not offer with-defaults {wanted} (it offers {offered})")
    return wanted


def read_running(m: Any, plan: Plan) -> tuple[list[sq.Line], set[str]]:
    flt = ("subtree", sq.get_filter(plan.platform, plan.interfaces, plan.names))
    mode = with_defaults_mode(m.server_capabilities, plan.with_defaults)
    kwargs = {"with_defaults": mode} if mode else {}
    reply = m.get_config(source="running", filter=flt, **kwargs)
    return sq.running(plan.platform, reply.data_xml, plan.names)


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
    if sid == "0":
        # RFC 6241 7.5: session-id 0 is a non-NETCONF entity holding the lock.
        return "a non-NETCONF session (session-id 0: the switch's CLI or another management agent)"
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
    except Exception:  # naming the holder is best effort; the lock error is the message
        pass
    return who


def describe(exc: BaseException) -> str:
    """An ncclient exception (or any other) in words: rpc-errors by tag, timeouts and drops by kind."""
    tag = getattr(exc, "tag", None) if _is_rpc_error(exc) else None
    msg = (getattr(exc, "message", None) or str(exc) or type(exc).__name__).strip()
    if _is_rpc_error(exc):
        path = getattr(exc, "path", None)
        return f"rpc-error {tag}: {msg}" + (f" at {path.strip()}" if path and path.strip() else "")
    kind = type(exc).__name__
    if kind == "TimeoutExpiredError":
        return f"no reply in time ({msg})"
    if kind in ("SessionCloseError", "TransportError", "SSHError") or isinstance(exc, OSError):
        return f"the session dropped ({kind}: {msg})"
    return f"{kind}: {msg}"


def _is_rpc_error(exc: BaseException) -> bool:
    """The server answered with <rpc-error> (it refused the operation), as opposed to no usable reply."""
    try:
        from ncclient.operations.rpc import RPCError
    except ImportError:
        return getattr(exc, "tag", None) is not None
    return isinstance(exc, RPCError)


def _no_reply(exc: BaseException) -> bool:
    """True when the server may have acted although no reply said so (timeout, drop, unreadable reply)."""
    return not _is_rpc_error(exc)


class _StepFailed(Exception):
    def __init__(self, step: str, exc: BaseException) -> None:
        super().__init__(f"{step}: {describe(exc)}")
        self.step, self.exc = step, exc


def _backup(m: Any, target: Target, backup_dir: str) -> str:
    data = m.get_config(source="running").data_xml
    os.makedirs(backup_dir, mode=0o700, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    path = os.path.join(backup_dir, f"{target.name}-running-{stamp}.xml")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(data if data.endswith("\n") else data + "\n")
    return path


class _Change:
    """One run's session, locks and pending commit, so that every failure can say and leave a known state."""

    def __init__(self, target: Target, plan: Plan, connector: Callable[[Target], Any], confirm_timeout: int):
        self.target, self.plan, self.connector, self.confirm_timeout = (
            target,
            plan,
            connector,
            confirm_timeout,
        )
        self.m: Any = None
        self.locked: list[str] = []
        self.token = secrets.token_hex(8)
        self.commit_sent_at: float | None = None
        self.have: list[sq.Line] = []
        self.want: list[sq.Line] = []

    def rpc(self, step: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except NetconfQosError:
            raise
        except Exception as exc:  # ncclient's own (RPCError, TimeoutExpiredError, ...) and OS ones
            raise _StepFailed(step, exc) from exc

    def lock(self, store: str) -> None:
        try:
            self.m.lock(target=store)
        except Exception as exc:
            tag = getattr(exc, "tag", None)
            if tag == "lock-denied":
                holder = lock_holder(self.m, getattr(exc, "info", None))
                raise NetconfQosError(
                    f"{self.target.name}: the {store} datastore is locked by {holder}; nothing was "
                    "changed. Wait for it to "
                    "finish, or "
                    "end that session on the switch"
                ) from exc
            if tag in ("resource-denied", "in-use") and store == "candidate":
                # RFC 6241 7.5: a candidate with another session's uncommitted edits cannot be locked.
                raise NetconfQosError(
                    f"{self.target.name}: the candidate datastore holds uncommitted changes of another "
                    "session (lock refused: "
                    f"{describe(exc)}); nothing was changed and those changes were left as they are"
                ) from exc
            raise _StepFailed(f"lock {store}", exc) from exc
        self.locked.append(store)

    def commit_pending_cancelled(self) -> tuple[bool | None, str]:
        """Cancel the confirmed commit: on this session (still holding the locks), else on a new one.

        (True, how) when cancelled; (False, why) when the server says nothing is pending; (None, why) when no
        session could send it.
        """
        tried = []
        sessions: list[tuple[str, Callable[[], Any]]] = [("this session", lambda: self.m)]
        sessions.append(("a new session", lambda: self.connector(self.target)))
        for label, get in sessions:
            if label == "this session" and not getattr(self.m, "connected", True):
                tried.append("this session had dropped")
                continue
            fresh = None
            try:
                m = get()
                fresh = m if label == "a new session" else None
                if fresh is None and "running" in self.locked and _is_yuma(m):
                    with contextlib.suppress(Exception):
                        m.unlock(target="running")
                    self.locked.remove("running")
                m.cancel_commit(persist_id=self.token)
                return True, f"cancel-commit sent on {label}"
            except Exception as exc:
                if getattr(exc, "tag", None):
                    return False, f"cancel-commit on {label} answered {describe(exc)}"
                tried.append(f"cancel-commit on {label}: {describe(exc)}")
            finally:
                if fresh is not None:
                    with contextlib.suppress(Exception):
                        fresh.close_session()
        return None, "; ".join(tried)

    def running_now(self) -> list[sq.Line] | None:
        """Running's owned lines on any session that answers (this one, else a new one), or None."""
        for get in (lambda: self.m, lambda: self.connector(self.target)):
            fresh = None
            try:
                m = get()
                if m is not self.m:
                    fresh = m
                elif not getattr(m, "connected", True):
                    continue
                lines = read_running(m, self.plan)[0]
                return sq.owned_running(self.plan.platform, lines, self.plan.interfaces)
            except Exception:  # the caller says running was not read
                continue
            finally:
                if fresh is not None:
                    with contextlib.suppress(Exception):
                        fresh.close_session()
        return None

    def rolled_back_by(self) -> str:
        if self.commit_sent_at is None:
            return ""
        at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(
            seconds=max(0.0, self.confirm_timeout - (time.monotonic() - self.commit_sent_at))
        )
        return (
            f"the switch rolls back by itself when the {self.confirm_timeout} s confirm timeout expires "
            f"(about {at.strftime('%H:%M:%S')} UTC)"
        )

    def after_commit_failure(self, why: str, outcome: Outcome) -> str:
        """Cancel a commit that may be live (holding the locks), and say where running ended up."""
        cancelled, how = self.commit_pending_cancelled()
        now = self.running_now()
        back = now is not None and sorted(now) == sorted(self.have)
        new = now is not None and not sq.differences(self.want, now)
        if cancelled:
            if back:
                return f"{why}; commit cancelled ({how}): running is back to its previous configuration"
            return (
                f"{why}; {how} but running was not seen back to its previous configuration: "
                f"{self.rolled_back_by()}"
            )
        if cancelled is False and back:
            return f"{why}; no commit was pending ({how}): the switch keeps its previous configuration"
        if cancelled is False and new:
            outcome.warnings.append(f"{why}; {how}: running holds the new configuration, which is confirmed")
            return ""
        if cancelled is False:
            return (
                f"{why}; {how}, and running is neither the previous nor the new configuration: check "
                "the switch"
            )
        return f"{why}; the pending commit could not be cancelled ({how}): {self.rolled_back_by()}"


def apply(
    target: Target,
    plan: Plan,
    check_mode: bool,
    backup_dir: str,
    confirm_timeout: int,
    hold_before_confirm: float = 0.0,
    connector: Callable[[Target], Any] = connect,
    validate: str = "candidate",
) -> Outcome:
    problems = timing_errors(confirm_timeout, hold_before_confirm, target.timeout)
    if problems:
        raise NetconfQosError(f"{target.name}: {'; '.join(problems)}; no session was opened")
    out = Outcome()
    run = _Change(target, plan, connector, confirm_timeout)
    run.want = sq.intended(plan.platform, plan.qos, plan.interfaces, plan.names, plan.ecn)
    t0 = time.monotonic()
    try:
        run.m = connector(target)
    except Exception as exc:  # ncclient raises many types (socket, SSH, auth): all mean not reached
        raise NetconfQosError(
            f"{target.name}: cannot open a NETCONF session to {target.host}:{target.port}: {exc}; nothing "
            "was "
            "changed"
        ) from exc
    try:
        return _change(run, out, check_mode, backup_dir, float(hold_before_confirm), validate, t0)
    finally:
        for store in reversed(run.locked):
            with contextlib.suppress(Exception):
                run.m.unlock(target=store)
        # Closing a session that already died must not hide the real error.
        with contextlib.suppress(Exception):
            run.m.close_session()


def _change(
    run: _Change, out: Outcome, check_mode: bool, backup_dir: str, hold: float, validate: str, t0: float
) -> Outcome:
    target, plan, m = run.target, run.plan, run.m
    caps = _caps(m)
    missing = [c for c in (CAP_CANDIDATE, CAP_CONFIRMED) if c not in caps]
    if missing:
        raise NetconfQosError(
            f"{target.name}: the switch lacks {', '.join(missing)}; the role changes switches only through a "
            "confirmed commit of the candidate datastore, so that a bad change rolls back by itself"
        )
    try:
        have_lines, ports = run.rpc("read running", read_running, m, plan)
    except (_StepFailed, NetconfQosError) as exc:
        raise NetconfQosError(f"{target.name}: {exc}; nothing was changed") from exc
    unknown = sq.unknown_interfaces(plan.platform, plan.interfaces, ports)
    if unknown:
        raise NetconfQosError(
            f"{target.name}: switch_qos_interfaces lists {', '.join(unknown)}, which the switch does not "
            "have "
            f"(it has {', '.join(sorted(ports)) or 'none in its running configuration'})"
        )
    run.have = sq.owned_running(plan.platform, have_lines, plan.interfaces)
    out.state = sq.state(plan.platform, run.have, plan.interfaces)
    out.differences = sq.differences(run.want, run.have)
    out.before, out.after = sq.cli(run.have), sq.cli(run.want)
    out.seconds["read"] = round(time.monotonic() - t0, 3)
    if not out.differences:
        return out
    out.changed = True
    if check_mode:
        return out
    try:
        try:
            for store in ("running", "candidate"):
                run.lock(store)
            # After the locks: the copy is what this change replaces, and nobody changes it meanwhile.
            out.backup = run.rpc("back up running", _backup, m, target, backup_dir)
            run.rpc("discard-changes", m.discard_changes)
            run.rpc(
                "edit-config",
                m.edit_config,
                target="candidate",
                config=sq.edit_config(plan.platform, plan.qos, plan.interfaces, plan.names, plan.ecn),
            )
            if validate != "none" and (CAP_VALIDATE in caps or CAP_VALIDATE_10 in caps):
                run.rpc("validate", _validate, m, validate)
        except _StepFailed as exc:
            raise NetconfQosError(
                f"{target.name}: {exc}; nothing was committed: the switch keeps its previous configuration"
            ) from exc
        t1 = time.monotonic()
        run.commit_sent_at = t1
        try:
            run.rpc(
                "confirmed commit",
                m.commit,
                confirmed=True,
                timeout=str(run.confirm_timeout),
                persist=run.token,
            )
        except _StepFailed as exc:
            if not _no_reply(exc.exc):
                # The server answered with an rpc-error: the commit was refused, nothing went live.
                raise NetconfQosError(
                    f"{target.name}: {exc}; nothing was committed: the switch keeps its previous "
                    "configuration"
                ) from exc
            raise NetconfQosError(f"{target.name}: {run.after_commit_failure(str(exc), out)}") from exc
        try:
            _verify(run, hold)
            run.rpc("confirming commit", m.commit, persist_id=run.token)
        except (_StepFailed, NetconfQosError) as exc:
            message = run.after_commit_failure(str(exc), out)
            if message:
                raise NetconfQosError(f"{target.name}: {message}") from exc
        out.seconds["commit_to_confirm"] = round(time.monotonic() - t1, 3)
        return out
    finally:
        # Only a candidate this run locked is discarded (it holds this run's edit if the commit did not take).
        if "candidate" in run.locked and getattr(m, "connected", True):
            with contextlib.suppress(Exception):
                m.discard_changes()


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


def _verify(run: _Change, hold: float) -> None:
    """After the confirmed commit: running holds exactly what was intended, and management still works."""
    target, plan = run.target, run.plan
    got = run.rpc("read back after the confirmed commit", read_running, run.m, plan)[0]
    diff = sq.differences(run.want, sq.owned_running(plan.platform, got, plan.interfaces))
    if diff:
        raise NetconfQosError(
            f"after the confirmed commit, running differs from what was sent ({'; '.join(diff)})"
        )
    if hold > 0:
        time.sleep(hold)
    try:
        probe = run.connector(target)
        probe.close_session()
    except Exception as exc:
        raise NetconfQosError(
            f"after the confirmed commit a new NETCONF session to {target.host}:{target.port} failed ({exc})"
        ) from exc
