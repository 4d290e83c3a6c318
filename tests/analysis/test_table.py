"""analysis.table and ablation.budget: the table from runs, the summary's verdict, the estimate."""

from __future__ import annotations

import csv
import io

import pytest
from omegaconf import OmegaConf

from rlanything_core.ablation.budget import AblationPlan, StepCosts, estimate_seconds
from rlanything_core.analysis.results import ArmRun, game_success
from rlanything_core.analysis.table import build_table, full_beats_outcome_only, render_csv, render_markdown

SPLITS = {"in_distribution": "valid_seen", "out_of_distribution": "valid_unseen"}
CFG = OmegaConf.create({"setting": {"name": "alfworld", "eval_splits": SPLITS}})


def run(arm: str, seed: int, wins: list[bool], *, games: list[str] | None = None) -> ArmRun:
    """An arm's run whose In-Dom and OOD games are won as ``wins`` says (one run per game)."""
    names = games or [f"g{k}" for k in range(len(wins))]
    outcomes = [
        {"split": split, "task_id": g, "run": 0, "won": w, "steps": 5} for split in SPLITS for g, w in zip(names, wins)
    ]
    rate = sum(wins) / len(wins)
    final = {"eval/in_distribution/success_rate": rate, "eval/out_of_distribution/success_rate": rate}
    return ArmRun(arm, seed, final, outcomes=outcomes, policy_updates=4, judge_updates=4 if arm == "full" else 0)


def results(full_wins: list[bool], outcome_wins: list[bool]) -> dict[str, list[ArmRun]]:
    return {
        "before": [run("before", s, outcome_wins) for s in (0, 1)],
        "outcome_only": [run("outcome_only", s, outcome_wins) for s in (0, 1)],
        "full": [run("full", s, full_wins) for s in (0, 1)],
    }


def test_a_clear_paired_gain_makes_full_beat_outcome_only() -> None:
    base = [k % 4 == 0 for k in range(32)]  # 8 of 32 games won
    better = [w or k % 4 == 1 for k, w in enumerate(base)]  # the same 8 and 8 more
    table = build_table(CFG, results(better, base), samples=2000, seed=0)
    d = table.paired["full"][0]
    assert d is not None and d.estimate == pytest.approx(25.0) and d.low > 0 and d.units == 64  # 2 seeds x 32
    assert table.paired["outcome_only"] == [None, None, None]  # the reference row
    pooled = table.paired["full"][2]  # both splits: every evaluation game of both seeds
    assert pooled is not None and pooled.estimate == pytest.approx(25.0) and pooled.units == 128
    assert full_beats_outcome_only(table) == "true"
    assert table.updates["full"] == [(0, 4, 4), (1, 4, 4)]
    text = render_markdown(table, "caption")
    assert "| Policy + Reward + Env |" in text and "+25.0 [" in text and "| ref |" in text and "4/4, 4/4" in text
    rows = {r["row"]: r for r in csv.DictReader(io.StringIO(render_csv(table)))}
    assert float(rows["Policy + Reward + Env"]["In-Dom diff"]) == pytest.approx(25.0)
    assert rows["Policy + Reward + Env"]["In-Dom pairs"] == "64" and rows["Outcome Only (GRPO)"]["In-Dom diff"] == ""
    assert rows["Policy + Reward + Env"]["policy_updates"] == "4;4" and rows["Before Optimization"]["seeds"] == "2"


def test_equal_or_worse_arms_never_beat_outcome_only_even_with_a_higher_mean() -> None:
    base = [k % 4 == 0 for k in range(32)]
    assert full_beats_outcome_only(build_table(CFG, results(base, base), samples=500)) == "false"
    one_more = list(base)
    one_more[1] = one_more[2] = True  # a higher mean by one game (two won, one lost): the old mean comparison
    one_more[0] = False  # said "true"
    table = build_table(CFG, results(one_more, base), samples=2000)
    for d in table.paired["full"]:  # In-Dom, OOD, and both pooled (the verdict's column)
        assert d is not None and d.estimate > 0 and d.low <= 0
    assert full_beats_outcome_only(table) == "false"


def test_runs_without_outcomes_give_na_and_unpaired_games_are_refused() -> None:
    base = [True, False, False, True]
    no_outcomes = results(base, base)
    for r in no_outcomes["full"]:
        r.outcomes = None
    table = build_table(CFG, no_outcomes, samples=100)
    assert table.paired["full"] == [None, None, None] and full_beats_outcome_only(table) == "na"
    assert "–" in render_markdown(table, "c")
    mismatched = results(base, base)
    mismatched["full"][0] = run("full", 0, base, games=["a", "b", "c", "d"])
    with pytest.raises(ValueError, match="not paired"):
        build_table(CFG, mismatched, samples=100)
    with pytest.raises(ValueError, match="no evaluation episode"):
        game_success([run("full", 0, base)], "nonexistent_split")


def test_game_success_averages_each_games_runs() -> None:
    r = ArmRun("full", 3, {}, outcomes=[{"split": "s", "task_id": "g", "run": k, "won": k == 0, "steps": 1}
                                        for k in range(4)])  # fmt: skip
    assert game_success([r], "s") == {(3, "g"): 0.25}


def plan(**changes: object) -> AblationPlan:
    base = dict(seeds=2, jobs=2, arms=("outcome_only", "full"), iterations=2, episodes_per_iteration=4,
                rewrite_episodes=4, max_steps=10, eval_max_steps=10, eval_episodes=8, judge_episodes=None,
                oracle_episodes=2, judge_every=1)  # fmt: skip
    return AblationPlan(**{**base, **changes})  # type: ignore[arg-type]


def test_the_estimate_adds_up_the_costs() -> None:
    c = StepCosts(policy_s=1, engine_s=0, judge_s=1, planner_s=10, update_s=1, run_overhead_s=100, warm_start_s=1000,
                  success=0.0, won_steps=5)  # fmt: skip
    parts = estimate_seconds(plan(), c)
    # every episode runs to its limit of 10 steps; evaluation: 2 splits x 8 episodes x 10 steps x 1 s, plus the judge
    # on all 8 and on the probe set's 2 episodes where a judge votes ("before" and full, not outcome-only); the
    # planner labels the probe set once, in "before"
    judged_eval = 2 * (8 * 10 * 1 + 8 * 10 * 1 + 2 * 10 * 1)
    assert parts["evaluation"] == 2 * judged_eval + 2 * 8 * 10 + 2 * 2 * 10 * 10
    # training: outcome-only 2 x 4 episodes x 10 steps x (policy + update); full adds rewrites and the judge
    assert parts["training"] == 2 * 4 * 10 * 2 + 2 * 8 * 10 * 3
    assert parts["judge_probes"] == 1 * 2 * 2 * 10 * 1  # after iteration 1 only: the judge on the probe set
    assert parts["overhead"] == 3 * 100
    per_seed = parts["evaluation"] + parts["training"] + parts["judge_probes"] + parts["overhead"]
    assert parts["total"] == 1000 + per_seed  # two seeds on two cores in parallel
    assert estimate_seconds(plan(jobs=1), c)["total"] == 1000 + 2 * per_seed
    assert estimate_seconds(plan(judge_episodes=1), c)["evaluation"] < parts["evaluation"]
    with pytest.raises(ValueError, match="positive"):
        estimate_seconds(plan(eval_episodes=0), c)
    # two PPO passes pay the update once more per trained-on step: outcome-only 80 steps, full 160
    assert estimate_seconds(plan(update_passes=2), c)["training"] == parts["training"] + 80 + 160
    # a seed that reuses "before" and outcome-only runs only the full arm: evaluation, training, overhead of full
    reused = estimate_seconds(plan(reused_seeds=1, reused_arms=("before", "outcome_only")), c)
    full_only = judged_eval + 2 * 8 * 10 * 3 + 100 + 1 * 2 * 2 * 10 * 1
    assert reused["total"] == 1000 + (per_seed + full_only) / 2


def test_the_default_profile_is_estimated_within_its_budget() -> None:
    from hydra import compose, initialize_config_dir

    from rlanything_core.ablation.budget import plan_from_config
    from rlanything_core.conf import CONF_DIR

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        for profile in ([], ["+profile=smoke"]):
            cfg = compose("ablate", overrides=["+setting=alfworld", *profile])
            total = estimate_seconds(*plan_from_config(cfg, cores=2))["total"]
            assert total <= 60 * float(cfg.budget.minutes), (profile, total / 60)


def test_the_estimate_prints_for_a_profile_without_running_it(capsys: pytest.CaptureFixture[str]) -> None:
    from rlanything_core.ablation.budget import main

    main(["+profile=smoke"])
    parts = dict(item.split("=") for item in capsys.readouterr().out.split(" (")[0].split())
    assert float(parts["total"]) <= float(parts["budget"]) == 3.0


def test_the_table_states_its_designs_minimum_detectable_difference() -> None:
    from rlanything_core.analysis.power import minimum_detectable_difference

    base = [k % 4 == 0 for k in range(32)]
    better = [w or k % 4 == 1 for k, w in enumerate(base)]
    cfg = OmegaConf.merge(CFG, {"stats": {"pair_sd": 0.4, "seed_sd": 0.02}})
    table = build_table(cfg, results(better, base), samples=500)
    power = table.power[0]
    assert power is not None and (power.seeds, power.units_per_seed) == (2, 32)
    assert power.planned == pytest.approx(100 * minimum_detectable_difference(0.4, 32, 2, seed_sd=0.02))
    # measured on the full arm: 8 of 32 games differ by +1 in both seeds (sd sqrt(0.25 * 0.75 * 32 / 31))
    assert power.measured_on == "full"
    assert power.measured == pytest.approx(100 * minimum_detectable_difference((0.25 * 0.75 * 32 / 31) ** 0.5, 32, 2))
    text = render_markdown(table, "c")
    assert "Minimum detectable difference (80% power, two-sided 5%)" in text and f"{power.planned:.1f} points" in text
    no_outcomes = {k: [ArmRun(r.arm, r.seed, r.final) for r in v] for k, v in results(base, base).items()}
    assert build_table(CFG, no_outcomes, samples=100).power == [None, None, None]


def test_episodes_csv_holds_every_evaluation_episode_of_every_arm_and_seed() -> None:
    from rlanything_core.analysis.results import EPISODE_COLUMNS, render_episodes_csv

    base = [k % 4 == 0 for k in range(8)]
    res = results(base, base)
    text = render_episodes_csv(res, lambda seed, split: 1000 * seed + len(split))
    rows = list(csv.DictReader(io.StringIO(text)))
    assert tuple(rows[0]) == EPISODE_COLUMNS
    assert len(rows) == 3 * 2 * 2 * 8  # arms x seeds x splits x games
    first = rows[0]
    assert (first["arm"], first["seed"], first["split"], first["game"], first["run"]) == (
        "before", "0", "in_distribution", "g0", "0",
    )  # fmt: skip
    assert first["episode_seed"] == str(len("in_distribution")) and first["success"] == "1" and first["steps"] == "5"
    wins = sum(int(r["success"]) for r in rows if r["arm"] == "full" and r["seed"] == "1")
    assert wins == 2 * sum(base)  # both splits
    empty = {"full": [ArmRun("full", 0, {})]}
    assert render_episodes_csv(empty, lambda s, p: 0).strip() == ",".join(EPISODE_COLUMNS)


def test_every_shipped_arm_has_a_row_label() -> None:
    # the ablation names each run by its label (its log lines, the table's rows, the plots' legends): an arm config
    # without one crashed the ablation at its first line ("KeyError: 'e3_expert_exact'")
    from pathlib import Path

    from rlanything_core.analysis.table import LABELS

    arms = Path(__file__).resolve().parents[2] / "rlanything_core" / "conf" / "arm"
    names = {str(OmegaConf.load(path).arm.name) for path in arms.glob("*.yaml")}
    assert len(names) >= 11 and {p.stem for p in arms.glob("*.yaml")} == names  # each file names its own arm
    assert sorted(names - set(LABELS)) == []
