"""LoRA through PEFT (``lora.enabled``): the packed update trains the adapters only."""

from __future__ import annotations

import pytest
import torch
from _update_rows import fit_one_step, ragged_rows, updates
from omegaconf import OmegaConf

from rlanything_core.loop.iteration import IterationData
from rlanything_core.models.tiny import tiny_causal_lm
from rlanything_core.training.packing import packable

pytest.importorskip("peft", reason="LoRA needs PEFT: pip install -e '.[llm]'")

from rlanything_core.assembly.backends import apply_lora  # noqa: E402

LORA = OmegaConf.create(
    {"enabled": True, "r": 4, "alpha": 8, "dropout": 0.0, "activation_checkpointing": True,
     "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]}
)  # fmt: skip


def test_lora_trains_the_adapters_and_leaves_the_base_alone() -> None:
    model = apply_lora(tiny_causal_lm(64, hidden=16, layers=2, seed=0), LORA)
    assert packable(model)  # the packed update drives the PEFT-wrapped model like any causal LM
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    update, _ = updates(
        model, policy_updates=2, micro_batch_tokens=40,
        policy_optimizer=lambda params: torch.optim.AdamW(params, lr=1e-2),
    )  # fmt: skip
    loop = fit_one_step(update, IterationData(iteration=0, policy=ragged_rows(6, 12), judge=None))
    assert loop.update_history[0]["policy/updates"] == 2
    changed = {n for n, p in model.named_parameters() if not torch.equal(p, before[n])}
    assert changed and changed <= trainable  # only adapters moved (lora_B starts at zero: A and B both move)
