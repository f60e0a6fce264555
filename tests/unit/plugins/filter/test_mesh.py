"""The filter plugin wraps the address math and turns errors into AnsibleFilterError."""

from __future__ import annotations

import json

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.rdmaops.cluster.plugins.filter.mesh import FilterModule

from ..conftest import ROOT, ad_hoc

FILTERS = FilterModule().filters()


def test_all_filters_have_doc_files() -> None:
    for name in FILTERS:
        assert (ROOT / "plugins" / "filter" / f"{name}.yml").is_file(), name


def test_mesh_links_filter_matches_issue_example() -> None:
    links = FILTERS["mesh_links"](["n1", "n2", "n3"], pool="192.168.100.0/22", prefix=24)
    assert [x["subnet"] for x in links] == ["192.168.100.0/24", "192.168.101.0/24", "192.168.102.0/24"]


@pytest.mark.parametrize(
    ("name", "args", "needle"),
    [
        ("mesh_links", (["a", "b", "a"], "192.168.100.0/22", 30), "mesh_links: duplicate host 'a'"),
        ("mesh_links", (["a", "b"], "192.168.100.0/22", 40), "prefix 40"),
        ("mesh_node_addresses", (["a"], 5), "node pool 5"),
        ("mesh_netplan", ({"topology": "mesh"}, "big"), "mtu 'big'"),
        ("mesh_node_order", (["a", "a"],), "mesh_node_order: duplicate host 'a'"),
    ],
)
def test_filter_errors(name: str, args: tuple[object, ...], needle: str) -> None:
    with pytest.raises(AnsibleFilterError) as info:
        FILTERS[name](*args)
    assert needle in str(info.value)


def test_only_the_operator_filters_are_public() -> None:
    assert sorted(FILTERS) == [
        "mesh_links",
        "mesh_netplan",
        "mesh_node_addresses",
        "mesh_node_order",
        "mesh_reachability_table",
    ]


def test_mesh_links_with_ports_follow_the_cabling() -> None:
    ring = {
        "n1": {"n2": "d1", "n4": "d0"},
        "n2": {"n1": "d0", "n3": "d1"},
        "n3": {"n2": "d0", "n4": "d1"},
        "n4": {"n3": "d0", "n1": "d1"},
    }
    links = FILTERS["mesh_links"](["n1", "n2", "n3", "n4"], "192.168.100.0/22", 30, ports=ring)
    assert [(x["a"], x["b"], x["a_port"], x["b_port"]) for x in links] == [
        ("n1", "n2", "d1", "d0"),
        ("n2", "n3", "d1", "d0"),
        ("n1", "n4", "d0", "d1"),
        ("n3", "n4", "d1", "d0"),
    ]
    # The full mesh's subnets of those pairs: pair (i, j) takes number j(j-1)/2 + i.
    assert [x["subnet"] for x in links] == [
        "192.168.100.0/30",
        "192.168.100.8/30",
        "192.168.100.12/30",
        "192.168.100.20/30",
    ]
    with pytest.raises(AnsibleFilterError, match="n2: mesh_network_ports has no port for peer 'n1'"):
        FILTERS["mesh_links"](["n1", "n2"], "192.168.100.0/22", 30, ports={"n1": {"n2": "d0"}, "n2": {}})


def test_mesh_node_order_follows_the_ring() -> None:
    ring = {"n1": {"n3": "d0", "n4": "d1"}, "n2": {"n3": "d0", "n4": "d1"}, "n3": {"n1": "d0", "n2": "d1"}}
    ring["n4"] = {"n1": "d0", "n2": "d1"}
    assert FILTERS["mesh_node_order"](["n1", "n2", "n3", "n4"], ring) == ["n1", "n3", "n2", "n4"]
    assert FILTERS["mesh_node_order"](["n1", "n2", "n3"]) == ["n1", "n2", "n3"]


def test_pool_and_mtu_arguments_are_required() -> None:
    # The mesh_network role's defaults own these values; a filter call without them is a mistake.
    for name, args in [
        ("mesh_links", (["a", "b"],)),
        ("mesh_node_addresses", (["a"],)),
        ("mesh_netplan", ({"topology": "mesh"},)),
    ]:
        with pytest.raises(TypeError):
            FILTERS[name](*args)


def test_filter_resolves_through_ansible() -> None:
    """The FQCN resolves from the repo root with the committed ansible.cfg (no collection install)."""
    expr = "{{ ['n1','n2','n3','n4'] | rdmaops.cluster.mesh_links('192.168.100.0/22', 30) | to_json }}"
    proc = ad_hoc("ansible.builtin.debug", f"msg={expr}", "-o")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    payload = proc.stdout.split("=>", 1)[1]
    msg = json.loads(payload)["msg"]
    links = json.loads(msg) if isinstance(msg, str) else msg
    assert len(links) == 6 and links[5] == {
        "a": "n3",
        "b": "n4",
        "subnet": "192.168.100.20/30",
        "a_ip": "192.168.100.21",
        "b_ip": "192.168.100.22",
    }
