#!/usr/bin/env bash
# Functional test of the TCP backend on real cables: network namespaces joined by veth pairs, one process
# (func_peer, one rank) per namespace, every pair exchanging checked data both ways through the plugin.
#   ring N:  N namespaces in a ring, ranks in ring order, one /30 per cable, each node's node address a /32
#            on lo (NCCL_MESH_NODE_ADDR), routes to every node address along shortest paths (ties: the same
#            path both ways) with forwarding on.  Neighbours talk over the cable between them; the others at
#            their node address through the nodes between.  The interface counters must show, per cable and
#            direction, the bytes those routes predict (each neighbour's bytes left by the veth facing it, plus
#            the transit), and each rank's log one node-address connection per non-neighbour.
#   rails:   2 namespaces joined by 2 cables: a connection spreads over both (each carries 40-60%).
#   run_ring.sh FUNC_PEER LIBRARY          root, under the lab lock the caller holds (flock /tmp/rdmaops-lab.lock)
set -euo pipefail
peer=$(readlink -f "$1")
lib=$(readlink -f "$2")
# shellcheck source=tests/plugin/netns.sh
. "$(dirname "$0")/netns.sh"
netns_start ring plg

# the payload func_peer sends each peer one way, for its sizes up to MAX
payload() {
  local max=$1 sum=0 s
  for s in 0 1 3 4096 65535 65537 262147 1048576 4194309 16777216 67108864; do
    [ "$s" -le "$max" ] && sum=$((sum + s))
  done
  echo $sum
}

node() { # NS INDEX: a namespace with lo up, forwarding on, node address 10.255.77.INDEX+1/32 on lo
  netns_add "$1"
  ip netns exec "$1" sysctl -qw net.ipv4.ip_forward=1
  ip -n "$1" addr add "10.255.77.$(($2 + 1))/32" dev lo
}

tx() { ip netns exec "$1" cat "/sys/class/net/$2/statistics/tx_bytes"; }

run_ranks() { # N MAX: one func_peer per namespace ns0..; fails on any rank's failure
  local n=$1 max=$2 r pids=() rc=0
  mkdir -p "$work/h"
  rm -f "$work"/h/* "$work"/out.*
  for ((r = 0; r < n; r++)); do
    ip netns exec "$tag-n$r" env -u NCCL_MESH_IFNAME MESH_PLUGIN_LIB="$lib" NCCL_MESH_TRANSPORT=tcp \
      NCCL_MESH_DEBUG=1 NCCL_MESH_NODE_ADDR="10.255.77.$((r + 1))" \
      timeout 120 "$peer" "$work/h" "$r" "$n" 11 "$max" > "$work/out.$r" 2>&1 &
    pids+=($!)
  done
  for r in "${!pids[@]}"; do wait "${pids[$r]}" || rc=1; done
  if [ $rc -ne 0 ] || [ "$(cat "$work"/out.* | grep -c ': OK abi')" -ne "$n" ]; then
    cat "$work"/out.*
    echo "ring: FAIL: $n ranks did not all finish" >&2
    exit 1
  fi
}

# ---- ring of N ----
ring() {
  local n=$1 max=$2 i j k
  local P
  P=$(payload "$max")
  for ((i = 0; i < n; i++)); do node "$tag-n$i" "$i"; done
  # cable k: node k (10.77.k.1, veth c<k>a) -- node k+1 (10.77.k.2, veth c<k>b)
  for ((k = 0; k < n; k++)); do veth_cable "${tag}c$k" "$tag-n$k" "10.77.$k.1" "$tag-n$(((k + 1) % n))" "10.77.$k.2"; done
  # next hop from i toward j: east over cable i, west over cable i-1
  declare -A load=()
  for ((i = 0; i < n; i++)); do
    for ((j = 0; j < n; j++)); do
      [ $i -eq $j ] && continue
      local cw=$(((j - i + n) % n)) ccw=$(((i - j + n) % n)) dir
      if [ $cw -lt $ccw ] || { [ $cw -eq $ccw ] && [ $i -lt $j ]; }; then dir=east; else dir=west; fi
      if [ $dir = east ]; then
        ip -n "$tag-n$i" route add "10.255.77.$((j + 1))/32" via "10.77.$i.2" src "10.255.77.$((i + 1))"
      else
        ip -n "$tag-n$i" route add "10.255.77.$((j + 1))/32" via "10.77.$(((i - 1 + n) % n)).1" src "10.255.77.$((i + 1))"
      fi
      # the bytes i sends j cross every cable of the path, in the path's direction
      local h=$i
      while [ $h -ne $j ]; do
        if [ $dir = east ]; then
          load["$tag-n$h ${tag}c${h}a"]=$((${load["$tag-n$h ${tag}c${h}a"]:-0} + 1))
          h=$(((h + 1) % n))
        else
          local w=$(((h - 1 + n) % n))
          load["$tag-n$h ${tag}c${w}b"]=$((${load["$tag-n$h ${tag}c${w}b"]:-0} + 1))
          h=$w
        fi
      done
    done
  done
  declare -A before=()
  for key in "${!load[@]}"; do before[$key]=$(tx $key); done
  run_ranks "$n" "$max"
  local bad=0 lines=()
  for key in "${!load[@]}"; do
    local sent=$(($(tx $key) - ${before[$key]})) want=$((${load[$key]} * P))
    local hi=$((want + want / 10 + 2000000))
    lines+=("  $key: $sent bytes out, routes predict ${load[$key]} x $P = $want")
    if [ $sent -lt $want ] || [ $sent -gt $hi ]; then bad=1; fi
  done
  printf '%s\n' "${lines[@]}" | sort
  for ((i = 0; i < n; i++)); do
    local nn direct
    nn=$(grep -c 'TCP to its node address' "$work/out.$i" || true)
    direct=$(grep -c 'connect: peer 10\.77\..* over 1 cable$' "$work/out.$i" || true)
    if [ "$nn" -ne $((n - 3)) ] || [ "$direct" -ne 2 ]; then
      echo "  rank $i: $nn node-address and $direct direct connections, expected $((n - 3)) and 2" >&2
      grep 'connect:' "$work/out.$i" >&2 || true
      bad=1
    fi
  done
  if [ $bad -ne 0 ]; then
    echo "ring: FAIL: ring of $n: the cables did not carry what the routes predict" >&2
    exit 1
  fi
  echo "ok: ring of $n, ranks in ring order, $((n * (n - 1))) directed pairs x $P bytes checked; every cable" \
    "carried its neighbour's and its transit bytes; $((n - 3)) node-address connection(s) per rank"
  for ns in "${names[@]}"; do ip netns del "$ns"; done
  names=()
}

# ---- rails: two nodes, two cables ----
rails() {
  local max=$1 P
  P=$(payload "$max")
  node "$tag-n0" 0
  node "$tag-n1" 1
  veth_cable "${tag}r0" "$tag-n0" 10.78.0.1 "$tag-n1" 10.78.0.2
  veth_cable "${tag}r1" "$tag-n0" 10.78.0.5 "$tag-n1" 10.78.0.6
  local keys=("$tag-n0 ${tag}r0a" "$tag-n0 ${tag}r1a" "$tag-n1 ${tag}r0b" "$tag-n1 ${tag}r1b")
  declare -A before=()
  for key in "${keys[@]}"; do before[$key]=$(tx $key); done
  run_ranks 2 "$max"
  local bad=0
  for key in "${keys[@]}"; do
    local sent=$(($(tx $key) - ${before[$key]}))
    echo "  $key: $sent bytes out ($((sent * 100 / P))% of the $P bytes each way)"
    if [ $((sent * 100 / P)) -lt 40 ] || [ $((sent * 100 / P)) -gt 60 ]; then bad=1; fi
  done
  for r in 0 1; do grep -q 'over 2 cables (rails)' "$work/out.$r" || { grep 'connect:' "$work/out.$r" >&2; bad=1; }; done
  if [ $bad -ne 0 ]; then
    echo "ring: FAIL: rails: one connection did not spread over both cables" >&2
    exit 1
  fi
  echo "ok: rails, 2 cables between 2 nodes: each carried 40-60% of each direction"
  for ns in "${names[@]}"; do ip netns del "$ns"; done
  names=()
}

ring 4 $((16 << 20))
ring 5 $((4 << 20))
rails $((16 << 20))
echo "ring: 3 runs passed in ${SECONDS} s"
