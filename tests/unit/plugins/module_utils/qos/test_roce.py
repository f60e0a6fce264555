"""module_utils/qos/roce.py: the fabric's roce_qos numbers, their defaults and their one check."""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import roce as rq

from ...conftest import ROOT


def test_roce_qos_defaults_and_one_check() -> None:
    # the defaults are the ones docs/switch_qos.md gives an operator to copy
    doc = (ROOT / "docs" / "switch_qos.md").read_text()
    block = doc.split("```yaml\n", 1)[1].split("```", 1)[0]
    defaults = rq.settings(None)
    assert defaults == yaml.safe_load(block)["roce_qos"]
    assert (defaults["dscp"], defaults["cos"], defaults["qos_group"]) == (26, 3, 3)
    assert rq.settings({"dscp": "46"})["dscp"] == 46
    assert rq.nccl_ib_tc({}) == 104
    assert rq.errors({"dscp": 64, "cos": 8, "priority_level": 3, "colour": 1, "ecn": "yes"}) == [
        "roce_qos.colour is not a setting (known: dscp, cos, qos_group, priority_level, mtu, ecn, cnp_dscp, "
        "cnp_qos_group, roce_queue, bandwidth_percent, pfc_watchdog)",
        "roce_qos.dscp must be an integer 0..63, got 64",
        "roce_qos.cos must be an integer 0..7, got 8",
        "roce_qos.priority_level must be an integer 1..2, got 3",
        "roce_qos.ecn must be true or false, got 'yes'",
    ]
    assert rq.errors({"dscp": True}) == ["roce_qos.dscp must be an integer 0..63, got True"]
    assert rq.errors("26") == ["roce_qos must be a mapping like " + str(rq.DEFAULTS) + ", got '26'"]
    with pytest.raises(ValueError, match=r"mtu must be an integer 1500\.\.9216, got 9217"):
        rq.settings({"mtu": 9217})


def test_roce_and_cnp_must_be_two_classes() -> None:
    assert rq.errors({"cnp_dscp": 26}) == [
        "roce_qos.dscp and roce_qos.cnp_dscp must differ (RoCE data and CNP are two classes), both 26"
    ]
    assert rq.errors({"qos_group": 7})[0].startswith(
        "roce_qos.qos_group and roce_qos.cnp_qos_group must differ"
    )
