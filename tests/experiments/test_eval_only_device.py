"""Issue 19: ``eval_only`` evaluates on the trainer's device, not on the CPU the models were built on.

``trainer.fit`` moves the module to the strategy's root device; an ``eval_only`` run never calls it. The run here is a
stand-in whose strategy's root device is ``meta`` (a device other than the CPU that needs no accelerator): the
evaluator must find the models there when it runs.
"""

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from omegaconf import OmegaConf
from torch import nn

import experiments.train as train


class _Module(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.policy = nn.Linear(2, 2)
        self.judge = nn.Linear(2, 2)
        self.seen: list[torch.device] = []
        self.evaluator = self._evaluate

    def _evaluate(self) -> dict[str, float]:
        self.seen = [p.device for p in self.parameters()]
        return {"success": 0.0}


def test_eval_only_runs_on_the_trainers_root_device(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    module = _Module()
    run: Any = SimpleNamespace(
        module=module, trainer=SimpleNamespace(strategy=SimpleNamespace(root_device=torch.device("meta"))),
        run_dir=tmp_path,
    )
    monkeypatch.setattr(train, "build", lambda cfg: run)
    train.run_training(OmegaConf.create({"eval_only": True}))
    assert module.seen and all(d.type == "meta" for d in module.seen)  # main: every parameter still on the CPU
    assert (tmp_path / "eval.json").is_file()
