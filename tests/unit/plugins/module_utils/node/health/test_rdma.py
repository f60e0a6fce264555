"""RDMA checks on copies of the sysfs fixture trees: port state, rate, counter growth and PFC pause frames."""

from __future__ import annotations

from pathlib import Path

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.health import rdma
from ansible_collections.rdmaops.cluster.plugins.module_utils.node.rdma import sysfs

from .conftest import HEALTH, brief, collect, thresholds

ETHTOOL = (HEALTH / "ethtool-S.mlx5.txt").read_text()


def write_counters(root: Path, device: str, values: dict[str, int], sub: str = "counters") -> None:
    folder = root / "class" / "infiniband" / device / "ports" / "1" / sub
    folder.mkdir(exist_ok=True)
    for name, value in values.items():
        (folder / name).write_text(f"{value}\n")


def test_port_state_all_and_named(sysfs_copy) -> None:
    ports = sysfs.read_ports(str(sysfs_copy("mlx5_roce")))
    (f,) = collect(rdma.check_ports, ports, thresholds())
    assert brief(f, "subject", "value", "threshold") == ("mlx5_1/1", "DOWN/Disabled", "ACTIVE/LinkUp")
    assert collect(rdma.check_ports, ports, thresholds(rdma_ports=["mlx5_0"])) == []
    (missing,) = collect(rdma.check_ports, ports, thresholds(rdma_ports=["mlx5_0", "mlx5_9/1"]))
    assert missing["subject"] == "mlx5_9/1" and "present: mlx5_0/1, mlx5_1/1" in missing["message"]
    assert collect(rdma.check_ports, ports, thresholds(rdma_ports="none")) == []


def test_no_rdma_device_is_not_a_failure_unless_ports_are_named(tmp_path: Path) -> None:
    assert collect(rdma.check_ports, sysfs.read_ports(str(tmp_path)), thresholds()) == []
    (f,) = collect(rdma.check_ports, [], thresholds(rdma_ports=["mlx5_0/1"]))
    assert f["value"] == "absent" and f["severity"] == "fail"


def test_rate_names_the_degraded_width_or_speed(sysfs_copy) -> None:
    root = sysfs_copy("infiniband")
    rate = root / "class" / "infiniband" / "mlx5_2" / "ports" / "1" / "rate"
    hdr = thresholds(rdma_ports=["mlx5_2"], rdma_rate_gbps=200, rdma_width="4X")
    assert collect(rdma.check_ports, sysfs.read_ports(str(root)), hdr) == []
    rate.write_text("100 Gb/sec (2X HDR)\n")
    (f,) = collect(rdma.check_ports, sysfs.read_ports(str(root)), hdr)
    assert (f["check"], f["value"], f["threshold"]) == ("rdma.rate", "100 Gb/sec (2X HDR)", "200 Gb/s 4X")
    assert "degraded width 2X (expected 4X)" in f["message"]
    rate.write_text("100 Gb/sec (4X EDR)\n")
    (f,) = collect(rdma.check_ports, sysfs.read_ports(str(root)), hdr)
    assert "degraded speed EDR (expected HDR)" in f["message"]
    # Without an expected width, both ways to 200 Gb/s are named.
    rate.write_text("100 Gb/sec (2X HDR)\n")
    (f,) = collect(
        rdma.check_ports, sysfs.read_ports(str(root)), thresholds(rdma_ports=["mlx5_2"], rdma_rate_gbps=200)
    )
    assert "200 Gb/s needs 4X HDR or 2X NDR" in f["message"]


def test_counter_growth_since_last_check(sysfs_copy) -> None:
    root = sysfs_copy("mlx5_roce")
    base = {"symbol_error": 5, "link_downed": 1, "port_rcv_errors": 0, "port_xmit_data": 123456}
    write_counters(root, "mlx5_0", base)
    write_counters(root, "mlx5_0", {"lifespan": 10, "out_of_buffer": 0}, sub="hw_counters")
    port = next(p for p in sysfs.read_ports(str(root)) if p["name"] == "mlx5_0/1")
    first = {"mlx5_0/1": rdma.read_counters(str(root), port)}
    assert first["mlx5_0/1"] == {**base, "out_of_buffer": 0}  # lifespan is a setting, not a counter
    # First check: no baseline, nothing to compare.
    assert collect(rdma.check_counters, first, None, thresholds()) == []
    # Unchanged, and symbol errors within their allowance: pass.
    write_counters(root, "mlx5_0", {"symbol_error": 15})
    second = {"mlx5_0/1": rdma.read_counters(str(root), port)}
    assert collect(rdma.check_counters, second, first, thresholds()) == []
    # The link went down once more and the NIC ran out of receive buffers.
    write_counters(root, "mlx5_0", {"link_downed": 2, "port_xmit_data": 999999})
    write_counters(root, "mlx5_0", {"out_of_buffer": 7}, sub="hw_counters")
    third = {"mlx5_0/1": rdma.read_counters(str(root), port)}
    found = {
        f["subject"]: (f["value"], f["threshold"], f["severity"])
        for f in collect(rdma.check_counters, third, second, thresholds())
    }
    assert found == {
        "mlx5_0/1 link_downed": ("+1", "+0", "fail"),
        "mlx5_0/1 out_of_buffer": ("+7", "+0", "warn"),
    }
    # A counter that went back (reset by a driver reload) is a new baseline, not negative growth.
    assert collect(rdma.check_counters, second, third, thresholds()) == []
    # Operator rows replace or add to the defaults; "off" drops one.
    rows = {
        "out_of_buffer": {"max_growth": 10, "severity": "warn"},
        "link_downed": {"max_growth": 0, "severity": "off"},
    }
    assert collect(rdma.check_counters, third, second, thresholds(rdma_counters=rows)) == []
    assert thresholds(rdma_counters=rows)["rdma_counters"]["symbol_error"]["max_growth"] == 10


def test_pfc_pause_rate(tmp_path: Path) -> None:
    before = {"ens1f0np0": rdma.parse_ethtool_pause(ETHTOOL)}
    assert before["ens1f0np0"] == {
        "rx_pause_ctrl_phy": 0,
        "tx_pause_ctrl_phy": 0,
        "rx_prio3_pause": 1200,
        "tx_prio3_pause": 0,
    }
    assert collect(rdma.check_pause, before, None, None, thresholds()) == []
    calm = {
        "ens1f0np0": rdma.parse_ethtool_pause(ETHTOOL.replace("rx_prio3_pause: 1200", "rx_prio3_pause: 1500"))
    }
    assert collect(rdma.check_pause, calm, before, 300.0, thresholds()) == []
    storm = ETHTOOL.replace("rx_prio3_pause: 1200", "rx_prio3_pause: 901200")
    (f,) = collect(
        rdma.check_pause, {"ens1f0np0": rdma.parse_ethtool_pause(storm)}, before, 300.0, thresholds()
    )
    assert (f["check"], f["subject"], f["value"], f["threshold"], f["severity"]) == (
        "rdma.pfc_pause",
        "ens1f0np0 rx_prio3_pause",
        "3000/s",
        "1000/s",
        "warn",
    )
