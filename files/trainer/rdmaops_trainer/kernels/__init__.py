"""The trainer's opt-in kernels and execution options (``train.float8``, ``train.fused_*``,
``train.bf16_residual``, ``train.cuda_graphs``), each off unless a recipe turns it on.

``registry`` is the one table of them: what each needs (recipe, GPU, package) and the function that applies
it to the model; ``config.validate``, ``models.build_model``, ``train.run`` and the DDP strategy ask it and
read no option themselves. Every other module here is one option's implementation (and ``cublaslt``,
``ce_kernel``, ``forwards`` the parts they share). Importing this package imports nothing: the registry must
load without torch (the recipe checks run on an Ansible controller too).
"""
