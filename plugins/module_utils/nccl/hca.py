# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NCCL_IB_HCA as NCCL reads it: which RDMA devices and ports a value lets NCCL use.

NCCL's syntax (its environment-variable documentation, NCCL_IB_HCA): a comma-separated list of
``<hca>[:<port>[:<rail>[:<plane>]]]`` entries; a leading ``^`` makes it an exclusion list, a (following) ``=``
makes the names exact, otherwise each name is a prefix (``mlx5_1`` also selects ``mlx5_10``). An empty value
lets NCCL use every device. The train preflight (the slowest port NCCL may use), the GPU-to-NIC affinity
report (the NICs NCCL uses) and the NCCL path audit (the rail of each listed HCA) read it here.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Entry(NamedTuple):
    """One entry of the list: a device name (or prefix) and its port, empty when none is given."""

    device: str
    port: str


def entries(spec: Any) -> tuple[bool, bool, list[Entry]]:
    """(exclude, exact, entries) of an NCCL_IB_HCA value; the rail and plane fields are not kept."""
    text = str(spec or "").strip()
    exclude = text.startswith("^")
    text = text[1:] if exclude else text
    exact = text.startswith("=")
    text = text[1:] if exact else text
    out = []
    for item in text.split(","):
        fields = item.strip().split(":")
        if fields[0]:
            out.append(Entry(fields[0], fields[1] if len(fields) > 1 else ""))
    return exclude, exact, out


def selects(spec: Any, device: str, port: Any = None) -> bool:
    """Whether NCCL_IB_HCA=SPEC lets NCCL use DEVICE's PORT. PORT None: the device as a whole (a NIC that
    nvidia-smi names without a port), which an entry naming any of its ports selects."""
    exclude, exact, listed = entries(spec)
    if not listed:
        return True
    num = "" if port is None else str(port)

    def matches(entry: Entry) -> bool:
        named = device == entry.device if exact else device.startswith(entry.device)
        return named and (port is None or entry.port in ("", num))

    return any(matches(e) for e in listed) != exclude
