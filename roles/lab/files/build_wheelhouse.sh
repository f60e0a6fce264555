#!/usr/bin/env bash
# Fill the lab's wheelhouse with wheels for the nodes' Python (the host's /usr/bin/python3 is
# the same Debian build), the way an air-gapped cluster gets them. Built into a temporary
# directory and renamed; a lock serialises concurrent instances.
# Usage: build_wheelhouse.sh DEST CONSTRAINTS_FILE|'' PACKAGE...
set -euo pipefail
dest=$1 constraints=$2
shift 2
mkdir -p "$(dirname "$dest")"
exec 9>"$dest.lock"
flock 9
if [ -e "$dest/.rdmaops-lab-wheelhouse" ]; then
  exit 0
fi
tmp="$dest.tmp"
rm -rf "$tmp"
mkdir -p "$tmp"
args=(--disable-pip-version-check --quiet --only-binary=:all: --dest "$tmp")
if [ -n "$constraints" ]; then
  # Only the pins of the requested packages matter; the file may also pin controller tools.
  args+=(--constraint "$constraints")
fi
/usr/bin/python3 -m pip download "${args[@]}" "$@"
printf '%s\n' "$@" > "$tmp/.rdmaops-lab-wheelhouse"
mv "$tmp" "$dest"
