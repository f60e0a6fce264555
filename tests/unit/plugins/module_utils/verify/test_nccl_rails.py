"""Rails in the NCCL path audit (module_utils/verify/nccl_rails.py through nccl_path.verdict): each channel's
rail, and a channel whose two ends are on different rails. On the socket recording edited into two rails
(tests/unit/fixtures/nccl/2nodes-x2gpu-rails-socket-*.log, SOURCES.md there) and on NET/IB lines written from
NCCL 2.28's format strings, as the IB test of test_nccl_path.py."""

from __future__ import annotations

from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.verify import nccl_path as npath
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify import nccl_rails

from ...conftest import FIXTURE_DIR

FIX = FIXTURE_DIR / "nccl"
# mesh_network_fabric of the two nodes, as the mesh role exports it (scheme rails: one subnet per rail).
FABRICS = {
    f"node{i}": [
        {
            "rail": r,
            "name": f"rail{r}",
            "ifname": f"data{r}",
            "address": f"192.168.{192 + r}.{i + 1}",
            "prefix": 24,
        }
        for r in (0, 1)
    ]
    for i in (0, 1)
}
TCP_RAILS = {"NCCL_IB_DISABLE": "1", "NCCL_SOCKET_IFNAME": "=data0,data1"}
# Channel 01's receive line on node1 edited to device 0: it leaves node0 on data1 and arrives on data0.
CROSSED = (
    "vm:7351:7351 [0] NCCL INFO Channel 01/0 : 1[1] -> 2[2] [receive] via NET/Socket/1",
    "vm:7351:7351 [0] NCCL INFO Channel 01/0 : 1[1] -> 2[2] [receive] via NET/Socket/0",
)


def rails_logs(crossed: bool = False) -> dict[str, str]:
    logs = {f"node{i}": (FIX / f"2nodes-x2gpu-rails-socket-node{i}.log").read_text() for i in (0, 1)}
    if crossed:
        assert CROSSED[0] in logs["node1"]
        logs["node1"] = logs["node1"].replace(*CROSSED)
    return logs


def expect(env: dict[str, str], fabrics: dict[str, Any] | None = FABRICS) -> dict[str, Any]:
    return npath.expectations({}, {"node0": env, "node1": env}, {}, fabrics)


def socket_rails(out: dict[str, Any]) -> set[tuple[str, int, str, str, str]]:
    return {
        (c["node"], c["channel"], c["nic"], c["rail"], c["peer_rail"])
        for c in out["channels"]
        if c["transport"] == "NET/Socket"
    }


def test_each_channel_stays_on_its_rail() -> None:
    out = npath.verdict(rails_logs(), expect({**TCP_RAILS, "NCCL_CROSS_NIC": "0"}))
    assert out["verdict"] == "pass" and out["problems"] == []
    assert socket_rails(out) == {
        (node, ch, f"data{ch}", f"rail{ch}", f"rail{ch}") for node in ("node0", "node1") for ch in (0, 1)
    }
    text = "\n".join(npath.markdown(out))
    assert "| node | peer | transport | NIC | GID | rail | channels |" in text
    assert "| node0 | node1 | NET/Socket/1 | data1 | - | rail1 | 2 |" in text


def test_a_channel_that_crosses_rails_fails_where_rail_optimized_was_asked() -> None:
    out = npath.verdict(rails_logs(crossed=True), expect({**TCP_RAILS, "NCCL_CROSS_NIC": "0"}))
    assert out["verdict"] == "fail" and out["problems"] == [
        "node0: 1 channel to node1 cross rails, leaving by data1 on rail1 and arriving on rail0 at node1"
        " (channel 01), though NCCL_CROSS_NIC=0 asks NCCL to keep a channel on its rail"
    ]
    crossed = [c for c in out["channels"] if c["cross_rail"]]
    assert {(c["node"], c["direction"], c["rail"], c["peer_rail"]) for c in crossed} == {
        ("node0", "send", "rail1", "rail0"),
        ("node1", "receive", "rail0", "rail1"),
    }
    assert "| node0 | node1 | NET/Socket/1 | data1 | - | rail1 -> rail0 | 1 |" in "\n".join(
        npath.markdown(out)
    )


def test_crossing_rails_is_a_note_where_nccl_may_cross() -> None:
    out = npath.verdict(rails_logs(crossed=True), expect(TCP_RAILS))
    assert out["verdict"] == "pass"
    assert out["notes"] == [
        "node0: 1 channel to node1 cross rails, leaving by data1 on rail1 and arriving on rail0 at node1"
        " (channel 01); NCCL_CROSS_NIC is not 0 there, which allows it"
    ]


def test_without_the_fabric_the_nccl_environment_gives_the_rails() -> None:
    out = npath.verdict(rails_logs(crossed=True), expect({**TCP_RAILS, "NCCL_CROSS_NIC": "0"}, fabrics=None))
    assert out["verdict"] == "fail" and "cross rails" in out["problems"][0]


def test_one_port_fabrics_and_meshes_have_no_rails() -> None:
    assert nccl_rails.rail_map([], [], {"NCCL_IB_HCA": "=mlx5_0:1", "NCCL_SOCKET_IFNAME": "=data0"}) == {}
    assert nccl_rails.rail_map([], [], {"NCCL_IB_HCA": "^mlx5_1,mlx5_2"}) == {}  # an exclusion list
    out = npath.verdict(
        {f"node{i}": (FIX / f"2nodes-x2gpu-socket-node{i}.log").read_text() for i in (0, 1)},
        expect({"NCCL_IB_DISABLE": "1", "NCCL_SOCKET_IFNAME": "=lo"}, fabrics=None),
    )
    assert out["verdict"] == "pass" and {c["rail"] for c in out["channels"]} == {""}
    assert "| rail |" not in "\n".join(npath.markdown(out))


def test_rails_of_a_switched_fabric_face_every_peer() -> None:
    plans = {
        "node0": {
            "topology": "switched",
            "fabric": {"name": "data0", "address": "192.168.192.1"},
            "peers": {"node1": "x"},
        }
    }
    ports = {
        "node0": [
            {"device": "mlx5_0", "port": 1, "netdev": "data0"},
            {"device": "mlx5_1", "port": 1, "netdev": "data1"},
        ]
    }
    out = npath.expectations(plans, {"node0": {"NCCL_IB_DISABLE": "0"}}, ports, FABRICS)
    assert out["facing"]["node0"] == {"node1": ["data0", "mlx5_0", "data1", "mlx5_1"]}
    assert out["addresses"]["node0"] == ["192.168.192.1", "192.168.193.1"]
    assert out["rails"]["node0"] == {
        "data0": "rail0",
        "mlx5_0": "rail0",
        "mlx5_0:1": "rail0",
        "data1": "rail1",
        "mlx5_1": "rail1",
        "mlx5_1:1": "rail1",
    }


# NET/IB lines written from NCCL 2.28's format strings (fixtures/nccl/SOURCES.md): no RDMA NIC to record them.
def info(who: str, msg: str) -> str:
    return f"{who} [0] NCCL INFO {msg}\n"


def ib_node(host: str, rank: int, lines: list[str]) -> str:
    pid = f"{host}:{100 + rank}:{100 + rank}"
    init = f"ncclCommInitRankConfig comm 0x{rank + 1} rank {rank} nranks 2 cudaDev 0 nvmlDev 0 busId 1000"
    head = [
        "NCCL version 2.28.9+cuda13.0",
        "NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB data0:192.168.192.1<0>",
        "Using network IB",
        f"{init} commId 0xa - Init START",
    ]
    return "".join(info(pid, line) for line in [*head, *lines])


def test_ib_channels_take_the_rail_of_their_hca_from_nccl_ib_hca() -> None:
    logs = {
        "node0": ib_node(
            "gpu1",
            0,
            [
                "Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA",
                "Channel 01/0 : 0[0] -> 1[0] [send] via NET/IB/1/GDRDMA",
            ],
        ),
        "node1": ib_node(
            "gpu2",
            1,
            [
                "Channel 00/0 : 0[0] -> 1[0] [receive] via NET/IB/1/GDRDMA",
                "Channel 01/0 : 0[0] -> 1[0] [receive] via NET/IB/1/GDRDMA",
            ],
        ),
    }
    env = {"NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1", "NCCL_CROSS_NIC": "0"}
    out = npath.verdict(logs, npath.expectations({}, {"node0": env, "node1": env}))
    assert out["problems"] == [
        "node0: 1 channel to node1 cross rails, leaving by mlx5_0 on rail0 and arriving on rail1 at node1"
        " (channel 00), though NCCL_CROSS_NIC=0 asks NCCL to keep a channel on its rail"
    ]
    assert {(c["node"], c["channel"], c["rail"], c["cross_rail"]) for c in out["channels"]} == {
        ("node0", 0, "rail0", True),
        ("node0", 1, "rail1", False),
        ("node1", 0, "rail1", True),
        ("node1", 1, "rail1", False),
    }
