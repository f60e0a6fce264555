# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read RDMA port state, rate and GID tables from sysfs.

The formats follow drivers/infiniband/core/sysfs.c:
  state       "4: ACTIVE"                 (ib_port_state number and name)
  phys_state  "5: LinkUp"
  rate        "100 Gb/sec (4X EDR)"       ("%d%s Gb/sec (%dX%s)", ".5" for half rates)
  lid, sm_lid "0x5"                       ("0x%x")
  link_layer  "InfiniBand" | "Ethernet"
  gids/N      "fe80:0000:0000:0000:0e42:a1ff:fe5a:3b2c" (%pI6, all zeros when the slot is empty)
  gid_attrs/types/N  "IB/RoCE v1" | "RoCE v2" (the read fails for empty slots)
  gid_attrs/ndevs/N  netdev name (the read fails on InfiniBand and for empty slots)
"""

from __future__ import annotations

import ipaddress
import os
import re
from typing import Any

ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"
_ENUM_RE = re.compile(r"^\s*(\d+)\s*:\s*(.*?)\s*$")
_RATE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*Gb/sec\b")


class RdmaSysfsError(Exception):
    """Raised for a malformed sysfs value or an impossible request."""


def read_attr(path: str) -> str | None:
    """Return the stripped content of a sysfs attribute, None when it is absent or unreadable.

    Real sysfs answers EINVAL/ENODEV for attributes without a value (the type of an empty
    GID slot, the netdev of an InfiniBand GID), so an unreadable file means "no value".
    """
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return None


def parse_enum(text: str | None) -> tuple[int | None, str | None]:
    """Split "4: ACTIVE" into (4, "ACTIVE")."""
    if text is None:
        return None, None
    match = _ENUM_RE.match(text)
    if not match:
        raise RdmaSysfsError(f"unexpected port state value {text!r}, expected 'N: NAME'")
    return int(match.group(1)), match.group(2)


def parse_rate(text: str | None) -> float | None:
    """Return the Gb/s number of "100 Gb/sec (4X EDR)" or "2.5 Gb/sec (1X SDR)"."""
    if text is None:
        return None
    match = _RATE_RE.match(text)
    if not match:
        raise RdmaSysfsError(f"unexpected rate value {text!r}, expected 'N Gb/sec (...)'")
    value = float(match.group(1))
    return int(value) if value.is_integer() else value


def parse_hex(text: str | None) -> int | None:
    """Parse a "0x%x" sysfs number such as a LID."""
    if text is None or text == "":
        return None
    try:
        return int(text, 16)
    except ValueError as exc:
        raise RdmaSysfsError(f"unexpected hexadecimal value {text!r}") from exc


def gid_type(raw: str | None, link_layer: str | None) -> str | None:
    """Name the GID type: the kernel writes "IB/RoCE v1" for both IB and RoCE v1 entries."""
    if raw is None:
        return None
    if raw == "RoCE v2":
        return "RoCE v2"
    if raw == "IB/RoCE v1":
        return "IB" if link_layer == "InfiniBand" else "RoCE v1"
    raise RdmaSysfsError(f"unexpected GID type {raw!r}")


def gid_ipv4(gid: str) -> str | None:
    """The IPv4 address of an IPv4-mapped GID (::ffff:a.b.c.d), else None."""
    try:
        mapped = ipaddress.IPv6Address(gid).ipv4_mapped
    except ValueError as exc:
        raise RdmaSysfsError(f"unexpected GID {gid!r}") from exc
    return str(mapped) if mapped is not None else None


def port_guid(gid0: str | None) -> str | None:
    """The port GUID is the interface identifier (low 64 bits) of GID 0, as ibstat -p prints it."""
    if not gid0 or gid0 == ZERO_GID:
        return None
    value = int(ipaddress.IPv6Address(gid0)) & 0xFFFFFFFFFFFFFFFF
    return f"0x{value:016x}"


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _numeric_sorted(names: list[str]) -> list[str]:
    return sorted((n for n in names if n.isdigit()), key=int)


def read_gids(port_dir: str, link_layer: str | None) -> list[dict[str, Any]]:
    """Every non-empty GID slot of a port with its type, netdev and IPv4 address."""
    gids: list[dict[str, Any]] = []
    for name in _numeric_sorted(_listdir(os.path.join(port_dir, "gids"))):
        gid = read_attr(os.path.join(port_dir, "gids", name))
        if gid is None or gid == ZERO_GID:
            continue
        kind = gid_type(read_attr(os.path.join(port_dir, "gid_attrs", "types", name)), link_layer)
        if kind is None and link_layer != "InfiniBand":
            # A RoCE slot whose type cannot be read is being replaced; it is not usable.
            continue
        gids.append(
            {
                "index": int(name),
                "gid": gid,
                "type": kind or "IB",
                "ipv4": gid_ipv4(gid),
                "netdev": read_attr(os.path.join(port_dir, "gid_attrs", "ndevs", name)),
            }
        )
    return gids


def roce_v2_ipv4_gid_index(gids: list[dict[str, Any]]) -> int | None:
    """The lowest RoCE v2 GID index carrying an IPv4 address: what NCCL_IB_GID_INDEX and perftest -x need."""
    for entry in gids:
        if entry["type"] == "RoCE v2" and entry["ipv4"]:
            return int(entry["index"])
    return None


def _device_netdevs(dev_dir: str) -> list[str]:
    return sorted(_listdir(os.path.join(dev_dir, "device", "net")))


def port_netdev(dev_dir: str, port: int, gids: list[dict[str, Any]]) -> str | None:
    """The netdev behind a port: the GID table's netdev (RoCE), else the PCI device's netdev."""
    for entry in gids:
        if entry.get("netdev"):
            return str(entry["netdev"])
    candidates = _device_netdevs(dev_dir)
    if len(candidates) > 1:
        # Dual-port functions and IPoIB children share the PCI device; dev_port is 0-based.
        by_port = [
            name
            for name in candidates
            if read_attr(os.path.join(dev_dir, "device", "net", name, "dev_port")) == str(port - 1)
        ]
        candidates = sorted(by_port or candidates, key=lambda n: (len(n), n))
    return candidates[0] if candidates else None


def read_port(dev_dir: str, device: str, port: int) -> dict[str, Any]:
    port_dir = os.path.join(dev_dir, "ports", str(port))
    state_num, state = parse_enum(read_attr(os.path.join(port_dir, "state")))
    phys_num, phys_state = parse_enum(read_attr(os.path.join(port_dir, "phys_state")))
    link_layer = read_attr(os.path.join(port_dir, "link_layer"))
    rate = read_attr(os.path.join(port_dir, "rate"))
    gids = read_gids(port_dir, link_layer)
    infiniband = link_layer == "InfiniBand"
    return {
        "device": device,
        "port": port,
        "name": f"{device}/{port}",
        "state": state,
        "state_num": state_num,
        "phys_state": phys_state,
        "phys_state_num": phys_num,
        "active": state == "ACTIVE" and phys_state == "LinkUp",
        "link_layer": link_layer,
        "rate": rate,
        "rate_gbps": parse_rate(rate),
        "lid": parse_hex(read_attr(os.path.join(port_dir, "lid"))) if infiniband else None,
        "sm_lid": parse_hex(read_attr(os.path.join(port_dir, "sm_lid"))) if infiniband else None,
        "port_guid": port_guid(read_attr(os.path.join(port_dir, "gids", "0"))) if infiniband else None,
        "netdev": port_netdev(dev_dir, port, gids),
        "gids": gids,
        "roce_v2_ipv4_gid_index": None if infiniband else roce_v2_ipv4_gid_index(gids),
    }


def read_ports(sysfs_root: str = "/sys") -> list[dict[str, Any]]:
    """All ports of all RDMA devices under SYSFS_ROOT/class/infiniband, sorted by device and port."""
    base = os.path.join(sysfs_root, "class", "infiniband")
    ports: list[dict[str, Any]] = []
    for device in sorted(_listdir(base)):
        dev_dir = os.path.join(base, device)
        for name in _numeric_sorted(_listdir(os.path.join(dev_dir, "ports"))):
            ports.append(read_port(dev_dir, device, int(name)))
    return ports


def normalize_required(spec: Any) -> bool | list[str]:
    """Accept true/false, a list of "dev/port" or "dev" names, or a comma-separated string of them."""
    if isinstance(spec, bool):
        return spec
    if spec is None:
        return False
    if isinstance(spec, str):
        lowered = spec.strip().lower()
        if lowered in ("true", "yes", "all"):
            return True
        if lowered in ("false", "no", ""):
            return False
        spec = [item for item in (s.strip() for s in spec.split(",")) if item]
    if isinstance(spec, list) and all(isinstance(item, str) and item for item in spec):
        return list(spec)
    raise RdmaSysfsError(
        f"require_active must be true, false or a list of 'device' or 'device/port' names, got {spec!r}"
    )


def inactive_ports(ports: list[dict[str, Any]], required: bool | list[str]) -> list[str]:
    """One line for every required port that is not ACTIVE/LinkUp, or that does not exist."""
    if required is False:
        return []
    if required is True:
        if not ports:
            return ["no RDMA device found (nothing under class/infiniband)"]
        selected = ports
        problems: list[str] = []
    else:
        selected = []
        problems = []
        for name in required:
            match = [p for p in ports if name in (p["name"], p["device"])]
            if not match:
                present = ", ".join(p["name"] for p in ports) or "none"
                problems.append(f"{name}: no such RDMA port (present: {present})")
            selected.extend(m for m in match if m not in selected)
    for port in selected:
        if not port["active"]:
            problems.append(
                f"{port['name']}: state {port['state']}, phys_state {port['phys_state']}"
                f" (link layer {port['link_layer']}, netdev {port['netdev'] or 'none'})"
            )
    return problems
