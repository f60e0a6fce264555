# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node health checks, in the Python standard library only so that one copy of this code serves both the
node_health module and the Slurm HealthCheckProgram (files/health/rdmaops-health, which loads this package
from where the slurm role installs it): the thresholds, severities and the finding format (``findings``),
GPU checks from ``nvidia-smi -q -x``, the kernel log's Xid lines and ``dcgmi diag -j`` (``gpu``, with NVIDIA's
Xid catalogue in ``xid``), RDMA port state, rate and counter growth from sysfs plus PFC pause counters from
``ethtool -S`` (``rdma``, reusing ``..rdma.sysfs``), memory, checkpoint disk and clock sync (``host``), the
node-side collection and the counter baseline file (``node``), the cross-node comparisons and the one-line
messages (``cluster``), and the HealthCheckProgram's drain/resume logic (``cli``).
"""
