"""One process of tests/experiments/test_eval_only_distributed.py: an ``eval_only`` run through ``run_training``.

``python _eval_only_worker.py RANK WORLD PORT MODEL_DIR RUN_DIR OUT``: the FAST TextWorld run whose policy and judge
are read by ``causal_lm_on_rank0`` from ``MODEL_DIR`` (rank 0 loads the weights, rank 1 builds the architecture on
the meta device). ``WORLD`` 2: two "nodes" of one process each under FSDP2 (the launcher's variables set as torchrun
or srun would); ``WORLD`` 1: one process, the reference. The evaluator is wrapped to record, when it runs, whether
any parameter is still on meta and a checksum of the full weights it evaluates.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # experiments is a package of the repository root
sys.path.insert(0, str(REPO / "tests" / "experiments"))  # the shared run helpers (_runs)


def _checksum(model: torch.nn.Module) -> float:
    total = 0.0
    for p in model.parameters():
        full = p.full_tensor() if hasattr(p, "full_tensor") else p  # a DTensor outside a gathered block
        total += float(full.detach().double().abs().sum())
    return total


class Probe:
    """The run's evaluator, recording what it sees when it runs."""

    def __init__(self, evaluator: Any, loop: Any) -> None:
        self.evaluator = evaluator
        self.loop = loop
        self.seen: list[dict[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.evaluator, name)

    def __call__(self) -> dict[str, float]:
        models = [self.loop.policy, self.loop.judge]
        self.seen.append({
            "on_meta": any(p.is_meta for m in models for p in m.parameters()),
            "checksums": [_checksum(m) for m in models],
        })  # fmt: skip
        return self.evaluator()  # type: ignore[no-any-return]


def main(rank: int, world: int, port: int, model_dir: str, run_dir: str, out: str) -> None:
    if world > 1:  # what torchrun / srun set: each process knows its rank before anything is built
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), NODE_RANK=str(rank), WORLD_SIZE=str(world),
                          LOCAL_RANK="0")  # fmt: skip
    from _runs import FAST
    from hydra import compose, initialize_config_dir

    import rlanything_core.assembly.train_app as train
    from rlanything_core.conf import CONF_DIR

    loader = "rlanything_core.lightning.loading.causal_lm_on_rank0"
    model = f"{{_target_:{loader},pretrained_model_name_or_path:'{model_dir}',dtype:float32}}"
    overrides = [
        *FAST, f"run_dir={run_dir}", "eval_only=true", "eval.games=2", "eval.runs=2", "setting.eval_max_steps=4",
        "~model.policy", f"+model.policy={model}", "~model.judge", f"+model.judge={model}",
        f"+model.tokenizer='{model_dir}'",
    ]  # fmt: skip
    if world > 1:
        overrides += ["trainer.strategy=fsdp2", f"trainer.num_nodes={world}", "trainer.devices=1",
                      "++fsdp.param_dtype=float32", "++fsdp.activation_checkpointing=false"]  # fmt: skip
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose("train", overrides=overrides)
    build = train.build_run
    probes: list[Probe] = []
    built_on_meta: list[bool] = []

    def probed(cfg: Any) -> Any:
        run = build(cfg)
        built_on_meta.append(any(p.is_meta for p in run.loop.models.parameters()))
        probes.append(Probe(run.loop.evaluator, run.loop))
        run.loop.evaluator = probes[-1]
        return run

    train.build_run = probed  # the real build; only the evaluator is wrapped
    from rlanything_core.assembly.agent import close_shared_env_pools

    train.run_training(cfg)
    close_shared_env_pools()
    record = {"seen": probes[0].seen, "built_on_meta": built_on_meta[0]}
    Path(out, f"rank{rank}_of_{world}.json").write_text(json.dumps(record))


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:4]), *sys.argv[4:7])  # type: ignore[call-arg]
