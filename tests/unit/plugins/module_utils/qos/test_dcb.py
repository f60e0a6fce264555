"""module_utils/qos/dcb.py: reading dcb's JSON, the commands that make a port lossless, the verdict."""

from __future__ import annotations

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import dcb

from ...conftest import FIXTURE_DIR

FIX = FIXTURE_DIR / "dcb"


def _port(pfc: str, app: str) -> dcb.PortDcb:
    flags, cap = dcb.parse_pfc((FIX / pfc).read_text())
    return dcb.PortDcb(
        "ens1f0np0", True, pfc=flags, pfc_cap=cap, dscp_prio=dcb.parse_app((FIX / app).read_text())
    )


def test_a_veth_has_no_dcb() -> None:
    rc = int((FIX / "pfc-show.veth.rc").read_text())
    assert dcb.unsupported(rc, (FIX / "pfc-show.veth.stderr").read_text())
    assert not dcb.unsupported(0, "")


def test_a_configured_port_needs_nothing() -> None:
    port = _port("pfc-show.roce.json", "app-show.roce.json")
    assert port.as_dict()["pfc_enabled"] == [3] and port.dscp_prio == {26: [3], 46: [5]}
    assert dcb.wanted_changes(port, 26, 3) == [] and dcb.verdict(port, 26, 3) == []
    assert port.as_dict()["trust_dscp"] is True  # a DSCP APP entry: mlx5 trusts DSCP


def test_trust_dscp_follows_the_app_table_as_mlx5_does() -> None:
    assert _port("pfc-show.default.json", "app-show.empty.json").trust_dscp is False
    assert dcb.PortDcb("data0", False, reason="no DCB", dscp_prio={26: [3]}).trust_dscp is False


def test_a_default_port_gets_pfc_and_the_dscp_mapping() -> None:
    port = _port("pfc-show.default.json", "app-show.empty.json")
    assert dcb.wanted_changes(port, 26, 3) == [
        ["dcb", "pfc", "set", "dev", "ens1f0np0", "prio-pfc", "all:off", "3:on"],
        ["dcb", "app", "replace", "dev", "ens1f0np0", "dscp-prio", "26:3"],
    ]
    assert dcb.verdict(port, 26, 3) == [
        "ens1f0np0: PFC on priorities none, roce_qos.cos is 3",
        "ens1f0np0: DSCP 26 maps to priority none, want 3",
    ]


def test_another_cos_or_dscp_is_named() -> None:
    port = _port("pfc-show.roce.json", "app-show.roce.json")
    assert dcb.verdict(port, 46, 3) == ["ens1f0np0: DSCP 46 maps to priority [5], want 3"]
    assert dcb.wanted_changes(port, 26, 4)[0][-2:] == ["all:off", "4:on"]


def test_older_on_off_strings_and_bad_output() -> None:
    assert dcb.parse_pfc('{"prio_pfc":["off","off","off","on","off","off","off","off"]}')[0][3] is True
    with pytest.raises(dcb.DcbError, match="unexpected"):
        dcb.parse_pfc("Attribute read: Operation not supported")
    with pytest.raises(dcb.DcbError, match="gave 4 priorities"):
        dcb.parse_pfc('{"prio_pfc":[true,false,false,false]}')
