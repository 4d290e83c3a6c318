"""``eval_only`` evaluates the models as a run would set them up, on the runtime's device.

``eval_only`` used to call the evaluator directly: the models stayed where they were built (the CPU, whatever the
accelerator), the strategy's setup never ran (FSDP2 sharding, ranks built on meta never filled: the two-process case
is tests/experiments/test_eval_only_distributed.py). It now goes through ``RLAnythingLoop.evaluate_only``, which sets
the models up as ``run`` does: a real loop and Fabric runtime here, whose evaluator records where it ran.
"""

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from omegaconf import OmegaConf
from torch import nn

import rlanything_core.assembly.train_app as train
from rlanything_core.assembly.trainer import Run
from rlanything_core.lightning.fabric_runtime import FabricRuntime
from rlanything_core.loop.iteration import IterationData
from rlanything_core.loop.rlanything_loop import RLAnythingLoop
from rlanything_core.losses.policy import PolicyLoss
from rlanything_core.training.update import ModelUpdate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lightning"))
from _update_rows import FixedRows, cpu_runtime  # noqa: E402


class _Recording(FabricRuntime):
    configured = 0

    def setup_models(self, models: nn.Module) -> None:
        self.configured += 1
        super().setup_models(models)


def test_eval_only_goes_through_the_runs_setup(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    class Evaluator:  # the loop.protocol.Evaluator contract, recording where it ran
        sharded = False

        def __call__(self) -> dict[str, float]:
            seen.append({
                "devices": {p.device for p in loop.models.parameters()},
                "root": runtime.device,
                "configured": runtime.configured,
                "grad": torch.is_grad_enabled(),
            })  # fmt: skip
            return {"split/success_rate": 0.25}

    runtime = _Recording(cpu_runtime().fabric)
    policy, judge = nn.Linear(2, 2), nn.Linear(2, 2)
    update = ModelUpdate("policy", policy, PolicyLoss(), runtime)
    source = FixedRows(IterationData(iteration=0, policy=None, judge=None))
    loop = RLAnythingLoop(source, runtime, update, judge, iterations=1, checkpoint_dir=tmp_path, evaluator=Evaluator())
    before = {k: v.clone() for k, v in loop.models.state_dict().items()}
    monkeypatch.setattr(train, "build_run", lambda cfg: Run(loop, tmp_path))
    train.run_training(OmegaConf.create({"eval_only": True}))
    assert len(seen) == 1  # one evaluation
    assert seen[0]["configured"] == 1 and seen[0]["devices"] == {seen[0]["root"]} and not seen[0]["grad"]
    assert json.loads((tmp_path / "eval.json").read_text()) == {"split/success_rate": 0.25}
    assert all(torch.equal(before[k], v) for k, v in loop.models.state_dict().items())  # no update
    assert not (tmp_path / "last.ckpt").exists()  # nothing trained, nothing saved
