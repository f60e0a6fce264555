"""Rehearsal only (benchmarks/gpu/multinode.py puts this directory on a "node"'s PYTHONPATH).

Two "nodes" share one machine's GPUs here, while on a cluster each node has its own. torchrun keeps the
``CUDA_VISIBLE_DEVICES`` it is given, but DeepSpeed's launcher sets it to the slots of its hostfile (0,1 on
every node), which would put both nodes' ranks on the same two GPUs. Every Python process of a node, ranks
included, starts here and takes the node's GPUs back from ``RDMAOPS_REHEARSAL_GPUS``.
"""

import os

_gpus = os.environ.get("RDMAOPS_REHEARSAL_GPUS")
if _gpus is not None:
    os.environ["CUDA_VISIBLE_DEVICES"] = _gpus
