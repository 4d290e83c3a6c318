"""A multi-rank ``eval_only`` run evaluates the models every rank holds, set up as a fit sets them up.

``eval_only`` used to call the evaluator directly: ``configure_model`` never ran, so a rank that built the models on
the meta device (``causal_lm_on_rank0``, what the 7B configs use) evaluated meta tensors, and the module was never
sharded nor put on the strategy's device. Now the evaluation runs through ``trainer.test``. Two processes (the
launcher's variables set as torchrun would, FSDP2 over gloo, fp32), the policy and judge read by rank 0 only: both
ranks evaluate (the TextWorld evaluator is sharded) with rank 0's weights, and ``eval.json`` / ``eval_outcomes.json``
are those of a one-process ``eval_only`` run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from _runs import REPO, env

from rlanything_core.testing.processes import free_port, run_ranks

pytestmark = pytest.mark.slow

WORKER = Path(__file__).with_name("_eval_only_worker.py")


def _launch(world: int, model_dir: Path, run_dir: Path, out: Path) -> None:
    port = free_port()
    base = env()
    for var in ("RANK", "LOCAL_RANK", "NODE_RANK", "WORLD_SIZE"):
        base.pop(var, None)
    run_ranks(
        [[sys.executable, str(WORKER), str(r), str(world), str(port), str(model_dir), str(run_dir), str(out)]
         for r in range(world)],
        timeout=600, cwd=REPO, env=base,
    )  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from rlanything_core.models.tiny import tiny_model_and_tokenizer

    base = tmp_path_factory.mktemp("eval_only")
    model, tokenizer = tiny_model_and_tokenizer("smollm2", hidden=64, layers=2, seed=0)
    model.save_pretrained(base / "model")
    tokenizer.save_pretrained(base / "model")
    out = base / "out"
    out.mkdir()
    _launch(1, base / "model", base / "single", out)
    _launch(2, base / "model", base / "two", out)
    files = ("eval.json", "eval_outcomes.json")
    records = {w: [json.loads((out / f"rank{r}_of_{w}.json").read_text()) for r in range(w)] for w in (1, 2)}
    return {
        "built_on_meta": [r["built_on_meta"] for r in records[2]],
        "seen": {w: [r["seen"] for r in records[w]] for w in (1, 2)},
        "single": {f: json.loads((base / "single" / f).read_text()) for f in files},
        "two": {f: json.loads((base / "two" / f).read_text()) for f in files},
    }


def test_every_rank_evaluates_rank0s_weights(runs: dict[str, Any]) -> None:
    assert runs["built_on_meta"] == [False, True]  # only rank 0 read the weights
    (single,) = runs["seen"][1]
    assert len(single) == 1 and not single[0]["on_meta"]
    for seen in runs["seen"][2]:  # rank 1 built both models on meta: configure_model filled them before evaluating
        assert len(seen) == 1 and not seen[0]["on_meta"]
        assert seen[0]["checksums"] == single[0]["checksums"]


def test_the_evaluation_is_the_one_process_evaluation(runs: dict[str, Any]) -> None:
    assert runs["two"]["eval.json"] == runs["single"]["eval.json"]
    assert runs["two"]["eval_outcomes.json"] == runs["single"]["eval_outcomes.json"]
    assert len(runs["single"]["eval_outcomes.json"]["outcomes"]) == 2 * 2  # games x runs
