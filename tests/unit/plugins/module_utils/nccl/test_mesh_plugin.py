"""The Mesh plugin decision and the nccl_mesh_plugin role's settings (module_utils/nccl/mesh_plugin.py)."""

from __future__ import annotations

from typing import Any

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl import mesh_plugin as rules


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("2.28.9", (2, 28, 9)),
        ((2, 30, 7), (2, 30, 7)),
        ([2, 21, 5], (2, 21, 5)),
        ("22809", (2, 28, 9)),
        (23007, (2, 30, 7)),
        (2708, (2, 7, 8)),
        (None, None),
        ("", None),
    ],
)
def test_parse_nccl_version(value: Any, parsed: tuple[int, int, int] | None) -> None:
    assert rules.parse_nccl_version(value) == parsed


@pytest.mark.parametrize("value", ["2.28", "two", "2.28.9-1", (2, 28)])
def test_parse_nccl_version_bad(value: Any) -> None:
    with pytest.raises(rules.NcclMeshPluginError, match="cannot read NCCL version"):
        rules.parse_nccl_version(value)


def test_old_nccl_gets_the_plugin_with_verbs_on_rdma() -> None:
    d = rules.decide("2.28.9", force=False, transport="rdma")
    assert d["use_plugin"] is True and d["nccl"] == "2.28.9"
    assert d["env"] == {"NCCL_NET_PLUGIN": "mesh", "NCCL_MESH_TRANSPORT": "verbs"}
    assert "2.28.9 < 2.30.7" in d["reason"]


def test_boundary_is_2_30_7() -> None:
    assert rules.decide("2.30.6", force=False, transport="rdma")["use_plugin"] is True
    d = rules.decide("2.30.7", force=False, transport="rdma")
    assert d["use_plugin"] is False and d["env"] == {"NCCL_IB_SUBNET_AWARE_ROUTING": "1"}
    assert rules.decide("2.31.0", force=False, transport="rdma")["use_plugin"] is False


def test_force_overrides_new_nccl() -> None:
    d = rules.decide("2.31.0", force=True, transport="tcp", nsocks=8, debug=1, ifname="=data0,data1")
    assert d["use_plugin"] is True and d["reason"].startswith("forced")
    assert d["env"] == {
        "NCCL_NET_PLUGIN": "mesh",
        "NCCL_MESH_TRANSPORT": "tcp",
        "NCCL_MESH_IFNAME": "=data0,data1",
        "NCCL_MESH_NSOCKS": "8",
        "NCCL_MESH_DEBUG": "1",
    }


def test_unknown_version_gets_the_plugin() -> None:
    d = rules.decide(None, force=False, transport="rdma", gid_index=3)
    assert d["use_plugin"] is True and d["nccl"] is None and "unknown" in d["reason"]
    assert d["env"]["NCCL_MESH_GID_INDEX"] == "3"


def test_bad_transport() -> None:
    with pytest.raises(rules.NcclMeshPluginError, match="transport must be"):
        rules.decide("2.28.9", force=False, transport="ib")


GOOD: dict[str, Any] = {"nsocks": 4, "debug": 0, "gid_index": None, "ifname": "", "prefix": "/opt/rdmaops/x"}


def test_settings_ok() -> None:
    assert rules.settings_errors(**GOOD) == []
    assert (
        rules.settings_errors(**(GOOD | {"ifname": "^docker,lo", "gid_index": 0, "nsocks": 16, "debug": 2}))
        == []
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"nsocks": 0}, "nccl_mesh_plugin_nsocks must be an integer 1..16, got 0"),
        ({"nsocks": True}, "nccl_mesh_plugin_nsocks must be an integer 1..16, got True"),
        ({"debug": 3}, "nccl_mesh_plugin_debug must be 0, 1 or 2, got 3"),
        (
            {"gid_index": -1},
            "nccl_mesh_plugin_gid_index must be empty (automatic) or an integer >= 0, got -1",
        ),
        ({"ifname": "eth0; rm"}, "nccl_mesh_plugin_ifname 'eth0; rm' is not an interface filter"),
        (
            {"prefix": "opt/x"},
            "nccl_mesh_plugin_prefix must be an absolute directory other than /, got 'opt/x'",
        ),
        ({"prefix": "/"}, "nccl_mesh_plugin_prefix must be an absolute directory other than /, got '/'"),
    ],
)
def test_settings_bad(change: dict[str, Any], message: str) -> None:
    errors = rules.settings_errors(**(GOOD | change))
    assert len(errors) == 1 and errors[0].startswith(message)
