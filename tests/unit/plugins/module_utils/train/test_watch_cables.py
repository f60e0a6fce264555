"""A data cable lost while a job runs: the agent's reading of a port (module_utils/node/train/agent.py
cable_state, on sysfs trees built as the kernel shows them), the news it makes (watch_cables.py) and the
verdict of a job that then stops (watch.py)."""

from __future__ import annotations

from pathlib import Path

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.train import agent as ta
from ansible_collections.rdmaops.cluster.plugins.module_utils.train import watch as tw
from ansible_collections.rdmaops.cluster.plugins.module_utils.train.watch_cables import (
    CableWatch,
    watched_cables,
)

from .conftest import FAILED, RUNNING, train_step

CABLES = {
    "node2": [
        {"port": "data0", "peer": "node1", "rerouted": True},
        {"port": "data1", "peer": "node3", "rerouted": True},
    ],
    "node3": [{"port": "data1", "peer": "node2", "rerouted": True}],
}


def port(net: Path, name: str, carrier: str | None, rdma: str | None = None) -> None:
    """/sys/class/net/NAME as the kernel shows it: ``carrier`` ("1", "0"; None: a port set down, whose carrier
    cannot be read), and an HCA port's ``state`` behind it for an RDMA NIC."""
    base = net / name
    base.mkdir(parents=True)
    if carrier is not None:
        (base / "carrier").write_text(f"{carrier}\n")
    if rdma is not None:
        ports = base / "device" / "infiniband" / "mlx5_1" / "ports" / "1"
        ports.mkdir(parents=True)
        (ports / "state").write_text(f"{rdma}\n")


def test_the_agent_reads_a_ports_cable_from_sysfs(tmp_path: Path) -> None:
    port(tmp_path, "data0", "1")
    port(tmp_path, "data1", "0")
    port(tmp_path, "data2", None)  # set down: reading carrier fails with EINVAL
    port(tmp_path, "ens1", "1", "4: ACTIVE")
    port(tmp_path, "ens2", "1", "1: DOWN")
    net = str(tmp_path)
    got = {p: ta.cable_state(p, net) for p in ("data0", "data1", "data2", "ens1", "ens2", "data9")}
    assert got == {
        "data0": "up",
        "data1": "lost carrier",
        "data2": "was set down",
        "ens1": "up",
        "ens2": "RDMA port mlx5_1/1 is DOWN",
        "data9": "is gone (no such interface)",
    }


def test_a_lost_cable_is_news_once_with_its_step_and_again_when_back() -> None:
    watch = CableWatch(CABLES)
    assert watch.ports("node2") == ["data0", "data1"] and watch.ports("node1") == []
    watch.feed("node2", {"data0": "up", "data1": "up"}, "step 38")
    assert watch.take_news() == []
    watch.feed("node2", {"data0": "up", "data1": "lost carrier"}, "step 40")
    watch.feed("node2", {"data0": "up", "data1": "lost carrier"}, "step 41")
    assert watch.take_news() == [
        "node2 data1, the cable to node3, lost carrier at step 40; traffic between node addresses takes "
        "another path (slower); transports bound to this cable stop"
    ]
    assert watch.cause() == "node2 data1, the cable to node3, lost carrier at step 40"
    watch.feed("node2", {"data1": "up"}, "step 55")
    assert watch.take_news() == [
        "node2 data1, the cable to node3 is back at step 55 (down since step 40): the direct path again"
    ]
    # back up: the verdict of a job that stops later still names what was lost during it
    assert watch.cause() == "node2 data1, the cable to node3, lost carrier at step 40"


def test_a_cable_without_another_path_says_the_job_stops_if_it_needs_it() -> None:
    watch = CableWatch({"node1": [{"port": "data0", "peer": "node2", "rerouted": False}]})
    watch.feed("node1", {"data0": "was set down"}, "start-up (no step logged yet)")
    assert watch.take_news() == [
        "node1 data0, the cable to node2, was set down at start-up (no step logged yet); node addresses have "
        "no other route between them: the job stops if it needs it"
    ]


def test_a_job_that_hangs_after_a_lost_cable_names_the_cable_first() -> None:
    limits = tw.Limits(stall_timeout=60.0, startup_timeout=300.0, lost_timeout=600.0)
    w = tw.JobWatch(
        "tiny", ["node1", "node2", "node3"], total_steps=400, started=1000.0, limits=limits, cables=CABLES
    )
    train_step(w, 40, 1010.0)
    w.feed(
        "node2",
        {"phase": "running", "unit": RUNNING, "cables": {"data0": "up", "data1": "lost carrier"}},
        1011.0,
    )
    w.feed("node3", {"phase": "running", "unit": RUNNING, "cables": {"data1": "lost carrier"}}, 1011.0)
    assert w.decide(1012.0) is None  # a warning while the job may carry on over the other path
    for node in ("node2", "node3"):
        w.feed(node, {"phase": "running", "unit": RUNNING}, 1100.0)
    out = w.decide(1100.0)
    assert out is not None and out.status == "hung"
    assert out.message.startswith(
        "job tiny stopped after node2 data1, the cable to node3, lost carrier at step 40; node3 data1, the "
        "cable to node2, lost carrier at step 40; job tiny hung: no progress"
    )
    assert w.report(1100.0)["cables"][0].startswith(
        "node2 data1, the cable to node3, lost carrier at step 40"
    )


def test_a_failure_without_a_lost_cable_reads_as_before() -> None:
    limits = tw.Limits(stall_timeout=60.0, startup_timeout=300.0, lost_timeout=600.0)
    w = tw.JobWatch(
        "tiny", ["node1", "node2", "node3"], total_steps=400, started=1000.0, limits=limits, cables=CABLES
    )
    train_step(w, 10, 1010.0)
    w.feed("node2", {"phase": "running", "unit": RUNNING, "cables": {"data0": "up", "data1": "up"}}, 1011.0)
    w.feed("node2", {"phase": "failed", "unit": FAILED, "log_tail": ["boom"]}, 1012.0)
    out = w.decide(1030.0)
    assert out is not None and out.status == "failed" and not out.message.startswith("job tiny stopped after")


def test_the_watched_cables_come_from_every_hosts_port_map() -> None:
    ring = {
        "node1": {"node2": "data1", "node3": "data0"},
        "node2": {"node1": "data0", "node3": "data1"},
        "node3": {"node2": "data0", "node1": "data1"},
    }
    # a full mesh of 3 (every pair cabled): with backup routes (the default) every cable has another path
    got = watched_cables(["node1", "node2", "node3"], "mesh", ring)
    assert got["node2"] == [
        {"port": "data0", "peer": "node1", "rerouted": True},
        {"port": "data1", "peer": "node3", "rerouted": True},
    ]
    assert sorted(got) == ["node1", "node2", "node3"] and all(len(v) == 2 for v in got.values())
    # without them (mesh_network_backup_routes: false) a node address has one route
    got = watched_cables(["node1", "node2", "node3"], "mesh", ring, backup_routes=False)
    assert not any(c["rerouted"] for v in got.values() for c in v)
    # a 4-node ring routes the long way round (backup.py's transit tables); a chain has no other path
    hosts = ["node1", "node2", "node3", "node4"]
    four = {h: {hosts[i - 1]: "data0", hosts[(i + 1) % 4]: "data1"} for i, h in enumerate(hosts)}
    assert all(c["rerouted"] for v in watched_cables(hosts, "mesh", four).values() for c in v)
    assert not any(
        c["rerouted"] for v in watched_cables(hosts, "mesh", four, backup_routes=False).values() for c in v
    )
    chain = {
        "node1": {"node2": "data1"},
        "node2": {"node1": "data0", "node3": "data1"},
        "node3": {"node2": "data0"},
    }
    assert not any(c["rerouted"] for v in watched_cables(hosts[:3], "mesh", chain).values() for c in v)


def test_a_pairs_second_cable_leaves_the_node_addresses_their_path_and_a_mac_only_port_is_not_read() -> None:
    rails = {
        "node1": {"node2": ["data0", {"macaddress": "02:00:00:00:01:01"}]},
        "node2": {"node1": ["data0", "data1"]},
    }
    got = watched_cables(["node1", "node2"], "mesh", rails)
    assert got == {
        "node1": [{"port": "data0", "peer": "node2", "rerouted": False}],
        "node2": [
            {"port": "data0", "peer": "node1", "rerouted": False},
            {"port": "data1", "peer": "node1", "rerouted": True},
        ],
    }


def test_no_cables_are_watched_on_a_switched_fabric_or_without_a_port_map() -> None:
    assert watched_cables(["node1", "node2"], "switched", {"node1": {"node2": "data0"}}) == {}
    assert watched_cables(["node1", "node2"], "mesh", {}) == {}
