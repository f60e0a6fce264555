# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU checks from ``nvidia-smi -q -x``, the kernel log's Xid lines and ``dcgmi diag -r N -j``.

nvidia-smi's XML (nvsmi_device_v13.dtd, driver 580; recorded in tests/unit/fixtures/health/) names the clock
limits ``clocks_event_reasons/clocks_event_reason_*``; drivers before 535 wrote
``clocks_throttle_reasons/clocks_throttle_reason_*``, and ECC counts as ``double_bit/total`` instead of
``dram_uncorrectable`` and friends: both spellings are read. "N/A" means the GPU does not report the field
(retired pages on Hopper, which remaps rows instead) and is never a finding.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from typing import Any

from . import xid as xidcat
from .findings import Findings


class GpuParseError(ValueError):
    """nvidia-smi or dcgmi printed something that is not the documented format."""


def _text(node: ET.Element | None, path: str) -> str | None:
    if node is None:
        return None
    found = node.find(path)
    if found is None or found.text is None:
        return None
    value = found.text.strip()
    return None if value in ("", "N/A") else value


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    match = re.match(r"^\s*(\d+)", text)
    return int(match.group(1)) if match else None


def _uncorrectable(block: ET.Element | None) -> int | None:
    """Sum of a volatile/aggregate block's uncorrectable counts, None when the GPU reports none."""
    if block is None:
        return None
    total = None
    for child in block:
        if "uncorrectable" in child.tag:
            value = _int(child.text)
            if value is not None:
                total = (total or 0) + value
    legacy = _int(_text(block, "double_bit/total"))
    if total is None and legacy is not None:
        total = legacy
    return total


def _reasons(gpu: ET.Element) -> dict[str, bool]:
    out: dict[str, bool] = {}
    for container, prefix in (
        ("clocks_event_reasons", "clocks_event_reason_"),
        ("clocks_throttle_reasons", "clocks_throttle_reason_"),
    ):
        block = gpu.find(container)
        if block is None:
            continue
        for child in block:
            if child.tag.startswith(prefix) and child.text:
                out[child.tag[len(prefix) :]] = child.text.strip() == "Active"
    return out


def _yes(text: str | None) -> bool | None:
    return None if text is None else text == "Yes"


def parse_gpu(gpu: ET.Element, index: int) -> dict[str, Any]:
    link = "pci/pci_gpu_link_info"
    return {
        "index": index,
        "pci": (gpu.get("id") or _text(gpu, "pci/pci_bus_id") or "").lower(),
        "name": _text(gpu, "product_name"),
        "uuid": _text(gpu, "uuid"),
        "persistence_mode": _text(gpu, "persistence_mode"),
        "ecc_mode": _text(gpu, "ecc_mode/current_ecc"),
        "ecc_volatile_uncorrectable": _uncorrectable(gpu.find("ecc_errors/volatile")),
        "ecc_aggregate_uncorrectable": _uncorrectable(gpu.find("ecc_errors/aggregate")),
        "sram_threshold_exceeded": _yes(_text(gpu, "ecc_errors/aggregate/sram_threshold_exceeded")),
        "channel_repair_pending": _yes(_text(gpu, "ecc_errors/channel_repair_pending")),
        "tpc_repair_pending": _yes(_text(gpu, "ecc_errors/tpc_repair_pending")),
        "unrepairable_memory": _yes(_text(gpu, "ecc_errors/unrepairable_memory")),
        "remapped_row_pending": _yes(_text(gpu, "remapped_rows/remapped_row_pending")),
        "remapped_row_failure": _yes(_text(gpu, "remapped_rows/remapped_row_failure")),
        "retired_pages_pending": _yes(_text(gpu, "retired_pages/pending_retirement")),
        "recovery_action": _text(gpu, "gpu_recovery_action"),
        "clocks_event_reasons": _reasons(gpu),
        "pcie_gen_current": _int(_text(gpu, f"{link}/pcie_gen/current_link_gen")),
        "pcie_gen_max": _int(_text(gpu, f"{link}/pcie_gen/max_link_gen")),
        "pcie_width_current": _int(_text(gpu, f"{link}/link_widths/current_link_width")),
        "pcie_width_max": _int(_text(gpu, f"{link}/link_widths/max_link_width")),
    }


def parse_smi_xml(text: str) -> dict[str, Any]:
    """``nvidia-smi -q -x`` -> {driver_version, cuda_version, gpus: [parse_gpu(...)]}."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise GpuParseError(f"nvidia-smi -q -x did not print XML: {exc}") from exc
    if root.tag != "nvidia_smi_log":
        raise GpuParseError(f"nvidia-smi -q -x printed <{root.tag}>, expected <nvidia_smi_log>")
    return {
        "driver_version": _text(root, "driver_version"),
        "cuda_version": _text(root, "cuda_version"),
        "gpus": [parse_gpu(g, i) for i, g in enumerate(root.findall("gpu"))],
    }


def _who(gpu: dict[str, Any]) -> str:
    return f"GPU {gpu['index']} ({gpu['pci']})"


# (check, field, message) for the yes/no fields that need a reset, a reboot or an RMA when "Yes".
_FLAGS = (
    ("gpu.remap_pending", "remapped_row_pending", "rows are pending remapping: reset the GPU to apply them"),
    ("gpu.remap_failure", "remapped_row_failure", "row remapping failed: NVIDIA treats this as an RMA case"),
    ("gpu.retired_pages_pending", "retired_pages_pending", "pages are pending retirement: reset the GPU"),
    ("gpu.repair_pending", "channel_repair_pending", "a memory channel repair is pending: reset the GPU"),
    ("gpu.repair_pending", "tpc_repair_pending", "a TPC repair is pending: reset the GPU"),
    ("gpu.unrepairable_memory", "unrepairable_memory", "memory the GPU cannot repair: an RMA case"),
    ("gpu.sram_threshold", "sram_threshold_exceeded", "SRAM uncorrectable errors passed NVIDIA's threshold"),
)


def check_smi(smi: dict[str, Any], thresholds: dict[str, Any], out: Findings) -> None:
    gpus = smi["gpus"]
    want = thresholds["gpu_count"]
    out.mark("gpu.count", "pass" if want else "skipped: gpu_count not set")
    if want and len(gpus) != want:
        out.add("gpu.count", "GPUs", len(gpus), want, f"nvidia-smi lists {len(gpus)} GPUs, expected {want}")
    for check in (
        "gpu.ecc_volatile",
        "gpu.ecc_aggregate",
        "gpu.clocks_event",
        "gpu.pcie_width",
        "gpu.pcie_gen",
    ):
        out.mark(check, "pass")
    for check, _field, _msg in _FLAGS:
        out.mark(check, "pass")
    out.mark("gpu.recovery_action", "pass")
    out.mark(
        "gpu.persistence_mode", "pass" if thresholds["gpu_persistence_mode"] else "skipped: not required"
    )
    for gpu in gpus:
        who = _who(gpu)
        for scope in ("volatile", "aggregate"):
            count = gpu[f"ecc_{scope}_uncorrectable"]
            limit = thresholds[f"gpu_ecc_{scope}_max"]
            if count is not None and count > limit:
                out.add(
                    f"gpu.ecc_{scope}",
                    who,
                    count,
                    limit,
                    f"{count} uncorrectable ECC errors ({scope}"
                    + (", since the driver loaded)" if scope == "volatile" else ", lifetime)"),
                )
        for check, field, message in _FLAGS:
            if gpu[field]:
                out.add(check, who, f"{field}=Yes", f"{field}=No", message)
        action = gpu["recovery_action"]
        if action is not None and action != "None":
            out.add(
                "gpu.recovery_action", who, action, "None", f"the driver asks for recovery action {action!r}"
            )
        active = sorted(
            r for r in thresholds["gpu_clocks_event_reasons"] if gpu["clocks_event_reasons"].get(r)
        )
        if active:
            out.add(
                "gpu.clocks_event",
                who,
                ",".join(active),
                "none active",
                "clocks held down by " + ", ".join(active),
            )
        if thresholds["gpu_persistence_mode"] and gpu["persistence_mode"] not in (None, "Enabled"):
            out.add(
                "gpu.persistence_mode", who, gpu["persistence_mode"], "Enabled", "persistence mode is off"
            )
        for what, unit in (("width", "x"), ("gen", "")):
            cur, top = gpu[f"pcie_{what}_current"], gpu[f"pcie_{what}_max"]
            if cur is not None and top is not None and cur < top:
                out.add(
                    f"gpu.pcie_{what}",
                    who,
                    f"{'Gen' if what == 'gen' else ''}{cur}{unit}",
                    f"{'Gen' if what == 'gen' else ''}{top}{unit}",
                    f"PCIe link {what} {cur}{unit} below the maximum {top}{unit}",
                )


def check_xids(events: list[dict[str, Any]], thresholds: dict[str, Any], out: Findings) -> None:
    """One finding per (GPU, Xid) in the kernel log since boot, with its count and NVIDIA's action."""
    out.mark("gpu.xid", "pass")
    ignore = set(thresholds["gpu_xid_ignore"])
    grouped: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for event in events:
        if event["xid"] not in ignore:
            grouped.setdefault((event["pci"], event["xid"]), []).append(event)
    for (pci, code), seen in sorted(grouped.items()):
        _action, severity = xidcat.classify(code)
        if severity is None:
            continue
        out.add(
            "gpu.xid",
            f"GPU {pci}",
            f"Xid {code} x{len(seen)}",
            "no reset/reboot Xid since boot" if severity == "fail" else "no Xid since boot",
            f"{xidcat.describe(code)}; last: {seen[-1]['text'][:120]}",
            severity=severity,
        )


def _json_document(text: str) -> dict[str, Any]:
    # dcgmi may print a line before the JSON ("Successfully ran diagnostic for group.").
    start = text.find("{")
    if start < 0:
        raise GpuParseError(f"dcgmi diag -j printed no JSON: {text.strip()[:200]!r}")
    try:
        doc = json.loads(text[start:])
    except json.JSONDecodeError as exc:
        raise GpuParseError(f"dcgmi diag -j printed broken JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise GpuParseError("dcgmi diag -j printed JSON that is not an object")
    return doc


def parse_dcgm(text: str) -> dict[str, Any]:
    """``dcgmi diag -r N -j`` -> {version, runtime_error, results}; a result is {test, category, entity,
    status, warnings}.

    DCGM 4 writes {"DCGM Diagnostic": {"test_categories": [...]}, "metadata": {...}} with results per entity
    (entity_group, entity_id); DCGM 3 wrote "DCGM GPU Diagnostic" with gpu_ids and "version" inside. Status
    words vary in case ("Pass", "PASS", "Fail", "Warn", "Skip", "Not Run").
    """
    doc = _json_document(text)
    body = doc.get("DCGM Diagnostic") or doc.get("DCGM GPU Diagnostic")
    if not isinstance(body, dict):
        raise GpuParseError("dcgmi diag -j JSON has no 'DCGM Diagnostic' object")
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    results = []
    for category in body.get("test_categories") or []:
        if not isinstance(category, dict):
            continue
        for test in category.get("tests") or []:
            if not isinstance(test, dict):
                continue
            for result in test.get("results") or []:
                if not isinstance(result, dict):
                    continue
                if "entity_id" in result:
                    entity = f"{result.get('entity_group', 'GPU')} {result['entity_id']}"
                else:
                    entity = f"GPU {result.get('gpu_ids', '?')}"
                warnings = [
                    (w.get("warning") if isinstance(w, dict) else str(w)) or ""
                    for w in result.get("warnings") or []
                ]
                results.append(
                    {
                        "test": str(test.get("name")),
                        "category": str(category.get("category")),
                        "entity": entity,
                        "status": str(result.get("status", "")).strip().lower(),
                        "warnings": warnings,
                    }
                )
    return {
        "version": meta.get("version") or body.get("version"),
        "runtime_error": body.get("runtime_error") or doc.get("runtime_error"),
        "results": results,
    }


def check_dcgm(diag: dict[str, Any], level: int, out: Findings) -> None:
    out.mark("gpu.dcgm_diag", "pass")
    if diag["runtime_error"]:
        out.add(
            "gpu.dcgm_diag",
            "dcgmi diag",
            "runtime error",
            f"-r {level} passes",
            diag["runtime_error"],
            "fail",
        )
    for result in diag["results"]:
        status = result["status"]
        if status.startswith("fail"):
            severity = "fail"
        elif status.startswith("warn"):
            severity = "warn"
        else:
            continue
        detail = "; ".join(w for w in result["warnings"] if w) or "no detail"
        out.add(
            "gpu.dcgm_diag",
            f"{result['test']} on {result['entity']}",
            result["status"],
            "pass",
            f"dcgmi diag -r {level} {result['category']}/{result['test']}: {detail[:300]}",
            severity=severity,
        )
