# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One run's change of a switch: its session, locks and pending confirmed commit, every RPC a named step, and
once the confirmed commit was sent, its cancel and what running holds after it.

A failure after the confirmed commit cancels it while this run still holds the locks, reconnecting when the
session dropped (the persist token lets any session cancel, RFC 6241 8.4), then reads running back and says
what it holds. A cancel-commit answered ``<ok/>`` is not taken for a rollback: yuma123's netconfd answers
so and keeps the new configuration, and no confirm timeout rolls it back after.
"""

from __future__ import annotations

import contextlib
import datetime
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.netconf_errors import (
    NetconfQosError,
    StepFailed,
    describe,
    lock_holder,
)
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.netconf_session import (
    Plan,
    Target,
    is_yuma,
    read_running,
)
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.switch_lines import (
    Line,
    differences,
    owned_running,
)


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


class Change:
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
        self.have: list[Line] = []
        self.want: list[Line] = []

    def rpc(self, step: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except NetconfQosError:
            raise
        except Exception as exc:  # ncclient's own (RPCError, TimeoutExpiredError, ...) and OS ones
            raise StepFailed(step, exc) from exc

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
            raise StepFailed(f"lock {store}", exc) from exc
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
                if fresh is None and "running" in self.locked and is_yuma(m):
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

    def running_now(self) -> list[Line] | None:
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
                return owned_running(self.plan.platform, lines, self.plan.interfaces)
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
        """Cancel a commit that may be live (holding the locks), then read running back and say what it holds.

        A cancel-commit answered ok is not taken for a rollback: only running, read back, says where the
        switch ended up. Empty when the confirming commit took although its reply was lost (then a warning
        says so).
        """
        cancelled, how = self.commit_pending_cancelled()
        now = self.running_now()
        back = now is not None and sorted(now) == sorted(self.have)
        new = now is not None and not differences(self.want, now)
        name, saved = self.target.name, outcome.backup or "switch_qos_backup_dir"
        if cancelled is None:
            if back:
                return (
                    f"{why}; the pending commit could not be cancelled ({how}), but running is back to its "
                    "previous configuration"
                )
            return f"{why}; the pending commit could not be cancelled ({how}): {self.rolled_back_by()}"
        if back:
            if cancelled:
                return f"{why}; commit cancelled ({how}): running is back to its previous configuration"
            return f"{why}; no commit was pending ({how}): the switch keeps its previous configuration"
        if new and not cancelled:
            outcome.warnings.append(f"{why}; {how}: running holds the new configuration, which is confirmed")
            return ""
        answered = f"{how}, answered ok," if cancelled else f"{how},"
        if new:
            # As yuma123's netconfd does (module docstring): the commit is over, no timeout rolls it back.
            return (
                f"{why}; {answered} but running still holds the new configuration: {name} did not roll "
                f"back and will not by itself; restore the previous configuration from {saved} if the new "
                "one must not stay"
            )
        held = (
            "but running could not be read back to see what it holds"
            if now is None
            else "and running is neither the previous nor the new configuration"
        )
        return f"{why}; {answered} {held}: check {name} (its previous configuration is saved in {saved})"
