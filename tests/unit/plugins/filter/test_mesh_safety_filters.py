"""The safety filters wrap module_utils/mesh/safety.py and lldp.py; their errors become filter errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.rdmaops.cluster.plugins.filter.mesh_safety import FilterModule

ROOT = Path(__file__).resolve().parents[4]
FILTERS = FilterModule().filters()
LLDP = (ROOT / "tests/unit/fixtures/lldpd/lldpd_1.0.16_two_neighbors.json").read_text()
ADDR = (ROOT / "tests/unit/fixtures/iproute2/ip_addr_node1_mesh.json").read_text()


def test_all_filters_have_doc_files() -> None:
    for name in FILTERS:
        doc = ROOT / "plugins" / "filter" / f"{name}.yml"
        assert doc.is_file() and f"name: {name}\n" in doc.read_text(), name


def test_errors_become_filter_errors_naming_the_filter() -> None:
    with pytest.raises(AnsibleFilterError, match="mesh_lldp_neighbors: lldpcli output is not JSON"):
        FILTERS["mesh_lldp_neighbors"]("garbage")
    with pytest.raises(AnsibleFilterError, match=r"mesh_anchored_layout: .*not a valid CIDR"):
        FILTERS["mesh_anchored_layout"](["n1", "n2"], {}, "192.168.300.0/22", 30, "10.255.0.0/24")


def test_cabling_and_discovery_through_the_filters() -> None:
    seen = FILTERS["mesh_lldp_neighbors"](LLDP)
    names = {"node1": None, "node2": ["node2"], "node3": []}
    report = FILTERS["mesh_cabling_report"]("node1", {"node2": "data1", "node3": "data0"}, seen, names)
    assert report["errors"][0] == "node1 data1 faces node3 data0, the inventory says node2"
    found = FILTERS["mesh_discovered_ports"](seen, names, "node1", ["mgmt0"])
    assert found["ports"] == {"node2": "data0", "node3": "data1"}


def test_management_filters() -> None:
    ifaces = {"mgmt0": "", "data0": "", "data1": ""}
    errors = FILTERS["mesh_management_errors"](
        "node1", "mesh", {"node2": "mgmt0"}, "", ifaces, ADDR, "[]", ("10.96.0.11",), "10.96.0.0/24"
    )
    assert errors and "'mgmt0', the interface holding 10.96.0.11" in errors[0]
    ident = FILTERS["mesh_management_identity"](ADDR, ["10.96.0.11"])
    assert FILTERS["mesh_identity_errors"]({"a": ident, "b": ident})[0].startswith("a and b have the same")
    assert FILTERS["mesh_read_netplan"](None, "nodeaddr0") == {"node_address": "", "links": []}
