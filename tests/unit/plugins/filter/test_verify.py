"""The verify filters wrap module_utils (verify_plan, verify_parse, verify_thresholds, ping)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.rdmaops.cluster.plugins.filter.verify import FilterModule

ROOT = Path(__file__).resolve().parents[4]
FIXTURES = ROOT / "tests" / "unit" / "fixtures"
FILTERS = FilterModule().filters()


def test_all_filters_have_doc_files() -> None:
    for name in FILTERS:
        assert (ROOT / "plugins" / "filter" / f"{name}.yml").is_file(), name


def test_verify_ping_reads_iputils_output() -> None:
    stats = FILTERS["verify_ping"]((FIXTURES / "ping" / "iputils_20221126_ok.txt").read_text())
    assert stats["received"] == 20 and stats["median_us"] is not None


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("verify_ping", ("ping: unknown host\n",), "verify_ping: no ping replies or summary"),
        ("verify_thresholds", ("fast",), "verify_thresholds: thresholds must be a mapping"),
        ("verify_env_file", ("not an assignment",), "verify_env_file: environment file line 1"),
        ("verify_links", ({}, ["a", "b"]), "verify_links: no mesh_network plan for a, b"),
    ],
)
def test_errors_name_the_filter(name: str, args: tuple[object, ...], message: str) -> None:
    with pytest.raises(AnsibleFilterError, match=message):
        FILTERS[name](*args)
