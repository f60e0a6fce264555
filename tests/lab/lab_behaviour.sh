#!/usr/bin/env bash
# Behaviour of the local virtual cluster (playbooks/lab.yml) on the real host: needs root, the host packages
# of `make deps` and network access for the first base build; not part of the unit tests.
# It uses its own instance (lab_name=labtest, 10.90.0.0/24) and checks, in order:
#   bad input is refused before anything is made; a 3-node mesh comes up with sshd, apt through the proxy and
#   the wheelhouse; a re-run and --check report changed=0, the re-run through the fast path; growing to 4 nodes keeps nodes 1-3 running with the
#   same ports and MACs; kill -9 of every lab process is repaired by a re-run; switched rewires and shrinks;
#   after another kill -9, absent leaves no netns, link, mount, process, cgroup, file or inventory behind,
#   and other instances' namespaces are untouched.
#   tests/lab/lab_behaviour.sh            (from the repo root, as root)
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PWD/.venv/bin:$PATH" ANSIBLE_CONFIG="$PWD/ansible.cfg"
name=labtest
cidr=10.90.0.0/24
inv=inventories/$name
log=$(mktemp /tmp/lab_behaviour.XXXXXX.log)
failures=0

check() {  # check DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@" >>"$log" 2>&1; then
    echo "PASS  $what"
  else
    echo "FAIL  $what"
    failures=$((failures + 1))
  fi
}

play() {  # play EXTRA_ARGS... -> runs lab.yml for the test instance, output appended to the log
  ansible-playbook playbooks/lab.yml -e "lab_name=$name" -e "lab_mgmt_cidr=$cidr" "$@" >"$log.last" 2>&1
  local rc=$?
  cat "$log.last" >>"$log"
  return $rc
}

changed_is() {  # changed_is N: the last play's recap says changed=N
  grep -Eq "^localhost +: .* changed=$1 " "$log.last"
}

on() {  # on NODE CMD: run a command in a node over the lab's real SSH
  ansible -i "$inv" "$1" -m ansible.builtin.shell -a "$2"
}

ports() {  # ports NODE: name and MAC of each data port, from the host
  ip -n "$name-$1" -o link show | grep -oE ': data[0-9]+@[^ ]+ .*link/ether [0-9a-f:]+' |
    sed -E 's/^: (data[0-9]+)@.*link\/ether ([0-9a-f:]+)$/\1 \2/' | sort
}

nothing_left() {
  ! ip netns list | grep -q "^$name-" &&
    ! ip -o link show | grep -q ": $name-" &&
    ! grep -q "/rdmaops-lab/$name/" /proc/self/mountinfo &&
    ! pgrep -f "/var/lib/rdmaops-lab/$name/" >/dev/null &&
    [ ! -e "/var/lib/rdmaops-lab/$name" ] && [ ! -e "/run/rdmaops-lab/$name" ] &&
    [ ! -e "/sys/fs/cgroup/systemd/rdmaops-lab/$name" ] && [ ! -e "/sys/fs/cgroup/unified/rdmaops-lab/$name" ] &&
    [ ! -e "$inv" ]
}

kill_all() {  # kill -9 every nspawn and the apt proxy: the host side of a crash (the nodes' systemd carries on)
  local f pids=()
  for f in /run/rdmaops-lab/$name/*.pid; do pids+=("$(cat "$f")"); done
  kill -9 "${pids[@]}" 2>/dev/null || true
  # until each is gone or a zombie (bounded: 30 s), not a fixed pause
  local end=$(( $(date +%s) + 30 )) p
  for p in "${pids[@]}"; do
    while grep -qv '^[^)]*) Z' "/proc/$p/stat" 2>/dev/null && [ "$(date +%s)" -lt "$end" ]; do sleep 0.1; done
    ! grep -qv '^[^)]*) Z' "/proc/$p/stat" 2>/dev/null || return 1
  done
}

export name cidr inv log
export -f play changed_is on ports kill_all
# set -e holds in the trap too: a decoy already removed must not turn a passing run into exit status 1
trap 'ip netns delete labtestx-node1 2>/dev/null || true; ip link del labtestx-mbr 2>/dev/null || true
  play -e lab_state=absent >/dev/null 2>&1 || true; echo "log: $log"' EXIT

play -e lab_state=absent || true

check "bad lab_name is refused, naming it" \
  bash -c "! play -e lab_name=bad-name -e lab_state=present; grep -q 'lab_name=bad-name' '$log.last'"
check "bad lab_nodes is refused, naming it" \
  bash -c "! play -e lab_nodes=99; grep -q 'lab_nodes=99' '$log.last'"
check "a CIDR with host bits is refused, naming it" \
  bash -c "! play -e lab_mgmt_cidr=10.90.0.5/24; grep -q '10.90.0.5/24' '$log.last'"
check "nothing was made by refused runs" nothing_left

check "3-node mesh comes up" play -e lab_state=present -e lab_nodes=3 -e lab_topology=mesh
check "every node answers over SSH" ansible -i "$inv" all -m ansible.builtin.ping
check "hostname is the node name" on node2 'test "$(hostname)" = node2 && test "$(cat /etc/hostname)" = node2'
check "machine-ids differ between nodes" \
  bash -c "[ \"\$(cat /var/lib/rdmaops-lab/$name/node{1,2,3}/root/etc/machine-id | sort -u | wc -l)\" = 3 ]"
check "apt works through the host proxy" \
  on node1 "apt-get -o DPkg::Lock::Timeout=300 update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q iperf3 && iperf3 --version"
check "the wheelhouse is mounted read-only" \
  on node2 "ls /srv/wheelhouse/torch-*.whl && ! touch /srv/wheelhouse/x"
check "nodes have no default route" bash -c "! on node3 'ip route show default | grep -q .'"
check "mesh ports are up without IPv4 addresses" \
  on node1 "ip -br link show data0 | grep -q UP && ip -br link show data1 | grep -q UP && ! ip -4 addr show data0 | grep -q inet"
check "/sys in a node shows its own interfaces" on node1 "test -e /sys/class/net/mgmt0 && ! test -e /sys/class/net/$name-mbr"

check "a re-run changes nothing" bash -c "play -e lab_nodes=3 && changed_is 0"
check "a re-run takes the fast path" bash -c "play -e lab_nodes=3 && grep -q 'left it: nothing to do' '$log.last'"
check "with the fast path off every step runs and changes nothing" \
  bash -c "RDMAOPS_FAST_PATH=0 play -e lab_nodes=3 && changed_is 0 && ! grep -q 'nothing to do' '$log.last'"
check "--check --diff reports no change" bash -c "play -e lab_nodes=3 --check --diff && changed_is 0"

for n in 1 2 3; do ports node$n >"$log.ports3.node$n"; done
pids3=$(cat /run/rdmaops-lab/$name/node{1,2,3}.pid)
check "growing to 4 nodes" play -e lab_nodes=4
check "nodes 1-3 kept running (same PIDs)" bash -c "[ \"\$(cat /run/rdmaops-lab/$name/node{1,2,3}.pid)\" = '$pids3' ]"
for n in 1 2 3; do
  check "node$n kept its ports and MACs, gained data2" \
    bash -c "diff <(ports node$n | grep -v '^data2 ') '$log.ports3.node$n' && ports node$n | grep -q '^data2 '"
done
check "node4 reaches node1..3 on data0..2 (inventory)" \
  bash -c "ansible-inventory -i $inv --host node4 | python3 -c 'import json,sys; p=json.load(sys.stdin)[\"mesh_network_ports\"]; sys.exit(p != {\"node1\": \"data0\", \"node2\": \"data1\", \"node3\": \"data2\"})'"
# veth peers: node1's data2 names its peer's ifindex (data2@ifN); in node4 that index must be data0.
check "node1's data2 and node4's data0 are the two ends of one veth" \
  bash -c "peer=\$(ip -n $name-node1 -o link show data2 | sed -E 's/^[0-9]+: data2@if([0-9]+):.*/\\1/');
           ip -n $name-node4 -o link show data0 | grep -q \"^\$peer: data0@\""

# A node crash is a crash: every process of the node gone at once, not only its nspawn.
check "an unknown node is refused by name and nothing is killed" \
  bash -c "! play -e lab_state=crashed -e lab_crash_nodes=node9; grep -q 'has no node node9' '$log.last' && [ -n \"\$(ip netns pids $name-node1)\" ]"
check "crashing node2 leaves none of its processes" \
  bash -c "play -e lab_state=crashed -e lab_crash_nodes=node2 && [ -z \"\$(ip netns pids $name-node2)\" ] && ! pgrep -f '/var/lib/rdmaops-lab/$name/node[2]/' >/dev/null"
check "node2 no longer answers over SSH" bash -c "! timeout 60 ansible -i $inv node2 -m ansible.builtin.ping"
check "the other nodes kept running" ansible -i "$inv" node1,node3,node4 -m ansible.builtin.ping
check "present names the crashed node and boots it" \
  bash -c "play -e lab_nodes=4 && grep -q 'node2 is not running as planned' '$log.last'"
check "node2 answers over SSH again" on node2 true

check "kill -9 of every lab process: all of them gone within 30 s" kill_all
check "a re-run after kill -9 of every lab process brings the lab back" play -e lab_nodes=4
check "every node answers over SSH again" ansible -i "$inv" all -m ansible.builtin.ping

check "switch to a 3-node switched fabric" play -e lab_nodes=3 -e lab_topology=switched
check "node4 is gone" bash -c "! ip netns list | grep -q '^$name-node4'"
check "each node has only data0, on the fabric bridge" \
  bash -c "for n in 1 2 3; do [ \"\$(ip -n $name-node\$n -o link show | grep -c ': data')\" = 1 ] || exit 1; done; [ \"\$(ip -o link show master $name-dbr | wc -l)\" = 3 ]"
check "inventory names the fabric port" \
  bash -c "ansible-inventory -i $inv --host node2 | grep -q '\"mesh_network_fabric_port\": \"data0\"'"

# Decoys of an instance whose name starts with ours: teardown must leave them alone.
ip netns add labtestx-node1
ip link add labtestx-mbr type bridge
check "kill -9 of every lab process again: all of them gone within 30 s" kill_all
check "absent after kill -9 succeeds" play -e lab_state=absent
check "nothing of the instance is left" nothing_left
check "absent again is a no-op" bash -c "play -e lab_state=absent && changed_is 0"
check "instance labtestx (same leading letters) is untouched" \
  bash -c "ip netns list | grep -q '^labtestx-node1' && ip link show labtestx-mbr"
ip netns delete labtestx-node1
ip link del labtestx-mbr

echo
if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all checks passed"
