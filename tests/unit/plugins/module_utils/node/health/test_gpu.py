"""GPU checks on the recorded 4x H200 nvidia-smi XML, and on copies with one fault injected each."""

from __future__ import annotations

import json

import pytest

from ansible_collections.rdmaops.cluster.plugins.module_utils.node.health import gpu

from .conftest import HEALTH, SMI_XML, collect, edit_gpu, thresholds

AGG_DRAM = "<dram_uncorrectable>0</dram_uncorrectable>\n\t\t\t\t<sram_threshold_exceeded>"


def smi_findings(text: str, **overrides: object) -> list[dict]:
    return collect(gpu.check_smi, gpu.parse_smi_xml(text), thresholds(gpu_count=4, **overrides))


def test_recorded_h200_parses() -> None:
    smi = gpu.parse_smi_xml(SMI_XML)
    assert smi["driver_version"] == "580.159.04" and smi["cuda_version"] == "13.0"
    assert [g["pci"] for g in smi["gpus"]] == [f"00000000:00:0{i}.0" for i in (6, 7, 8, 9)]
    first = smi["gpus"][0]
    assert first["name"] == "NVIDIA H200" and first["persistence_mode"] == "Enabled"
    assert first["ecc_volatile_uncorrectable"] == 0 and first["ecc_aggregate_uncorrectable"] == 0
    assert (first["pcie_gen_current"], first["pcie_gen_max"]) == (5, 5)
    assert (first["pcie_width_current"], first["pcie_width_max"]) == (16, 16)
    assert first["retired_pages_pending"] is None  # "N/A" on Hopper, which remaps rows instead
    assert first["remapped_row_pending"] is False and first["recovery_action"] == "None"
    # The idle GPU's only active clock reason is gpu_idle, which is not a fault.
    assert [r for r, on in first["clocks_event_reasons"].items() if on] == ["gpu_idle"]


def test_recorded_h200_is_healthy() -> None:
    assert smi_findings(SMI_XML) == []


@pytest.mark.parametrize(
    ("old", "new", "check", "severity", "value"),
    [
        (
            "<dram_uncorrectable>0</dram_uncorrectable>",
            "<dram_uncorrectable>2</dram_uncorrectable>",
            "gpu.ecc_volatile",
            "fail",
            2,
        ),
        (AGG_DRAM, AGG_DRAM.replace(">0<", ">3<"), "gpu.ecc_aggregate", "warn", 3),
        (
            "<remapped_row_pending>No<",
            "<remapped_row_pending>Yes<",
            "gpu.remap_pending",
            "fail",
            "remapped_row_pending=Yes",
        ),
        (
            "<remapped_row_failure>No<",
            "<remapped_row_failure>Yes<",
            "gpu.remap_failure",
            "fail",
            "remapped_row_failure=Yes",
        ),
        (
            "<pending_retirement>N/A<",
            "<pending_retirement>Yes<",
            "gpu.retired_pages_pending",
            "fail",
            "retired_pages_pending=Yes",
        ),
        (
            "<channel_repair_pending>No<",
            "<channel_repair_pending>Yes<",
            "gpu.repair_pending",
            "fail",
            "channel_repair_pending=Yes",
        ),
        (
            "<unrepairable_memory>No<",
            "<unrepairable_memory>Yes<",
            "gpu.unrepairable_memory",
            "fail",
            "unrepairable_memory=Yes",
        ),
        (
            "<sram_threshold_exceeded>No<",
            "<sram_threshold_exceeded>Yes<",
            "gpu.sram_threshold",
            "fail",
            "sram_threshold_exceeded=Yes",
        ),
        ("<gpu_recovery_action>None<", "<gpu_recovery_action>Reset<", "gpu.recovery_action", "fail", "Reset"),
        (
            "<clocks_event_reason_hw_slowdown>Not Active<",
            "<clocks_event_reason_hw_slowdown>Active<",
            "gpu.clocks_event",
            "fail",
            "hw_slowdown",
        ),
        (
            "<clocks_event_reason_hw_power_brake_slowdown>Not Active<",
            "<clocks_event_reason_hw_power_brake_slowdown>Active<",
            "gpu.clocks_event",
            "fail",
            "hw_power_brake_slowdown",
        ),
        (
            "<persistence_mode>Enabled<",
            "<persistence_mode>Disabled<",
            "gpu.persistence_mode",
            "warn",
            "Disabled",
        ),
        ("<current_link_width>16x<", "<current_link_width>8x<", "gpu.pcie_width", "fail", "8x"),
        ("<current_link_gen>5<", "<current_link_gen>3<", "gpu.pcie_gen", "warn", "Gen3"),
    ],
)
def test_each_injected_fault_is_named(old: str, new: str, check: str, severity: str, value: object) -> None:
    found = smi_findings(edit_gpu(SMI_XML, 1, old, new))
    assert len(found) == 1, found
    f = found[0]
    assert (f["check"], f["severity"], f["value"]) == (check, severity, value)
    assert f["subject"] == "GPU 1 (00000000:00:07.0)" and f["node"] == "node1"
    assert f["threshold"] is not None and f["message"]


def test_gpu_count_against_inventory() -> None:
    starts = SMI_XML.index('<gpu id="00000000:00:09.0">')
    three = SMI_XML[:starts] + "</nvidia_smi_log>\n"
    (f,) = smi_findings(three)
    assert (f["check"], f["value"], f["threshold"], f["severity"]) == ("gpu.count", 3, 4, "fail")
    assert collect(gpu.check_smi, gpu.parse_smi_xml(three), thresholds(gpu_count=0)) == []


def test_pre_535_throttle_and_double_bit_names_are_read() -> None:
    """Older drivers say clocks_throttle_reason_* and double_bit/total: a copy renamed so still fails."""
    old = SMI_XML.replace("clocks_event_reason", "clocks_throttle_reason")
    old = edit_gpu(
        old,
        0,
        "<clocks_throttle_reason_hw_thermal_slowdown>Not Active<",
        "<clocks_throttle_reason_hw_thermal_slowdown>Active<",
    )
    old = edit_gpu(
        old,
        0,
        (
            "<volatile>\n"
            "\t\t\t\t<sram_correctable>0</sram_correctable>\n"
            "\t\t\t\t<sram_uncorrectable_parity>0</sram_uncorrectable_parity>\n"
            "\t\t\t\t<sram_uncorrectable_secded>0</sram_uncorrectable_secded>\n"
            "\t\t\t\t<dram_correctable>0</dram_correctable>\n"
            "\t\t\t\t<dram_uncorrectable>0</dram_uncorrectable>"
        ),
        "<volatile>\n\t\t\t\t<double_bit>\n\t\t\t\t\t<total>1</total>\n\t\t\t\t</double_bit>",
    )
    found = {f["check"]: f["value"] for f in smi_findings(old)}
    assert found == {"gpu.clocks_event": "hw_thermal_slowdown", "gpu.ecc_volatile": 1}


def test_not_xml_is_an_error() -> None:
    with pytest.raises(gpu.GpuParseError, match="did not print XML"):
        gpu.parse_smi_xml("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")


DCGM4 = (HEALTH / "dcgmi-diag-r1.dcgm4.pass.json").read_text()
DCGM3 = (HEALTH / "dcgmi-diag-r1.dcgm3.pass.json").read_text()


def test_dcgm_passing_runs_of_both_versions() -> None:
    for text, version, entities in ((DCGM4, "4.4.1", 4), (DCGM3, "3.1.0", 9)):
        diag = gpu.parse_dcgm(text)
        assert diag["version"] == version and len(diag["results"]) == entities
        assert collect(gpu.check_dcgm, diag, 1) == []


def test_dcgm_failing_entity_names_test_gpu_and_dcgm_reason() -> None:
    doc = json.loads(DCGM4)
    result = doc["DCGM Diagnostic"]["test_categories"][0]["tests"][0]["results"][2]
    result["status"] = "Fail"
    result["warnings"] = [
        {
            "error_category": 8,
            "error_id": 29,
            "error_severity": 5,
            "warning": "Persistence Mode: Persistence mode for GPU 2 is disabled.",
        }
    ]
    (f,) = collect(gpu.check_dcgm, gpu.parse_dcgm(json.dumps(doc)), 1)
    assert (f["check"], f["severity"], f["subject"], f["value"]) == (
        "gpu.dcgm_diag",
        "fail",
        "software on GPU 2",
        "fail",
    )
    assert "Persistence mode for GPU 2 is disabled" in f["message"]
    result["status"] = "Warn"
    (w,) = collect(gpu.check_dcgm, gpu.parse_dcgm(json.dumps(doc)), 1)
    assert w["severity"] == "warn"


def test_dcgm_runtime_error_and_garbage() -> None:
    doc = json.loads(DCGM4)
    doc["DCGM Diagnostic"]["runtime_error"] = "Unable to connect to the host engine"
    (f,) = collect(gpu.check_dcgm, gpu.parse_dcgm(json.dumps(doc)), 2)
    assert f["severity"] == "fail" and "host engine" in f["message"] and f["threshold"] == "-r 2 passes"
    with pytest.raises(gpu.GpuParseError, match="no JSON"):
        gpu.parse_dcgm("Error: unable to establish a connection to the specified host: localhost")
