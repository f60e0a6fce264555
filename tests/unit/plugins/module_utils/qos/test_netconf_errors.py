"""module_utils/qos/netconf_errors.py: the holder of a lock this run was denied, named as the server tells."""

from __future__ import annotations

from types import SimpleNamespace

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import netconf_errors as ne
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch_models as sm


def test_a_lock_held_by_session_0_is_the_cli() -> None:
    info = f'<error-info xmlns="{sm.NC}"><session-id>0</session-id></error-info>'
    holder = ne.lock_holder(SimpleNamespace(), info)
    assert holder.startswith("a non-NETCONF session (session-id 0") and "session 0 " not in holder


def test_lock_holder_is_named_from_error_info() -> None:
    info = f'<?xml version="1.0"?><error-info xmlns="{sm.NC}"><session-id>7</session-id></error-info>'
    sessions = (
        f'<data xmlns="{sm.NC}"><netconf-state xmlns="{ne.MONITORING}"><sessions><session>'
        "<session-id>7</session-id><username>alice</username><source-host>10.0.0.5</source-host>"
        "<login-time>T</login-time></session></sessions></netconf-state></data>"
    )
    m = SimpleNamespace(get=lambda **_: SimpleNamespace(data_xml=sessions))
    assert ne.lock_holder(m, info) == "session 7 (user alice from 10.0.0.5, since T)"
    assert ne.lock_holder(m, None) == "another session"
