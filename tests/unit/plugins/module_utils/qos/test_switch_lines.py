"""module_utils/qos/switch_lines.py: the intended lines follow the blueprint's design on both platforms, read
like the CLI, and say what IOS-XE cannot be configured with."""

from __future__ import annotations

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import roce as rq
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch_inputs as si
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch_lines as sl

QOS = rq.settings({})
NAMES, ECN = si.Names(), si.Ecn()
XE_PORTS = ["HundredGigE1/0/1", "HundredGigE1/0/2"]
NX_PORTS = ["Ethernet1/1", "eth1/2"]


def test_nx_os_lines_read_like_the_cli() -> None:
    text = sl.cli(sl.intended("nx-os", QOS, NX_PORTS, NAMES, ECN))
    assert (
        "policy-map type network-qos ROCE-NQ\n class type network-qos c-8q-nq3\n  pause pfc-cos 3\n" in text
    )
    assert (
        "interface Ethernet1/2\n priority-flow-control mode on\n priority-flow-control "
        "watch-dog-interval on\n"
        " mtu 9216\n" in text
    )
    assert (
        "system qos\n service-policy type network-qos ROCE-NQ\n service-policy type queuing output ROCE-OUT\n"
        in text
    )


def test_ios_xe_pfc_is_reported_not_pretended() -> None:
    steps = sl.manual_steps("ios-xe", QOS, XE_PORTS)
    assert "PFC on CoS 3 was NOT configured" in steps[0] and "HundredGigE1/0/2" in steps[0]
    assert sl.manual_steps("nx-os", QOS, NX_PORTS) == []


def test_nx_os_follows_the_blueprint_by_default() -> None:
    text = sl.cli(sl.intended("nx-os", QOS, NX_PORTS, NAMES, ECN))
    assert "class-map type qos match-all ROCE-CNP\n match dscp 48\n" in text
    assert (
        "policy-map type qos ROCE-IN\n class ROCE\n  set qos-group 3\n class ROCE-CNP\n  set qos-group 7\n"
        in text
    )
    assert (
        "policy-map type queuing ROCE-OUT\n class type queuing c-out-8q-q7\n  priority level 1\n"
        " class type queuing c-out-8q-q3\n  bandwidth remaining percent 60\n"
        "  random-detect minimum-threshold 150 kbytes maximum-threshold 3000 kbytes drop-probability 7 "
        "weight 0 ecn\n"
        " class type queuing c-out-8q-q-default\n  bandwidth remaining percent 40\n"
    ) in text
    assert " class type network-qos c-8q-nq-default\n  mtu 9216\n" in text
    assert "priority-flow-control watch-dog-interval on" in text
    assert "c-8q-nq0" not in text and "c-out-8q-q0" not in text


def test_strict_roce_queue_sits_below_cnp() -> None:
    strict = rq.settings({"roce_queue": "strict", "priority_level": 2})
    lines = sl.intended("nx-os", strict, NX_PORTS, NAMES, ECN)
    queuing = [line[1:] for line in lines if line[0] == "policy-map type queuing ROCE-OUT"]
    assert queuing[:2] == [
        ("class type queuing c-out-8q-q7", "priority level 1"),
        ("class type queuing c-out-8q-q3", "priority level 2"),
    ]
    assert rq.errors({"roce_queue": "strict"}) == [
        "roce_qos.roce_queue strict puts RoCE on a strict queue below the CNP queue (level 1): set "
        "priority_level 2"
    ]


def test_ios_xe_gives_cnp_the_priority_queue_and_roce_a_share() -> None:
    lines = sl.intended("ios-xe", QOS, XE_PORTS, NAMES, ECN)
    assert ("policy-map ROCE-OUT", "class ROCE-CNP-QG", "priority level 1") in lines
    assert ("policy-map ROCE-OUT", "class ROCE-QG", "bandwidth remaining percent 60") in lines
    assert ("class-map match-any ROCE-CNP", "match dscp 48") in lines
