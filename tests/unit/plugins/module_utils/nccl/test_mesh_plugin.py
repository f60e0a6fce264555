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


# mesh_network's cabling summaries (module_utils/mesh/phase.py summary) of the three shapes of issue 35.
DIRECTED_MESH = {"shape": "full_mesh", "order": ["n1", "n2", "n3"], "link_prefix": 30, "max_cables": 1}
LAB_MESH = {
    **DIRECTED_MESH,
    "device_index_problems": ["n2-n3 device 0: n2 data0 faces n1, n3 data0 faces n1"],
}
RING = {"shape": "ring", "order": ["n1", "n2", "n3", "n4"], "link_prefix": 30, "max_cables": 1}
RING.update(non_neighbours=True, max_hops=2)
RAILS = {"shape": "full_mesh", "order": ["n1", "n2"], "link_prefix": 31, "max_cables": 2}


@pytest.mark.parametrize("version", ["2.30.7", "2.31.0"])
def test_new_nccl_on_a_full_mesh_routes_itself_at_the_cable_prefix(version: str) -> None:
    d = rules.decide(version, force=False, transport="rdma", cabling=DIRECTED_MESH)
    assert d["use_plugin"] is False
    assert d["env"] == {
        "NCCL_IB_SUBNET_AWARE_ROUTING": "1",
        "NCCL_IB_SUBNET_PREFIX_LEN": "30",
        "NCCL_CROSS_NIC": "0",
        "NCCL_IB_MERGE_NICS": "0",
    }
    assert d["reason"] == (
        f"NCCL {version} >= 2.30.7 on a full mesh: built-in subnet-aware routing "
        "(NCCL_IB_SUBNET_AWARE_ROUTING=1, NCCL_IB_SUBNET_PREFIX_LEN=30, NCCL_CROSS_NIC=0, "
        "NCCL_IB_MERGE_NICS=0)"
    )


def test_new_nccl_on_rails_keeps_the_two_cables_fused() -> None:
    d = rules.decide("2.30.7", force=False, transport="rdma", cabling=RAILS)
    assert d["use_plugin"] is False and "NCCL_IB_MERGE_NICS" not in d["env"]
    assert d["env"]["NCCL_IB_SUBNET_PREFIX_LEN"] == "31"
    three = rules.decide("2.30.7", force=False, transport="rdma", cabling={**RAILS, "max_cables": 3})
    assert three["use_plugin"] is True and "a listener sends NCCL only 2 GIDs" in three["reason"]


def test_new_nccl_where_no_end_faces_the_other_gets_the_plugin() -> None:
    d = rules.decide("2.30.7", force=False, transport="rdma", cabling=LAB_MESH)
    assert d["use_plugin"] is True
    assert "neither does (n2-n3 device 0: n2 data0 faces n1, n3 data0 faces n1)" in d["reason"]


@pytest.mark.parametrize(
    ("version", "transport"), [("2.28.9", "rdma"), ("2.30.7", "rdma"), ("2.28.9", "tcp")]
)
def test_a_ring_gets_the_plugin_and_the_ring_algorithm(version: str, transport: str) -> None:
    d = rules.decide(version, force=False, transport=transport, cabling=RING)
    assert d["use_plugin"] is True and d["env"]["NCCL_ALGO"] == "Ring"
    if version == "2.30.7":
        assert "ring with nodes 2 cables apart: NCCL's IB transport has no path" in d["reason"]


def test_new_nccl_over_tcp_on_a_ring_keeps_its_sockets_on_the_routes() -> None:
    # NCCL's socket transport binds the node address: the kernel routes each peer along the cabling.
    d = rules.decide("2.30.7", force=False, transport="tcp", cabling=RING)
    assert d["use_plugin"] is False and d["env"]["NCCL_ALGO"] == "Ring"


def test_old_nccl_full_mesh_is_unchanged() -> None:
    d = rules.decide("2.28.9", force=False, transport="rdma", cabling=LAB_MESH)
    assert d["env"] == {"NCCL_NET_PLUGIN": "mesh", "NCCL_MESH_TRANSPORT": "verbs"}
