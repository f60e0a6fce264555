# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ask who answers ARP for an address (`arping`, Debian's iputils-arping) and read which MACs did.

On a host whose NICs share a layer-2 network, Linux answers ARP for any of its addresses on every NIC unless
``arp_ignore`` says otherwise ("ARP flux"): a peer then learns another NIC's MAC for a NIC's address. The
verify probe (path_probe) asks from the peer's NIC on the same rail and compares the MACs that answered with
the NIC's own.

- argv(): the command line: keep broadcasting (``-b``: after a first reply arping would otherwise ask only
  the MAC that answered first, and never see a second NIC answer), from an interface and source address,
  until ``count`` replies or ``deadline`` seconds.
- parse(): the MACs that answered (lower case, in the order first seen), the replies, and the summary.

The format, from iputils 20221126 (tests/unit/fixtures/arping):
  ARPING 192.168.200.4 from 192.168.200.6 data1
  Unicast reply from 192.168.200.4 [96:DC:DD:7E:3A:99]  0.571ms
  Sent 2 probes (2 broadcast(s))
  Received 3 response(s)
Its exit status compares replies with probes (1 when two NICs answered each probe): only the output counts.
"""

from __future__ import annotations

import re
from typing import Any

# Debian's package: the nodes get it from verify's packages (roles/verify, verify_packages_tcp / _rdma).
PACKAGE = "iputils-arping"

_REPLY = re.compile(r"^(?:Unicast|Broadcast) reply from (\S+) \[([0-9A-Fa-f:]{17})\]", re.MULTILINE)
_SENT = re.compile(r"^Sent (\d+) probes?", re.MULTILINE)
_RECEIVED = re.compile(r"^Received (\d+) response", re.MULTILINE)


def argv(address: str, *, ifname: str, source: str = "", count: int = 3, deadline_s: int = 3) -> list[str]:
    """``arping`` asking ``count`` times at most (one probe a second) until ``count`` replies or
    ``deadline_s`` seconds, from ``ifname`` (and ``source``, its own address)."""
    out = ["arping", "-b", "-c", str(count), "-w", str(deadline_s), "-I", ifname]
    if source:
        out += ["-s", source]
    return [*out, str(address)]


def parse(text: str, address: str = "") -> dict[str, Any]:
    """{macs, replies, sent, received}: ``macs`` the MACs that answered for ``address`` (every reply's when
    empty), lower case, each once in the order first seen; ``replies`` how many replies; ``sent``,
    ``received`` the summary's counters (None without a summary: arping failed before it asked)."""
    macs: list[str] = []
    replies = 0
    for found, mac in _REPLY.findall(text or ""):
        if address and found != address:
            continue
        replies += 1
        if mac.lower() not in macs:
            macs.append(mac.lower())
    sent = _SENT.search(text or "")
    received = _RECEIVED.search(text or "")
    return {
        "macs": macs,
        "replies": replies,
        "sent": int(sent[1]) if sent else None,
        "received": int(received[1]) if received else None,
    }
