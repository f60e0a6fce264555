"""Offline stand-in for the get-pip bootstrap script that ansible-test downloads.

ansible-test fetches get-pip from a CDN this network cannot reach; it runs the cached
script as ``__main__`` with pip-install arguments. We bootstrap pip from the
interpreter's bundled ensurepip wheel instead, then run that pip with the same
arguments, which installs the exact pip version ansible-test asked for from PyPI.
"""

from __future__ import annotations

import ensurepip
import os
import subprocess
import sys


def main() -> None:
    # ensurepip blanks PIP_* and sets PIP_CONFIG_FILE=/dev/null in os.environ: keep the caller's.
    env = dict(os.environ)
    ensurepip.bootstrap(upgrade=True)
    # get-pip's own flags mean "don't install these"; pip install does not know them.
    args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
    # A fresh process, so pip reads its config files (CA bundle, mirrors) as it would from a shell.
    sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", *args], env=env))


if __name__ == "__main__":
    main()
