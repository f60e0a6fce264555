"""train.yml's node rank order from the inventory's cabling (module_utils/train/order.py)."""

from __future__ import annotations

from typing import Any

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.train.order import (
    CHAIN,
    NO_PATH,
    RING,
    rank_order,
)

HOSTS = ["n1", "n2", "n3", "n4"]
# Cabled n1 - n3 - n2 - n4 - n1: the ring does not follow the host list.
RING_PORTS = {
    "n1": {"n3": "p0", "n4": "p1"},
    "n2": {"n3": "p0", "n4": "p1"},
    "n3": {"n1": "p0", "n2": "p1"},
    "n4": {"n2": "p0", "n1": "p1"},
}


def ports_of(edges: list[tuple[str, str]]) -> dict[str, dict[str, Any]]:
    """Each node's port map for the cables ``edges`` (one port per cable, numbered per node)."""
    out: dict[str, dict[str, Any]] = {}
    for a, b in edges:
        for here, there in ((a, b), (b, a)):
            mine = out.setdefault(here, {})
            mine[there] = f"p{len(mine)}"
    return out


def test_a_ring_ranks_along_its_cables_from_the_first_host() -> None:
    out = rank_order(HOSTS, "mesh", RING_PORTS)
    assert out["order"] == ["n1", "n3", "n2", "n4"] and out["errors"] == []
    assert out["note"] == f"rank order: n1, n3, n2, n4, master n1 ({RING})"


@pytest.mark.parametrize("n", [4, 5, 8, 16])
def test_rings_of_any_size_cabled_out_of_host_order(n: int) -> None:
    hosts = [f"h{i:02d}" for i in range(n)]
    # every other host first, then the rest backwards: h00 h02 h04 ... h05 h03 h01 (a ring for any n)
    walk = hosts[::2] + hosts[1::2][::-1]
    out = rank_order(hosts, "mesh", ports_of([(walk[i], walk[(i + 1) % n]) for i in range(n)]))
    order = out["order"]
    assert sorted(order) == hosts and order[0] == "h00" and out["note"].endswith(f"({RING})")
    assert order in (walk, [walk[0], *walk[1:][::-1]])  # along the ring, one way or the other


def test_a_chain_starts_at_an_end_even_when_the_first_host_sits_in_the_middle() -> None:
    out = rank_order(["n1", "n2", "n3"], "mesh", ports_of([("n2", "n1"), ("n1", "n3")]))
    assert (
        out["order"] == ["n2", "n1", "n3"] and out["note"] == f"rank order: n2, n1, n3, master n2 ({CHAIN})"
    )


@pytest.mark.parametrize(
    "ports",
    [
        ports_of([("n1", "n2"), ("n1", "n3"), ("n2", "n3")]),  # full mesh
        # rails: two nodes, two cables, listed in the same order at both ends
        {"n1": {"n2": ["p0", "p1"]}, "n2": {"n1": ["p0", "p1"]}},
    ],
)
def test_a_full_mesh_keeps_the_play_order(ports: dict[str, Any]) -> None:
    hosts = sorted(ports)
    out = rank_order(hosts, "mesh", ports)
    assert out["order"] == hosts and out["errors"] == []
    assert out["note"].startswith(f"rank order: the play's host order {', '.join(hosts)} (a full mesh")


@pytest.mark.parametrize(
    ("topology", "ports"), [("switched", RING_PORTS), ("mesh", {}), ("mesh", {"n1": {}})]
)
def test_no_cabling_keeps_the_play_order_and_says_nothing(topology: str, ports: dict[str, Any]) -> None:
    assert rank_order(HOSTS, topology, ports) == {"order": HOSTS, "errors": [], "note": ""}


def test_a_cable_listed_by_one_end_only_is_refused() -> None:
    ports = {h: dict(p) for h, p in RING_PORTS.items()}
    del ports["n4"]["n1"]
    out = rank_order(HOSTS, "mesh", ports)
    assert out["order"] == HOSTS and out["note"] == ""
    assert out["errors"] == [
        "the node rank order follows the cabling, and mesh_network_ports is inconsistent: "
        "n4: mesh_network_ports has no port for peer 'n1', but n1 lists n4 on p1 (both ends list every cable)"
    ]


def test_nodes_without_a_path_through_all_of_them_are_ranked_breadth_first_and_said_so() -> None:
    star = ports_of([("n1", "n2"), ("n1", "n3"), ("n1", "n4")])
    out = rank_order(HOSTS, "mesh", star)
    assert out["order"] == HOSTS and out["note"].endswith(f"({NO_PATH})")


def test_a_subset_of_a_ring_ranks_along_the_cables_it_keeps() -> None:
    # train_hosts=n1,n2,n3 on the ring n1 - n3 - n2 - n4: what is left is the chain n1 - n3 - n2
    out = rank_order(["n1", "n2", "n3"], "mesh", RING_PORTS)
    assert out["order"] == ["n1", "n3", "n2"] and out["note"].endswith(f"({CHAIN})")
