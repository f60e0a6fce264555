# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the switch_qos role knows of Cisco's YANG models, shared by the payload and the read-back.

The namespaces (IOS-XE 17.x Cisco-IOS-XE-native and Cisco-IOS-XE-policy; NX-OS 9.3/10.3
Cisco-NX-OS-device), the enumerations the role writes and reads (DSCP names, NX-OS PFC mode and watchdog), and
the NX-OS leaves' YANG defaults that the read-back applies: with-defaults ``trim`` leaves out every leaf equal
to its default, and a ``report-all`` reply carries them all. ``tests/.../test_switch_yang.py`` checks these
against the real models.
"""

from __future__ import annotations

NC = "urn:ietf:params:xml:ns:netconf:base:1.0"
XE = "http://cisco.com/ns/yang/Cisco-IOS-XE-native"
XE_POLICY = "http://cisco.com/ns/yang/Cisco-IOS-XE-policy"
NX = "http://cisco.com/ns/yang/cisco-nx-os-device"

# Cisco-IOS-XE-types dscp-type enumeration (17.12.1): the names a device may return for a number.
DSCP_NAMES = {
    "default": 0, "cs1": 8, "af11": 10, "af12": 12, "af13": 14, "cs2": 16, "af21": 18, "af22": 20,
    "af23": 22, "cs3": 24, "af31": 26, "af32": 28, "af33": 30, "cs4": 32, "af41": 34, "af42": 36,
    "af43": 38, "cs5": 40, "ef": 46, "cs6": 48, "cs7": 56,
}  # fmt: skip
# NX-OS ipqos_PriorFlowCtrlMode and ipqos_PriorFlowCtrlWdIntvl: the enumerations of Cisco-NX-OS-device.yang
# of NX-OS 10.3(10) (YangModels/yang vendor/cisco/nx/10.3-10): mode auto=0 (the default), on=1, off=2;
# watch-dog-interval on=1, off=2 (the default). NX-OS 9.3 types both leaves as a bare uint8.
PFC_MODES = {0: "auto", 1: "on", 2: "off"}
PFC_MODE_ON = 1
PFC_WATCHDOG = {1: "on", 2: "off"}
PFC_WATCHDOG_ON, PFC_WATCHDOG_OFF = 1, 2

# NX-OS leaves switch_readback does not read itself, with their YANG defaults (Cisco-NX-OS-device 9.3): a
# report-all reply carries them in every class, and a leaf at its default says nothing. Keyed by
# (container, leaf); a test checks the table against the real model (tests/.../test_switch_yang.py).
NX_GENERIC_DEFAULTS: dict[tuple[str, str], str] = {
    ("QueueLimit-items", "QueueLimitUnit"): "none",
    ("QueueLimit-items", "QueueLimitVal"): "0",
    ("RandDetNonEcn-items", "maxThresholdNonEcn"): "0",
    ("RandDetNonEcn-items", "maxThresholdUnitNonEcn"): "none",
    ("RandDetNonEcn-items", "minThresholdNonEcn"): "0",
    ("RandDetNonEcn-items", "minThresholdUnitNonEcn"): "none",
    ("police-items", "bcUnit"): "unspecified",
    ("police-items", "beUnit"): "unspecified",
    ("police-items", "cirUnit"): "unspecified",
    ("police-items", "pirUnit"): "unspecified",
    ("police-items", "conformSetDscpTransmit"): "0",
    ("police-items", "exceedSetDscpTransmit"): "0",
    ("police-items", "violateSetDscpTransmit"): "0",
    ("setDscp-items", "val"): "0",
    ("shape-items", "maxRateUnit"): "unspecified",
    ("shape-items", "minRateUnit"): "unspecified",
    ("pause-items", "bufferSize"): "12582913",
    ("RandDet-items", "optimization"): "0",
    ("RandDet-items", "minThreshold"): "0",
    ("RandDet-items", "maxThreshold"): "0",
    ("RandDet-items", "minThresholdUnit"): "none",
    ("RandDet-items", "maxThresholdUnit"): "none",
    ("mtu-items", "value"): "1500",
    ("prio-items", "level"): "1",
}
# Leaves of the role's own with their defaults: read as the default when the reply leaves them out.
NX_MTU_DEFAULT = 1500  # ipqos_MTU (network-qos class) and l1_Mtu (port)
NX_PRIORITY_LEVEL_DEFAULT = 1  # ipqos_PriorityLevel in 9.3 (10.3 has no default)
NX_RANDDET_DEFAULTS = {
    "minThreshold": "0",
    "maxThreshold": "0",
    "minThresholdUnit": "none",
    "maxThresholdUnit": "none",
    "dropAvail": "0",
    "weight": "0",
    "ecn": "false",
}
