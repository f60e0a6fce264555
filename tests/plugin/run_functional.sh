#!/usr/bin/env bash
# Functional test of the Mesh plugin over its TCP backend: 2 and 3 processes on this host drive the
# plugin API (listen, connect, accept, regMr, isend, irecv, test, close) through the ABI versions
# and exchange checked data from 1 B to 64 MiB.  Handles travel as files in a directory.
#   run_functional.sh FUNC_PEER LIBRARY
set -euo pipefail
peer=$1
export MESH_PLUGIN_LIB=$2
export NCCL_MESH_TRANSPORT=tcp NCCL_MESH_IFNAME=${NCCL_MESH_IFNAME:-lo}
runs=0
run() { # NRANKS VERSION MAX_BYTES [VAR=VALUE...]
  local n=$1 v=$2 max=$3
  shift 3
  local dir
  dir=$(mktemp -d)
  local pids=() r rc=0
  for ((r = 0; r < n; r++)); do
    env "$@" timeout 120 "$peer" "$dir" "$r" "$n" "$v" "$max" > "$dir/out.$r" 2>&1 &
    pids+=($!)
  done
  for r in "${!pids[@]}"; do wait "${pids[$r]}" || rc=1; done
  if [ $rc -ne 0 ] || [ "$(cat "$dir"/out.* | grep -c ': OK abi')" -ne "$n" ]; then
    echo "FAIL: $n ranks, ABI v$v, up to $max bytes $*"
    cat "$dir"/out.*
    rm -rf "$dir"
    exit 1
  fi
  echo "ok: $n ranks, ABI v$v, up to $max bytes $* ($(grep -h 'OK abi' "$dir"/out.0 | sed 's/.*checked, //'))"
  rm -rf "$dir"
  runs=$((runs + 1))
}
run 2 11 $((64 << 20))
run 3 11 $((64 << 20))
run 2 10 $((4 << 20))
run 2 9 $((4 << 20)) NCCL_MESH_NSOCKS=1
run 3 8 $((4 << 20)) NCCL_MESH_NSOCKS=16
echo "functional: $runs runs passed"
