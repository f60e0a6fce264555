"""The model shapes of the benchmark rows. Their FLOPs per token and MFU come from the trainer
(``rdmaops_trainer.transformer_flops_per_token``, ``*_matmul_params``, ``mfu``): one count for every row."""

from __future__ import annotations

from rdmaops_trainer import load_recipe

# Qwen2.5-1.5B, in the keys of rdmaops_trainer.qwen2_matmul_params
QWEN15B = {"vocab": 151936, "d": 1536, "layers": 28, "ffn": 8960, "heads": 12, "kv_heads": 2}

# GLM-4.5-Air's layer (hidden 4096, 96 query / 8 KV heads of 128, experts of 1408, top-8 of the routed experts
# plus one shared, layer 0 dense, vocabulary 151552, untied) with 8 layers and 32 routed experts instead of 46
# and 128: 6.2 B parameters, 2.7 B active per token, so LoRA training fits one 80 GB GPU.
GLM_1GPU = {
    "num_hidden_layers": 8,
    "n_routed_experts": 32,
    # GLM-4.5-Air's config.json values where Glm4MoeConfig's defaults differ (head_dim would be 4096 // 96)
    "head_dim": 128,
    "attention_bias": True,
}
# the CPU smoke test's shape: the trainer's glm-tiny recipe, what train.yml runs on the lab
TINY_GLM = dict(load_recipe("glm-tiny").model.config)
