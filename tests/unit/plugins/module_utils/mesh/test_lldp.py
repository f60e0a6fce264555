"""lldpcli JSON (real lldpd 1.0.16 output from the lab) and the cabling rules (module_utils/mesh/lldp.py)."""

from __future__ import annotations

import json

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import lldp

from ...conftest import FIXTURE_DIR

FIXTURES = FIXTURE_DIR / "lldpd"
TWO = (FIXTURES / "lldpd_1.0.16_two_neighbors.json").read_text()
ONE = (FIXTURES / "lldpd_1.0.16_one_neighbor.json").read_text()
NONE = (FIXTURES / "lldpd_1.0.16_no_neighbor.json").read_text()
NAMES = {"node1": ["node1"], "node2": ["node2"], "node3": ["node3"]}


def test_parse_several_interfaces_list_shape() -> None:
    seen = lldp.parse_neighbors(TWO)
    assert sorted(seen) == ["data0", "data1"]
    assert seen["data0"] == {
        "sysname": "node2",
        "chassis_id": "f6:dc:42:fe:c5:7a",
        "port_id": "data0",
        "port_id_type": "ifname",
        "port_descr": "safety:mesh:node1:data0-node2:data0",
        "mgmt_ip": "10.96.0.12",
    }
    assert seen["data1"]["sysname"] == "node3"


def test_parse_one_interface_object_shape_and_none() -> None:
    assert list(lldp.parse_neighbors(ONE)) == ["data1"]
    assert lldp.parse_neighbors(ONE)["data1"]["sysname"] == "node3"
    assert lldp.parse_neighbors(NONE) == {}


def test_parse_neighbour_without_system_name_and_mac_port_id() -> None:
    # A neighbour that sends no system name is keyed "id"; a port id of type mac leaves the name to descr.
    text = json.dumps(
        {
            "lldp": {
                "interface": {
                    "eth9": {
                        "chassis": {"id": {"type": "mac", "value": "02:00:00:00:00:09"}},
                        "port": {"id": {"type": "mac", "value": "02:00:00:00:00:0a"}, "descr": "swp9"},
                    }
                }
            }
        }
    )
    seen = lldp.parse_neighbors(text)["eth9"]
    assert seen["sysname"] == "" and seen["chassis_id"] == "02:00:00:00:00:09"
    assert lldp.peer_port_name(seen) == "swp9"


@pytest.mark.parametrize("bad", ["not json", "[]", '{"other": {}}'])
def test_parse_rejects_what_is_not_lldpcli_json(bad: str) -> None:
    with pytest.raises(lldp.LldpError):
        lldp.parse_neighbors(bad)


def test_cabling_as_declared_passes() -> None:
    report = lldp.cabling_report(
        "node1", {"node2": "data0", "node3": "data1"}, lldp.parse_neighbors(TWO), NAMES
    )
    assert report == {"errors": [], "silent": []}


def test_swapped_ports_are_named() -> None:
    report = lldp.cabling_report(
        "node1", {"node2": "data1", "node3": "data0"}, lldp.parse_neighbors(TWO), NAMES
    )
    assert report["errors"] == [
        "node1 data1 faces node3 data0, the inventory says node2",
        "node1 data0 faces node2 data0, the inventory says node3",
    ]


def test_a_silent_port_is_reported_not_failed() -> None:
    report = lldp.cabling_report(
        "node1", {"node2": "data0", "node3": "data1"}, lldp.parse_neighbors(ONE), NAMES
    )
    assert report["errors"] == []
    assert report["silent"] == [
        "node1 data0: LLDP sees no neighbour (the inventory says node2; no lldpd there?), "
        "left to the probes after the apply"
    ]


def test_system_names_map_back_to_inventory_names() -> None:
    # The inventory calls them spark-a/b; the nodes' hostnames are node2/node3 (FQDN or short).
    names = {"spark-a": ["node2.example.org"], "spark-b": ["node3"]}
    report = lldp.cabling_report(
        "node1", {"spark-a": "data0", "spark-b": "data1"}, lldp.parse_neighbors(TWO), names
    )
    assert report == {"errors": [], "silent": []}
    found = lldp.discovered_ports(lldp.parse_neighbors(TWO), names, "node1")
    assert found["ports"] == {"spark-a": "data0", "spark-b": "data1"}


def test_a_neighbour_outside_the_inventory_is_named_by_its_system_name() -> None:
    report = lldp.cabling_report(
        "node1", {"node2": "data0"}, lldp.parse_neighbors(TWO), {"node2": [], "x": []}
    )
    assert report["errors"] == []
    report = lldp.cabling_report("node1", {"node3": "data0"}, lldp.parse_neighbors(TWO), {"node3": []})
    assert report["errors"] == ["node1 data0 faces node2 data0, the inventory says node3"]


def test_discovered_ports_from_real_output() -> None:
    found = lldp.discovered_ports(lldp.parse_neighbors(TWO), NAMES, "node1", exclude=["mgmt0"])
    assert found == {
        "ports": {"node2": "data0", "node3": "data1"},
        "faces": {"data0": "node2 data0", "data1": "node3 data0"},
        "unknown": [],
    }


def test_discovered_ports_skip_excluded_and_unknown_and_list_rails() -> None:
    seen = lldp.parse_neighbors(TWO)
    seen["mgmt0"] = {
        "sysname": "switch1",
        "chassis_id": "x",
        "port_id": "",
        "port_id_type": "",
        "port_descr": "",
    }
    seen["data2"] = dict(seen["data0"])
    seen["data3"] = {"sysname": "sw9", "chassis_id": "y", "port_id": "", "port_id_type": "", "port_descr": ""}
    found = lldp.discovered_ports(seen, NAMES, "node1", exclude=["mgmt0"])
    # node2 on two ports (a second cable): a list, ordered by node1's ports (node1 comes first).
    assert found["ports"] == {"node2": ["data0", "data2"], "node3": "data1"}
    assert found["unknown"] == ["data3: sw9"]


def rails_neighbor(sysname: str, port: str) -> dict[str, str]:
    return {
        "sysname": sysname,
        "chassis_id": "c",
        "port_id": port,
        "port_id_type": "ifname",
        "port_descr": "",
    }


def test_both_ends_list_rails_in_the_same_order() -> None:
    # node1 data0 <-> node2 data1 and node1 data1 <-> node2 data0 (crossed), and data10 sorts after data2.
    one = {
        "data0": rails_neighbor("node2", "data1"),
        "data1": rails_neighbor("node2", "data0"),
        "data10": rails_neighbor("node2", "data2"),
    }
    two = {
        "data1": rails_neighbor("node1", "data0"),
        "data0": rails_neighbor("node1", "data1"),
        "data2": rails_neighbor("node1", "data10"),
    }
    first = lldp.discovered_ports(one, NAMES, "node1")["ports"]["node2"]
    second = lldp.discovered_ports(two, NAMES, "node2")["ports"]["node1"]
    assert first == ["data0", "data1", "data10"] and second == ["data1", "data0", "data2"]
    # Read back as cables, each k-th pair of ports is one cable, and LLDP agrees with every one of them.
    cables = [{"ifname": a, "peer": "node2", "peer_port": b} for a, b in zip(first, second, strict=True)]
    assert lldp.cabling_report("node1", cables, one, NAMES) == {"errors": [], "silent": []}


def test_the_wrong_far_port_of_the_right_peer_is_a_miscabling() -> None:
    seen = {"data0": rails_neighbor("node2", "data1"), "data1": rails_neighbor("node2", "data0")}
    cables = [
        {"ifname": "data0", "peer": "node2", "peer_port": "data0"},
        {"ifname": "data1", "peer": "node2", "peer_port": "data1"},
    ]
    assert lldp.cabling_report("node1", cables, seen, NAMES)["errors"] == [
        "node1 data0 faces node2 data1, the inventory says node2 data0",
        "node1 data1 faces node2 data0, the inventory says node2 data1",
    ]


def test_data_port_candidates_from_ip_json() -> None:
    links = [
        {"ifname": "lo", "link_type": "loopback", "flags": ["LOOPBACK", "UP", "LOWER_UP"]},
        {
            "ifname": "mgmt0",
            "link_type": "ether",
            "flags": ["UP", "LOWER_UP"],
            "linkinfo": {"info_kind": "veth"},
        },
        {
            "ifname": "data0",
            "link_type": "ether",
            "flags": ["UP", "LOWER_UP"],
            "linkinfo": {"info_kind": "veth"},
        },
        {"ifname": "data1", "link_type": "ether", "flags": ["NO-CARRIER", "UP"]},
        {"ifname": "enp1s0", "link_type": "ether", "flags": ["UP", "LOWER_UP"]},
        {
            "ifname": "nodeaddr0",
            "link_type": "ether",
            "flags": ["UP", "LOWER_UP"],
            "linkinfo": {"info_kind": "bridge"},
        },
    ]
    addrs = [{"ifname": "mgmt0", "addr_info": [{"family": "inet", "local": "10.93.0.11"}]}]
    assert lldp.data_port_candidates(json.dumps(links), json.dumps(addrs), ["10.93.0.11"]) == {
        "ports": ["data0", "enp1s0"],
        "excluded": ["mgmt0"],
    }
