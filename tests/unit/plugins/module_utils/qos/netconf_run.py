"""Driving netconf.apply against the scripted peer (netconf_peer.py): the factory configurations, the target,
a plan, and what the peer's log and running say afterwards."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import netconf as nq
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import netconf_change as nc
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import netconf_session as ns
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import roce as rq
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch_inputs as si
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos import switch_models as sm

from .netconf_peer import Server

XE_PORTS = ["HundredGigE1/0/1"]
NX_PORTS = ["Ethernet1/1"]
XE_FACTORY = (
    f'<data xmlns="{sm.NC}"><native xmlns="{sm.XE}"><interface><HundredGigE><name>1/0/1</name></HundredGigE>'
    "</interface></native></data>"
)
NX_FACTORY = (
    f'<data xmlns="{sm.NC}"><System xmlns="{sm.NX}"><intf-items><phys-items><PhysIf-list><id>eth1/1</id>'
    "</PhysIf-list></phys-items></intf-items></System></data>"
)
TARGET = ns.Target(name="sw1", host="192.0.2.1", username="admin", password="x", timeout=5)


def plan(platform: str = "ios-xe", **qos: Any) -> ns.Plan:
    ports = XE_PORTS if platform == "ios-xe" else NX_PORTS
    return ns.Plan(platform, rq.settings(qos), ports, si.Names(), si.Ecn())


def apply(server: Server, tmp_path: Path, p: ns.Plan | None = None, **kw: Any) -> nc.Outcome:
    args: dict[str, Any] = {"confirm_timeout": 60, "connector": server.connect} | kw
    return nq.apply(TARGET, p or plan(), kw.pop("check", False), str(tmp_path), **args)


def ops(server: Server, sid: int = 1) -> list[str]:
    """The RPCs one session sent, without the locks it held."""
    return [line.split(" [")[0].split(" ", 1)[1] for line in server.log if line.startswith(f"{sid} ")]


def committed(server: Server) -> bool:
    return "ROCE-OUT" in server.text()


def refusing_after_first(server: Server) -> Any:
    """A connector whose second and later sessions are refused (management lost after the commit)."""

    def connector(target: Any) -> Any:
        if server.sessions:
            raise OSError("connection refused")
        return server.connect(target)

    return connector
