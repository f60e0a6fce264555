"""A switched fabric's inventory rules and settings (plugins/module_utils/mesh/fabric.py): one message per
mistake, naming node, rail, port and value, including the mistakes of a list edited by hand."""

from __future__ import annotations

from typing import Any

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import fabric

from .conftest import FABRIC_DEFAULTS

RAILS = ["ens1f0np0", "ens1f1np1", "ens2f0np0", "ens2f1np1"]
HOSTS = ["gpu01", "gpu02", "gpu03", "gpu04"]


def lists(**changes: list[Any]) -> dict[str, list[Any]]:
    return {h: list(changes.get(h, RAILS)) for h in HOSTS}


def settings(**changes: Any) -> fabric.Settings:
    subnet = changes.pop("fabric_subnet", "192.168.200.0/24")
    return fabric.Settings(subnet, **{**FABRIC_DEFAULTS, **changes})


def parsed(scheme: str, hosts: int = 4, rails: int = 4, **changes: Any) -> tuple[Any, list[str]]:
    return fabric.parse_settings(
        settings(fabric_scheme=scheme, **changes), hosts, rails, "10.93.0.0/24", "10.255.0.0/24"
    )


# --------------------------------------------------------------------------- one node's ports


def test_a_node_lists_its_ports_or_names_one() -> None:
    assert fabric.node_ports(RAILS, "") == RAILS
    assert fabric.node_ports([], "ens1f0np0") == ["ens1f0np0"]
    assert fabric.node_ports([], "") == []
    assert fabric.list_errors("gpu01", RAILS, "") == []
    assert fabric.list_errors("gpu01", [], "ens1f0np0") == []
    # the one port may be given too, when it is rail 0
    assert fabric.list_errors("gpu01", RAILS, "ens1f0np0") == []


@pytest.mark.parametrize(
    ("ports", "port", "expect"),
    [
        ([], "", "gpu01: mesh_network_fabric_port is not set (switched topology)"),
        ("ens1f0np0", "", "gpu01: mesh_network_fabric_ports 'ens1f0np0' is not a list of ports"),
        (["ens1f0np0", ""], "", "gpu01: mesh_network_fabric_ports rail1 is empty ('')"),
        (
            RAILS,
            "ens2f0np0",
            "gpu01: mesh_network_fabric_port 'ens2f0np0' is not rail0 of mesh_network_fabric_ports "
            "('ens1f0np0'): set one of the two",
        ),
    ],
)
def test_how_a_node_states_its_ports_is_checked(ports: Any, port: Any, expect: str) -> None:
    assert any(expect in e for e in fabric.list_errors("gpu01", ports, port)), fabric.list_errors(
        "gpu01", ports, port
    )


# --------------------------------------------------------------------------- across nodes


def test_the_same_rails_everywhere_pass() -> None:
    assert fabric.port_errors(HOSTS, lists()) == []


def test_a_rail_missing_on_a_node_is_named_with_the_others_count() -> None:
    assert fabric.port_errors(HOSTS, lists(gpu03=RAILS[:3])) == [
        "gpu03: no port for rail3: mesh_network_fabric_ports lists 3 (rail0 ens1f0np0, rail1 ens1f1np1, "
        "rail2 ens2f0np0), gpu01, gpu02 and gpu04 list 4 (every node has one port per rail, in rail order)"
    ]


def test_a_node_with_more_ports_than_the_others_names_the_extra_rail() -> None:
    errors = fabric.port_errors(HOSTS, lists(gpu02=[*RAILS, "ens3f0np0"]))
    assert errors == [
        "gpu02: mesh_network_fabric_ports lists 5 ports, gpu01, gpu03 and gpu04 list 4: rail4 ens3f0np0 is "
        "on a rail no other node has"
    ]


def test_port_counts_that_differ_take_the_most_common_count() -> None:
    two = {"gpu01": RAILS[:2], "gpu02": RAILS[:2], "gpu03": RAILS, "gpu04": RAILS}
    # a tie: the larger count is the fabric's, the others lack rails 2 and 3
    errors = fabric.port_errors(HOSTS, two)
    assert [e.split(":")[0] for e in errors] == ["gpu01", "gpu02"]
    assert "no port for rail2, rail3" in errors[0]


def test_a_port_listed_twice_on_a_node_names_both_rails() -> None:
    twice = ["ens1f0np0", "ens1f1np1", "ens1f0np0", "ens2f1np1"]
    assert fabric.port_errors(HOSTS, lists(gpu02=twice))[0] == (
        "gpu02: mesh_network_fabric_ports lists ens1f0np0 twice (rail0 and rail2): one port per rail"
    )
    by_mac = [{"name": "ens1f0np0", "macaddress": "B8:3F:D2:A0:11:52"}, {"macaddress": "b8:3f:d2:a0:11:52"}]
    errors = fabric.port_errors(["gpu01"], {"gpu01": by_mac})
    assert errors == [
        "gpu01: mesh_network_fabric_ports lists b8:3f:d2:a0:11:52 twice (rail0 and rail1): one port per rail"
    ]


def test_a_list_sorted_by_hand_on_one_node_is_refused() -> None:
    """The usual mistake: one node's list sorted (or reordered) by hand, its NICs then on the wrong rails."""
    reordered = ["ens1f0np0", "ens2f0np0", "ens1f1np1", "ens2f1np1"]
    errors = fabric.port_errors(HOSTS, lists(gpu03=reordered))
    assert errors == [
        "gpu03: mesh_network_fabric_ports lists the ports of gpu01, gpu02 and gpu04 in another order "
        "(rail0 ens1f0np0, rail1 ens2f0np0, rail2 ens1f1np1, rail3 ens2f1np1; gpu01, gpu02 and gpu04: "
        "rail0 ens1f0np0, rail1 ens1f1np1, rail2 ens2f0np0, rail3 ens2f1np1): list them in rail order, "
        "NIC i faces leaf i on every node"
    ]


def test_servers_that_name_their_nics_differently_are_not_compared() -> None:
    other_model = ["enp65s0f0np0", "enp65s0f1np1", "enp193s0f0np0", "enp193s0f1np1"]
    assert fabric.port_errors(HOSTS, lists(gpu04=other_model)) == []


def test_a_copied_host_vars_file_shows_as_one_mac_on_two_nodes() -> None:
    mine = [{"name": r, "macaddress": f"b8:3f:d2:a0:11:{50 + i:02x}"} for i, r in enumerate(RAILS)]
    errors = fabric.port_errors(HOSTS, lists(gpu02=mine, gpu03=mine))
    assert len(errors) == 4
    assert errors[0] == (
        "gpu02 and gpu03 list the same MAC b8:3f:d2:a0:11:32 (gpu02 rail0, gpu03 rail0): a MAC is one port "
        "of one node (a host_vars file copied without changing its MACs?)"
    )


# --------------------------------------------------------------------------- settings


def test_auto_is_shared_for_one_port_and_rails_for_several() -> None:
    assert fabric.scheme_of("auto", 1) == "shared" and fabric.scheme_of("auto", 4) == "rails"
    assert fabric.scheme_of("leaf31", 1) == "leaf31"
    one, errors = parsed("auto", rails=1)
    assert errors == [] and one is not None and (one.scheme, one.table_base) == ("shared", None)
    many, errors = parsed("auto")
    assert errors == [] and many is not None and many.scheme == "rails"
    assert [str(n) for n in many.subnets] == [f"192.168.{192 + i}.0/24" for i in range(4)]


def test_one_port_per_node_keeps_todays_rules_and_messages() -> None:
    _f, errors = fabric.parse_settings(settings(fabric_subnet="10.93.0.0/25"), 4, 1, "10.93.0.0/24", "")
    assert errors == ["mesh_network_fabric_subnet 10.93.0.0/25 overlaps the management network 10.93.0.0/24"]
    _f, errors = fabric.parse_settings(settings(fabric_subnet="192.168.200.0/30"), 4, 1, "10.93.0.0/24", "")
    assert errors == ["subnet 192.168.200.0/30 is too small: it has 2 host addresses, address #4 is needed"]


@pytest.mark.parametrize(
    ("scheme", "changes", "hosts", "expect"),
    [
        ("bonded", {}, 4, "mesh_network_fabric_scheme 'bonded' is none of auto, shared, rails, leaf31"),
        (
            "shared",
            {"fabric_subnet": "192.168.200.0/28"},
            4,
            "mesh_network_fabric_subnet 192.168.200.0/28 is too small: it has 14 host addresses, "
            "4 nodes x 4 NICs need 16 (one address per NIC)",
        ),
        (
            "shared",
            {"fabric_subnet": "10.255.0.0/23"},
            4,
            "mesh_network_fabric_subnet 10.255.0.0/23 overlaps mesh_network_node_pool 10.255.0.0/24",
        ),
        (
            "rails",
            {"rail_subnets": ["192.168.1.0/24", "192.168.2.0/24"]},
            4,
            "mesh_network_rail_subnets lists 2 subnet(s) for 4 rails: one per rail, in rail order",
        ),
        (
            "rails",
            {"rail_subnets": ["192.168.1.0/24", "192.168.2.0/24", "192.168.1.128/25", "10.93.0.0/24"]},
            4,
            "mesh_network_rail_subnets rail0 192.168.1.0/24 overlaps mesh_network_rail_subnets rail2 "
            "192.168.1.128/25; mesh_network_rail_subnets rail3 10.93.0.0/24 overlaps the management network "
            "10.93.0.0/24",
        ),
        (
            "rails",
            {"rail_subnets": ["192.168.1.0/29", "192.168.2.0/24", "192.168.3.0/24", "192.168.4.0/24"]},
            8,
            "mesh_network_rail_subnets rail0 192.168.1.0/29 is too small: it has 6 host addresses, "
            "8 nodes need 8 (one address per node on each rail)",
        ),
        (
            "rails",
            {"rail_subnets": "192.168.1.0/24"},
            4,
            "mesh_network_rail_subnets '192.168.1.0/24' is not a list of CIDRs (one per rail)",
        ),
        (
            "rails",
            {"rail_pool": "192.168.192.0/23"},
            4,
            "mesh_network_rail_pool 192.168.192.0/23 is too small: it holds 2 /24 subnets, "
            "4 rails need one each",
        ),
        ("rails", {"rail_prefix": 31}, 4, "mesh_network_rail_prefix 31 must be /20 (the pool's) to /30"),
        ("rails", {"rail_prefix": "24x"}, 4, "mesh_network_rail_prefix '24x' is not a whole number"),
        (
            "rails",
            {"rail_pool": "10.255.0.0/20"},
            4,
            "mesh_network_rail_pool rail0 10.255.0.0/24 overlaps mesh_network_node_pool 10.255.0.0/24",
        ),
        (
            "rails",
            {"rail_prefix": 25},
            200,
            "mesh_network_rail_pool rail0 192.168.192.0/25 is too small: it has 126 host addresses, "
            "200 nodes need 200",
        ),
        (
            "leaf31",
            {"leaf_pool": "10.200.0.0/28"},
            4,
            "mesh_network_leaf_pool 10.200.0.0/28 is too small: it has 8 /31 subnets, "
            "4 nodes x 4 NICs need 16 (one /31 per NIC)",
        ),
        (
            "leaf31",
            {"leaf_routes": ["10.200.0.0/16", "10.0.0.0/8"]},
            4,
            "mesh_network_leaf_routes[1] 10.0.0.0/8 overlaps the management network 10.93.0.0/24",
        ),
        (
            "leaf31",
            {"leaf_routes": "10.200.0.0/16"},
            4,
            "mesh_network_leaf_routes '10.200.0.0/16' is not a list",
        ),
        (
            "leaf31",
            {"fabric_table_base": 252},
            4,
            "mesh_network_fabric_table_base 252 gives tables 252..255 for 4 rail(s): tables are 1..32765",
        ),
        ("shared", {"fabric_table_base": 0}, 4, "mesh_network_fabric_table_base 0 gives tables 0..3"),
        ("shared", {"fabric_table_base": 32763}, 4, "tables 32763..32766"),
        (
            "leaf31",
            {"fabric_table_base": True},
            4,
            "mesh_network_fabric_table_base True is not a whole number",
        ),
    ],
)
def test_bad_settings_are_named(scheme: str, changes: dict[str, Any], hosts: int, expect: str) -> None:
    fab, errors = parsed(scheme, hosts=hosts, **changes)
    assert fab is None
    assert expect in "; ".join(errors), errors


def test_each_scheme_parses_its_own_settings_only() -> None:
    # a rail pool that overlaps the management network does not matter to shared or leaf31
    for scheme in ("shared", "leaf31"):
        fab, errors = parsed(scheme, fabric_subnet="192.168.200.0/24", rail_pool="10.93.0.0/20")
        assert errors == [] and fab is not None and fab.table_base == 100
    fab, errors = parsed("leaf31", leaf_routes=[])
    assert errors == [] and fab is not None and fab.leaf_routes == ["10.200.0.0/16"]
    fab, errors = parsed("rails", rail_subnets=[f"172.20.{i}.0/24" for i in range(4)])
    assert errors == [] and fab is not None and fab.table_base is None
    assert [str(n) for n in fab.subnets] == [f"172.20.{i}.0/24" for i in range(4)]
