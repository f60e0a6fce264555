# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse the text output of perftest (ib_write_bw, ib_send_bw, ib_read_bw, ib_*_lat).

The output has a title ("RDMA_Write BW Test"), a header block of "Key : value" fields (two per line
in older and tab-separated layouts), local/remote address lines (each optionally followed by a
"GID:" line with the 16 GID bytes in decimal), and a result table whose header names the columns:
  #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]      (bandwidth tests)
  #bytes #iterations t_min[usec] ... 99% percentile[usec] 99.9% percentile[usec]   (latency tests)
Bandwidth is in Gb/s (1e9 bit) with --report_gbits, else in MB/s where perftest's MB is 2**20 bytes.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

MIB_PER_SEC_IN_GBPS = 1048576 * 8 / 1e9

_TITLE_RE = re.compile(r"^\s*(\S.*?(?:BW|Latency) Test)\s*$")
_DASHES_RE = re.compile(r"^\s*-{20,}\s*$")
_FIELD_RE = re.compile(r"([A-Za-z][^:\t]*?)\s*:\s*(.*?)(?=(?:\t|\s{2,})[A-Za-z][^:\t]*?\s*:|$)")
_ADDRESS_RE = re.compile(r"^\s*(local|remote) address:\s*(.*)$")
_PAIR_RE = re.compile(r"\b([A-Za-z]+)\s+(0x[0-9a-fA-F]+|[0-9a-fA-F]+)\b")
_GID_RE = re.compile(r"^\s*(M?GID):\s*([0-9]{1,3}(?::[0-9]{1,3}){15})\s*$")
_COLUMN_RE = re.compile(
    r"#bytes|#iterations|#threads|BW peak\[[^\]]+\]|BW average\[[^\]]+\]|MsgRate\[Mpps\]"
    r"|t_(?:min|max|typical|avg|stdev)\[usec\]|99\.9% percentile\[usec\]|99% percentile\[usec\]"
    r"|tps average"
)
_ROW_RE = re.compile(r"^\s*\d+\s+\d+(?:\s+-?\d+(?:\.\d+)?)+\s*$")
_ERROR_RE = re.compile(r"(Couldn't|Unable|Failed|failed|No IB devices|Error|error:|not supported)")

_COLUMN_KEYS = {
    "#bytes": "bytes",
    "#iterations": "iterations",
    "#threads": "threads",
    "MsgRate[Mpps]": "msg_rate_mpps",
    "t_min[usec]": "t_min_us",
    "t_max[usec]": "t_max_us",
    "t_typical[usec]": "t_typical_us",
    "t_avg[usec]": "t_avg_us",
    "t_stdev[usec]": "t_stdev_us",
    "99% percentile[usec]": "p99_us",
    "99.9% percentile[usec]": "p999_us",
    "tps average": "tps_average",
}

# Header fields worth a typed top-level key; every field is also kept under "header".
_INT_FIELDS = {
    "number_of_qps",
    "tx_depth",
    "rx_depth",
    "cq_moderation",
    "gid_index",
    "post_list",
    "outstand_reads",
    "mtu",
    "max_inline_data",
}


class PerftestParseError(ValueError):
    """The text is not perftest output or is internally inconsistent."""


def _field_key(name: str) -> str:
    key = re.sub(r"[^a-z0-9]+", "_", name.strip().lower()).strip("_")
    return key


def _field_value(key: str, value: str) -> Any:
    value = value.strip()
    if key in _INT_FIELDS:
        match = re.match(r"^(\d+)", value)
        if match:
            return int(match.group(1))
    return value


def _decimal_gid(text: str) -> dict[str, Any]:
    """perftest prints the 16 GID bytes as decimal numbers; turn them into an address."""
    raw = bytes(int(part) for part in text.split(":"))
    address = ipaddress.IPv6Address(raw)
    mapped = address.ipv4_mapped
    if mapped is None:
        return {"gid": str(address), "ipv4": None}
    # Python 3.13 prints a mapped address as ::ffff:a.b.c.d, 3.12 and earlier in hex (as sysfs does): hex on
    # every Python, so that the node's Python does not change the report.
    high, low = int.from_bytes(raw[12:14], "big"), int.from_bytes(raw[14:16], "big")
    return {"gid": f"::ffff:{high:x}:{low:x}", "ipv4": str(mapped)}


def _address(text: str) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    for key, value in _PAIR_RE.findall(text):
        # LID is printed with %#04x, which gives "0000" (no 0x) for zero: always hexadecimal.
        entry[key.lower()] = int(value, 16)
    return entry


def _to_gbps(value: float | None, units: str) -> float | None:
    if value is None:
        return None
    if units == "Gb/sec":
        return value
    if units == "MB/sec":
        return round(value * MIB_PER_SEC_IN_GBPS, 6)
    raise PerftestParseError(f"unknown bandwidth unit {units!r}")


def _columns(line: str) -> list[str]:
    names = _COLUMN_RE.findall(line)
    keys = []
    for name in names:
        if name.startswith("BW peak"):
            keys.append("bw_peak")
        elif name.startswith("BW average"):
            keys.append("bw_average")
        else:
            keys.append(_COLUMN_KEYS[name])
    return keys


def parse(text: str) -> dict[str, Any]:
    """Parse one perftest run. Raises PerftestParseError when the text has no perftest test title."""
    lines = text.splitlines()
    result: dict[str, Any] = {
        "test": None,
        "kind": None,
        "header": {},
        "local": [],
        "remote": [],
        "units": None,
        "columns": [],
        "results": [],
        "warnings": [],
        "errors": [],
    }
    in_header = False
    columns: list[str] = []
    in_table = False
    last_side: str | None = None
    for line in lines:
        if not line.strip():
            continue
        if result["test"] is None:
            title = _TITLE_RE.match(line)
            if title:
                result["test"] = title.group(1)
                result["kind"] = "lat" if "Latency" in title.group(1) else "bw"
                in_header = True
                continue
            if _ERROR_RE.search(line):
                result["errors"].append(line.strip())
            continue
        if _DASHES_RE.match(line):
            in_header = False
            in_table = False
            continue
        address = _ADDRESS_RE.match(line)
        if address:
            last_side = address.group(1)
            result[last_side].append(_address(address.group(2)))
            in_header = False
            continue
        gid = _GID_RE.match(line)
        if gid and last_side and result[last_side]:
            result[last_side][-1]["mgid" if gid.group(1) == "MGID" else "gid"] = _decimal_gid(gid.group(2))
            continue
        if line.lstrip().startswith("#bytes") or line.lstrip().startswith("#threads"):
            columns = _columns(line)
            units = re.search(r"BW average\[([^\]]+)\]", line)
            result["units"] = units.group(1) if units else None
            result["columns"] = columns
            in_table = True
            continue
        if in_table and _ROW_RE.match(line):
            values = line.split()
            if len(values) != len(columns):
                raise PerftestParseError(
                    f"result row {line.strip()!r} has {len(values)} values for {len(columns)} columns"
                )
            row: dict[str, Any] = {}
            for key, value in zip(columns, values, strict=True):
                row[key] = int(value) if key in ("bytes", "iterations", "threads") else float(value)
            if "bw_average" in row:
                row["bw_average_gbps"] = _to_gbps(row["bw_average"], result["units"])
                row["bw_peak_gbps"] = _to_gbps(row.get("bw_peak"), result["units"])
            result["results"].append(row)
            continue
        if in_header:
            for key, value in _FIELD_RE.findall(line.strip()):
                field = _field_key(key)
                result["header"][field] = _field_value(field, value)
            continue
        is_error = _ERROR_RE.search(line) and "CPU Frequency" not in line
        result["errors" if is_error else "warnings"].append(line.strip())
    if result["test"] is None:
        raise PerftestParseError(
            "no perftest test title (e.g. 'RDMA_Write BW Test') found in the output"
            + (": " + "; ".join(result["errors"]) if result["errors"] else "")
        )
    header = result["header"]
    result.update(
        {
            "device": header.get("device"),
            "link_type": header.get("link_type"),
            "gid_index": header.get("gid_index"),
            "mtu": header.get("mtu"),
            "transport": header.get("transport_type"),
            "connection_type": header.get("connection_type"),
            "qps": header.get("number_of_qps"),
            "tx_depth": header.get("tx_depth"),
            "complete": bool(result["results"]),
        }
    )
    result["summary"] = summarize(result)
    return result


def summarize(parsed: dict[str, Any]) -> dict[str, Any]:
    """The row a threshold is checked against: the largest message for bandwidth, the smallest for latency."""
    rows = parsed["results"]
    if not rows:
        return {}
    if parsed["kind"] == "bw":
        row = max(rows, key=lambda r: r["bytes"])
        return {
            "bytes": row["bytes"],
            "bw_average_gbps": row["bw_average_gbps"],
            "bw_peak_gbps": row["bw_peak_gbps"],
            "msg_rate_mpps": row.get("msg_rate_mpps"),
        }
    row = min(rows, key=lambda r: r["bytes"])
    return {key: row[key] for key in row if key != "iterations"}
