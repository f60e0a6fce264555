# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm as the slurm role and train.yml's Slurm launcher see it: what ``slurmd -C``, ``sinfo`` and
``nvidia-smi -L`` print, node definitions from facts, inventory and hardware checks, and whether a change
needs a restart or a reconfigure (``config``); the slurm role's phases, check, plan and config
(``phase``).
"""
