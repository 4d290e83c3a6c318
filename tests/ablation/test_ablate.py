"""The ablation (``python -m experiments.ablate``, the app ``rlanything_core.ablation.app``): a small TextWorld ablation
end to end (in-process arms, resume), its tables and its seed workers.

The statistics themselves are tested in tests/analysis/test_stats.py.
"""

from __future__ import annotations

import csv
import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from rlanything_core.ablation import runs as ablation_runs
from rlanything_core.ablation import workers
from rlanything_core.analysis import table as ablation_table
from rlanything_core.analysis.stats import curve
from rlanything_core.testing.processes import run_reaped
from tests.experiments._runs import FAST, REPO, env

SUMMARY_KEYS = ("arms", "seeds", "minutes", "total_minutes", "full_beats_outcome_only", "sample_efficiency")


@pytest.mark.slow
def test_a_textworld_ablation_writes_the_table_and_resumes(tmp_path: Path) -> None:
    cmd = [
        sys.executable,
        "-m", "experiments.ablate",
        *[a for a in FAST if a != "+setting=textworld"],
        "+setting=textworld",
        "iterations=2",
        "arms=[outcome_only,full,step_only]",
        "seeds=[0,1]",
        "jobs=2",  # two worker processes, one run each at a time
        "model.judge.hidden=32",  # a model's own key: reaches every arm as given (its runs' configs below)
        f"results_root={tmp_path}",
        "run_id=test",
    ]
    first = run_reaped(cmd, cwd=REPO, env=env(), text=True, timeout=900)
    assert first.returncode == 0, first.stderr[-4000:]
    last = dict(item.split("=") for item in first.stdout.strip().splitlines()[-1].split())
    assert tuple(last) == SUMMARY_KEYS
    assert last["arms"] == "4" and last["seeds"] == "2"
    assert "seed 1 [" in first.stdout  # the parent echoes its workers' progress
    assert "ablation: 8/8 runs (100%)" in first.stdout and "a fresh ablation in" in first.stdout
    assert last["full_beats_outcome_only"] in ("true", "false")

    out = tmp_path / "textworld" / "test"
    runs = json.loads((out / "runs.json").read_text())
    for name, run_dir in runs.items():  # relocatable: paths relative to the results folder
        assert run_dir == f"runs/{name}" and (out / run_dir / "logs" / "metrics.csv").is_file(), run_dir
    for name in ("table.md", "table.csv", "episodes.csv", "curves.png", "judge.png", "accepted.png", "config.yaml",
                 "meta.json"):
        assert (out / name).is_file(), name
    with open(out / "table.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["row"] for r in rows] == [
        "Before Optimization",
        "Outcome Only (GRPO)",
        "Policy + Reward + Env",
        "Step-only (optimized judge)",
    ]
    for row in rows:
        assert 0.0 <= float(row["In-Dom mean"]) <= 100.0
    # paired: every arm and seed played the same evaluation games and runs; each row's difference from outcome-only
    # pairs them (2 seeds x 1 game here)
    played = {
        run.name: sorted((o["split"], o["task_id"], o["run"]) for o in json.loads(
            (run / "eval_outcomes.json").read_text())["outcomes"])
        for run in (out / "runs").iterdir()
    }  # fmt: skip
    assert len(played) == 8 and len({json.dumps(v) for v in played.values()}) == 1
    assert rows[1]["In-Dom diff"] == "" and all(r["In-Dom pairs"] == "2" for r in rows if r is not rows[1])
    with open(out / "episodes.csv") as fh:  # every evaluation episode: 4 rows x 2 seeds x 1 game x 1 run
        episodes = list(csv.DictReader(fh))
    assert len(episodes) == 8 and {e["arm"] for e in episodes} == {"before", "outcome_only", "full", "step_only"}
    assert len({e["episode_seed"] for e in episodes if e["seed"] == "0"}) == 1  # the arms of a seed: paired
    assert len({e["episode_seed"] for e in episodes}) == 2  # the seeds: independent draws
    for row in rows[2:]:
        assert float(row["In-Dom diff low"]) <= float(row["In-Dom diff"]) <= float(row["In-Dom diff high"])
    meta = json.loads((out / "meta.json").read_text())
    assert meta["seeds"] == [0, 1] and meta["arms"] == ["outcome_only", "full", "step_only"]
    assert set(meta["updates"]) == {"outcome_only", "full", "step_only"} and set(meta["updates"]["full"]) == {"0", "1"}
    assert "In-Dom" in meta["paired_vs_outcome_only"]["full"] and meta["estimated_seconds"]["total"] > 0
    for seed in (0, 1):
        step_only = (out / "runs" / f"step_only_seed{seed}" / "config.yaml").read_text()
        assert f"full_seed{seed}/checkpoints/last.ckpt" in step_only  # the optimized judge of the same seed's full arm
        assert {p.name for p in (out / "logs").glob(f"*_seed{seed}.log")} == {
            f"{arm}_seed{seed}.log" for arm in ("before", "outcome_only", "full", "step_only")
        }  # one worker per run
    assert not (out / "init").exists()  # TextWorld has no warm start
    for run_dir in (out / "runs").iterdir():
        assert yaml.safe_load((run_dir / "config.yaml").read_text())["model"]["judge"]["hidden"] == 32, run_dir

    # a results folder committed without its checkpoints (.gitignore) keeps its finished runs
    for checkpoints in list(out.rglob("checkpoints")):
        shutil.rmtree(checkpoints)
    again = run_reaped(cmd, cwd=REPO, env=env(), text=True, timeout=900)
    assert again.returncode == 0, again.stderr[-4000:]
    assert "training in" not in again.stdout  # every run was complete: nothing retrained
    assert again.stdout.strip().splitlines()[-1].split()[4:] == first.stdout.strip().splitlines()[-1].split()[4:]
    assert again.stdout.count("]   reusing ") == 8  # it lists what it reuses: 2 seeds x (before + 3 arms)
    # the complete runs count as done from the start (no worker, not in the ETA's pace)
    assert "ablation: 8/8 runs (100%)" in again.stdout and "ablation: 0/8" not in again.stdout
    summary = dict(item.split("=") for item in again.stdout.strip().splitlines()[-1].split())
    first_minutes = float(last["minutes"])  # the whole ablation's time: both invocations
    assert float(summary["total_minutes"]) >= first_minutes + float(summary["minutes"]) - 0.11

    # another profile with the same resolved configs copies the finished runs instead of computing them
    reused = run_reaped([*cmd[:-1], "run_id=copy", "reuse_from=test"], cwd=REPO, env=env(), text=True,
                        timeout=900)  # fmt: skip
    assert reused.returncode == 0, reused.stderr[-4000:]
    assert "training in" not in reused.stdout and reused.stdout.count("reused") == 8  # 2 seeds x (before + 3 arms)
    copy = tmp_path / "textworld" / "copy"
    assert (copy / "table.csv").read_text() == (out / "table.csv").read_text()
    assert str(out) not in (copy / "runs" / "full_seed0" / "config.yaml").read_text()
    # but step_only cannot be redone there: the judge it trains on was in the full arm's checkpoint
    shutil.rmtree(out / "runs" / "step_only_seed0")
    one_seed = [a for a in cmd if not a.startswith(("seeds=", "jobs="))] + ["seeds=[0]", "jobs=1"]
    missing = run_reaped(one_seed, cwd=REPO, env=env(), text=True, timeout=900)
    assert missing.returncode != 0 and "full_seed0" in missing.stderr and "training in" not in missing.stdout


def test_a_bad_arm_order_is_refused_before_any_work(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "experiments.ablate", "arms=[step_only,full]", f"results_root={tmp_path}"]
    proc = run_reaped(cmd, cwd=REPO, env=env(), text=True, timeout=300)
    assert proc.returncode != 0 and "step_only" in proc.stderr and "full" in proc.stderr
    assert not any(tmp_path.rglob("*.ckpt"))


def test_a_worker_gets_its_seed_and_its_arm(monkeypatch: pytest.MonkeyPatch) -> None:
    from omegaconf import OmegaConf

    argv = ["rlanything ablate", "+setting=alfworld", "seeds=[3,5]", "jobs=2", "iterations=2",
            "arms=[outcome_only,full]"]
    monkeypatch.setattr(sys, "argv", argv)
    cmd = workers.worker_command(OmegaConf.create({"seeds": [3, 5]}), workers.RunJob(5, "full"))
    assert "seeds=[5]" in cmd and "arms=[full]" in cmd and "++seed_worker=true" in cmd
    assert "seeds=[3,5]" not in cmd and "jobs=2" not in cmd and "arms=[outcome_only,full]" not in cmd
    assert "iterations=2" in cmd and "+setting=alfworld" in cmd
    assert cmd[1:3] == ["-m", "rlanything_core.ablation"]  # the app itself: no checkout's script path needed
    before = workers.worker_command(OmegaConf.create({"seeds": [3, 5]}), workers.RunJob(3, "before"))
    assert "arms=[]" in before  # a worker with no arm makes the seed's "before" run only


def test_runs_are_shared_out_run_by_run_in_seed_order_once_their_prerequisites_are_done() -> None:
    Job = workers.RunJob
    arms = ["outcome_only", "full", "step_only"]
    waiting = workers.run_jobs([0, 1], arms)
    assert waiting[:4] == [Job(0, "before"), Job(0, "outcome_only"), Job(0, "full"), Job(0, "step_only")]
    done: set = set()
    started = []
    # two workers: each finishes its run before the next pick (the order a 2-worker schedule can take)
    for _ in range(2):
        job = workers.next_ready(waiting, done, arms)
        waiting.remove(job)
        started.append(job)
    # seed 0's arms wait for its "before"; seed 1's "before" does not: no core idles
    assert started == [Job(0, "before"), Job(1, "before")]
    assert workers.next_ready(waiting, done, arms) is None
    done.add(Job(0, "before"))
    assert workers.next_ready(waiting, done, arms) == Job(0, "outcome_only")
    waiting.remove(Job(0, "outcome_only"))
    # step_only waits for its seed's full arm (its judge), not for the other seed's
    assert workers.next_ready(waiting, done, arms) == Job(0, "full")
    waiting.remove(Job(0, "full"))
    assert workers.next_ready(waiting, done, arms) is None  # seed 1 still evaluating its start
    done.add(Job(1, "before"))
    assert workers.next_ready(waiting, done, arms) == Job(1, "outcome_only")
    assert workers.prerequisites(Job(2, "step_only"), ["step_only"]) == {Job(2, "before")}


def test_within_a_seed_the_costliest_arm_starts_first_by_the_budgets_estimate() -> None:
    from rlanything_core.ablation.budget import AblationPlan, arm_seconds

    Job = workers.RunJob
    arms = ["outcome_only", "policy", "policy_judge", "full"]
    plan = AblationPlan(seeds=2, jobs=2, arms=tuple(arms), iterations=12, episodes_per_iteration=16,
                        rewrite_episodes=16, max_steps=20, eval_max_steps=30, eval_episodes=137, eval_splits=2,
                        judge_episodes=16, oracle_episodes=4, judge_every=1)  # fmt: skip
    seconds = {arm: arm_seconds(plan, arm) for arm in arms}
    # the estimate ranks what a run does: rewrites and a trained judge > a trained judge > votes > none
    assert seconds["full"] > seconds["policy_judge"] > seconds["policy"] > seconds["outcome_only"] > 0
    order = workers.run_jobs([0, 1], arms, cost=seconds.__getitem__)
    assert order[:5] == [Job(0, "before"), Job(0, "full"), Job(0, "policy_judge"), Job(0, "policy"),
                         Job(0, "outcome_only")]  # fmt: skip
    assert order[5] == Job(1, "before") and len(order) == 10
    # step_only still waits for its seed's full arm however early it is listed
    order = workers.run_jobs([0], ["step_only", "full"], cost={"step_only": 9.0, "full": 1.0}.__getitem__)
    assert order == [Job(0, "before"), Job(0, "step_only"), Job(0, "full")]
    assert workers.next_ready(order[1:], {Job(0, "before")}, ["step_only", "full"]) == Job(0, "full")


def test_coding_tables_report_pass_at_1_and_the_unit_test_rewards() -> None:
    from omegaconf import OmegaConf

    coding = OmegaConf.create({"setting": {"name": "livebench", "eval_set": "livebench"}})
    assert ablation_table.columns(coding) == [("pass@1", "eval/livebench/pass@1"), ("RM UT", "eval/livebench/ut"),
                                       ("RM Detect", "eval/livebench/detect")]  # fmt: skip
    splits = {"in_distribution": "valid_seen", "out_of_distribution": "valid_unseen"}
    alfworld = OmegaConf.create({"setting": {"name": "alfworld", "eval_splits": splits}})
    columns = ablation_table.columns(alfworld)
    assert columns[0] == ("In-Dom", "eval/in_distribution/success_rate")
    assert columns[1] == ("OOD", "eval/out_of_distribution/success_rate")
    # coding runs count programs as environment steps, so their learning curves are not empty
    rows = [{"rollout/success_rate": 0.5, "rollout/rollouts": 8.0},
            {"rollout/success_rate": 0.25, "rollout/rollouts": 8.0}]
    assert curve(rows) == ([8.0, 16.0], [0.5, 0.25])


def test_a_pretrained_policy_is_not_warm_started(tmp_path: Path) -> None:
    from hydra import compose, initialize_config_dir

    from rlanything_core.conf import CONF_DIR

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        pretrained = compose("ablate", overrides=["+setting=alfworld", "model=smollm2-135m"])
        tiny = compose("ablate", overrides=["+setting=alfworld", "warm_start.enabled=false"])
    assert pretrained.warm_start.enabled  # the default is on; the pretrained model skips it rather than failing
    assert ablation_runs.warm_start_policy(pretrained, 0, tmp_path) is None
    assert ablation_runs.warm_start_policy(tiny, 0, tmp_path) is None
    assert not any(tmp_path.iterdir())


def test_the_shared_warm_start_is_the_configured_seeds_whichever_seeds_run(tmp_path: Path) -> None:
    """``seeds=[2]`` alone (the later seeds of an experiment, run on their own) starts from the same warm start as
    ``seeds=[0,1,2]``: it was the first listed seed's, so seed 2's runs would have started from another policy."""
    from hydra import compose, initialize_config_dir

    from rlanything_core.conf import CONF_DIR

    made = tmp_path / "init" / "policy_seed0.pt"
    made.parent.mkdir()
    made.write_bytes(b"the seed-0 warm start")
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        later = compose("ablate", overrides=["+setting=alfworld", "seeds=[2]"])
        own = compose("ablate", overrides=["+setting=alfworld", "seeds=[2]", "warm_start.seed=2"])
    assert ablation_runs.warm_start_policy(later, 2, tmp_path) == made  # found: nothing is fitted
    assert later.warm_start.seed == 0 and own.warm_start.seed == 2


def test_the_models_own_overrides_are_the_ones_passed_on_as_given() -> None:
    from rlanything_core.ablation.runs import model_overrides

    task = ["+setting=alfworld", "+model.policy.bucket_rows=8", "model.judge.max_tokens=96", "model.temperature=2",
            "~model.policy.cache_size", "seeds=[0]"]  # fmt: skip
    assert model_overrides(task) == ["+model.policy.bucket_rows=8", "model.judge.max_tokens=96",
                                     "~model.policy.cache_size"]  # fmt: skip
