"""module_utils/qos/switch_payload.py: the edit-config payload replaces the owned objects only, and carries
every leaf it sets, defaults included."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import roce as rq
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch_inputs as si
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch_models as sm
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch_payload as sp

QOS = rq.settings({})
NAMES, ECN = si.Names(), si.Ecn()
XE_PORTS = ["HundredGigE1/0/1", "HundredGigE1/0/2"]
NX_PORTS = ["Ethernet1/1"]


def test_edit_payload_replaces_owned_objects_only() -> None:
    payload = sp.edit_config("ios-xe", QOS, XE_PORTS, NAMES, ECN)
    root = ET.fromstring(payload)
    op = f"{{{sm.NC}}}operation"
    replaced = [el.tag.rsplit("}", 1)[1] for el in root.iter() if el.get(op) == "replace"]
    assert replaced == ["service-policy", "service-policy"] + ["class-map"] * 4 + ["policy-map"] * 2
    assert root.find(f".//{{{sm.XE}}}HundredGigE").get(op) is None


def test_a_leaf_at_its_default_is_still_sent() -> None:
    # A switch under with-defaults trim leaves MTU 1500 out of its replies; the edit payload never does.
    root = ET.fromstring(sp.edit_config("nx-os", rq.settings({"mtu": 1500}), NX_PORTS, NAMES, ECN))
    assert any((el.text or "") == "1500" for el in root.iter())
