"""Fidelity of the switch payloads: every payload the role renders validates against Cisco's real YANG
(IOS-XE 17.12.1, NX-OS 9.3(2), in ../shared/yang), the lab switch's project-written modules accept
exactly what the real ones accept for that subtree (good and bad variants, both ways), and what a device
returns for a rendered payload - with-defaults trim or report-all, as libyang applies the real models'
defaults - reads back as exactly what was sent.

Skips, saying so, when ../shared/yang or yanglint (Debian's libyang2-tools) is absent.
"""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import roce as rq
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch_inputs as si
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch_lines as sl
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch_models as sm
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch_payload as sp
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch_readback as sr

from ...conftest import ROOT

# ../shared beside the checkout, or two levels up for a git worktree kept in a folder of worktrees.
SHARED = next(
    (p / "shared" / "yang" for p in (ROOT.parent, ROOT.parent.parent) if (p / "shared" / "yang").is_dir()),
    ROOT.parent / "shared" / "yang",
)
LAB = ROOT / "roles" / "lab" / "files" / "yang"
XE_REAL = SHARED / "cisco-ios-xe-17.12.1"
NX_REAL = SHARED / "cisco-nx-os-9.3-2"
MODELS = {
    ("ios-xe", "real"): (
        XE_REAL,
        [XE_REAL / "Cisco-IOS-XE-native.yang", XE_REAL / "Cisco-IOS-XE-policy.yang"],
    ),
    ("ios-xe", "lab"): (
        LAB,
        [LAB / "rdmaops-lab-ios-xe-native.yang", LAB / "rdmaops-lab-ios-xe-policy.yang"],
    ),
    ("nx-os", "real"): (NX_REAL, [NX_REAL / "Cisco-NX-OS-device.yang"]),
    ("nx-os", "lab"): (LAB, [LAB / "rdmaops-lab-nx-os-device.yang"]),
}

pytestmark = [
    pytest.mark.skipif(
        not SHARED.is_dir(), reason=f"{SHARED} is absent: Cisco's YANG models are test data only"
    ),
    pytest.mark.skipif(shutil.which("yanglint") is None, reason="yanglint (libyang2-tools) is not installed"),
]

QOS = rq.settings({})
XE_PORTS = ["HundredGigE1/0/1", "HundredGigE1/0/2"]
NX_PORTS = ["Ethernet1/1", "Ethernet1/2"]


def _payload(platform: str, qos: dict[str, object] | None = None) -> str:
    qos = qos or QOS
    ports = XE_PORTS if platform == "ios-xe" else NX_PORTS
    ET.register_namespace("", sm.XE if platform == "ios-xe" else sm.NX)
    ET.register_namespace("pol", sm.XE_POLICY)
    return ET.tostring(sp.data_tree(platform, qos, ports, si.Names(), si.Ecn()), encoding="unicode")


def _valid(platform: str, which: str, payload: str, tmp_path: Path, *extra: str) -> tuple[bool, str]:
    search, modules = MODELS[(platform, which)]
    data = tmp_path / f"{platform}-{which}.xml"
    data.write_text(payload)
    proc = subprocess.run(
        ["yanglint", "-p", str(search), "-t", "config", *extra, *map(str, modules), str(data)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    errors = "\n".join(
        line for line in (proc.stdout + proc.stderr).splitlines() if "libyang warn" not in line
    )
    # yanglint crashes (exit 139) on some empty containers: "not validated", never "valid" or "invalid".
    assert proc.returncode in (0, 1, 7), (
        f"yanglint crashed ({proc.returncode}) on {which} {platform}: {errors[-500:]}"
    )
    return proc.returncode == 0, proc.stdout if extra else errors


@pytest.mark.parametrize("platform", ["ios-xe", "nx-os"])
@pytest.mark.parametrize(
    "qos",
    [
        {},
        {"dscp": 0, "cos": 0, "qos_group": 1, "priority_level": 2, "mtu": 1500, "ecn": False},
        {"dscp": 63, "cnp_dscp": 46, "cnp_qos_group": 5, "bandwidth_percent": 99, "pfc_watchdog": False},
        {"roce_queue": "strict", "priority_level": 2},
    ],
)
def test_rendered_payloads_validate_against_cisco_models(
    platform: str, qos: dict[str, object], tmp_path: Path
) -> None:
    payload = _payload(platform, rq.settings(qos))
    for which in ("real", "lab"):
        ok, errors = _valid(platform, which, payload, tmp_path)
        assert ok, f"{which} model rejects the rendered {platform} payload: {errors[-800:]}"


XE_VARIANTS = {
    "dscp as a name (af31)": (
        lambda p: p.replace("<pol:dscp>26</pol:dscp>", "<pol:dscp>af31</pol:dscp>"),
        True,
    ),
    "priority level 2": (lambda p: p.replace("<pol:level>1</pol:level>", "<pol:level>2</pol:level>"), True),
    "priority level 3": (lambda p: p.replace("<pol:level>1</pol:level>", "<pol:level>3</pol:level>"), False),
    "dscp 64": (lambda p: p.replace("<pol:dscp>26</pol:dscp>", "<pol:dscp>64</pol:dscp>"), False),
    "dscp AF31 in capitals": (
        lambda p: p.replace("<pol:dscp>26</pol:dscp>", "<pol:dscp>AF31</pol:dscp>"),
        False,
    ),
    "set qos-group 100": (lambda p: p.replace("<pol:qos-group-value>3<", "<pol:qos-group-value>100<"), False),
    "match qos-group 100": (
        lambda p: p.replace("<pol:qos-group>3</pol:qos-group>", "<pol:qos-group>100</pol:qos-group>"),
        False,
    ),
    "class-map without prematch": (
        lambda p: p.replace("<pol:prematch>match-any</pol:prematch>", "", 1),
        False,
    ),
    "priority policy on input": (
        lambda p: p.replace("<pol:input>ROCE-IN</pol:input>", "<pol:input>ROCE-OUT</pol:input>", 1),
        False,
    ),
    "service-policy naming no policy-map": (
        lambda p: p.replace("<pol:output>ROCE-OUT<", "<pol:output>NOPE<", 1),
        False,
    ),
    "port key with its type": (
        lambda p: p.replace("<name>1/0/1</name>", "<name>HundredGigE1/0/1</name>"),
        False,
    ),
    "port mtu 18001": (lambda p: p.replace("<mtu>9216</mtu>", "<mtu>18001</mtu>", 1), False),
    "port mtu 18000": (lambda p: p.replace("<mtu>9216</mtu>", "<mtu>18000</mtu>", 1), True),
    "bandwidth remaining percent 100": (lambda p: p.replace("<pol:percent>60<", "<pol:percent>100<"), True),
    "bandwidth remaining percent 101": (lambda p: p.replace("<pol:percent>60<", "<pol:percent>101<"), False),
    "bandwidth remaining percent 0": (lambda p: p.replace("<pol:percent>60<", "<pol:percent>0<"), False),
    "remaining percent under rem-option ratio": (
        lambda p: p.replace("<pol:rem-option>percent<", "<pol:rem-option>ratio<"),
        False,
    ),
}

NX_VARIANTS = {
    "dscp 64": (lambda p: p.replace("<val>26</val>", "<val>64</val>"), False),
    "dscp as a name": (lambda p: p.replace("<val>26</val>", "<val>af31</val>"), False),
    "pause on CoS 8": (lambda p: p.replace("pfcCos3>", "pfcCos8>"), False),
    "pause as a number": (lambda p: p.replace("<pfcCos3>true<", "<pfcCos3>3<"), False),
    "set qos-group 8": (lambda p: p.replace("<setGrp-items><id>3</id>", "<setGrp-items><id>8</id>"), False),
    "network-qos mtu 9217": (
        lambda p: p.replace("<mtu-items><value>9216<", "<mtu-items><value>9217<"),
        False,
    ),
    "port mtu 575": (lambda p: p.replace("<mtu>9216</mtu>", "<mtu>575</mtu>", 1), False),
    "priority level 8": (lambda p: p.replace("<prio-items><level>1<", "<prio-items><level>8<"), True),
    "priority level 9": (lambda p: p.replace("<prio-items><level>1<", "<prio-items><level>9<"), False),
    "threshold unit kb": (lambda p: p.replace(">kbytes<", ">kb<", 1), False),
    "match type all": (lambda p: p.replace(">match-all<", ">all<"), False),
    "PFC mode 2 (off)": (lambda p: p.replace("<mode>1</mode>", "<mode>2</mode>", 1), True),
    "PFC mode as text": (lambda p: p.replace("<mode>1</mode>", "<mode>on</mode>", 1), False),
    "PFC watchdog off (2)": (
        lambda p: p.replace("<watchDogInterval>1<", "<watchDogInterval>2<", 1),
        True,
    ),
    "PFC watchdog as text": (
        lambda p: p.replace("<watchDogInterval>1<", "<watchDogInterval>on<", 1),
        False,
    ),
    "bandwidth remaining percent 101": (
        lambda p: p.replace("<setRemBW-items><val>60<", "<setRemBW-items><val>101<"),
        False,
    ),
    "bandwidth remaining percent 0": (
        lambda p: p.replace("<setRemBW-items><val>60<", "<setRemBW-items><val>0<"),
        True,
    ),
}


@pytest.mark.parametrize(
    "platform,name",
    [("ios-xe", n) for n in XE_VARIANTS] + [("nx-os", n) for n in NX_VARIANTS],
)
def test_lab_model_accepts_exactly_what_cisco_accepts(platform: str, name: str, tmp_path: Path) -> None:
    change, expected = (XE_VARIANTS if platform == "ios-xe" else NX_VARIANTS)[name]
    payload = change(_payload(platform))
    assert payload != _payload(platform), f"variant {name!r} changed nothing"
    real, real_err = _valid(platform, "real", payload, tmp_path)
    lab, lab_err = _valid(platform, "lab", payload, tmp_path)
    assert real == expected, (
        f"Cisco's model: expected {'valid' if expected else 'invalid'}: {real_err[-400:]}"
    )
    assert lab == real, (
        f"lab model {'accepts' if lab else 'rejects'} {name!r}; Cisco's does not: {lab_err[-400:]}"
    )


# ------------------------------------------------------------------ read-back with the model's defaults


def _defaults_applied(platform: str, payload: str, mode: str, tmp_path: Path) -> str:
    """The payload as libyang returns it under with-defaults ``mode`` (trim or all) with Cisco's models."""
    ok, out = _valid(platform, "real", payload, tmp_path, "-f", "xml", "-d", mode)
    assert ok and out.strip(), out[-400:]
    return out


@pytest.mark.parametrize("mode", ["trim", "all"])
@pytest.mark.parametrize(
    "platform,qos",
    [
        ("nx-os", {"mtu": 1500}),  # network-qos class MTU and port MTU at the model default (1500)
        ("nx-os", {"mtu": 9216}),
        ("nx-os", {"priority_level": 1}),  # ipqos_PriorityLevel defaults to 1 in NX-OS 9.3
        ("nx-os", {"priority_level": 2}),
        ("nx-os", {"roce_queue": "strict", "priority_level": 2, "pfc_watchdog": False}),
        ("ios-xe", {"priority_level": 1}),  # IOS-XE 17.12.1 gives priority/level no default
        ("ios-xe", {"priority_level": 2, "mtu": 1500}),
    ],
)
def test_what_the_switch_returns_reads_back_as_what_was_sent(
    platform: str, qos: dict[str, object], mode: str, tmp_path: Path
) -> None:
    ports = XE_PORTS if platform == "ios-xe" else NX_PORTS
    settings = rq.settings(qos)
    returned = _defaults_applied(platform, _payload(platform, settings), mode, tmp_path)
    lines = sr.running(platform, returned, si.Names())[0]
    want = sl.intended(platform, settings, ports, si.Names(), si.Ecn())
    assert sl.differences(want, sl.owned_running(platform, lines, ports)) == []


def test_trim_does_leave_the_defaults_out(tmp_path: Path) -> None:
    """The case the read-back handles is real: Cisco's NX-OS model trims MTU 1500 and priority level 1."""
    trimmed = _defaults_applied("nx-os", _payload("nx-os", rq.settings({"mtu": 1500})), "trim", tmp_path)
    assert "<value>1500</value>" not in trimmed and "<mtu>1500</mtu>" not in trimmed
    assert "<prio-items/>" in trimmed and "<level>1</level>" not in trimmed
    kept = _defaults_applied("ios-xe", _payload("ios-xe", rq.settings({})), "trim", tmp_path)
    assert "<level>1</level>" in kept  # no default in the IOS-XE model: trim keeps it


def test_the_parsers_table_of_nx_os_defaults_is_the_models(tmp_path: Path) -> None:
    full = ET.fromstring(_defaults_applied("nx-os", _payload("nx-os"), "all", tmp_path))
    found = {
        (parent.tag.rsplit("}", 1)[-1], leaf.tag.rsplit("}", 1)[-1], (leaf.text or "").strip())
        for parent in full.iter()
        for leaf in parent
        if len(leaf) == 0
    }
    table = {(container, leaf, value) for (container, leaf), value in sm.NX_GENERIC_DEFAULTS.items()}
    assert table <= found, f"not defaults of Cisco's model: {sorted(table - found)}"
