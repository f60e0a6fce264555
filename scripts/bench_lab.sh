#!/usr/bin/env bash
# Times the local virtual cluster (playbooks/lab.yml): up with a cold cache (base image and wheelhouse
# built), up with a warm cache, an idempotent re-run, an SSH ping of every node, and teardown, for each
# node count. Runs as root from the repo root, on its own instance (lab_name=bench, 10.91.0.0/24) and its
# own cache directory, so other instances and the shared cache are not touched. Prints a Markdown table.
#   scripts/bench_lab.sh [NODE_COUNT...]        (default: 3 8)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH" ANSIBLE_CONFIG="$PWD/ansible.cfg"
name=bench
cidr=10.91.0.0/24
cache=/var/lib/rdmaops-lab-bench
if [ $# -gt 0 ]; then counts=("$@"); else counts=(3 8); fi
topology=${BENCH_TOPOLOGY:-mesh}
common=(-e "lab_name=$name" -e "lab_mgmt_cidr=$cidr" -e "lab_cache_dir=$cache" -e "lab_topology=$topology")
log=$(mktemp /tmp/bench_lab.XXXXXX.log)

lab() {  # lab STATE NODES -> prints seconds; fails loudly with the log on error
  local start end
  start=$(date +%s.%N)
  if ! ansible-playbook playbooks/lab.yml "${common[@]}" -e "lab_state=$1" -e "lab_nodes=$2" >>"$log" 2>&1; then
    tail -40 "$log" >&2
    return 1
  fi
  end=$(date +%s.%N)
  echo "$start $end" | awk '{printf "%.1f", $2 - $1}'
}

changed() {  # changed count of the last play recap in the log
  grep -E '^localhost +: ' "$log" | tail -1 | sed -E 's/.*changed=([0-9]+).*/\1/'
}

ping_all() {
  local start end
  start=$(date +%s.%N)
  ansible -i "inventories/$name" all -m ansible.builtin.ping >>"$log" 2>&1
  end=$(date +%s.%N)
  echo "$start $end" | awk '{printf "%.1f", $2 - $1}'
}

cleanup() {
  ansible-playbook playbooks/lab.yml "${common[@]}" -e lab_state=absent >>"$log" 2>&1 || true
  rm -rf "$cache"
}
trap cleanup EXIT

echo "# lab benchmark: $(date -u +%FT%TZ), $(nproc) cores, topology $topology, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| nodes | up, cold cache (s) | down (s) | up, warm cache (s) | re-run (s) | re-run changed | ssh ping all (s) | down (s) |"
echo "|---|---|---|---|---|---|---|---|"
for n in "${counts[@]}"; do
  cleanup
  cold=$(lab present "$n")
  down1=$(lab absent "$n")
  warm=$(lab present "$n")
  rerun=$(lab present "$n")
  rerun_changed=$(changed)
  ping=$(ping_all)
  down2=$(lab absent "$n")
  echo "| $n | $cold | $down1 | $warm | $rerun | $rerun_changed | $ping | $down2 |"
done
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg); log: $log"
