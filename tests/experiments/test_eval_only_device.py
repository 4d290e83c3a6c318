"""Issue 19: ``eval_only`` evaluates the module as ``trainer.fit`` would set it up, on the trainer's device.

``eval_only`` used to call the evaluator directly: the module stayed where it was built (the CPU, whatever the
accelerator), ``configure_model`` never ran (FSDP2 sharding, ranks built on meta never filled: the two-process case
is tests/experiments/test_eval_only_distributed.py). It now goes through ``trainer.test``: a real trainer and module
here, whose evaluator records where it ran.
"""

import json
from pathlib import Path
from typing import Any

import lightning as L
import pytest
import torch
from omegaconf import OmegaConf
from torch import nn

import experiments.train as train
from experiments.trainer_setup import Run
from rlanything_core.lightning.settings import AgentModule


class _Recording(AgentModule):
    configured = 0

    def configure_model(self) -> None:
        self.configured += 1
        super().configure_model()


def test_eval_only_goes_through_the_trainers_setup(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    class Evaluator:  # the loop.protocol.Evaluator contract, recording where it ran
        sharded = False

        def __call__(self) -> dict[str, float]:
            seen.append({
                "devices": {p.device for p in module.parameters()},
                "root": module.trainer.strategy.root_device,
                "configured": module.configured,
                "grad": torch.is_grad_enabled(),
            })  # fmt: skip
            return {"split/success_rate": 0.25}

    module = _Recording(nn.Linear(2, 2), nn.Linear(2, 2), evaluator=Evaluator())
    trainer = L.Trainer(accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)  # fmt: skip
    before = {k: v.clone() for k, v in module.state_dict().items()}
    monkeypatch.setattr(train, "build", lambda cfg: Run(module, None, trainer, tmp_path, None, None))
    train.run_training(OmegaConf.create({"eval_only": True}))
    assert len(seen) == 1  # one evaluation
    assert seen[0]["configured"] == 1 and seen[0]["devices"] == {seen[0]["root"]} and not seen[0]["grad"]
    assert json.loads((tmp_path / "eval.json").read_text()) == {"split/success_rate": 0.25}
    assert all(torch.equal(before[k], v) for k, v in module.state_dict().items())  # no update
