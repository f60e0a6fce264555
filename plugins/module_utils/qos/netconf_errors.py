# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a failed NETCONF step says: the one exception the operator reads, an ncclient exception in words,
whether the server refused (an rpc-error) or may have acted although no reply said so, and who holds a lock
this run was denied.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

MONITORING = "urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring"


class NetconfQosError(Exception):
    """A failure the operator must read; the message names the switch, the step and the switch's state."""


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
    tag = getattr(exc, "tag", None) if is_rpc_error(exc) else None
    msg = (getattr(exc, "message", None) or str(exc) or type(exc).__name__).strip()
    if is_rpc_error(exc):
        path = getattr(exc, "path", None)
        return f"rpc-error {tag}: {msg}" + (f" at {path.strip()}" if path and path.strip() else "")
    kind = type(exc).__name__
    if kind == "TimeoutExpiredError":
        return f"no reply in time ({msg})"
    if kind in ("SessionCloseError", "TransportError", "SSHError") or isinstance(exc, OSError):
        return f"the session dropped ({kind}: {msg})"
    return f"{kind}: {msg}"


def is_rpc_error(exc: BaseException) -> bool:
    """The server answered with <rpc-error> (it refused the operation), as opposed to no usable reply."""
    try:
        from ncclient.operations.rpc import RPCError
    except ImportError:
        return getattr(exc, "tag", None) is not None
    return isinstance(exc, RPCError)


def no_reply(exc: BaseException) -> bool:
    """True when the server may have acted although no reply said so (timeout, drop, unreadable reply)."""
    return not is_rpc_error(exc)


class StepFailed(Exception):
    def __init__(self, step: str, exc: BaseException) -> None:
        super().__init__(f"{step}: {describe(exc)}")
        self.step, self.exc = step, exc
