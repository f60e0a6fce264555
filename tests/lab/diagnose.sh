#!/usr/bin/env bash
# What a lab instance was doing when a test run failed or hung: the host side (units, apt proxy log)
# and each node (systemd jobs, failed units, process tree, journal tail). Read-only; every probe is
# bounded so that a wedged node cannot stall the report. Usage: diagnose.sh LAB_NAME [INVENTORY_DIR]
# DIAG_BRIEF_FILE=F: also write a brief form to F, from the same probes (make molecule prints it among a
# failure's last lines): the apt proxy's last lines, and per node its systemd jobs and the processes of the
# task it ran (module, apt, dpkg, systemctl).
set -uo pipefail
name=${1:?usage: diagnose.sh LAB_NAME [INVENTORY_DIR]}
inv=${2:-inventories/$name}
brief=${DIAG_BRIEF_FILE:-/dev/null}
dir=/var/lib/rdmaops-lab/$name
: > "$brief"
say() { printf '\n===== %s\n' "$*"; }
# a heading in both forms
both() { say "$*" | tee -a "$brief"; }

say "lab $name: host processes"
ps -eo pid,etime,stat,args --forest | grep -E "rdmaops|nspawn|apt-cacher" | grep -v grep | head -40
if [ -d "$dir/aptproxy/log" ]; then
  both "apt proxy: last requests and errors"
  for log in apt-cacher.log apt-cacher.err; do
    last=$(tail -n 15 "$dir/aptproxy/log/$log" 2>/dev/null)
    [ -n "$last" ] || continue
    printf '%s\n' "$last"
    printf '%s\n' "$last" | tail -n 6 >> "$brief"
  done
fi

key=$dir/id_ed25519
[ -f "$inv/hosts.yml" ] || { echo "no inventory at $inv"; exit 0; }
probe='echo "--- systemd jobs"; systemctl list-jobs --no-pager | head -20
  echo "--- failed units"; systemctl --failed --no-pager --no-legend | head -20
  echo "--- processes"; ps -eo pid,etime,stat,wchan:20,args --forest | grep -v "ps -eo"
  echo "--- journal"; journalctl -b --no-pager -n 40 -o short-monotonic'
# The full form keeps the last 40 processes; the brief one the jobs (no legend) and the task's processes.
full_form='function flush() { for (i = (n > 40 ? n - 40 : 0); i < n; i++) print buf[i]; n = 0 }
  /^--- / { flush(); sec = $0; print; next }
  sec == "--- processes" { buf[n++] = $0; next }
  { print }
  END { flush() }'
brief_form='/^\(node did not answer/ { print; next }
  /^--- / { sec = $0; if (sec == "--- systemd jobs") print; if (sec == "--- processes") print "--- the task'"'"'s processes"; next }
  sec == "--- systemd jobs" && !/^JOB |jobs? listed|^No jobs running/ && jobs++ < 5 { print }
  sec == "--- processes" && /AnsiballZ|apt|dpkg|systemctl|deb-systemd|invoke-rc/ && !/grep/ && procs++ < 12 { print substr($0, 1, 200) }
  sec == "" { print }'
# A node's name line followed by its ansible_host line (group listings such as slurm_controller have none).
grep -E -A1 '^ +node[0-9]+:$' "$inv/hosts.yml" | grep -B1 'ansible_host:' | grep -v -- '^--$' | paste - - |
while read -r node _ ip; do
  node=${node%:}
  both "node $node ($ip)"
  out=$(timeout 60 ssh -n -i "$key" -o BatchMode=yes -o ConnectTimeout=5 -o StrictHostKeyChecking=no \
    -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR "root@$ip" "$probe" 2>&1) ||
    out+=$'\n'"(node did not answer within 60 s: rc $?)"
  printf '%s\n' "$out" | awk "$full_form"
  printf '%s\n' "$out" | awk "$brief_form" >> "$brief"
done
