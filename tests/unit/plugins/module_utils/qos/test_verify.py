"""module_utils/qos/verify.py (and switch_qos.state): verify.yml's RoCE QoS table and its verdict."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import roce as rq
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch_inputs as si
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch_lines as sl
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch_payload as sp
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch_readback as sr
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import verify as verify_qos
from ansible_collections.rdmaops.cluster.plugins.module_utils.verify import parse as verify_parse

ROCE = rq.settings({})
PORTS = ["Ethernet1/1", "Ethernet1/2"]


def _switch(differences: list[str] | None = None) -> dict[str, object]:
    tree = sp.data_tree("nx-os", ROCE, PORTS, si.Names(), si.Ecn())
    lines = sr.running("nx-os", ET.tostring(tree, encoding="unicode"), si.Names())[0]
    return {
        "item": "leaf1",
        "state": sl.state("nx-os", lines, PORTS),
        "differences": differences or [],
        "invocation": {"module_args": {"platform": "nx-os"}},
    }


def _host(tc: str, mtu: int, dcb: dict[str, object]) -> dict[str, object]:
    return verify_qos.host_input(
        {
            "env": f"NCCL_IB_TC={tc}\nNCCL_SOCKET_IFNAME=data0\n",
            "links": json.dumps([{"ifname": "data0", "mtu": mtu}, {"ifname": "mgmt0", "mtu": 1500}]),
            "ports": ["data0"],
            "dcb": [{"dev": "data0", **dcb}],
        },
        verify_parse.parse_env_file,
    )


def test_switch_state_reads_the_values() -> None:
    st = _switch()["state"]
    assert st["dscp"] == [26, 48] and st["qos_group"] == [3, 7]  # type: ignore[index]
    assert st["pause_cos"] == [3] and st["priority_level"] == [1]  # type: ignore[index]
    assert st["ports"]["Ethernet1/2"] == {"mtu": 9216, "pfc": "on", "input_policy": "ROCE-IN"}  # type: ignore[index]


def test_consistent_fabric() -> None:
    no_dcb = {"supported": False, "reason": "Attribute read: Operation not supported"}
    section = verify_qos.qos_section(
        ROCE, dict([verify_qos.switch_input(_switch())]), {"node1": _host("104", 9000, no_dcb)}
    )
    assert section["consistent"], section["problems"]
    rows = {(r["where"], r["port"]): r for r in section["rows"]}
    assert rows[("leaf1", "Ethernet1/1")]["pfc"] == "on" and rows[("leaf1", "Ethernet1/1")]["mtu"] == 9216
    assert rows[("node1", "data0")]["dscp"] == "26 (NCCL_IB_TC 104)"
    assert rows[("node1", "data0")]["pfc"].startswith("no DCB (Attribute read")
    text = "\n".join(verify_qos.markdown(section))
    assert "| leaf1 | Ethernet1/1 | 26,48 | 3 | on | 9216 |" in text and "Verdict: consistent." in text
    assert "CNP DSCP 48 (qos-group 7, strict priority level 1); RoCE queue weighted (60%)" in text


def test_each_disagreement_is_named_where_it_is() -> None:
    dcb = {"supported": True, "pfc_enabled": [4], "dscp_prio": {"26": [4]}}
    section = verify_qos.qos_section(
        ROCE,
        dict([verify_qos.switch_input(_switch(["+ interface Ethernet1/2 / priority-flow-control mode on"]))]),
        {"node1": _host("96", 9216, dcb), "node2": _host("104", 9300, {"supported": False})},
    )
    assert section["problems"] == [
        "leaf1: + interface Ethernet1/2 / priority-flow-control mode on",
        "node1: NCCL_IB_TC 96 marks DSCP 24, roce_qos.dscp is 26",
        "node1 data0: PFC on 4, roce_qos.cos 3",
        "node1 data0: DSCP 26 -> priority 4, want 3",
        "node2 data0: MTU 9300 is above the fabric's 9216",
    ]
    assert "Verdict: inconsistent:" in "\n".join(verify_qos.markdown(section))


def test_unreadable_switch_and_missing_env() -> None:
    section = verify_qos.qos_section(
        ROCE,
        dict(
            [
                verify_qos.switch_input(
                    {"item": "leaf1", "failed": True, "msg": "cannot open a NETCONF session"}
                )
            ]
        ),
        {"node1": verify_qos.host_input({"ports": []}, verify_parse.parse_env_file)},
    )
    assert section["problems"] == [
        "leaf1: not read (cannot open a NETCONF session)",
        "node1: no NCCL_IB_TC in the NCCL environment file (nccl_env not run?)",
    ]
