# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The safe change of a switch's RoCE QoS over NETCONF (ncclient): ``apply``, its order of steps, and the
confirm timing it needs.

read running -> compare -> (check mode stops here) -> lock running and candidate -> back up running ->
discard-changes -> edit candidate -> validate -> confirmed commit with a timeout (persist token) -> read
back and verify -> optional hold -> a fresh session proves management still reaches the switch -> confirm
-> unlock.

Every RPC is a named step, and any exception there (an rpc-error, a reply that times out, a session that
drops, an ncclient OperationError) ends in one message naming the switch, the step and the state the switch
is left in (``netconf_errors``). Before the confirmed commit nothing is live: the candidate this run locked is
discarded and the locks are released. Once the confirmed commit was sent (even when its reply was lost), a
failure cancels it and reads running back to say what it holds (``netconf_change``); when no session can be
had, the switch rolls back by itself when the confirm timeout expires. A candidate this run did not lock is
never discarded: it may hold another session's edits. The session and its reads are ``netconf_session``. Only
the ``netconf*`` modules talk to the device; the payloads and the comparison are the pure ``switch_*`` ones.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.values import number
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.netconf_change import Change, Outcome
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.netconf_errors import (
    NetconfQosError,
    StepFailed,
    no_reply,
)
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.netconf_session import (
    CAP_CANDIDATE,
    CAP_CONFIRMED,
    CAP_VALIDATE,
    CAP_VALIDATE_10,
    Plan,
    Target,
    backup_running,
    connect,
    offered_capabilities,
    read_running,
)
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.switch_inputs import unknown_interfaces
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.switch_lines import (
    cli,
    differences,
    intended,
    owned_running,
    state,
)
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.switch_models import NC
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.switch_payload import edit_config

# After the confirmed commit: the read-back, the new management session and the confirm may each take up to
# one reply timeout, beside the hold.
REPLIES_AFTER_COMMIT = 3
# A test hook (tests/switch_qos/run.py): with RDMAOPS_SWITCH_QOS_PAUSE=verified in its environment (the module
# runs on the controller), the module stops itself (SIGSTOP) once the confirmed commit is read back and
# verified, before the hold and the management check: a test makes its fault in that moment, then SIGCONT.
PAUSE_ENV = "RDMAOPS_SWITCH_QOS_PAUSE"


def pause_if_asked(point: str) -> None:
    """Stop this process at POINT when the test hook names it."""
    if os.environ.get(PAUSE_ENV, "") == point:
        os.kill(os.getpid(), signal.SIGSTOP)


def timing_errors(confirm_timeout: Any, hold_before_confirm: Any, timeout: Any) -> list[str]:
    """The confirm timing, checked together before any session opens (the role's check and the module's)."""
    # seconds, each a number or its decimal text
    confirm, hold, reply = number(confirm_timeout), number(hold_before_confirm), number(timeout)
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
    run = Change(target, plan, connector, confirm_timeout)
    run.want = intended(plan.platform, plan.qos, plan.interfaces, plan.names, plan.ecn)
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
    run: Change, out: Outcome, check_mode: bool, backup_dir: str, hold: float, validate: str, t0: float
) -> Outcome:
    target, plan, m = run.target, run.plan, run.m
    caps = offered_capabilities(m)
    missing = [c for c in (CAP_CANDIDATE, CAP_CONFIRMED) if c not in caps]
    if missing:
        raise NetconfQosError(
            f"{target.name}: the switch lacks {', '.join(missing)}; the role changes switches only through a "
            "confirmed commit of the candidate datastore, so that a bad change rolls back by itself"
        )
    try:
        have_lines, ports = run.rpc("read running", read_running, m, plan)
    except (StepFailed, NetconfQosError) as exc:
        raise NetconfQosError(f"{target.name}: {exc}; nothing was changed") from exc
    unknown = unknown_interfaces(plan.platform, plan.interfaces, ports)
    if unknown:
        raise NetconfQosError(
            f"{target.name}: switch_qos_interfaces lists {', '.join(unknown)}, which the switch does not "
            "have "
            f"(it has {', '.join(sorted(ports)) or 'none in its running configuration'})"
        )
    run.have = owned_running(plan.platform, have_lines, plan.interfaces)
    out.state = state(plan.platform, run.have, plan.interfaces)
    out.differences = differences(run.want, run.have)
    out.before, out.after = cli(run.have), cli(run.want)
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
            out.backup = run.rpc("back up running", backup_running, m, target, backup_dir)
            run.rpc("discard-changes", m.discard_changes)
            run.rpc(
                "edit-config",
                m.edit_config,
                target="candidate",
                config=edit_config(plan.platform, plan.qos, plan.interfaces, plan.names, plan.ecn),
            )
            if validate != "none" and (CAP_VALIDATE in caps or CAP_VALIDATE_10 in caps):
                run.rpc("validate", _validate, m, validate)
        except StepFailed as exc:
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
        except StepFailed as exc:
            if not no_reply(exc.exc):
                # The server answered with an rpc-error: the commit was refused, nothing went live.
                raise NetconfQosError(
                    f"{target.name}: {exc}; nothing was committed: the switch keeps its previous "
                    "configuration"
                ) from exc
            raise NetconfQosError(f"{target.name}: {run.after_commit_failure(str(exc), out)}") from exc
        try:
            _verify(run, hold)
            run.rpc("confirming commit", m.commit, persist_id=run.token)
        except (StepFailed, NetconfQosError) as exc:
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


def _verify(run: Change, hold: float) -> None:
    """After the confirmed commit: running holds exactly what was intended, and management still works."""
    target, plan = run.target, run.plan
    got = run.rpc("read back after the confirmed commit", read_running, run.m, plan)[0]
    diff = differences(run.want, owned_running(plan.platform, got, plan.interfaces))
    if diff:
        raise NetconfQosError(
            f"after the confirmed commit, running differs from what was sent ({'; '.join(diff)})"
        )
    pause_if_asked("verified")
    if hold > 0:
        time.sleep(hold)
    try:
        probe = run.connector(target)
        probe.close_session()
    except Exception as exc:
        raise NetconfQosError(
            f"after the confirmed commit a new NETCONF session to {target.host}:{target.port} failed ({exc})"
        ) from exc
