#!/usr/bin/env bash
# Build the lab's shared base root file system once: mmdebstrap into a temporary directory,
# customise, then rename, so a half-built base is never used. A lock serialises concurrent
# instances that need the same base.
# Usage: build_base.sh DEST SUITE MIRROR SECURITY_MIRROR PACKAGE...
set -euo pipefail
dest=$1 suite=$2 mirror=$3 security=$4
shift 4
packages=$(IFS=,; echo "$*")
# No getty on a pipe console, no first-boot wizard, no resolver or timers that grab the dpkg lock,
# and no wait-online: the management port is unmanaged on purpose, so it would hold
# network-online.target back for two minutes at every boot.
masked="systemd-firstboot.service systemd-resolved.service getty@.service console-getty.service
serial-getty@.service container-getty@.service apt-daily.timer apt-daily-upgrade.timer
systemd-networkd-wait-online.service"
sources="deb $mirror $suite main
deb $mirror $suite-updates main
deb $security $suite-security main"
mkdir -p "$(dirname "$dest")"
exec 9>"$dest.lock"
flock 9
if [ -e "$dest/.rdmaops-lab-base" ]; then
  exit 0
fi
tmp="$dest.tmp"
rm -rf "$tmp"
export masked sources
# Host keys and machine-id are made per node; the hostname comes from systemd-nspawn.
mmdebstrap --quiet --variant=minbase --include="$packages" \
  --customize-hook='rm -f "$1"/etc/ssh/ssh_host_* "$1"/etc/hostname "$1"/etc/machine-id "$1"/var/lib/dbus/machine-id' \
  --customize-hook='systemctl --root="$1" enable systemd-networkd.service' \
  --customize-hook='for u in $masked; do ln -sf /dev/null "$1/etc/systemd/system/$u"; done' \
  --customize-hook='rm -f "$1"/etc/systemd/system/network-online.target.wants/systemd-networkd-wait-online.service' \
  --customize-hook='printf "%s\n" "$sources" > "$1"/etc/apt/sources.list' \
  "$suite" "$tmp" "deb $mirror $suite main"
printf '%s\n' "$suite" "$@" > "$tmp/.rdmaops-lab-base"
mv "$tmp" "$dest"
