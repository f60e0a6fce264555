"""perftest output parsing on real outputs of several perftest versions (module_utils/verify/perftest.py)."""

from __future__ import annotations

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.verify import perftest

from ...conftest import FIXTURE_DIR

FIXTURES = FIXTURE_DIR / "perftest"


def load(name: str) -> dict:
    return perftest.parse((FIXTURES / name).read_text())


def test_every_fixture_has_a_source() -> None:
    sources = (FIXTURES / "SOURCES.md").read_text()
    for path in FIXTURES.glob("*.txt"):
        assert path.name in sources


def test_roce_write_bw_gbits_sweep() -> None:
    r = load("mlx5_roce_write_bw_gbits_sweep.txt")
    assert (r["test"], r["kind"], r["units"]) == ("RDMA_Write BW Test", "bw", "Gb/sec")
    assert (r["device"], r["link_type"], r["gid_index"], r["mtu"], r["qps"], r["tx_depth"]) == (
        "mlx5_0",
        "Ethernet",
        3,
        4096,
        1,
        128,
    )
    assert (r["transport"], r["connection_type"]) == ("IB", "RC")
    assert r["header"]["ibv_wr_api"] == "ON"
    assert r["header"]["pcie_relax_order"] == "ON"
    assert r["header"]["data_ex_method"] == "Ethernet"
    assert len(r["results"]) == 23
    assert r["results"][0] == {
        "bytes": 2,
        "iterations": 5000,
        "bw_peak": 0.090062,
        "bw_average": 0.088598,
        "msg_rate_mpps": 5.537347,
        "bw_average_gbps": 0.088598,
        "bw_peak_gbps": 0.090062,
    }
    assert r["summary"] == {
        "bytes": 8388608,
        "bw_average_gbps": 196.07,
        "bw_peak_gbps": 196.07,
        "msg_rate_mpps": 0.002922,
    }
    assert r["local"][0]["gid"] == {"gid": "::ffff:ac1f:102", "ipv4": "172.31.1.2"}
    assert r["remote"][0]["gid"]["ipv4"] == "172.31.1.1"
    assert r["local"][0]["qpn"] == 0x0239 and r["remote"][0]["rkey"] == 0x203D00
    assert r["complete"] is True and r["errors"] == [] and r["warnings"] == []


def test_server_side_in_mib_per_second() -> None:
    r = load("mlx5_roce_write_bw_server_mbs.txt")
    assert r["units"] == "MB/sec"
    assert r["tx_depth"] is None  # the server does not print it
    # perftest's MB is 2**20 bytes: 196.07 MiB/s = 1.6448 Gb/s.
    assert r["summary"]["bw_average_gbps"] == pytest.approx(196.07 * 1048576 * 8 / 1e9)


def test_old_mlx4_infiniband_read_bw() -> None:
    r = load("mlx4_ib_read_bw_mbs.txt")
    assert (r["test"], r["device"], r["link_type"], r["mtu"], r["gid_index"]) == (
        "RDMA_Read BW Test",
        "mlx4_0",
        "IB",
        2048,
        None,
    )
    assert r["header"]["outstand_reads"] == 16
    assert r["local"] == [
        {
            "lid": 3,
            "qpn": 0x33905,
            "psn": 0xAE899D,
            "out": 0x10,
            "rkey": 0xB0011B4F,
            "vaddr": 0x007F9FDBD08000,
        }
    ]
    assert r["summary"]["bytes"] == 8388608
    assert r["summary"]["bw_average_gbps"] == pytest.approx(3666.17 * 1048576 * 8 / 1e9)


def test_old_mlx4_send_bw_with_uneven_columns() -> None:
    r = load("mlx4_ib_send_bw_mbs.txt")
    assert r["test"] == "Send BW Test"
    assert r["header"]["max_inline_data"] == 0
    assert [row["bytes"] for row in r["results"]][:3] == [2, 4, 8]
    assert r["results"][-1]["bw_average"] == 3661.76


def test_latency_sweep() -> None:
    r = load("mlx4_ib_write_lat.txt")
    assert (r["kind"], r["units"], r["columns"][2:]) == (
        "lat",
        None,
        ["t_min_us", "t_max_us", "t_typical_us", "t_avg_us", "t_stdev_us", "p99_us", "p999_us"],
    )
    assert len(r["results"]) == 23
    assert r["summary"] == {
        "bytes": 2,
        "t_min_us": 0.88,
        "t_max_us": 6.84,
        "t_typical_us": 0.98,
        "t_avg_us": 1.03,
        "t_stdev_us": 0.20,
        "p99_us": 1.21,
        "p999_us": 5.42,
    }
    assert r["results"][-1]["p999_us"] == 2335.48


def test_latency_with_cpu_frequency_warnings_inside_the_table() -> None:
    r = load("mlx5_roce_read_lat_cpufreq.txt")
    assert r["gid_index"] == 3
    assert len(r["results"]) == 1
    assert r["summary"]["t_typical_us"] == 4.83
    assert r["summary"]["p999_us"] == 13.20
    assert len(r["warnings"]) == 2 and r["warnings"][0].startswith("Conflicting CPU frequency")
    assert r["errors"] == []


def test_four_qps_rdma_cm() -> None:
    r = load("cx7_write_bw_4qp_rdmacm_gbits.txt")
    assert (r["device"], r["qps"], r["mtu"], r["gid_index"]) == ("rocep1s0f1", 4, 1024, None)
    assert r["header"]["rdma_cm_qps"] == "ON" and r["header"]["data_ex_method"] == "rdma_cm"
    assert [a["qpn"] for a in r["local"]] == [0x3EC, 0x3ED, 0x3EE, 0x3EF]
    assert len(r["remote"]) == 4
    assert r["summary"]["bw_average_gbps"] == 111.71
    assert r["summary"]["bw_peak_gbps"] == 111.72


def test_latency_rdma_cm() -> None:
    r = load("cx7_write_lat_rdmacm.txt")
    assert r["summary"]["t_avg_us"] == 1.47
    assert r["summary"]["p99_us"] == 1.57


def test_tab_separated_header_and_post_list() -> None:
    r = load("roce_write_bw_postlist_duration.txt")
    assert r["test"] == "RDMA_Write Post List BW Test"
    assert r["device"] == "ib0"
    assert r["header"]["post_list"] == 128
    assert r["header"]["rdma_cm_qps"] == "OFF"
    assert r["header"]["pcie_relax_order"] == "Unsupported"
    assert r["results"] == [
        {
            "bytes": 8,
            "iterations": 224958464,
            "bw_peak": 0.0,
            "bw_average": 0.48,
            "msg_rate_mpps": 7.498617,
            "bw_average_gbps": 0.48,
            "bw_peak_gbps": 0.0,
        }
    ]


def test_client_that_could_not_connect() -> None:
    # What perftest prints to stderr when no server listens (perftest_communication.c).
    text = "Couldn't connect to 10.0.0.2:18515\n Unable to init the socket connection\n"
    with pytest.raises(perftest.PerftestParseError, match=r"Couldn't connect to 10\.0\.0\.2:18515"):
        perftest.parse(text)


def test_header_only_is_incomplete() -> None:
    text = (FIXTURES / "mlx4_ib_write_lat.txt").read_text().split(" #bytes")[0]
    r = perftest.parse(text)
    assert r["complete"] is False and r["summary"] == {}


def test_row_with_missing_column_is_an_error() -> None:
    text = (FIXTURES / "cx7_write_lat_rdmacm.txt").read_text().replace("1.57                    1.93", "1.57")
    with pytest.raises(perftest.PerftestParseError, match="8 values for 9 columns"):
        perftest.parse(text)
