"""module_utils/qos/netconf_session.py: the with-defaults mode a read of running asks for."""

from __future__ import annotations

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import netconf_session as ns


def test_with_defaults_mode_prefers_explicit_then_trim() -> None:
    base = ns.CAP_WITH_DEFAULTS
    assert ns.with_defaults_mode([f"{base}?basic-mode=explicit&also-supported=trim,report-all"]) == "explicit"
    assert ns.with_defaults_mode([f"{base}?basic-mode=report-all&also-supported=trim"]) == "trim"
    assert ns.with_defaults_mode([f"{base}?basic-mode=report-all"]) == "report-all"
    assert ns.with_defaults_mode([ns.CAP_CANDIDATE]) is None
