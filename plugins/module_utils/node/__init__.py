# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Code that runs on the nodes, sent there as Python source (not packed into a module by Ansible).

The rule: a file here imports only the Python standard library and the files that travel with it (relative
imports); tests/unit/plugins/module_utils/node/test_stdlib_only.py checks every file. Controller code may
import these files too (node_health, rdma_port_info, train_preflight, the phases).

What travels where:

- ``health`` (the checks), ``rdma`` (the sysfs port reader they share) and ``values.py`` (what counts as a
  number): every ``.py`` of both packages and that file, as one tree, by the slurm role
  (``_slurm_health_code``) to /usr/local/lib/rdmaops-health/, where Slurm's HealthCheckProgram,
  files/health/rdmaops-health (standard library only too), loads ``health.cli``.
- ``train/agent.py``: train_watch's action plugin streams it, alone, to ``python3 -`` on each node over SSH.
- ``train/supervisor.py``: the train plan writes it, alone, as ``<workdir>/launch/<node>/supervise.py``, the
  main process of the job's unit.
"""
