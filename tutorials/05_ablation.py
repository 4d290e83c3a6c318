# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 05 · The ablation: does each component add on top of the last?
#
# The paper's Table 1 trains the same policy several ways and compares them:
#
# | arm | policy reward | judge | environment |
# |---|---|---|---|
# | Before Optimization | – | – | – |
# | Outcome Only (GRPO) | outcome `O` | – | fixed |
# | Policy | `O + λ·mean(votes)` | frozen | fixed |
# | Policy + Reward | `O + λ·mean(votes)` | trained by consistency feedback | fixed |
# | Policy + Reward + Env | `O + λ·mean(votes)` | trained | tasks rewritten toward the band |
# | Step-only | `mean(votes)` of the optimized judge | (from the full arm) | fixed |
#
# `experiments/ablate.py` runs every arm from the same warm-started policy and the same weak judge, for each seed, and
# writes the table, learning curves, the judge's accuracies over training and the accepted rewrites. Here it runs the
# `smoke` profile: one seed, two iterations of two ALFWorld games, a warm start on eight training games. It finishes in
# about three minutes on two CPU cores and shows the wiring and the outputs; it is far too small to rank the arms (the
# README gives the CPU default's measured table).
#
# The policy only ever learns from the training split (`valid_train`); the PDDL planner labels evaluation episodes to
# measure the judge's process accuracy and is never a training signal.

# %%
import csv
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import matplotlib.pyplot as plt
from IPython.display import Image, Markdown, display

REPO = Path.cwd().parent if Path.cwd().name == "tutorials" else Path.cwd()
results_root = Path(tempfile.mkdtemp(prefix="rlanything-ablation-"))
command = [sys.executable, "experiments/ablate.py", "+profile=smoke", f"results_root={results_root}", "run_id=tutorial"]
started = time.time()
proc = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
print(f"exit {proc.returncode} after {(time.time() - started) / 60:.1f} min")
print(proc.stdout[-3000:])
assert proc.returncode == 0, proc.stderr[-3000:]

# %% [markdown]
# ## The summary line
#
# The first line is the run's cost estimate against its budget (`experiments/ablation_budget.py`). The last line is
# for machines: the number of table rows (arms plus "before"), seeds, minutes, whether the full arm beat outcome-only
# (`true` only when its paired interval below lies wholly above 0), and the sample efficiency (environment steps the full arm needs
# to reach outcome-only's final training success, over outcome-only's steps; `na` when it never does, which is expected
# at this size).

# %%
summary = dict(item.split("=") for item in proc.stdout.strip().splitlines()[-1].split())
print(summary)
assert int(summary["arms"]) == 6 and int(summary["seeds"]) == 1
assert summary["full_beats_outcome_only"] in ("true", "false", "na")
out = results_root / "alfworld" / "tutorial"
print(sorted(p.name for p in out.iterdir()))

# %% [markdown]
# ## The table, as in the paper
#
# In-distribution (`valid_seen`) and out-of-distribution (`valid_unseen`) success of the policy, and the judge's process
# accuracy (its votes against the planner's step labels) and outcome accuracy, in %, as mean ± 95% CI half-width over
# seeds (with one seed the half-width is 0).
#
# Every arm and seed plays the same evaluation games with the same episode seeds, so each row also gets its paired
# difference from outcome-only: the mean over (seed, game) pairs of its success minus outcome-only's, with a 95%
# bootstrap interval resampling the seeds, then the games within them (All: both splits pooled). An interval wholly above 0 says the arm won more of the same games; one
# containing 0 says these games cannot tell the two apart. The last column counts each seed's policy / judge updates.

# %%
display(Markdown((out / "table.md").read_text()))
with open(out / "table.csv") as fh:
    table = list(csv.DictReader(fh))
assert [r["row"] for r in table][:2] == ["Before Optimization", "Outcome Only (GRPO)"] and len(table) == 6
print({r["row"]: (r["In-Dom diff"], r["In-Dom diff low"], r["In-Dom diff high"]) for r in table})

# %% [markdown]
# ## Learning curves and the judge
#
# `curves.png` plots training success per iteration and arm (mean over seeds, band from the lowest to the highest
# seed); `judge.png` the judge's balanced process accuracy at every evaluated iteration (arms that train the judge score
# it every `eval.judge_every` iterations between the full evaluations); `accepted.png` how many rewritten tasks the full arm's pool
# accepted. Every run keeps its own `metrics.csv`, so any other view is a few lines away: here the training success
# of each arm, per iteration.

# %%
display(Image(filename=str(out / "curves.png")))
display(Image(filename=str(out / "judge.png")))

# %%
runs = json.loads((out / "runs.json").read_text())
fig, ax = plt.subplots(figsize=(6, 3.5))
for name, run_dir in runs.items():
    with open(out / run_dir / "logs" / "metrics.csv") as fh:  # run_dir is relative to out
        rows = [{k: float(v) for k, v in r.items() if v} for r in csv.DictReader(fh)]
    train = [r for r in rows if "rollout/success_rate" in r]
    ax.plot([r["iteration"] for r in train], [r["rollout/success_rate"] for r in train], marker="o", label=name)
ax.set_xlabel("iteration")
ax.set_ylabel("training success rate")
ax.legend(fontsize=7)
fig.tight_layout()

# %% [markdown]
# ## Resuming
#
# Every run checkpoints atomically after each iteration, and `ablate.py` skips the runs that are complete: rerunning the
# same command after a crash (or to add seeds: `seeds=[0,1,2]`) continues where it stopped. A complete run is not
# retrained, so a second call only rebuilds the table and plots.

# %%
started = time.time()
again = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
assert again.returncode == 0, again.stderr[-3000:]
print(f"second call: {time.time() - started:.0f} s;", again.stdout.strip().splitlines()[-1])
assert "training in" not in again.stdout  # nothing was retrained

# %% [markdown]
# ## What the CPU default measured
#
# The smoke profile above only proves the wiring. `make main` (the default profile) compares the warm start ("before"),
# outcome-only and the full system over two seeds: 12 iterations of 4 tasks x 4 rollouts per arm from a training pool
# stratified over the six task types, 4 minibatch updates per iteration, balanced judge targets, the warm-started
# all-MiniLM-L6-v2 scorer and an untrained encoder judge; every arm and seed is evaluated on the whole `valid_seen`
# (140 games) and `valid_unseen` (134 games) splits with the same episodes (paired). Its committed results,
# `experiments/results/alfworld/default/` (with `episodes.csv`, one line per evaluation episode), are shown below;
# `docs/results.md` gives the command, the timings and the reading. In short, at this scale:
#
# - **RL improves the warm start**: outcome-only ends 4.7 points above "before" on both splits pooled, with a 95%
#   seed-level interval of [0.0, +9.1]: at the edge of what this design detects (5.4 points planned);
# - **the full system does not beat outcome-only**: it is 3.8 points *below* it pooled, [-7.7, -0.2] (In-Dom -5.0
#   [-10.0, 0.0], OOD -2.6 [-9.0, +3.4]), the opposite of the paper's ordering;
# - **the judge's balanced process accuracy** on the planner-labelled probe steps went from 54.9 to 59.0 In-Dom
#   (mean of the two seeds), short of issue 27's +10 points; out of distribution one seed's fell to 41.7.
#
# On the task types the warm start rarely wins (`+profile=hard`, three seeds, below), the full system ends 7.4 points
# above outcome-only pooled, [0.0, +14.3], and 7.4 above the judge without adaptation, [+1.4, +13.1]: environment
# adaptation adds on top of the rest there, at the edge of what three seeds detect.
#
# The five-seed `+profile=full` (the paper's Table 1 rows: before, outcome-only, policy, policy + reward, full; last
# below) resolves one ordering: the policy trained on integrated rewards ends above the warm start (+3.1 points pooled,
# [+0.4, +5.8]). Training the judge and adapting the environment add nothing measurable on the whole pool (full vs
# outcome-only +0.1, [-6.9, +8.5]). The judge's balanced process accuracy on the probe moves +2.1 points In-Dom on
# average from the untrained judge, short of +10; yet on 665 held-out planner-labelled steps the AUC of its P(+1) rose
# by +0.28 in 4 of 5 seeds (`experiments/judge_study.py`): the judges learn to rank progress steps while their votes
# lean to one side, which the vote-based accuracy and the 12-progress-step probe cannot see. The seeds spread more than
# the games: from the same warm start the full arm ended between 28.6% and 49.3%
# In-Dom, so the design detects 11.9 points instead of the 3.4 it planned. `docs/results.md` gives every paired
# difference.

# %%
default = REPO / "experiments" / "results" / "alfworld" / "default"  # committed with the exact command in meta.json
print(json.loads((default / "meta.json").read_text())["command"])
display(Markdown((default / "table.md").read_text()))
display(Image(filename=str(default / "curves.png")))
display(Image(filename=str(default / "judge.png")))

# %%
hard = REPO / "experiments" / "results" / "alfworld" / "hard"  # clean, cool and pick-two games only
print(json.loads((hard / "meta.json").read_text())["command"])
display(Markdown((hard / "table.md").read_text()))
display(Image(filename=str(hard / "curves.png")))

# %%
full = REPO / "experiments" / "results" / "alfworld" / "full"  # the paper's Table 1 rows, five seeds
print(json.loads((full / "meta.json").read_text())["command"])
display(Markdown((full / "table.md").read_text()))
display(Image(filename=str(full / "curves.png")))  # training success per iteration: mean over seeds, band min-max
display(Image(filename=str(full / "judge.png")))  # the judge, per evaluated iteration: mean over seeds, band min-max
