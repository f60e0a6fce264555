# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A switch's NETCONF session (ncclient) and the reads the change makes on it: the target and the plan, what
the switch offers (capabilities, with-defaults modes, the yuma123 server), running read back as the lines of
``switch_lines``, and the backup copy of running on the controller.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.netconf_errors import NetconfQosError
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.switch_inputs import Ecn, Names
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.switch_lines import Line
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.switch_payload import get_filter
from ansible_collections.rdmaops.cluster.plugins.module_utils.qos.switch_readback import running

CAP_CANDIDATE = "urn:ietf:params:netconf:capability:candidate:1.0"
CAP_CONFIRMED = "urn:ietf:params:netconf:capability:confirmed-commit:1.1"
CAP_VALIDATE = "urn:ietf:params:netconf:capability:validate:1.1"
CAP_VALIDATE_10 = "urn:ietf:params:netconf:capability:validate:1.0"
CAP_WITH_DEFAULTS = "urn:ietf:params:netconf:capability:with-defaults:1.0"
# With-defaults modes in the order read-back prefers them (RFC 6243): explicit reports what a client set even
# when it equals the default; trim leaves defaults out (switch_readback applies them); report-all reports
# them all (switch_readback ignores leaves at their default).
WITH_DEFAULTS_PREFERENCE = ("explicit", "trim", "report-all")
# yuma123's netconfd (the lab's switch) answers <ok/> to a cancel-commit sent by the session that holds the
# running lock, but does not roll back, and the commit is then no longer pending (measured on netconfd 2.13,
# tests/switch_qos/run.py): for a server that names its yuma modules in its capabilities the running lock is
# released just before the cancel-commit, the candidate lock still held. Every other server is sent the
# cancel-commit while both locks are held, as RFC 6241 expects.
YUMA_CAPABILITY = "http://netconfcentral.org/ns/"


@dataclass
class Target:
    name: str
    host: str
    port: int = 830
    username: str = "admin"
    password: str | None = None
    ssh_key: str | None = None
    hostkey_verify: bool = True
    timeout: int = 30

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Target:
        """From switch_qos's options of the same names."""
        return cls(**{f.name: params[f.name] for f in fields(cls)})


@dataclass
class Plan:
    platform: str
    qos: dict[str, Any]
    interfaces: list[str]
    names: Names
    ecn: Ecn
    # auto: the first of WITH_DEFAULTS_PREFERENCE the switch offers; or one mode by name.
    with_defaults: str = "auto"


def connect(target: Target) -> Any:
    from ncclient import manager  # imported here so that the pure parts load without ncclient

    return manager.connect(
        host=target.host,
        port=target.port,
        username=target.username,
        password=target.password,
        key_filename=target.ssh_key,
        hostkey_verify=target.hostkey_verify,
        look_for_keys=False,
        allow_agent=False,
        timeout=target.timeout,
        device_params={"name": "default"},
    )


def is_yuma(m: Any) -> bool:
    return any(str(c).startswith(YUMA_CAPABILITY) for c in m.server_capabilities)


def offered_capabilities(m: Any) -> set[str]:
    return {c.split("?")[0] for c in m.server_capabilities}


def with_defaults_mode(capabilities: Any, wanted: str = "auto") -> str | None:
    """The with-defaults mode to ask for, from the capability's basic-mode and also-supported (RFC 6243).

    ``auto`` picks the first the switch offers in WITH_DEFAULTS_PREFERENCE (None when it offers none); a named
    mode the switch does not offer is a NetconfQosError.
    """
    modes: set[str] = set()
    for cap in capabilities:
        base, query = str(cap).partition("?")[::2]
        if base == CAP_WITH_DEFAULTS:
            params = dict(p.partition("=")[::2] for p in query.split("&") if p)
            modes = {params.get("basic-mode", "")} | set(params.get("also-supported", "").split(","))
    modes.discard("")
    if wanted == "auto":
        return next((mode for mode in WITH_DEFAULTS_PREFERENCE if mode in modes), None)
    if wanted not in modes:
        offered = ", ".join(sorted(modes)) or "none"
        raise NetconfQosError(f"the switch does not offer with-defaults {wanted} (it offers {offered})")
    return wanted


def read_running(m: Any, plan: Plan) -> tuple[list[Line], set[str]]:
    flt = ("subtree", get_filter(plan.platform, plan.interfaces, plan.names))
    mode = with_defaults_mode(m.server_capabilities, plan.with_defaults)
    kwargs = {"with_defaults": mode} if mode else {}
    reply = m.get_config(source="running", filter=flt, **kwargs)
    return running(plan.platform, reply.data_xml, plan.names)


def backup_running(m: Any, target: Target, backup_dir: str) -> str:
    data = m.get_config(source="running").data_xml
    os.makedirs(backup_dir, mode=0o700, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    path = os.path.join(backup_dir, f"{target.name}-running-{stamp}.xml")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(data if data.endswith("\n") else data + "\n")
    return path
