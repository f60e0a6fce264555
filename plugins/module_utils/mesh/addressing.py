# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Address pools and the addresses in them, for direct-connect meshes and switched fabrics.

Pure, typed IP math (netaddr only), also behind the filters in plugins/filter/mesh.py: parsing pools,
prefixes and host lists; numbering cable subnets, node addresses and a switched fabric's addresses; the
rules on the pools (pool_errors, plan_errors). Every number handed out here depends only on a host's
position in the host list, so appending a host never renumbers existing ones; the role anchors addresses
already in use on top of this (safety.anchored_layout), so a reorder or a removal does not renumber either.
MeshAddressingError (bad input, the message naming the value) is what every mesh rule raises (data_ports,
host_plan and safety too).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import cabling

try:
    from netaddr import AddrFormatError, IPAddress, IPNetwork

    HAS_NETADDR = True
except ImportError:  # reported by parse_pool, the one entry to netaddr
    HAS_NETADDR = False


class MeshAddressingError(ValueError):
    """Raised for bad input; the message always names the offending value."""


# --------------------------------------------------------------------------- basics


def parse_pool(value: Any, what: str = "pool") -> IPNetwork:
    """Parse an IPv4 CIDR string; reject host bits so a typo is not silently 'fixed'."""
    if not HAS_NETADDR:
        raise MeshAddressingError(
            "the Python library netaddr is required on the controller (pip install netaddr)"
        )
    if not isinstance(value, str) or "/" not in value:
        raise MeshAddressingError(f"{what} {value!r} is not a CIDR string such as '192.168.100.0/22'")
    try:
        net = IPNetwork(value)
    except (AddrFormatError, ValueError, TypeError) as exc:
        raise MeshAddressingError(f"{what} {value!r} is not a valid CIDR: {exc}") from exc
    if net.version != 4:
        raise MeshAddressingError(f"{what} {value!r} is not IPv4 (only IPv4 fabrics are supported)")
    if net.ip != net.network:
        raise MeshAddressingError(f"{what} {value!r} has host bits set; did you mean '{net.cidr}'?")
    return net


def parse_prefix(value: Any, pool: IPNetwork, what: str = "prefix") -> int:
    """A link prefix must fit in the pool and leave two usable addresses (/31 is allowed, RFC 3021)."""
    if isinstance(value, bool):
        raise MeshAddressingError(f"{what} {value!r} is not an integer")
    try:
        prefix = int(value)
    except (TypeError, ValueError) as exc:
        raise MeshAddressingError(f"{what} {value!r} is not an integer") from exc
    if str(value).strip() != str(prefix):
        raise MeshAddressingError(f"{what} {value!r} is not an integer")
    if prefix > 31:
        raise MeshAddressingError(f"{what} {value!r} is too long: a link needs two addresses (at most /31)")
    if prefix < pool.prefixlen:
        raise MeshAddressingError(
            f"{what} {value!r} is shorter than the pool {pool.cidr} (/{pool.prefixlen})"
        )
    return prefix


def check_hosts(hosts: Any) -> list[str]:
    """Hosts must be a list of unique, non-empty strings; order is the numbering."""
    if isinstance(hosts, (str, bytes)) or not isinstance(hosts, Iterable):
        raise MeshAddressingError(f"hosts {hosts!r} is not a list of host names")
    out: list[str] = []
    seen: set[str] = set()
    for host in hosts:
        if not isinstance(host, str) or not host:
            raise MeshAddressingError(f"host name {host!r} is not a non-empty string")
        if host in seen:
            raise MeshAddressingError(f"duplicate host {host!r} in the host list")
        seen.add(host)
        out.append(host)
    return out


def pair_index(i: int, j: int) -> int:
    """Index of the unordered pair {i, j} in 'order of first possibility'.

    Pairs among hosts 0..k-1 take indexes 0..k(k-1)/2-1; host k's pairs come next
    (k, 0), (k, 1), ... (k, k-1). So appending host k only adds indexes at the end.
    """
    if i == j or i < 0 or j < 0:
        raise MeshAddressingError(f"pair ({i}, {j}) is not a pair of two different hosts")
    lo, hi = (i, j) if i < j else (j, i)
    return hi * (hi - 1) // 2 + lo


def nth_subnet(pool: IPNetwork, prefix: int, index: int) -> IPNetwork:
    """The ``index``-th subnet of length ``prefix`` in ``pool`` (from 0), or an error naming the pool."""
    step = 1 << (32 - prefix)
    capacity = pool.size // step
    if index >= capacity:
        raise MeshAddressingError(
            f"pool {pool.cidr} is too small: it holds {capacity} /{prefix} subnets, "
            f"subnet #{index + 1} is needed"
        )
    return IPNetwork(f"{IPAddress(pool.first + index * step)}/{prefix}")


def _link_ends(subnet: IPNetwork) -> tuple[IPAddress, IPAddress]:
    # /31 has no network/broadcast address (RFC 3021); otherwise skip the network address.
    if subnet.prefixlen == 31:
        return IPAddress(subnet.first), IPAddress(subnet.first + 1)
    return IPAddress(subnet.first + 1), IPAddress(subnet.first + 2)


# --------------------------------------------------------------------------- plans


def mesh_links(
    hosts: Any, pool: Any, prefix: Any, ports: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """One entry per cable: {a, b, subnet, a_ip, b_ip} (with ``ports``: also a_port, b_port, k).

    Without ``ports`` every node pair has one cable (a full mesh), as before. With ``ports`` ({host:
    mesh_network_ports}) the cables are the ones both ends list (module_utils/mesh/cabling.py). ``a`` is
    the host that comes first in ``hosts``; entries are ordered by pair index, then cable.
    """
    names = check_hosts(hosts)
    net = parse_pool(pool)
    plen = parse_prefix(prefix, net)
    if ports is None:
        cable_list = cabling.full_mesh_cables(names)
    else:
        cable_list, errors = cabling.cables(names, ports)
        if errors:
            raise MeshAddressingError("; ".join(errors))
    links = cable_links(names, cable_list, net, plen)
    if ports is None:
        for link in links:
            del link["a_port"], link["b_port"], link["k"]
    return links


def cable_links(
    names: Sequence[str], cable_list: Sequence[Mapping[str, Any]], net: IPNetwork, plen: int
) -> list[dict[str, Any]]:
    """The positional subnet of every cable, from the pool's bottom and top.

    A pair's first cable takes subnet number pair_index(i, j), as in a full mesh, so today's meshes keep
    their numbers and appending a host only adds subnets. A pair's further cables (rails) take subnets from
    the top of the pool down, in the order of (pair index, cable), so they never move a first cable's subnet.
    """
    capacity = net.size >> (32 - plen)
    index = {h: k for k, h in enumerate(names)}
    ordered = sorted(
        cable_list, key=lambda c: (pair_index(index[c["a"]], index[c["b"]]), int(c.get("k") or 0))
    )
    extra = [c for c in ordered if int(c.get("k") or 0) > 0]
    firsts = [pair_index(index[c["a"]], index[c["b"]]) for c in ordered if not int(c.get("k") or 0)]
    needed = (max(firsts) + 1 if firsts else 0) + len(extra)
    if needed > capacity:
        pairs = len(names) * (len(names) - 1) // 2
        if not extra and len(firsts) == pairs:
            raise MeshAddressingError(
                f"pool {net.cidr} is too small: it holds {capacity} /{plen} subnets, "
                f"{len(names)} hosts need {needed} (one per pair)"
            )
        raise MeshAddressingError(
            f"pool {net.cidr} is too small: it holds {capacity} /{plen} subnets, the cables of "
            f"{len(names)} hosts need {needed} (a pair's first cable takes subnet number j(j-1)/2+i of its "
            f"positions i < j in the host list, further cables {len(extra)} from the top)"
        )
    links: list[dict[str, Any]] = []
    rank = 0
    for cable in ordered:
        k = int(cable.get("k") or 0)
        if k == 0:
            slot = pair_index(index[cable["a"]], index[cable["b"]])
        else:
            slot = capacity - 1 - rank
            rank += 1
        subnet = nth_subnet(net, plen, slot)
        a_ip, b_ip = _link_ends(subnet)
        links.append(
            {
                "a": cable["a"],
                "b": cable["b"],
                "subnet": str(subnet),
                "a_ip": str(a_ip),
                "b_ip": str(b_ip),
                "a_port": cable.get("a_port", ""),
                "b_port": cable.get("b_port", ""),
                "k": k,
            }
        )
    return links


def usable_hosts(net: IPNetwork) -> int:
    """How many host addresses ``net`` has: all of a /31 or /32, else all but network and broadcast."""
    return net.size - 2 if net.prefixlen < 31 else net.size


def nth_host(net: IPNetwork, index: int, what: str) -> IPAddress:
    """Host ``index`` (from 0) of ``net``, or an error naming ``what`` and its size."""
    # Host k gets the (k+1)-th address: the network address is skipped, and so is
    # the broadcast address, so the plan reads naturally (.1, .2, ...).
    usable = usable_hosts(net)
    first = net.first + 1 if net.prefixlen < 31 else net.first
    if index >= usable:
        raise MeshAddressingError(
            f"{what} {net.cidr} is too small: it has {usable} host addresses, address #{index + 1} is needed"
        )
    return IPAddress(first + index)


def switched_addresses(hosts: Any, subnet: Any) -> dict[str, dict[str, Any]]:
    """One address per host in a single shared subnet: {host: {address, prefix, cidr}}."""
    names = check_hosts(hosts)
    net = parse_pool(subnet, "subnet")
    if names:
        nth_host(net, len(names) - 1, "subnet")
    out: dict[str, dict[str, Any]] = {}
    for k, host in enumerate(names):
        addr = nth_host(net, k, "subnet")
        out[host] = {"address": str(addr), "prefix": net.prefixlen, "cidr": f"{addr}/{net.prefixlen}"}
    return out


def node_addresses(hosts: Any, pool: Any) -> dict[str, str]:
    """A stable /32 node address per host: {host: address}."""
    names = check_hosts(hosts)
    net = parse_pool(pool, "node pool")
    if names:
        nth_host(net, len(names) - 1, "node pool")
    return {host: str(nth_host(net, k, "node pool")) for k, host in enumerate(names)}


# --------------------------------------------------------------------------- rules


def pool_errors(pools: Mapping[str, Any], mgmt_cidr: Any) -> list[str]:
    """Messages for unparsable pools, pools that overlap each other, or the management network."""
    if not HAS_NETADDR:
        return ["the Python library netaddr is required on the controller (pip install netaddr)"]
    errors: list[str] = []
    parsed: dict[str, IPNetwork] = {}
    for name, value in pools.items():
        try:
            parsed[name] = parse_pool(value, name)
        except MeshAddressingError as exc:
            errors.append(str(exc))
    mgmt: IPNetwork | None = None
    try:
        mgmt = IPNetwork(mgmt_cidr).cidr if isinstance(mgmt_cidr, str) and "/" in mgmt_cidr else None
    except (AddrFormatError, ValueError, TypeError):
        mgmt = None
    if mgmt is None:
        errors.append(f"mesh_network_mgmt_cidr {mgmt_cidr!r} is not a CIDR such as '10.0.0.0/24'")
    names = list(parsed)
    for x, a in enumerate(names):
        for b in names[x + 1 :]:
            if parsed[a] in parsed[b] or parsed[b] in parsed[a] or overlap(parsed[a], parsed[b]):
                errors.append(f"{a} {parsed[a].cidr} overlaps {b} {parsed[b].cidr}")
        if mgmt is not None and overlap(parsed[a], mgmt):
            errors.append(f"{a} {parsed[a].cidr} overlaps the management network {mgmt}")
    return errors


def plan_errors(
    hosts: Any,
    topology: str,
    link_pool: Any,
    link_prefix: Any,
    node_pool: Any,
    fabric_subnet: Any,
    ports: Mapping[str, Any] | None = None,
) -> list[str]:
    """Whether the whole address plan can be made (hosts, prefix, pool sizes), as messages.

    ``ports`` ({host: mesh_network_ports}): the cables to number; without it, one per pair. The cabling's
    own consistency is cabling.cables()'s to report, so only the numbering is checked here.
    """
    try:
        if topology == "switched":
            switched_addresses(hosts, fabric_subnet)
        else:
            names = check_hosts(hosts)
            net = parse_pool(link_pool)
            plen = parse_prefix(link_prefix, net)
            cable_list = cabling.full_mesh_cables(names) if ports is None else cabling.cables(names, ports)[0]
            cable_links(names, cable_list, net, plen)
            node_addresses(names, node_pool)
    except MeshAddressingError as exc:
        return [str(exc)]
    return []


def overlap(a: IPNetwork, b: IPNetwork) -> bool:
    """Whether two networks share an address."""
    return a.first <= b.last and b.first <= a.last
