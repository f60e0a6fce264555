# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A switched fabric's inventory: each node's RDMA ports in rail order, the address scheme, and their rules.

``mesh_network_topology: switched`` with one port per node (``mesh_network_fabric_port``) or several, in rail
order (``mesh_network_fabric_ports``: item i is rail i, the NIC cabled to leaf switch i in a rail-optimized
fabric). This module owns what the inventory says and every rule on it that needs no node's facts: the port
list of a node (``node_ports``), the scheme a fabric uses (``scheme_of``: shared, rails, leaf31, or auto),
the fabric's settings parsed (``parse_settings``, its messages naming the variable and value), and the rules
across nodes (``port_errors``: ports per node, a missing rail, a port listed twice, a list in another order
than the other nodes', one MAC on two nodes). The numbering of each scheme, the routes and the netplan
entries are fabric_plan.py's; the rules that need a node's facts (does the port exist, is it the management
port) are data_ports.py's and safety.py's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import addressing as ma
from ansible_collections.rdmaops.cluster.plugins.module_utils.mesh import cabling

try:
    from netaddr import AddrFormatError, IPNetwork
except ImportError:  # addressing.parse_pool reports the missing library first
    AddrFormatError = IPNetwork = None  # type: ignore[assignment,misc]

SCHEMES = ("auto", "shared", "rails", "leaf31")
# Tables the kernel owns (default, main, local); a rule must come before main's (priority 32766).
RESERVED_TABLES = (253, 254, 255)
MAIN_RULE_PRIORITY = 32766


def rail_name(index: int) -> str:
    return f"rail{index}"


# --------------------------------------------------------------------------- one node's ports


def node_ports(ports: Any, port: Any) -> list[Any]:
    """A node's data ports in rail order: mesh_network_fabric_ports, else [mesh_network_fabric_port]."""
    if isinstance(ports, (list, tuple)) and ports:
        return list(ports)
    return [port] if port else []


def list_errors(host: str, ports: Any, port: Any) -> list[str]:
    """How a node states its ports: a list of ports, or one port; both only when they agree on rail 0."""
    if ports in (None, "", []):
        return [] if port else [f"{host}: mesh_network_fabric_port is not set (switched topology)"]
    if not isinstance(ports, (list, tuple)):
        return [
            f"{host}: mesh_network_fabric_ports {ports!r} is not a list of ports (one per rail, in order)"
        ]
    errors = [
        f"{host}: mesh_network_fabric_ports {rail_name(i)} is empty ({spec!r})"
        for i, spec in enumerate(ports)
        if spec in (None, "", {})
    ]
    if port and cabling.port_label(port) != cabling.port_label(ports[0]):
        errors.append(
            f"{host}: mesh_network_fabric_port {cabling.port_label(port)!r} is not rail0 of "
            f"mesh_network_fabric_ports ({cabling.port_label(ports[0])!r}): set one of the two"
        )
    return errors


def _shown(specs: Sequence[Any]) -> str:
    return ", ".join(f"{rail_name(i)} {cabling.port_label(s)}" for i, s in enumerate(specs))


def _mac(spec: Any) -> str:
    return str(spec.get("macaddress") or "").lower() if isinstance(spec, Mapping) else ""


def _joined(hosts: Sequence[str]) -> str:
    return ", ".join(hosts[:-1]) + f" and {hosts[-1]}" if len(hosts) > 1 else "".join(hosts)


# --------------------------------------------------------------------------- rules across nodes


def port_errors(names: Sequence[str], lists: Mapping[str, Sequence[Any]]) -> list[str]:
    """Every node lists one port per rail, each once, in the rail order the other nodes use; no MAC twice.

    ``lists``: {host: ports in rail order} for the nodes whose ports are known (a node outside the play
    whose inventory does not set them is left out). The rail count is the one most nodes have (the larger
    on a tie): a node with fewer ports lacks the rails above its last, one with more has rails no other node
    has. A node listing the same port names as the others in another order has its NICs on the wrong
    leaves (NIC i of every node faces leaf i), the mistake of a list sorted by hand.
    """
    known = [h for h in names if lists.get(h)]
    errors: list[str] = []
    for host in known:
        seen: dict[str, int] = {}
        for i, spec in enumerate(lists[host]):
            for key in {cabling.port_name(spec), _mac(spec)} - {""}:
                if key in seen:
                    errors.append(
                        f"{host}: mesh_network_fabric_ports lists {key} twice ({rail_name(seen[key])} and "
                        f"{rail_name(i)}): one port per rail"
                    )
                seen.setdefault(key, i)
    counts = Counter(len(lists[h]) for h in known)
    if len(counts) > 1:
        rails = max(counts, key=lambda c: (counts[c], c))
        usual = [h for h in known if len(lists[h]) == rails]
        others = f"{_joined(usual)} list{'s' if len(usual) == 1 else ''} {rails}"
        for host in known:
            specs = lists[host]
            if len(specs) < rails:
                missing = ", ".join(rail_name(i) for i in range(len(specs), rails))
                errors.append(
                    f"{host}: no port for {missing}: mesh_network_fabric_ports lists {len(specs)} "
                    f"({_shown(specs)}), {others} (every node has one port per rail, in rail order)"
                )
            elif len(specs) > rails:
                extra = ", ".join(
                    f"{rail_name(i)} {cabling.port_label(specs[i])}" for i in range(rails, len(specs))
                )
                errors.append(
                    f"{host}: mesh_network_fabric_ports lists {len(specs)} ports, {others}: {extra} "
                    "is on a rail no other node has"
                )
    errors += _order_errors(known, lists)
    owners: dict[str, list[tuple[str, int]]] = {}
    for host in known:
        for i, spec in enumerate(lists[host]):
            if _mac(spec):
                owners.setdefault(_mac(spec), []).append((host, i))
    for mac, where in owners.items():
        hosts = list(dict.fromkeys(h for h, _i in where))
        if len(hosts) > 1:
            rails_of = ", ".join(f"{h} {rail_name(i)}" for h, i in where)
            errors.append(
                f"{_joined(hosts)} list the same MAC {mac} ({rails_of}): a MAC is one port of one node "
                "(a host_vars file copied without changing its MACs?)"
            )
    return errors


def _order_errors(known: Sequence[str], lists: Mapping[str, Sequence[Any]]) -> list[str]:
    """Nodes that list the same port names as the usual order, in another order (only names are compared:
    servers of one model name their NICs alike; a node whose names differ is not compared)."""
    orders = {h: tuple(cabling.port_name(s) for s in lists[h]) for h in known}
    orders = {h: o for h, o in orders.items() if all(o) and len(set(o)) == len(o)}
    if len(orders) < 2:
        return []
    tally = Counter(orders.values())
    usual = max(tally, key=lambda o: (tally[o], -min(known.index(h) for h in orders if orders[h] == o)))
    holders = [h for h in known if orders.get(h) == usual]
    errors = []
    for host, order in orders.items():
        if order != usual and sorted(order) == sorted(usual):
            errors.append(
                f"{host}: mesh_network_fabric_ports lists the ports of {_joined(holders)} in another order "
                f"({_shown(order)}; {_joined(holders)}: {_shown(usual)}): list them in rail order, NIC i "
                "faces leaf i on every node"
            )
    return errors


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class Settings:
    """The fabric's settings as the inventory gives them (role variables mesh_network_<name>)."""

    fabric_subnet: Any
    fabric_scheme: Any = "auto"
    fabric_table_base: Any = 100
    rail_subnets: Any = field(default_factory=list)
    rail_pool: Any = "192.168.192.0/20"
    rail_prefix: Any = 24
    leaf_pool: Any = "10.200.0.0/16"
    leaf_routes: Any = field(default_factory=list)


@dataclass(frozen=True)
class Fabric:
    """A fabric's parsed settings, for numbering: the scheme in effect, its subnets, tables and routes."""

    scheme: str
    rails: int
    subnets: list[Any]  # shared: the one subnet; rails: one per rail; leaf31: the leaf pool
    table_base: int | None  # None: no per-NIC tables (rails, or shared with one NIC)
    leaf_routes: list[str]


def scheme_of(scheme: Any, rails: int) -> str:
    """The scheme in effect: auto is shared for one port per node (today's fabric), rails for several."""
    if scheme == "auto":
        return "shared" if rails <= 1 else "rails"
    return str(scheme)


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not (isinstance(value, int) or str(value).strip().isdigit()):
        raise ma.MeshAddressingError(f"{what} {value!r} is not a whole number")
    return int(value)


def _table_base(value: Any, rails: int) -> int:
    base = _int(value, "mesh_network_fabric_table_base")
    last = base + rails - 1
    if base < 1 or last >= MAIN_RULE_PRIORITY or any(base <= t <= last for t in RESERVED_TABLES):
        raise ma.MeshAddressingError(
            f"mesh_network_fabric_table_base {value!r} gives tables {base}..{last} for {rails} rail(s): "
            f"tables are 1..{MAIN_RULE_PRIORITY - 1} (a rule's priority is its table, before main's rule "
            f"at {MAIN_RULE_PRIORITY}) and not {', '.join(map(str, RESERVED_TABLES))} (default, main, local)"
        )
    return base


def parse_settings(
    settings: Settings, hosts: int, rails: int, mgmt_cidr: Any, node_pool: Any
) -> tuple[Fabric | None, list[str]]:
    """(the fabric, []) or (None, every message): the scheme, its subnets (overlapping none of each other,
    the management network or the node pool; large enough for ``hosts`` nodes of ``rails`` NICs each),
    the routing tables and the leaf routes. One port per node under ``shared`` keeps today's rules exactly."""
    scheme = settings.fabric_scheme
    if scheme not in SCHEMES:
        return None, [f"mesh_network_fabric_scheme {scheme!r} is none of {', '.join(SCHEMES)}"]
    scheme = scheme_of(scheme, rails)
    if scheme == "shared" and rails <= 1:
        return _one_port(settings.fabric_subnet, hosts, mgmt_cidr)
    try:
        if scheme == "shared":
            nets = {
                "mesh_network_fabric_subnet": ma.parse_pool(
                    settings.fabric_subnet, "mesh_network_fabric_subnet"
                )
            }
        elif scheme == "rails":
            nets = _rail_subnets(settings, rails)
        else:
            nets = {"mesh_network_leaf_pool": ma.parse_pool(settings.leaf_pool, "mesh_network_leaf_pool")}
        base = None if scheme == "rails" else _table_base(settings.fabric_table_base, rails)
        routes = (
            _leaf_routes(settings.leaf_routes, nets["mesh_network_leaf_pool"]) if scheme == "leaf31" else []
        )
    except ma.MeshAddressingError as exc:
        return None, [str(exc)]
    errors = _overlap_errors(nets, mgmt_cidr, node_pool)
    labelled = {f"mesh_network_leaf_routes[{i}]": route for i, route in enumerate(routes)}
    errors += _overlap_errors(labelled, mgmt_cidr, None, each_other=False)
    errors += _size_errors(scheme, nets, hosts, rails)
    if errors:
        return None, errors
    return Fabric(scheme, rails, list(nets.values()), base, [str(r.cidr) for r in routes]), []


def _one_port(subnet: Any, hosts: int, mgmt_cidr: Any) -> tuple[Fabric | None, list[str]]:
    """Today's switched fabric (one port per node, one subnet): its rules and its messages."""
    errors = ma.pool_errors({"mesh_network_fabric_subnet": subnet}, mgmt_cidr)
    if errors:
        return None, errors
    try:
        net = ma.parse_pool(subnet, "subnet")
        if hosts:
            ma.nth_host(net, hosts - 1, "subnet")
    except ma.MeshAddressingError as exc:
        return None, [str(exc)]
    return Fabric("shared", 1, [net], None, []), []


def _rail_subnets(settings: Settings, rails: int) -> dict[str, Any]:
    """One subnet per rail: mesh_network_rail_subnets, or carved from mesh_network_rail_pool."""
    given = settings.rail_subnets
    if given not in (None, "", []):
        if not isinstance(given, (list, tuple)):
            raise ma.MeshAddressingError(
                f"mesh_network_rail_subnets {given!r} is not a list of CIDRs (one per rail)"
            )
        if len(given) != rails:
            raise ma.MeshAddressingError(
                f"mesh_network_rail_subnets lists {len(given)} subnet(s) for {rails} rails: one per rail, "
                "in rail order"
            )
        labels = [f"mesh_network_rail_subnets {rail_name(i)}" for i in range(rails)]
        return {label: ma.parse_pool(v, label) for label, v in zip(labels, given, strict=True)}
    pool = ma.parse_pool(settings.rail_pool, "mesh_network_rail_pool")
    prefix = _int(settings.rail_prefix, "mesh_network_rail_prefix")
    if not pool.prefixlen <= prefix <= 30:
        raise ma.MeshAddressingError(
            f"mesh_network_rail_prefix {settings.rail_prefix!r} must be /{pool.prefixlen} (the pool's) to /30"
        )
    capacity = pool.size >> (32 - prefix)
    if rails > capacity:
        raise ma.MeshAddressingError(
            f"mesh_network_rail_pool {pool.cidr} is too small: it holds {capacity} /{prefix} subnets, "
            f"{rails} rails need one each"
        )
    return {f"mesh_network_rail_pool {rail_name(i)}": ma.nth_subnet(pool, prefix, i) for i in range(rails)}


def _leaf_routes(value: Any, pool: Any) -> list[Any]:
    """Where each NIC goes over its leaf: mesh_network_leaf_routes (empty: the leaf pool, all nodes' /31s)."""
    if value in (None, "", []):
        return [pool]
    if not isinstance(value, (list, tuple)):
        raise ma.MeshAddressingError(f"mesh_network_leaf_routes {value!r} is not a list of CIDRs")
    return [ma.parse_pool(v, "mesh_network_leaf_routes item") for v in value]


def _overlap_errors(
    nets: Mapping[str, Any], mgmt_cidr: Any, node_pool: Any, each_other: bool = True
) -> list[str]:
    """Subnets that share addresses with each other, the management network or the node pool."""
    errors = []
    names = list(nets)
    for x, a in enumerate(names):
        for b in names[x + 1 :] if each_other else []:
            if ma.overlap(nets[a], nets[b]):
                errors.append(f"{a} {nets[a].cidr} overlaps {b} {nets[b].cidr}")
    for label, value in (("the management network", mgmt_cidr), ("mesh_network_node_pool", node_pool)):
        try:
            other = IPNetwork(str(value)).cidr if value else None
        except (AddrFormatError, ValueError, TypeError):
            other = None  # the management network's and the node pool's own rules name a bad value
        if other is not None:
            errors += [
                f"{a} {nets[a].cidr} overlaps {label} {other}" for a in names if ma.overlap(nets[a], other)
            ]
    return errors


def _size_errors(scheme: str, nets: Mapping[str, Any], hosts: int, rails: int) -> list[str]:
    """Subnets without an address for each node (rails), each NIC (shared) or a /31 for each NIC (leaf31)."""
    errors = []
    for name, net in nets.items():
        if scheme == "leaf31":
            have, need, unit = net.size // 2, hosts * rails, "/31 subnets"
            why = f"{hosts} nodes x {rails} NICs need {need} (one /31 per NIC)"
        elif scheme == "shared":
            have, need, unit = ma.usable_hosts(net), hosts * rails, "host addresses"
            why = f"{hosts} nodes x {rails} NICs need {need} (one address per NIC)"
        else:
            have, need, unit = ma.usable_hosts(net), hosts, "host addresses"
            why = f"{hosts} nodes need {need} (one address per node on each rail)"
        if need > have:
            errors.append(f"{name} {net.cidr} is too small: it has {have} {unit}, {why}")
    return errors
