"""NCCL/gloo environment per transport (plugins/filter/nccl_env.py) on discovered sysfs fixture ports."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.rdmaops.cluster.plugins.filter.nccl_env import FilterModule, nccl_env
from ansible_collections.rdmaops.cluster.plugins.module_utils.node.rdma.sysfs import read_ports

from ..conftest import FIXTURE_DIR

SYSFS = FIXTURE_DIR / "sysfs"
# The filter has no defaults for these (the nccl_env role owns them); the tests pass the role's values.
ROLE = {"dscp": 26, "gdr_level": "PHB"}


def ports(scenario: str) -> list[dict]:
    return read_ports(str(SYSFS / scenario))


def test_rdma_on_roce_uses_active_ports_and_their_gid_index() -> None:
    env = nccl_env("rdma", ports=ports("mlx5_roce"), socket_ifname="nodeaddr0", **ROLE)
    assert env == {
        "NCCL_IB_DISABLE": "0",
        "NCCL_IB_HCA": "=mlx5_0:1",  # mlx5_1 is DOWN
        "NCCL_IB_GID_INDEX": "3",
        "NCCL_NET_GDR_LEVEL": "PHB",
        "NCCL_SOCKET_IFNAME": "=nodeaddr0",
        "GLOO_SOCKET_IFNAME": "nodeaddr0",
        "NCCL_IB_TC": "104",
    }


def test_rdma_on_infiniband_sets_no_gid_index() -> None:
    env = nccl_env("rdma", ports=ports("infiniband"), socket_ifname="ibp65s0", dscp=0, gdr_level="")
    assert env["NCCL_IB_HCA"] == "=mlx5_2:1"
    assert "NCCL_IB_GID_INDEX" not in env and "NCCL_NET_GDR_LEVEL" not in env
    assert env["NCCL_IB_TC"] == "0"


def test_tcp() -> None:
    assert nccl_env("tcp", socket_ifname="mesh0", dscp=46, gdr_level="PHB") == {
        "NCCL_IB_DISABLE": "1",
        "NCCL_SOCKET_IFNAME": "=mesh0",
        "GLOO_SOCKET_IFNAME": "mesh0",
        "NCCL_IB_TC": "184",
    }


def test_explicit_hca_and_gid_index_override_discovery() -> None:
    env = nccl_env("rdma", ports=[], socket_ifname="eth0", hca=["mlx5_0", "mlx5_1:1"], gid_index=5, **ROLE)
    assert env["NCCL_IB_HCA"] == "=mlx5_0,mlx5_1:1"
    assert env["NCCL_IB_GID_INDEX"] == "5"


def test_differing_gid_indexes_on_one_node_need_a_choice() -> None:
    roce = ports("mlx5_roce")
    second = dict(roce[0], device="mlx5_9", name="mlx5_9/1", roce_v2_ipv4_gid_index=5)
    with pytest.raises(
        AnsibleFilterError, match=r"differs between ports of one node \(mlx5_0/1=3, mlx5_9/1=5\)"
    ):
        nccl_env("rdma", ports=[roce[0], second], socket_ifname="eth0", **ROLE)


def test_ipv6_only_roce_has_no_usable_gid() -> None:
    with pytest.raises(AnsibleFilterError, match="no RoCE v2 GID with an IPv4 address on rocep1s0f0/1"):
        nccl_env("rdma", ports=ports("roce_ipv6_only"), socket_ifname="eth0", **ROLE)


def test_rdma_without_active_port_fails_clearly() -> None:
    down = [p for p in ports("mlx5_roce") if not p["active"]]
    with pytest.raises(AnsibleFilterError, match=r"no RDMA port is ACTIVE \(ports: mlx5_1/1 \(DOWN\)\)"):
        nccl_env("rdma", ports=down, socket_ifname="eth0", **ROLE)
    with pytest.raises(AnsibleFilterError, match=r"ports: none"):
        nccl_env("rdma", ports=[], socket_ifname="eth0", **ROLE)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"transport": "ib"}, "must be 'rdma' or 'tcp'"),
        ({"socket_ifname": ""}, "not a valid interface name"),
        ({"socket_ifname": "eth0; rm -rf /"}, "not a valid interface name"),
        ({"dscp": 64}, "DSCP must be an integer 0..63, got 64"),
        ({"dscp": "af41"}, "DSCP must be an integer"),
        ({"extra": {"lower": 1}}, "not an environment variable name"),
    ],
)
def test_bad_input(kwargs: dict, match: str) -> None:
    args = {"transport": "tcp", "socket_ifname": "eth0", **ROLE, **kwargs}
    with pytest.raises(AnsibleFilterError, match=match):
        nccl_env(args.pop("transport"), **args)


def test_bad_gdr_level() -> None:
    with pytest.raises(AnsibleFilterError, match="NCCL_NET_GDR_LEVEL must be one of"):
        nccl_env("rdma", ports=ports("mlx5_roce"), socket_ifname="eth0", dscp=26, gdr_level="NEAR")


def test_extra_variables_and_registration() -> None:
    env = nccl_env("tcp", socket_ifname="eth0", extra={"NCCL_DEBUG": "INFO"}, **ROLE)
    assert env["NCCL_DEBUG"] == "INFO"
    assert FilterModule().filters()["nccl_env"] is nccl_env


def test_dscp_and_gdr_level_have_no_default_in_the_filter() -> None:
    with pytest.raises(TypeError):
        nccl_env("tcp", socket_ifname="eth0")  # type: ignore[call-arg]  # pylint: disable=missing-kwoa
