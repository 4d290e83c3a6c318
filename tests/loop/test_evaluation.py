"""AgentEvaluator on the real ALFWorld engine and planner with the tiny models: per-episode outcomes for the paired
statistics, the judge-only probe equal to a full evaluation's process accuracy, the planner-labelled probe file that
later evaluators read instead of planning again, and a judge limited to a prefix."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.alfworld, pytest.mark.slow]


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """The evaluator of a small ALFWorld run, its metrics and its episodes (one full evaluation, shared)."""
    from hydra import compose, initialize_config_dir

    from rlanything_core.assembly import build_run
    from rlanything_core.assembly.agent import close_shared_env_pools
    from rlanything_core.conf import CONF_DIR

    run_dir = tmp_path_factory.mktemp("eval")
    overrides = ["+setting=alfworld", "arm=full", f"run_dir={run_dir}", "eval.games=2", "eval.runs=2",
                 "eval.oracle_episodes=3", "setting.eval_max_steps=3", "setting.train_games=2",
                 "setting.env_workers=1", "progress=false", f"++eval.probe_file={run_dir / 'probe.json'}",
                 "+eval.oracle_deadline_s=300"]  # fmt: skip  # the real planner in forked processes, none past it
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose("train", overrides=overrides)
    evaluator = build_run(cfg).loop.evaluator
    metrics = evaluator()
    yield evaluator, metrics, list(evaluator.last_outcomes)
    close_shared_env_pools()


def _process_key(key: str) -> bool:
    return "process" in key or "oracle" in key


def test_every_episode_is_kept_by_split_game_and_run(evaluated) -> None:  # type: ignore[no-untyped-def]
    evaluator, metrics, outcomes = evaluated
    assert [(o.split, o.run) for o in outcomes] == [(s, r) for s in ("in_distribution", "out_of_distribution")
                                                     for _ in range(2) for r in range(2)]  # fmt: skip
    for split in evaluator.splits:
        mine = [o for o in outcomes if o.split == split.name]
        assert [o.task_id for o in mine] == [t for t in split.task_ids for _ in range(2)]
        assert metrics[f"{split.name}/success_rate"] == sum(o.won for o in mine) / len(mine)
        assert all(1 <= o.steps <= 3 for o in mine)


def test_the_judge_probe_equals_the_full_evaluations_process_accuracy(evaluated) -> None:  # type: ignore[no-untyped-def]
    evaluator, metrics, _ = evaluated
    keys = [k for k in metrics if _process_key(k)]
    assert keys and evaluator.judge_accuracy() == {k: metrics[k] for k in keys}  # same episodes, same votes


def test_a_judge_limited_to_a_prefix_leaves_the_policy_metrics_alone(evaluated) -> None:  # type: ignore[no-untyped-def]
    evaluator, metrics, outcomes = evaluated
    evaluator.judge_episodes = 1
    try:
        limited = evaluator()
    finally:
        evaluator.judge_episodes = None
    assert evaluator.last_outcomes == outcomes  # the same episodes at every call
    for key in ("in_distribution/success_rate", "out_of_distribution/avg_steps"):
        assert limited[key] == metrics[key]
    assert limited["in_distribution/judge_outcome_bacc"] in (0.0, 1.0)  # one judged episode: right or wrong
    with pytest.raises(ValueError, match="judge_episodes"):
        type(evaluator)(evaluator.collector, evaluator.splits, judge_episodes=0)


def test_a_later_evaluator_reads_the_probe_file_and_never_plans(evaluated) -> None:  # type: ignore[no-untyped-def]
    evaluator, metrics, _ = evaluated
    assert evaluator.probe_file is not None and evaluator.probe_file.is_file()  # saved by the first evaluation

    def no_planner(task, actions):  # type: ignore[no-untyped-def]
        raise AssertionError("the planner ran although the probe file holds the labels")

    assert evaluator.oracle_deadline_s == 300  # +eval.oracle_deadline_s reaches the evaluator
    later = type(evaluator)(evaluator.collector, evaluator.splits, judge=evaluator.judge, oracle=no_planner,
                            oracle_episodes=3, seed=evaluator.seed, probe_file=evaluator.probe_file,
                            oracle_deadline_s=300)  # fmt: skip
    assert later.judge_accuracy() == {k: v for k, v in metrics.items() if _process_key(k)}
    assert sum(len(p.episodes) for p in later.probes.values()) == 2 * 3  # oracle_episodes per split
    assert all(p.left_out == [] for p in later.probes.values())  # every episode labelled within the deadline


def test_a_probe_file_of_other_evaluation_settings_is_refused(evaluated) -> None:  # type: ignore[no-untyped-def]
    evaluator, _, _ = evaluated
    with pytest.raises(ValueError, match="other evaluation settings .*oracle_episodes: file 3 vs now 2"):
        type(evaluator)(evaluator.collector, evaluator.splits, judge=evaluator.judge, oracle_episodes=2,
                        seed=evaluator.seed, probe_file=evaluator.probe_file, oracle_deadline_s=300)  # fmt: skip
    # labelled under a deadline, the file is not another run's without one (it may leave slow rooms out)
    with pytest.raises(ValueError, match="oracle_deadline_s: file 300 vs now None"):
        type(evaluator)(evaluator.collector, evaluator.splits, judge=evaluator.judge, oracle_episodes=3,
                        seed=evaluator.seed, probe_file=evaluator.probe_file)  # fmt: skip
    with pytest.raises(ValueError, match="oracle_deadline_s: expected > 0"):
        type(evaluator)(evaluator.collector, evaluator.splits, oracle_deadline_s=0)
