"""module_utils/verify/nccl_path.py on real NCCL 2.28 logs (tests/unit/fixtures/nccl): each channel's
transport, NIC/GID and peer, and a verdict that fails on a port not facing the peer, Socket where RDMA was
configured, or a configured plugin not loaded."""

from __future__ import annotations

from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.verify import nccl_path as npath

from ...conftest import FIXTURE_DIR

FIX = FIXTURE_DIR / "nccl"


def logs(kind: str) -> dict[str, str]:
    if kind == "p2p":
        return {"node0": (FIX / "1node-x4gpu-p2p.log").read_text()}
    return {f"node{i}": (FIX / f"2nodes-x2gpu-{kind}-node{i}.log").read_text() for i in (0, 1)}


LOOP = {"node0": ["127.0.0.1"], "node1": ["127.0.0.1"]}


def test_mesh_plugin_over_tcp_maps_each_channel_to_its_nic_and_peer() -> None:
    expect = {
        "transport": {"node0": "tcp", "node1": "tcp"},
        "plugin": {"node0": "mesh", "node1": "mesh"},
        "facing": {"node0": {"node1": ["lo"]}, "node1": {"node0": ["lo"]}},
        "addresses": LOOP,
    }
    out = npath.verdict(logs("mesh"), expect)
    assert out["verdict"] == "pass" and out["problems"] == [] and out["transports"] == ["NET/Mesh", "P2P"]
    net = [c for c in out["channels"] if c["transport"] == "NET/Mesh"]
    assert len(net) == 8 and {(c["node"], c["peer_node"], c["nic"]) for c in net} == {
        ("node0", "node1", "lo"),
        ("node1", "node0", "lo"),
    }
    assert {c["direction"] for c in net} == {"send", "receive"}
    node0 = out["nodes"]["node0"]
    assert node0["nccl"] == "2.28.9" and node0["ranks"] == [0, 1] and node0["plugin"]["loaded"] == "Mesh"
    assert node0["plugin"]["configured"].endswith("/libnccl-net-mesh.so") and node0["mesh_backend"] == "tcp"
    p2p = [c for c in out["channels"] if c["transport"] == "P2P"]
    assert p2p and all(c["peer_node"] == c["node"] and c["nic"] == "" for c in p2p)


def test_split_communicators_of_a_device_mesh_keep_p2p_inside_and_net_between_nodes() -> None:
    """HSDP: each rank is in the world communicator and in two split ones whose channel lines number ranks
    from 0 again, so a channel's peer cannot come from its rank number."""
    expect = {"transport": {"node0": "tcp", "node1": "tcp"}, "addresses": LOOP}
    out = npath.verdict(logs("hsdp-socket"), expect)
    assert out["verdict"] == "pass" and out["transports"] == ["NET/Socket", "P2P"]
    assert any("split communicators" in note for note in out["notes"])
    p2p = [c for c in out["channels"] if c["transport"] == "P2P"]
    net = [c for c in out["channels"] if c["transport"] == "NET/Socket"]
    assert len(p2p) > len(net) > 0
    assert all(c["peer_node"] == c["node"] for c in p2p)
    assert all(c["peer_node"] != c["node"] for c in net)
    # the fixture's lines that misled a rank-number lookup: P2P between split ranks 0 and 1 of two nodes
    assert {(c["node"], c["rank"]) for c in p2p} == {("node0", 0), ("node0", 1), ("node1", 2), ("node1", 3)}


def test_traffic_by_a_port_that_does_not_face_the_peer_fails() -> None:
    expect = {"facing": {"node0": {"node1": ["data1"]}, "node1": {"node0": ["lo"]}}, "addresses": LOOP}
    out = npath.verdict(logs("mesh"), expect)
    assert out["verdict"] == "fail"
    assert out["problems"] == [
        "node0: 4 Mesh plugin connections to node1 (127.0.0.1) left by lo, which does not face node1 "
        "(data1 does)"
    ]


def test_socket_where_rdma_was_configured_fails() -> None:
    out = npath.verdict(logs("socket"), {"transport": {"node0": "rdma", "node1": "tcp"}})
    assert out["verdict"] == "fail" and out["problems"] == [
        "node0: RDMA was configured but 4 channels fell back to NCCL's Socket transport"
    ]
    socket = [c for c in out["channels"] if c["transport"] == "NET/Socket"]
    assert {c["nic"] for c in socket} == {"lo"} and {c["peer_node"] for c in socket} == {"node0", "node1"}
    assert npath.verdict(logs("socket"), {"transport": {"node0": "tcp", "node1": "tcp"}})["verdict"] == "pass"


def test_the_mesh_plugins_tcp_backend_where_rdma_was_configured_fails() -> None:
    out = npath.verdict(logs("mesh"), {"transport": {"node0": "rdma", "node1": "rdma"}})
    assert "node0: RDMA was configured but the Mesh plugin ran its tcp backend" in out["problems"]


def test_a_configured_plugin_that_was_not_loaded_fails() -> None:
    out = npath.verdict(logs("socket"), {"plugin": {"node0": "mesh", "node1": ""}})
    assert out["verdict"] == "fail" and out["problems"] == [
        "node0: NCCL_NET_PLUGIN=mesh was configured but the plugin was not loaded (NCCL used Socket)"
    ]
    single = npath.verdict(logs("p2p"), {"plugin": {"node0": "mesh"}})
    assert single["problems"] == [
        "node0: NCCL_NET_PLUGIN=mesh was configured but the plugin was not loaded (NET/Plugin: Could not "
        "find: "
        "libnccl-net.so)"
    ]


def test_a_single_node_run_crosses_no_network_and_says_so() -> None:
    out = npath.verdict(logs("p2p"), {"transport": {"node0": "rdma"}})
    assert out["verdict"] == "pass" and out["transports"] == ["P2P"] and len(out["channels"]) == 96
    assert out["notes"] == [
        "node0: NCCL chose its Socket network (IB did not initialise), but no channel left the node: nothing "
        "crossed the network"
    ]
    assert out["nodes"]["node0"]["ranks"] == [0, 1, 2, 3]


def test_no_nccl_lines_is_not_run() -> None:
    out = npath.verdict({"node1": "step 1 | loss 2.0\n", "node2": ""}, {})
    assert out["verdict"] == "not run" and out["channels"] == [] and len(out["notes"]) == 2


# Written from NCCL 2.28's format strings (see fixtures/nccl/SOURCES.md): no RDMA NIC to record them here.
def info(who: str, msg: str) -> str:
    return f"{who} [0] NCCL INFO {msg}\n"


INIT = (
    "ncclCommInitRankConfig comm 0x{c} rank {r} nranks 3 cudaDev 0 nvmlDev 0 busId 1000 commId 0xa"
    + " - Init START"
)
IB_NODE0 = "".join(
    [
        info("gpu1:100:100", "NCCL version 2.28.9+cuda13.0"),
        info(
            "gpu1:100:100",
            "NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB nodeaddr0:10.255.0.1<0>",
        ),
        info("gpu1:100:100", "Using network IB"),
        info("gpu1:100:100", INIT.format(c=1, r=0)),
        info("gpu1:100:100", "Channel 00/0 : 2[0] -> 0[0] [receive] via NET/IB/1/GDRDMA"),
        info("gpu1:100:100", "Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/1/GDRDMA"),
        info("gpu1:100:120", "NET/IB: NCCL Dev 1 IbDev 1 Port 1 qpn 266 mtu 5 GID 3 (80FE/A0100FFFF0000)"),
    ]
)
IB_PEERS = {
    "node1": info("gpu2:200:200", INIT.format(c=2, r=1)),
    "node2": info("gpu3:300:300", INIT.format(c=3, r=2)),
}
PLANS: dict[str, Any] = {
    "node0": {
        "node_address": "10.255.0.1",
        "links": [
            {"peer": "node1", "ifname": "ens1f0np0", "address": "10.254.0.1"},
            {"peer": "node2", "ifname": "ens1f1np1", "address": "10.254.0.5"},
        ],
    }
}
PORTS = {"node0": [{"device": "mlx5_0", "netdev": "ens1f0np0"}, {"device": "mlx5_1", "netdev": "ens1f1np1"}]}


def test_ib_channels_name_the_hca_and_gid_and_a_wrong_rail_fails() -> None:
    expect = npath.expectations(PLANS, {"node0": {"NCCL_IB_DISABLE": "0"}}, PORTS)
    assert expect["facing"]["node0"] == {"node1": ["ens1f0np0", "mlx5_0"], "node2": ["ens1f1np1", "mlx5_1"]}
    out = npath.verdict({"node0": IB_NODE0, **IB_PEERS}, expect)
    ib = {(c["peer_node"], c["nic"], c["gid"]) for c in out["channels"] if c["transport"] == "NET/IB"}
    assert ib == {("node1", "mlx5_1", "3"), ("node2", "mlx5_1", "3")}
    # mlx5_1 faces node2; the channel to node1 took it.
    assert out["verdict"] == "fail" and out["problems"] == [
        "node0: channels to node1 go by mlx5_1 (NET/IB), which does not face node1 (ens1f0np0, mlx5_0 does)"
    ]


def test_markdown_rows_per_node_and_peer() -> None:
    out = npath.verdict(logs("socket"), {"transport": {"node0": "rdma"}})
    text = "\n".join(npath.markdown(out))
    assert "| node0 | node1 | NET/Socket/0 | lo | - | 4 |" in text and "Verdict: fail." in text
