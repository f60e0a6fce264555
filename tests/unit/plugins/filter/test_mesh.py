"""The filter plugin wraps the address math and turns errors into AnsibleFilterError."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.rdmaops.cluster.plugins.filter.mesh import FilterModule

ROOT = Path(__file__).resolve().parents[4]
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
        ("mesh_switched_addresses", (["a"], "300.1.1.0/24"), "'300.1.1.0/24'"),
        ("mesh_node_addresses", (["a"], 5), "node pool 5"),
        ("mesh_pool_errors", ("x", "10.0.0.0/8"), "pools 'x'"),
        ("mesh_netplan", ({"topology": "mesh"}, "big"), "mtu 'big'"),
    ],
)
def test_filter_errors(name: str, args: tuple[object, ...], needle: str) -> None:
    with pytest.raises(AnsibleFilterError) as info:
        FILTERS[name](*args)
    assert needle in str(info.value)


def test_mtu_errors_filter() -> None:
    assert FILTERS["mesh_mtu_errors"]("9000", "mesh_network_mtu") == []
    assert FILTERS["mesh_mtu_errors"]("65000", "mesh_network_mtu") == [
        "mesh_network_mtu '65000' must be an integer in 1280..9216"
    ]


def test_pool_and_mtu_arguments_are_required() -> None:
    # The mesh_network role's defaults own these values; a filter call without them is a mistake.
    for name, args in [
        ("mesh_links", (["a", "b"],)),
        ("mesh_node_addresses", (["a"],)),
        ("mesh_switched_addresses", (["a"],)),
        ("mesh_netplan", ({"topology": "mesh"},)),
        ("mesh_path_checks", ({"topology": "mesh"},)),
        ("mesh_plan_errors", (["a", "b"], "mesh")),
    ]:
        with pytest.raises(TypeError):
            FILTERS[name](*args)


def test_port_errors_reports_a_bad_host_list_instead_of_raising() -> None:
    # validate.yml adds this list to the others; an exception would hide every message.
    errs = FILTERS["mesh_port_errors"]("a", ["a", "b", "a"], "mesh", {"b": "eth1"}, "", {"eth1": ""})
    assert errs == ["duplicate host 'a' in the host list"]


def test_filter_resolves_through_ansible() -> None:
    """The FQCN resolves from the repo root with the committed ansible.cfg (no collection install)."""
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_LOCALHOST_WARNING": "False"}
    expr = "{{ ['n1','n2','n3','n4'] | rdmaops.cluster.mesh_links('192.168.100.0/22', 30) | to_json }}"
    proc = subprocess.run(
        [
            str(Path(sys.executable).with_name("ansible")),
            "localhost",
            "-i",
            "localhost,",
            "-c",
            "local",
            "-m",
            "ansible.builtin.debug",
            "-a",
            f"msg={expr}",
            "-o",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
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
