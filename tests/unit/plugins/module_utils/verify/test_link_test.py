"""link_test: the option set of rdma_bandwidth and verify_link, its checks and the line-rate fallback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from ansible_collections.rdmaops.cluster.plugins.doc_fragments.link_test import ModuleDocFragment
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify import link_test

from ...conftest import FIXTURE_DIR as FIXTURES

ROCE = str(FIXTURES / "sysfs" / "mlx5_roce")


def test_doc_fragment_documents_the_shared_spec() -> None:
    # The fragment and the spec are the two halves of one option set: same names, types, defaults.
    docs = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]
    spec = link_test.shared_options()
    assert sorted(docs) == sorted(spec)
    for name, entry in spec.items():
        assert docs[name]["type"] == entry["type"], name
        assert docs[name].get("default") == entry.get("default"), name
        assert docs[name].get("choices") == entry.get("choices"), name


def test_argument_spec_merges_each_modules_changes() -> None:
    spec = link_test.argument_spec({"port": {"default": 5201}, "ping_count": {"type": "int", "default": 50}})
    assert spec["port"] == {"type": "int", "default": 5201}
    assert spec["ping_count"] == {"type": "int", "default": 50}
    assert spec["duration"] == {"type": "int", "default": 5}
    # The shared set itself is not changed by one module's call.
    assert "default" not in link_test.argument_spec({})["port"]
    assert link_test.BW_TESTS == ["write_bw", "send_bw", "read_bw"]
    assert link_test.LAT_TESTS == ["write_lat", "send_lat", "read_lat"]


@pytest.mark.parametrize(
    ("changes", "kwargs", "message"),
    [
        ({}, {}, None),
        ({"duration": 0}, {}, "duration must be a positive integer, got 0"),
        ({"timeout": None}, {}, "timeout must be a positive integer, got None"),
        ({"latency_port": 0}, {"positive": (*link_test.POSITIVE, "latency_port")}, "latency_port must be"),
        ({"port": 70000}, {}, None),
        ({"port": 70000}, {"ports": ("port",)}, "port must be at most 65535, got 70000"),
    ],
)
def test_param_error(changes: dict[str, Any], kwargs: dict[str, Any], message: str | None) -> None:
    params = {"port": 5201, "latency_port": 5202, "duration": 5, "iterations": 1000, "parallel": 1}
    params = {**params, "timeout": 60, **changes}
    error = link_test.param_error(params, **kwargs)
    assert error == message if message is None else error is not None and error.startswith(message)


def line_rate(
    given: float | None, mode: str, sysfs_root: str, port_rate: float | None = None, **port: Any
) -> Any:
    """line_rate_gbps over a module's parameters: the shared options' defaults, then these."""
    params = {name: entry.get("default") for name, entry in link_test.shared_options().items()}
    params.update(line_rate_gbps=given, mode=mode, sysfs_root=sysfs_root, **port)
    return link_test.line_rate_gbps(params, port_rate)


def test_line_rate_fallback(tmp_path: Path) -> None:
    (tmp_path / "class/net/eth0").mkdir(parents=True)
    (tmp_path / "class/net/eth0/speed").write_text("25000\n")
    sysfs = str(tmp_path)
    assert line_rate(40.0, "tcp", sysfs, interface="eth0") == 40.0
    assert line_rate(None, "tcp", sysfs, interface="eth0") == 25
    assert line_rate(0, "tcp", sysfs, interface="eth0") == 25
    assert line_rate(None, "tcp", sysfs) is None
    assert line_rate(None, "tcp", sysfs, interface="eth9") is None  # no speed file: unknown
    # RDMA: the rate the caller already read, else the named port's rate from sysfs.
    assert line_rate(None, "rdma", ROCE, 200.0, interface="eth0") == 200.0
    assert line_rate(None, "rdma", ROCE, device="mlx5_1") == 10
    assert line_rate(None, "rdma", ROCE, device="mlx5_0", ib_port=1) == 100
    assert line_rate(50.0, "rdma", ROCE, 200.0, device="mlx5_0") == 50.0
    assert link_test.rdma_port_rate(ROCE, "mlx5_0", 2) is None
    assert link_test.rdma_port_rate(str(tmp_path / "none"), "mlx5_0", 1) is None
