# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The format of the files that carry a node's NCCL/gloo environment.

/etc/nccl.conf (read by NCCL at init) and the launchers' env file (systemd EnvironmentFile=,
or `set -a; . FILE`) share one format: ``#`` comment lines, then one ``KEY=value`` line per
variable, sorted by name. ``render`` writes it and ``parse`` reads it back; every mapping that
``render`` accepts comes back unchanged from ``parse``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_QUOTES = "'\""


class EnvFileError(ValueError):
    """A mapping that cannot be written, or text that is not an environment file; names the line or key."""


def _unquoted(value: str) -> str:
    # Shell and systemd quoting of a whole value; no expansion, no escapes.
    if len(value) >= 2 and value[0] == value[-1] and value[0] in _QUOTES:
        return value[1:-1]
    return value


def render(env: Mapping[str, Any], comments: Iterable[Any] = ()) -> str:
    """File text: each comment line as ``# line``, then ``KEY=value`` lines sorted by name.

    The order is case-insensitive, as Jinja's dictsort, which the templates this replaces used.
    A value that ``parse`` would read differently (a line break, surrounding blanks or quotes) is refused.
    """
    lines = [f"# {line}".rstrip() for comment in comments for line in (str(comment).splitlines() or [""])]
    for key, value in sorted(env.items(), key=lambda item: str(item[0]).lower()):
        name, text = str(key), str(value)
        if not _KEY.match(name):
            raise EnvFileError(f"environment variable name {name!r} is not a valid name")
        if "\n" in text or "\r" in text or text != text.strip() or _unquoted(text) != text:
            raise EnvFileError(
                f"environment variable {name}: value {text!r} does not fit on one KEY=value line"
                " (line break, surrounding blanks or quotes)"
            )
        lines.append(f"{name}={text}")
    return "".join(f"{line}\n" for line in lines)


def parse(text: str) -> dict[str, str]:
    """KEY=VALUE lines of an environment file (systemd EnvironmentFile / shell style, no expansion).

    Blank lines and ``#`` comments are skipped, an ``export`` prefix and quotes around a whole value
    are dropped; any other line is an error naming its number.
    """
    out: dict[str, str] = {}
    for number, raw in enumerate(str(text).splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].strip()
        key, sep, value = line.partition("=")
        if not sep or not _KEY.match(key.strip()):
            raise EnvFileError(f"environment file line {number} is not KEY=VALUE: {raw!r}")
        out[key.strip()] = _unquoted(value.strip())
    return out
