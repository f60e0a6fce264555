# netns.sh, sourced by run_ring.sh and run_cable.sh: root, a random tag that names everything they create, a
# work directory, network namespaces and veth cables, all removed when the script exits.
#   netns_start TEST PREFIX       fails unless root; sets tag (PREFIX and 4 hex digits), work, names, the trap
#   netns_add NS                  a namespace with lo up, removed on exit
#   veth_cable NAME NS_A ADDR_A NS_B ADDR_B
#                                 veth NAMEa in NS_A and NAMEb in NS_B, up, MTU 9000, ADDR_x/30 at each end

netns_start() {
  if [ "$(id -u)" != 0 ]; then
    echo "$1: FAIL: needs root (network namespaces and veth pairs)" >&2
    exit 1
  fi
  tag=$2$(printf '%04x' $((RANDOM)))
  work=$(mktemp -d)
  names=()
  trap netns_cleanup EXIT
}

netns_cleanup() {
  for ns in "${names[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  for l in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep "^$tag" || true); do
    ip link del "$l" 2>/dev/null || true
  done
  rm -rf "$work"
}

netns_add() {
  ip netns add "$1"
  names+=("$1")
  ip -n "$1" link set lo up
}

veth_cable() {
  ip link add "${1}a" type veth peer name "${1}b"
  ip link set "${1}a" netns "$2"
  ip link set "${1}b" netns "$4"
  ip -n "$2" link set "${1}a" mtu 9000 up
  ip -n "$4" link set "${1}b" mtu 9000 up
  ip -n "$2" addr add "$3/30" dev "${1}a"
  ip -n "$4" addr add "$5/30" dev "${1}b"
}
