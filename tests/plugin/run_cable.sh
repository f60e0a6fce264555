#!/usr/bin/env bash
# A cable lost under a live connection: network namespaces in pairs joined by veth cables, one func_peer rank
# per namespace streaming checked data both ways through the plugin (TCP backend, NCCL_MESH_CABLE_TIMEOUT_MS
# at its default), then one change per pair while the transfer is in flight, all pairs at once:
#   down:    rank 0's end set down (ip link set ... down): rank 0 sees its interface down, rank 1 no carrier;
#   deleted: rank 1's end deleted (ip link del; a veth pair goes as one): both interfaces gone;
#   silent:  both carriers up but nothing crosses (a blackhole route to the peer at each end): only TCP can
#            tell, by keepalive (a rank whose 256 KiB sends all went into its socket buffers and which only
#            waits to receive) or by the acknowledgements of a send that waits;
#   silentsend: the same, one way only (rank 0 sends, rank 1 receives) with 16 MiB messages and the
#            namespaces' TCP buffers capped at 1 MiB: rank 0 always has a send waiting, and its
#            unacknowledged data (or unanswered window probes) tell; rank 1, which has nothing of its own in
#            flight, learns it by keepalive (both ways, a rank whose send had just gone into its buffers and
#            which only waited to receive learnt it by keepalive too: which sign told was a race);
#   rails:   two cables between the pair, the second set down at rank 0: the error names that cable.
# Every rank must end with an error (func_peer status 3: a plugin call failed during the stream) whose text
# names its end of the cable ("cable IF (LOCAL -> PEER) lost") and the sign it was seen by, within BOUND_S (15)
# seconds of the change, measured from just before the change to the failure's time that the rank prints.  A
# rank still running LIMIT_S after its start is a hang (timeout kills it).
#   run_cable.sh FUNC_PEER LIBRARY          root, under the lab lock the caller holds (flock /tmp/rdmaops-lab.lock)
set -euo pipefail
peer=$(readlink -f "$1")
lib=$(readlink -f "$2")
BOUND_S=${BOUND_S:-15}
LIMIT_S=${LIMIT_S:-30}
# shellcheck source=tests/plugin/netns.sh
. "$(dirname "$0")/netns.sh"
netns_start cable plc

cases=(down deleted silent silentsend rails)
keepalive='the peer answered no TCP keepalive' unacked='the peer acknowledged nothing'
declare -A change=() expect=() sign=() oneway=()
k=0
for c in "${cases[@]}"; do
  k=$((k + 1))
  a=$tag-${k}a b=$tag-${k}b l=$tag$k
  netns_add "$a"
  netns_add "$b"
  veth_cable "${l}" "$a" "10.79.$k.1" "$b" "10.79.$k.2"
  expect[$c.0]="cable ${l}a (10.79.$k.1 -> 10.79.$k.2) lost: "
  expect[$c.1]="cable ${l}b (10.79.$k.2 -> 10.79.$k.1) lost: "
  size=262144
  case $c in
    down)
      change[$c]="ip -n $a link set ${l}a down"
      sign[$c.0]='the interface is set down' sign[$c.1]='no carrier'
      ;;
    deleted)
      change[$c]="ip -n $b link del ${l}b"
      sign[$c.0]='the interface is gone' sign[$c.1]='the interface is gone'
      ;;
    silent*)
      change[$c]="ip -n $a route add blackhole 10.79.$k.2/32 && ip -n $b route add blackhole 10.79.$k.1/32"
      sign[$c.0]="$keepalive|$unacked" sign[$c.1]="$keepalive|$unacked"
      if [ $c = silentsend ]; then
        size=16777216 oneway[$c]=1
        sign[$c.0]=$unacked sign[$c.1]=$keepalive
        for ns in "$a" "$b"; do
          ip netns exec "$ns" sysctl -qw net.ipv4.tcp_rmem="4096 131072 1048576" net.ipv4.tcp_wmem="4096 16384 1048576"
        done
      fi
      ;;
    rails)
      veth_cable "${l}r" "$a" "10.79.$k.5" "$b" "10.79.$k.6"
      change[$c]="ip -n $a link set ${l}ra down"
      expect[$c.0]="cable ${l}ra (10.79.$k.5 -> 10.79.$k.6) lost: "
      expect[$c.1]="cable ${l}rb (10.79.$k.6 -> 10.79.$k.5) lost: "
      sign[$c.0]='the interface is set down' sign[$c.1]='no carrier'
      ;;
  esac
  mkdir -p "$work/$c"
  for r in 0 1; do
    ns=$a
    [ $r = 1 ] && ns=$b
    ip netns exec "$ns" env -u NCCL_MESH_IFNAME -u NCCL_MESH_CABLE_TIMEOUT_MS MESH_PLUGIN_LIB="$lib" \
      NCCL_MESH_TRANSPORT=tcp NCCL_MESH_DEBUG=1 FUNC_STREAM_S=120 FUNC_STREAM_ONEWAY="${oneway[$c]:-0}" \
      timeout "$LIMIT_S" "$peer" "$work/$c" "$r" 2 11 "$size" > "$work/$c/out.$r" 2>&1 &
    echo $! > "$work/$c/pid.$r"
  done
done

# the change once every rank streams
for ((i = 0; i < 200; i++)); do
  n=$(cat "$work"/*/out.* | grep -c ': streaming$' || true)
  [ "$n" -eq $((2 * ${#cases[@]})) ] && break
  sleep 0.05
done
if [ "$n" -ne $((2 * ${#cases[@]})) ]; then
  kill $(cat "$work"/*/pid.*) 2>/dev/null || true
  tail -n 5 "$work"/*/out.*
  echo "cable: FAIL: only $n of $((2 * ${#cases[@]})) ranks streaming after 10 s" >&2
  exit 1
fi
sleep 0.5
declare -A t0=()
for c in "${cases[@]}"; do
  t0[$c]=$(date +%s.%N)
  eval "${change[$c]}"
done

bad=0
for c in "${cases[@]}"; do
  for r in 0 1; do
    rc=0
    wait "$(cat "$work/$c/pid.$r")" || rc=$?
    out=$work/$c/out.$r
    at=$(sed -n 's/.*stream ended after .* at \([0-9.]*\)$/\1/p' "$out" | head -n 1)
    lost=$(grep -F -m 1 "${expect[$c.$r]}" "$out" | sed 's/.*NET\/Mesh : //' || true)
    if [ $rc -eq 124 ]; then
      why="still running ${LIMIT_S} s after its start: a hang"
    elif [ $rc -ne 3 ] || [ -z "$at" ]; then
      why="ended with status $rc, not a failed plugin call during the stream"
    elif [ -z "$lost" ]; then
      why="its error does not name its end of the cable (${expect[$c.$r]})"
    elif ! grep -Eq "lost: (${sign[$c.$r]})" <<< "$lost"; then
      why="its error does not say the sign expected here (${sign[$c.$r]}): $lost"
    else
      dt=$(awk -v a="$at" -v b="${t0[$c]}" 'BEGIN { printf "%.1f", a - b }')
      if awk -v d="$dt" -v m="$BOUND_S" 'BEGIN { exit !(d <= m) }'; then
        echo "ok: $c: rank $r ended ${dt} s after the change: $lost"
        continue
      fi
      why="ended ${dt} s after the change, over ${BOUND_S} s"
    fi
    echo "  $c: rank $r: $why" >&2
    sed 's/^/    /' "$out" >&2
    bad=1
  done
done
if [ $bad -ne 0 ]; then
  echo "cable: FAIL" >&2
  exit 1
fi
echo "cable: ${#cases[@]} cases, $((2 * ${#cases[@]})) ranks ended naming the cable within ${BOUND_S} s;" \
  "${SECONDS} s in all"
