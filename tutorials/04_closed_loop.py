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
# # 04 · The closed loop on ALFWorld
#
# One iteration of RLAnything: roll out the policy on tasks from the pool, let the judge vote `m` times on every step,
# integrate `R = O + λ·mean(votes)` into per-step advantages, update the policy, update the judge with consistency
# targets, then build critic feedback and rewrite tasks that left the difficulty band; the rewrites are rolled out and
# accepted or rejected next iteration.
#
# Here the whole loop runs for a few iterations on real ALFWorld games with tiny models (CPU, a few minutes), built
# from the same Hydra config as `python experiments/train.py +setting=alfworld +profile=smoke model=tiny`. Tiny random models
# rarely win, so expect few updates: the point is to see every stage and its metrics. `experiments/ablate.py` is where
# warm-started models are compared arm by arm.

# %%
import csv
import json
import sys
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

REPO = Path.cwd().parent if Path.cwd().name == "tutorials" else Path.cwd()
sys.path.insert(0, str(REPO))
from rlanything_core.assembly import build_run  # the same wiring experiments/train.py uses
from rlanything_core.conf import CONF_DIR

run_dir = Path(tempfile.mkdtemp(prefix="rlanything-loop-"))
with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
    cfg = compose(config_name="train", overrides=[
        "+setting=alfworld", "+profile=smoke", "model=tiny", "iterations=3", "setting.env_workers=1",
        "model.temperature=5", "model.judge_temperature=5", f"run_dir={run_dir}",
    ])
print(OmegaConf.to_yaml(cfg.arm))

# %% [markdown]
# ## Build and run
#
# `build` validates the config (a band outside [0, 1], `m < 1`, a split without games or a GPU strategy on this CPU
# machine are refused before any work), then wires the parts: the task pool, the agent and judge collectors, the
# integrator, the losses, the environment adaptation and the `RLAnythingLoop`
# (`rlanything_core/loop/rlanything_loop.py`), whose `run()` reads top to bottom: collect, judge, rows, adapt, update,
# checkpoint, evaluate. Lightning Fabric provides the device, CSV logging and atomic per-iteration checkpoints
# (rerunning resumes exactly).

# %%
run = build_run(cfg)
run.loop.run()
print("completed iterations:", run.loop.completed, "| checkpoint:", run.loop.last.name)

# %% [markdown]
# ## What happened, per iteration

# %%
with open(run_dir / "logs" / "metrics.csv") as fh:
    rows = [{k: float(v) for k, v in r.items() if v} for r in csv.DictReader(fh)]
train = [r for r in rows if "rollout/success_rate" in r]
keys = ["rollout/success_rate", "rollout/steps", "rollout/policy_rows", "rollout/judge_rows", "rollout/judge_votes",
        "rollout/env/requests", "rollout/env/valid_candidates", "rollout/env/accepted_total", "policy/updates",
        "judge/updates"]
for r in train:
    print(f"iteration {int(r['iteration'])}: " + ", ".join(f"{k.split('/', 1)[1]}={r[k]:g}" for k in keys if k in r))

# %%
fig, axes = plt.subplots(1, 3, figsize=(13, 3.5))
its = [r["iteration"] for r in train]
for ax, names, title in [
    (axes[0], ["rollout/success_rate"], "training success rate"),
    (axes[1], ["rollout/policy_rows", "rollout/judge_rows"], "rows trained on"),
    (axes[2], ["rollout/env/requests", "rollout/env/valid_candidates", "rollout/env/accepted_total"],
     "environment adaptation"),
]:
    for name in names:
        ax.plot(its, [r.get(name, 0.0) for r in train], marker="o", label=name.split("/")[-1])
    ax.set_title(title)
    ax.set_xlabel("iteration")
    ax.legend(fontsize=8)
fig.tight_layout()

# %% [markdown]
# ## Evaluation and the task pool
#
# The module evaluates at the end of training: success rate and average steps on the in-distribution (`valid_seen`)
# and out-of-distribution (`valid_unseen`) games, the judge's outcome accuracy, and its process accuracy against the
# planner oracle. The pool keeps every decision with its reason.

# %%
for r in rows:
    if "eval/iteration" in r:
        print({k: round(v, 3) for k, v in r.items() if k.startswith("eval/")})
state = json.loads((run_dir / "pool" / "state.json").read_text())
for event in [e for e in state["events"] if e["type"] != "rate"][-8:]:
    print(event)
