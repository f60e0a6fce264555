# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""train.yml: recipes read and fitted to the cluster through the trainer's own code (``recipe``), the
nodes' GPUs (``gpus``: how many, how much memory) and the memory estimate checked against them (``memory``),
the preflight report (``preflight``), what each node starts (``launch``, ``unit``), and the watcher's
verdicts, made on the controller (``watch``), with their words and progress lines (``watch_text``), the
cables it follows (``watch_cables``) and the command per node (``watch_ssh``). What runs on the nodes
themselves, the watcher's agent and the job unit's supervisor, is node code: ``node.train``.
"""
