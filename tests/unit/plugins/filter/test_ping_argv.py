"""The ping_argv filter: mesh_network's path checks pinged with module_utils/ping's command line."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.rdmaops.cluster.plugins.filter.ping import FilterModule

ROOT = Path(__file__).resolve().parents[4]
FILTERS = FilterModule().filters()


def test_all_filters_have_doc_files() -> None:
    for name in FILTERS:
        assert (ROOT / "plugins" / "filter" / f"{name}.yml").is_file(), name


def test_path_check_as_mesh_network_verify_pings_it() -> None:
    check = {"dst": "n2", "kind": "node", "address": "10.255.0.2", "size": 8972, "source": "10.255.0.1"}
    # What roles/mesh_network/tasks/verify.yml built in Jinja before.
    before = ["ping", "-n", "-c", "2", "-i", "0.2", "-W", "2", "-M", "do", "-s", "8972"]
    before += ["-I", "10.255.0.1", "10.255.0.2"]
    assert FILTERS["ping_argv"](check, count=2, interval=0.2, wait_s=2) == before
    link = {**check, "kind": "link", "source": ""}
    assert FILTERS["ping_argv"](link, count=2, interval=0.2, wait_s=2)[-3:] == ["-s", "8972", "10.255.0.2"]


def test_address_and_overrides() -> None:
    assert FILTERS["ping_argv"]("10.0.0.1", count=3) == ["ping", "-n", "-c", "3", "10.0.0.1"]
    target = {"address": "10.0.0.2", "size": 8972}
    assert FILTERS["ping_argv"](target, size=0, quiet=True) == ["ping", "-n", "-q", "-c", "1", "10.0.0.2"]


@pytest.mark.parametrize(
    ("target", "kwargs", "message"),
    [
        ({"size": 10}, {}, "has no address"),
        (5, {}, "neither an address nor a mapping"),
        ("10.0.0.1", {"size": "big"}, "size 'big' is not a whole number"),
    ],
)
def test_bad_targets(target: object, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(AnsibleFilterError, match=message):
        FILTERS["ping_argv"](target, **kwargs)
