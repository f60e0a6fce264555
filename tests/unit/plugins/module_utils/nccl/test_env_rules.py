"""One function per rule for the NCCL environment's inputs (plugins/module_utils/nccl/env_rules.py)."""

from __future__ import annotations

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.nccl import env_rules as rules


@pytest.mark.parametrize("value", ["rdma", "tcp"])
def test_transport_ok(value: str) -> None:
    assert rules.transport_errors(value, "nccl transport") == []


@pytest.mark.parametrize(("value", "shown"), [("ib", "'ib'"), ("RDMA", "'RDMA'"), (None, "None"), (1, "1")])
def test_transport_bad(value: object, shown: str) -> None:
    assert rules.transport_errors(value, "nccl transport") == [
        f"nccl transport must be 'rdma' or 'tcp', got {shown}"
    ]


@pytest.mark.parametrize("value", ["eth0", "nodeaddr0", "enp1s0f0np0", "bond0.100", "a" * 15, "data0,data1"])
def test_socket_ifname_ok(value: str) -> None:
    assert rules.socket_ifname_errors(value, "x") == []


@pytest.mark.parametrize(
    "value",
    ["", None, "a" * 16, "eth0; rm -rf /", "eth 0", "eth0\n", "a/b", "data0,", ",data0", "data0, data1"],
)
def test_socket_ifname_bad(value: object) -> None:
    assert rules.socket_ifname_errors(value, "nccl_env_socket_ifname") == [
        f"nccl_env_socket_ifname {value!r} is not a valid interface name"
    ]


@pytest.mark.parametrize("value", [[], ["data0"], ["data0", "data1", "data2", "data3"]])
def test_rails_ok(value: list[str]) -> None:
    assert rules.rails_errors(value, "nccl_env_rails") == []


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("data0,data1", "nccl_env_rails must be a list of interface names in rail order, got 'data0,data1'"),
        (["data0", "data 1", 3], "nccl_env_rails: 'data 1', 3 is not a valid interface name"),
        (["data0", "data1", "data0"], "nccl_env_rails: data0 is listed twice (one port per rail)"),
    ],
)
def test_rails_bad(value: object, message: str) -> None:
    assert rules.rails_errors(value, "nccl_env_rails") == [message]


@pytest.mark.parametrize("value", [0, 26, 63, "26", "0"])
def test_dscp_ok(value: object) -> None:
    assert rules.dscp_errors(value, "DSCP") == []


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (64, "DSCP must be an integer 0..63, got 64"),
        (-1, "DSCP must be an integer 0..63, got -1"),
        ("64", "DSCP must be an integer 0..63, got '64'"),
        ("af41", "DSCP must be an integer 0..63, got 'af41'"),
        (26.0, "DSCP must be an integer 0..63, got 26.0"),
        (True, "DSCP must be an integer 0..63, got True"),
        (None, "DSCP must be an integer 0..63, got None"),
    ],
)
def test_dscp_bad(value: object, message: str) -> None:
    assert rules.dscp_errors(value, "DSCP") == [message]
