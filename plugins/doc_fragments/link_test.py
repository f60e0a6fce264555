# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations


class ModuleDocFragment:
    # The options rdma_bandwidth and verify_link share (argument spec: module_utils/verify/link_test.py).
    # A module documents only what differs: its defaults for mode, port and connect_timeout, the test
    # choices, what it requires, and descriptions that say more for that module.
    DOCUMENTATION = r"""
options:
  mode:
    description: V(rdma) measures with perftest, V(tcp) with iperf3.
    type: str
    choices: [rdma, tcp]
  test:
    description: The perftest test (RDMA mode only; TCP mode always measures bandwidth).
    type: str
    default: write_bw
  server:
    description: Address of the peer running the server.
    type: str
  port:
    description: TCP port of the server (perftest C(-p), iperf3 C(-p)).
    type: int
  bind_address:
    description: This node's address to bind (iperf3 C(-B)), to pin the traffic to one link.
    type: str
  interface:
    description:
      - This node's port of the link.
      - In TCP mode its C(/sys/class/net/IF/speed) is the line rate when O(line_rate_gbps) is not given.
    type: str
  device:
    description: RDMA device (perftest C(-d)).
    type: str
  ib_port:
    description: RDMA device port (perftest C(-i)).
    type: int
  gid_index:
    description: RoCE GID index (perftest C(-x)).
    type: int
  size:
    description: Message size in bytes (perftest C(-s), iperf3 C(-l)).
    type: int
  duration:
    description: Seconds of traffic for bandwidth tests (perftest C(-D), iperf3 C(-t)).
    type: int
    default: 5
  iterations:
    description: Iterations of latency tests (perftest C(-n)).
    type: int
    default: 1000
  parallel:
    description: Parallel streams (iperf3 C(-P)) or queue pairs (perftest C(-q)).
    type: int
    default: 1
  timeout:
    description: Seconds after which a measurement is killed.
    type: int
    default: 60
  connect_timeout:
    description: Seconds the client keeps retrying while the server does not listen yet.
    type: int
  line_rate_gbps:
    description:
      - Line rate the bandwidth is compared with.
      - Defaults to the RDMA port's rate (RDMA mode) or the speed of O(interface) (TCP mode).
      - V(0) counts as not given.
    type: float
  sysfs_root:
    description: Where sysfs is mounted (RDMA ports, port speeds and counters).
    type: path
    default: /sys
attributes:
  check_mode:
    description: Nothing is measured in check mode; the result shows the command that would run.
    support: full
  diff_mode:
    description: Nothing changes, so there is no diff.
    support: none
  platform:
    description: Linux hosts with perftest (RDMA mode) or iperf3 (TCP mode); sysfs for ports and counters.
    support: full
    platforms: posix
"""
