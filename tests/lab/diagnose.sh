#!/usr/bin/env bash
# What a lab instance was doing when a test run failed or hung: the host side (units, apt proxy log)
# and each node (systemd jobs, failed units, process tree, journal tail). Read-only; every probe is
# bounded so that a wedged node cannot stall the report. Usage: diagnose.sh LAB_NAME [INVENTORY_DIR]
# DIAG_BRIEF=1: a few lines each (make molecule puts them among a failure's last lines): the apt proxy's last
# lines, and per node its systemd jobs and the processes of the task it ran (module, apt, dpkg, systemctl).
set -uo pipefail
brief=${DIAG_BRIEF:-0}
name=${1:?usage: diagnose.sh LAB_NAME [INVENTORY_DIR]}
inv=${2:-inventories/$name}
dir=/var/lib/rdmaops-lab/$name
say() { printf '\n===== %s\n' "$*"; }

if [ "$brief" != 1 ]; then
  say "lab $name: host processes"
  ps -eo pid,etime,stat,args --forest | grep -E "rdmaops|nspawn|apt-cacher" | grep -v grep | head -40
fi
lines=$([ "$brief" = 1 ] && echo 6 || echo 15)
if [ -d "$dir/aptproxy/log" ]; then
  say "apt proxy: last requests and errors"
  tail -n "$lines" "$dir/aptproxy/log/apt-cacher.log" 2>/dev/null
  tail -n "$lines" "$dir/aptproxy/log/apt-cacher.err" 2>/dev/null
fi
if [ "$brief" = 1 ]; then
  probe='echo "--- systemd jobs"; systemctl list-jobs --no-pager --no-legend | head -5
    echo "--- the task'"'"'s processes"
    ps -eo pid,etime,stat,wchan:20,args --forest | grep -E "AnsiballZ|apt|dpkg|systemctl|deb-systemd|invoke-rc" |
      grep -v -e grep -e "ps -eo" | cut -c1-200 | head -12'
else
  probe='echo "--- systemd jobs"; systemctl list-jobs --no-pager | head -20
    echo "--- failed units"; systemctl --failed --no-pager --no-legend | head -20
    echo "--- processes"; ps -eo pid,etime,stat,wchan:20,args --forest | grep -v "ps -eo" | tail -40
    echo "--- journal"; journalctl -b --no-pager -n 40 -o short-monotonic'
fi

key=$dir/id_ed25519
[ -f "$inv/hosts.yml" ] || { echo "no inventory at $inv"; exit 0; }
# A node's name line followed by its ansible_host line (group listings such as slurm_controller have none).
grep -E -A1 '^ +node[0-9]+:$' "$inv/hosts.yml" | grep -B1 'ansible_host:' | grep -v -- '^--$' | paste - - |
while read -r node _ ip; do
  node=${node%:}
  say "node $node ($ip)"
  timeout 60 ssh -n -i "$key" -o BatchMode=yes -o ConnectTimeout=5 -o StrictHostKeyChecking=no \
    -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR "root@$ip" "$probe" 2>&1 ||
    echo "(node did not answer within 60 s: rc $?)"
done
