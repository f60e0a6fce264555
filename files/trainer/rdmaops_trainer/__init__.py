"""rdmaops_trainer: the training package run on the cluster (``python -m rdmaops_trainer --recipe NAME``)."""

__version__ = "0.1.0"
