"""The encoder scorer policy and encoder judge (model=minilm-scorer) through the real loop: rollouts on real games,
the trainer's recomputed old log-probs equal the rollout's, and the policy and judge are updated."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from _runs import FAST
from hydra import compose, initialize_config_dir

from rlanything_core.assembly import build_run  # noqa: E402
from rlanything_core.conf import CONF_DIR
from rlanything_core.loop.protocol import source_iteration  # noqa: E402
from rlanything_core.types import RolloutBatch, TrainingRows  # noqa: E402

pytestmark = pytest.mark.slow


def test_the_scorer_loop_recomputes_the_rollout_log_probs_and_updates_both_models(tmp_path: Path) -> None:
    # FAST: one-room TextWorld quests a near-uniform policy wins often enough for both models to get a signal
    overrides = [o for o in FAST if not o.startswith(("model.temperature", "model.judge_temperature"))]
    overrides += ["model=minilm-scorer", "model.temperature=5", "iterations=2", "arm=policy_judge",
                  "setting.env_workers=1"]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="train", overrides=[*overrides, f"run_dir={tmp_path / 'probe'}"])
        fit_cfg = compose(config_name="train", overrides=[*overrides, f"run_dir={tmp_path / 'run'}"])
    run = build_run(cfg)
    judge, judged = run.loop.driver.judge_collector, []
    original = judge.judge

    def keep(episodes: Any, **kwargs: Any) -> Any:  # the judged episodes: the records with the rollout's log-probs
        out = original(episodes, **kwargs)
        judged.extend(out[0])
        return out

    judge.judge = keep
    data = source_iteration(run.loop.driver, 0)
    assert data.policy is not None and data.judge is not None, "no rows: the test would prove nothing"
    batch = RolloutBatch.from_episodes(judged, pad_id=0)
    assert batch.judge_rows is not None
    steps = [s for e in judged for s in e.steps]
    samples = [j for s in steps for j in s.judge]
    assert run.loop.judge_update is not None
    for update, rows, records in ((run.loop.policy_update, batch.policy_rows, steps),
                                  (run.loop.judge_update, batch.judge_rows, samples)):  # fmt: skip
        training = TrainingRows(rows, torch.zeros(rows.num_rows), torch.zeros(rows.num_rows, dtype=torch.int64))
        recorded = torch.tensor([x for r in records for x in r.logprobs])  # row-major, as the mask selects
        recomputed = update.old_logprobs(training)[rows.response_mask].cpu()
        assert torch.isfinite(recorded).all() and recorded.numel() == rows.num_rows  # one pseudo-token per row
        assert torch.allclose(recomputed, recorded, atol=1e-4)
    run = build_run(fit_cfg)  # a fresh run (the probe above consumed iteration 0 of its pool)
    before = {k: v.clone() for k, v in run.loop.policy.state_dict().items()}
    run.loop.run()
    history = run.loop.update_history
    assert sum(h.get("policy/updates", 0.0) for h in history) >= 1
    assert sum(h.get("judge/updates", 0.0) for h in history) >= 1
    after = run.loop.policy.state_dict()
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert changed and all(not k.startswith("encoder.bert.embeddings") for k in changed)  # frozen parts stay
    assert (tmp_path / "run" / "checkpoints" / "last.ckpt").is_file()


@pytest.mark.alfworld
def test_ablate_warm_starts_the_scorer_and_the_arms_load_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rlanything_core.ablation import runs as ablation_runs

    monkeypatch.setenv("RLANYTHING_CACHE", str(tmp_path / "cache"))
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose("ablate", overrides=["+setting=alfworld", "+profile=smoke"])
    assert cfg.model.name == "minilm-scorer"  # the ALFWorld default
    target = ablation_runs.warm_start_policy(cfg, 0, tmp_path / "out")
    assert target is not None and target.is_file()
    from rlanything_core.models.scorer import minilm_scorer

    policy = minilm_scorer()[0]
    policy.load_state_dict(torch.load(target, map_location="cpu", weights_only=True))  # what model.policy_init does
    assert list((tmp_path / "cache" / "warm_start").glob("encoder-*.pt"))  # cached for the other seeds and arms
