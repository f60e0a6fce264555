# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""train.yml's code that runs on the nodes, each file sent alone (see ``node``): the watcher's agent
(``agent``) and the main process of a job's unit (``supervisor``).
"""
