# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The python_env role's check and plan phases: their arguments in, ``{errors, plan}`` out.

``check`` (tasks/validate.yml): the settings, before anything is read from a node.
``plan`` (tasks/plan.yml): from what the node holds (its interpreter, the wheelhouse, the NVIDIA driver, the
distribution packages and the venv's distributions), the profile, the torch build and what to install;
nothing is installed yet, so a node that cannot take the venv is refused before anything changes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.rdmaops.cluster.plugins.module_utils.phase_module import required_raw
from ansible_collections.rdmaops.cluster.plugins.module_utils.python_env.torch_build import (
    TorchCudaError,
    pick_variant,
)
from ansible_collections.rdmaops.cluster.plugins.module_utils.site.digests import (
    StampError,
    missing_packages,
    tree_digest,
    unmet_requirements,
)

PYTHON_ENV_CHECK_SPEC: dict[str, Any] = {
    **required_raw(
        "path",
        "profile",
        "python_min",
        "torch_version",
        "deepspeed_version",
        "setuptools_version",
        "torch_cuda_variants",
    ),
    "wheelhouse": {"type": "raw", "default": ""},
    "packages": {"type": "raw", "default": []},
}

PYTHON_ENV_PLAN_SPEC: dict[str, Any] = {
    "host": {"type": "str", "required": True},
    "python": {"type": "str", "required": True},
    "python_min": {"type": "str", "required": True},
    "python_rc": {"type": "int", "required": True},
    "python_version": {"type": "str", "default": ""},
    "python_error": {"type": "str", "default": ""},
    "wheelhouse": {"type": "str", "default": ""},
    "wheelhouse_isdir": {"type": "bool", "default": False},
    "profile": {"type": "str", "choices": ["auto", "cpu", "cuda"], "default": "auto"},
    "driver": {"type": "str"},
    "torch_cuda_variants": {"type": "list", "elements": "str", "required": True},
    "torch_index_base": {"type": "str", "default": "https://download.pytorch.org/whl"},
    "torch_version": {"type": "str", "required": True},
    "deepspeed_version": {"type": "str", "required": True},
    "setuptools_version": {"type": "str", "required": True},
    "packages": {"type": "list", "elements": "str", "default": []},
    "os_packages": {"type": "list", "elements": "str", "default": []},
    "jit_os_packages": {"type": "list", "elements": "str", "default": []},
    "dpkg_lines": {"type": "list", "elements": "str", "default": []},
    "installed_rc": {"type": "int", "default": 1},
    "installed": {"type": "str", "default": ""},
    "trainer_tree": {"type": "list", "elements": "raw", "default": []},
}

_PATH = re.compile(r"/[^ ]*[^/ ]")
_MINOR = re.compile(r"[0-9]+\.[0-9]+")
_RELEASE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")
_VERSION = re.compile(r"[0-9]+(\.[0-9]+)*")
_PIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*==[0-9][A-Za-z0-9.+!-]*")
# the driver version file of the NVIDIA kernel module (present exactly while the driver is loaded)
DRIVER_FILE = "/sys/module/nvidia/version"


def _bad(name: str, value: Any, wanted: str) -> str:
    return f"python_env: {name}='{'' if value is None else value}' is not {wanted}"


def check(p: Mapping[str, Any]) -> dict[str, Any]:
    """Each setting's form, and every package pinned exactly."""
    errors = []
    rules = [
        ("path", _PATH, "an absolute path without a trailing slash"),
        ("python_min", _MINOR, "a version like 3.10"),
        ("torch_version", _RELEASE, "a version like 2.13.0"),
        ("deepspeed_version", _RELEASE, "a version like 0.19.8"),
        ("setuptools_version", _VERSION, "a version like 84.2.1"),
    ]
    for key, form, wanted in rules:
        if not form.fullmatch(str(p[key])):
            errors.append(_bad(f"python_env_{key}", p[key], wanted))
    if p["profile"] not in ("auto", "cpu", "cuda"):
        errors.append(_bad("python_env_profile", p["profile"], "auto, cpu or cuda"))
    variants = p["torch_cuda_variants"]
    if not isinstance(variants, list) or not variants:
        wanted = "a non-empty list like [cu126, cu128]"
        errors.append(_bad("python_env_torch_cuda_variants", variants, wanted))
    wheelhouse = p["wheelhouse"] or ""
    if not isinstance(wheelhouse, str) or (wheelhouse and not wheelhouse.startswith("/")):
        errors.append(_bad("python_env_wheelhouse", wheelhouse, "an absolute path or empty"))
    packages = p["packages"]
    if not isinstance(packages, list):
        errors.append(_bad("python_env_packages", packages, "a list of name==version pins"))
        packages = []
    errors += [
        f"python_env: '{pin}' is not an exact pin (name==version); an unpinned package drifts"
        for pin in packages
        if not _PIN.fullmatch(str(pin))
    ]
    return {"errors": errors, "plan": {}}


def _numbers(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"[0-9]+", version))


def plan(p: Mapping[str, Any]) -> dict[str, Any]:
    """The node's interpreter, wheelhouse and driver against the settings; the profile, the torch build, the
    pins and packages to install, and the digest of the trainer source."""
    host, errors = p["host"], []
    if p["python_rc"] != 0:
        errors.append(f"python_env_python {p['python']} on {host}: cannot be run ({p['python_error']})")
    elif _numbers(p["python_version"]) < _numbers(p["python_min"]):
        errors.append(
            f"python_env_python {p['python']} on {host}: Python {p['python_version']} is older than "
            f"python_env_python_min {p['python_min']}"
        )
    if p["wheelhouse"] and not p["wheelhouse_isdir"]:
        errors.append(f"python_env_wheelhouse {p['wheelhouse']} is not a directory on {host}")
    driver = p.get("driver")
    profile = p["profile"] if p["profile"] != "auto" else ("cuda" if driver is not None else "cpu")
    build: dict[str, str] = {}
    if profile == "cuda" and driver is None:
        errors.append(
            f"python_env_profile is cuda but {host} has no NVIDIA driver loaded ({DRIVER_FILE} is missing); "
            "install the driver first or use python_env_profile=cpu"
        )
    elif profile == "cuda":
        try:
            build = pick_variant(str(driver), p["torch_cuda_variants"], p["torch_index_base"])
        except TorchCudaError as exc:
            errors.append(f"python_env_torch_cuda_variants on {host}: {exc}")
    torch_pin = f"torch=={p['torch_version']}+{build.get('variant', 'cpu') if profile == 'cuda' else 'cpu'}"
    index_url = build.get("index_url") if profile == "cuda" else f"{p['torch_index_base']}/cpu"
    installed: dict[str, str] = {}
    if p["installed_rc"] == 0 and p["installed"].strip():
        try:
            installed = {str(k): str(v) for k, v in json.loads(p["installed"]).items()}
        except (ValueError, AttributeError) as exc:
            errors.append(f"the venv's distributions on {host} are not a JSON mapping: {exc}")
    pins = {
        "setuptools": [f"setuptools=={p['setuptools_version']}"],
        "pinned": [torch_pin, *p["packages"]],
        "deepspeed": [f"deepspeed=={p['deepspeed_version']}"],
    }
    wanted_os = list(p["os_packages"]) + (list(p["jit_os_packages"]) if profile == "cuda" else [])
    out: dict[str, Any] = {
        "profile": profile,
        "torch_build": build,
        "torch_pin": torch_pin,
        "torch_index_url": index_url,
        "pins": pins,
        "installed": installed,
        "wanted_os_packages": wanted_os,
    }
    try:
        out["unmet"] = {group: unmet_requirements(reqs, installed) for group, reqs in pins.items()}
        out["missing_os_packages"] = missing_packages(wanted_os, p["dpkg_lines"])
        out["trainer_digest"] = tree_digest(p["trainer_tree"]) if p["trainer_tree"] else ""
    except StampError as exc:
        errors.append(f"python_env on {host}: {exc}")
    return {"errors": errors, "plan": out}
