# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""verify.yml's RoCE QoS section: switch ports and host NICs side by side against roce_qos, one verdict.

Inputs are what the plays read: per switch the switch_qos module's check-mode result (its ``state`` and
``differences``), per host NCCL_IB_TC from the NCCL environment file and each fabric port's MTU and
dcb state (nic_qos in check mode). Pure Python.
"""

from __future__ import annotations

import json
from typing import Any


def _join(values: list[Any]) -> str:
    return ",".join(str(v) for v in values) if values else "-"


def qos_section(roce: dict[str, Any], switches: dict[str, Any], hosts: dict[str, Any]) -> dict[str, Any]:
    """{'rows': [...], 'problems': [...], 'consistent': bool}; a row per switch port and host port."""
    rows: list[dict[str, Any]] = []
    problems: list[str] = []
    for name, sw in sorted(switches.items()):
        if sw.get("error"):
            problems.append(f"{name}: not read ({sw['error']})")
            continue
        st = sw.get("state") or {}
        xe = sw.get("platform") == "ios-xe"
        for port, p in sorted((st.get("ports") or {}).items()):
            rows.append(
                {
                    "where": name,
                    "port": port,
                    "dscp": _join(st.get("dscp", [])),
                    "cos": "- (IOS-XE: PFC not managed)" if xe else _join(st.get("pause_cos", [])),
                    "pfc": "not managed (no YANG model)" if xe else (p.get("pfc") or "auto"),
                    "mtu": p.get("mtu") or "default",
                }
            )
        problems += [f"{name}: {d}" for d in sw.get("differences", [])]
    for host, h in sorted(hosts.items()):
        tc = h.get("nccl_ib_tc")
        dscp = int(tc) // 4 if isinstance(tc, (int, str)) and str(tc).isdigit() else None
        if dscp is None:
            problems.append(f"{host}: no NCCL_IB_TC in the NCCL environment file (nccl_env not run?)")
        elif dscp != roce["dscp"]:
            problems.append(f"{host}: NCCL_IB_TC {tc} marks DSCP {dscp}, roce_qos.dscp is {roce['dscp']}")
        for port in h.get("ports", []):
            dcb = port.get("dcb") or {}
            if not dcb.get("supported"):
                cos, pfc = "-", f"no DCB ({dcb.get('reason') or 'not read'})"
            else:
                mapped = (dcb.get("dscp_prio") or {}).get(str(roce["dscp"]), [])
                cos, pfc = _join(mapped), "on " + _join(dcb.get("pfc_enabled", []))
                if dcb.get("pfc_enabled") != [roce["cos"]]:
                    problems.append(
                        f"{host} {port['dev']}: PFC on {_join(dcb.get('pfc_enabled', []))}, "
                        f"roce_qos.cos {roce['cos']}"
                    )
                if mapped != [roce["cos"]]:
                    problems.append(
                        f"{host} {port['dev']}: DSCP {roce['dscp']} -> priority {cos}, want {roce['cos']}"
                    )
            mtu = port.get("mtu")
            if isinstance(mtu, int) and mtu > roce["mtu"]:
                problems.append(f"{host} {port['dev']}: MTU {mtu} is above the fabric's {roce['mtu']}")
            rows.append(
                {
                    "where": host,
                    "port": port["dev"],
                    "dscp": "-" if dscp is None else f"{dscp} (NCCL_IB_TC {tc})",
                    "cos": cos,
                    "pfc": pfc,
                    "mtu": mtu if mtu is not None else "-",
                }
            )
    return {"rows": rows, "problems": problems, "consistent": not problems, "roce_qos": dict(roce)}


def markdown(section: dict[str, Any]) -> list[str]:
    r = section["roce_qos"]
    lines = [
        "",
        "## RoCE QoS",
        "",
        f"roce_qos: DSCP {r['dscp']}, CoS {r['cos']}, qos-group {r['qos_group']}, MTU {r['mtu']}; "
        f"CNP DSCP {r['cnp_dscp']} (qos-group {r['cnp_qos_group']}, strict priority level "
        f"{1 if r['roce_queue'] == 'strict' else r['priority_level']}); RoCE queue {r['roce_queue']}"
        + (
            f" ({r['bandwidth_percent']}%)."
            if r["roce_queue"] == "weighted"
            else f" (level {r['priority_level']})."
        ),
        "",
        "| where | port | DSCP | CoS | PFC | MTU |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {x['where']} | {x['port']} | {x['dscp']} | {x['cos']} | {x['pfc']} | {x['mtu']} |"
        for x in section["rows"]
    ]
    if section["consistent"]:
        lines += ["", "Verdict: consistent."]
    else:
        lines += ["", "Verdict: inconsistent:"] + [f"- {p}" for p in section["problems"]]
    return lines


def host_input(raw: dict[str, Any], parse_env: Any) -> dict[str, Any]:
    """A host's raw reads (env file text, `ip -j link` JSON text, nic_qos ports) as qos_section wants them."""
    env = parse_env(raw.get("env") or "") if raw.get("env") else {}
    try:
        links = {link.get("ifname"): link for link in json.loads(raw.get("links") or "[]")}
    except ValueError:
        links = {}
    dcb = {p.get("dev"): p for p in raw.get("dcb") or []}
    ports = [
        {"dev": dev, "mtu": (links.get(dev) or {}).get("mtu"), "dcb": dcb.get(dev)}
        for dev in raw.get("ports") or []
    ]
    return {"nccl_ib_tc": env.get("NCCL_IB_TC"), "ports": ports}


def switch_input(result: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(switch name, its entry) from one loop result of the switch_qos module in check mode."""
    name = str(result.get("item"))
    # The verify role reads with failed_when: false, so a failed read shows as a result without a state.
    if result.get("failed") or "state" not in result:
        return name, {"error": result.get("msg", "no answer")}
    return name, {
        "platform": (result.get("invocation") or {}).get("module_args", {}).get("platform"),
        "state": result.get("state") or {},
        "differences": result.get("differences") or [],
    }
