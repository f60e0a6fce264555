#!/usr/bin/env bash
# Time verify.yml against an addressed inventory and print its numbers (per link and the all-reduce).
#   scripts/bench_verify.sh inventories/verify [ansible-playbook args, e.g. -e verify_duration=10]
# verify.yml writes the numbers itself (reports/latest/report.json); this prints them with the wall time.
set -euo pipefail
inventory=${1:?usage: $0 INVENTORY [ansible-playbook args]}
shift
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
start=$(date +%s.%N)
rc=0
ansible-playbook -i "$inventory" verify.yml "$@" > /tmp/bench_verify.$$.log 2>&1 || rc=$?
end=$(date +%s.%N)
awk -v s="$start" -v e="$end" -v i="$inventory" -v rc="$rc" -v p="$$" \
  'BEGIN { printf "verify.yml on %s: rc=%s, %.1f s wall (log: /tmp/bench_verify.%s.log)\n", i, rc, e - s, p }'
python3 - reports/latest/report.json <<'PY'
import json
import sys

r = json.load(open(sys.argv[1]))
m = r["meta"]
print(f"{len(r['hosts'])} nodes, {m['topology']}, mode {m['mode']}, {len(r['measurements'])} measurements in "
      f"{m['rounds']} rounds, verdict {'PASSED' if r['passed'] else 'FAILED'}")
print(f"{'link':32} {'Gb/s':>6} {'RTT us':>7} {'port tx/iperf3 bytes':>21}")
for x in r["measurements"]:
    ratio = x["port_tx_bytes"] / x["bytes_sent"] if x.get("bytes_sent") else float("nan")
    print(f"{x['label']:32} {x['gbps'] or 0:6.2f} {x['latency_us'] or 0:7.1f} {ratio:21.3f}")
c = r.get("collective") or {}
for row in c.get("results", []):
    print(f"all-reduce {c['backend']} x{c['world_size']} {row['bytes']:>10} B: busbw {row['busbw_gbps']:.3f} Gb/s")
for f in r["failures"]:
    print("FAIL", f)
PY
exit "$rc"
