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
# # 06 · A GUI agent on real web pages (MiniWoB++ in Chromium)
#
# The paper's first setting is a GUI agent: a policy acting on real applications, a generative judge voting on every
# GUI step, the task's own verifier as the outcome, and tasks made easier or harder by adding or removing hints in the
# instruction. Here the applications are **MiniWoB++ pages in a real headless Chromium** (Debian's `chromium` and
# `chromium-driver`, PyPI `miniwob`), fully offline:
#
# 1. one episode: the instruction, the page as DOM text, the screenshot, the DOM-derived candidate actions, the page's
#    checker as the outcome;
# 2. a tiny policy plays a few pages and a tiny judge votes `m` times on each step with the paper's GUI rubric;
# 3. a hint rewrite of a task, validated (the verifier never changes), rolled out and accepted or rejected by the pool's
#    acceptance rule;
# 4. a few iterations of the whole loop (`+setting=miniwob +profile=smoke`) with plots.
#
# The models are tiny and random (CPU, minutes): the point is every stage and its data, not competence.

# %%
import csv
import sys
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import torch

from rlanything_core.envs.miniwob.env import MiniwobEnv, MiniwobEnvFactory, shutdown_browsers
from rlanything_core.envs.miniwob.tasks import CURATED_TASKS, MiniwobTaskSpec

torch.set_num_threads(1)
print(f"{len(CURATED_TASKS)} curated pages:")
for t in CURATED_TASKS.values():
    print(f"  {t.level.value:6s} {t.family:10s} {t.name}")

# %% [markdown]
# ## 1 · One episode
#
# `reset(task)` opens the page (a browser is borrowed from this process's idle browsers), seeds its problem generator
# and lifts its wall-clock limit. The observation holds the instruction (the page's utterance plus the task's hints),
# one line per DOM element, the candidate actions derived from the DOM and the task's fields, and the screenshot
# (for vision-language policies).

# %%
env = MiniwobEnv(max_steps=8)
obs = env.reset(MiniwobTaskSpec("login-user", seed=1))
print("instruction:", obs.instruction)
print("fields:", obs.fields)
print(obs.dom_text)
print("candidates:", *obs.candidates, sep="\n  ")
plt.figure(figsize=(2.4, 3.2))
plt.imshow(obs.screenshot)
plt.axis("off")
plt.title("login-user, seed 1")

# %% [markdown]
# Actions are strings: `click [ref] ...`, `type "value" into [ref] ...`, `press <Key>`, `DONE`, `FAIL`. An action on
# an element that is not on the page is an *invalid action*: counted, reported in the next observation, and the
# episode goes on. The outcome is the page checker's raw reward in [-1, 1].

# %%
fields = dict(obs.fields)
def pick(o, *parts):
    return next(c for c in o.candidates if all(p in c for p in parts))

step = env.step("click [999] button")
print("invalid:", step.observation.invalid_action, "| invalid actions so far:", env.invalid_actions)
for action in [pick(step.observation, f'type "{fields["username"]}"', "#username"),
               pick(step.observation, f'type "{fields["password"]}"', "#password")]:
    step = env.step(action)
    print(action, "->", [line for line in step.observation.dom_text.splitlines() if "value=" in line])
step = env.step(pick(step.observation, "Login"))
print("done:", step.done, "| outcome:", env.verify())
env.close()

# %% [markdown]
# ## 2 · A policy plays, a judge votes
#
# The policy scores the candidate actions like ALFWorld's admissible commands (`LikelihoodSelector`, here by mean
# per-token log-likelihood: a fresh model would otherwise always pick the shortest string). Any scorer behind the
# `ActionSelector` protocol works. `GuiEpisode` makes the page an ordinary multi-step `AgentEnv`, so the
# `AgentCollector` and the `JudgeCollector` are the ones of the text settings, given the web-page prompt and the
# paper's GUI rubric.

# %%
from rlanything_core.collect.action_selection import LikelihoodSelector
from rlanything_core.collect.agent import AgentCollector, SequentialRunner
from rlanything_core.collect.gui_prompts import GUI_JUDGE_RUBRIC, gui_agent_messages, gui_judge_messages
from rlanything_core.collect.judge import JudgeCollector, ScoredVotes
from rlanything_core.generation.transformers_backend import TransformersBackend
from rlanything_core.models.tiny import tiny_model_and_tokenizer

policy, tok = tiny_model_and_tokenizer("smollm2", hidden=64, layers=2, seed=0)
judge, _ = tiny_model_and_tokenizer("smollm2", hidden=64, layers=2, seed=1000)
collector = AgentCollector(TransformersBackend(policy, tok), SequentialRunner(MiniwobEnvFactory(max_steps=4, offer_done=False)),
                           LikelihoodSelector(temperature=1.0, length_normalized=True), group_size=2, max_steps=4,
                           max_history_turns=1, prompt_builder=gui_agent_messages)
specs = [MiniwobTaskSpec("click-button", seed=2), MiniwobTaskSpec("click-link", seed=2)]
episodes, stats = collector.collect(specs, seed=0, task_ids=[s.name for s in specs])
judge_collector = JudgeCollector(TransformersBackend(judge, tok), num_votes=3, votes=ScoredVotes(temperature=1.0),
                                 prompt_builder=gui_judge_messages)
episodes, jstats = judge_collector.judge(episodes, seed=0)  # judged copies of the episodes, and counters
print(stats, jstats, sep="\n")
print(GUI_JUDGE_RUBRIC[:160], "...")
for e in episodes:
    print(f"\n{e.task_id} (group {e.group_id}) won={e.won}: {e.goal}")
    for t, s in enumerate(e.steps):
        print(f"  step {t}: {s.action:45.45s} votes={[v.vote for v in s.judge]}")

# %% [markdown]
# ## 3 · A hint rewrite, accepted or rejected
#
# Environment adaptation never touches the verifier (the page's checker): a rewrite may only add or remove hints in the
# instruction and, for this library's own parameterized page `rla-login-form`, move its difficulty settings
# (distractor fields, shuffled order) within their ranges. A candidate that changes the page or the seed, or empties
# a hint, is rejected with a reason. A valid candidate is rolled out; the pool's acceptance rule then keeps it only if
# its success rate moved the right way.

# %%
from rlanything_core.adaptation.difficulty import Direction
from rlanything_core.adaptation.llm import ScriptedChatModel
from rlanything_core.adaptation.pool import TaskPool
from rlanything_core.adaptation.rewriters.gui_hints import GuiHintRewriter, GuiLLMRewriter
from rlanything_core.adaptation.rewriters.protocol import TaskSpec

root = TaskSpec("click-link#s2", "miniwob", "click-link#s2", data=MiniwobTaskSpec("click-link", seed=2).to_data())
rates = {e.task_id: 0.0 for e in episodes}
for e in episodes:
    rates[e.task_id] += e.won / 2
parent_acc = rates["click-link"]
direction = Direction.EASIER if parent_acc <= 0.5 else Direction.HARDER
rule = GuiHintRewriter().rewrite(root, direction, None)
llm = GuiLLMRewriter(chat_model=ScriptedChatModel(['{"task": "click-button", "hints": ["Click Ok."]}']),
                     samples=1).rewrite(root, direction, None)
for c in rule + llm:
    print(f"{c.rewriter:10s} valid={c.valid!s:5s} reason={c.reason and c.reason.value} | {c.detail} | "
          f"hints={c.task.data['hints'] if c.task else None}")

pool = TaskPool.create(tempfile.mkdtemp(prefix="gui-pool-"), [root], band=(0.2, 0.8))
pending = pool.add_candidates(rule + llm, parent_acc=parent_acc, iteration=0)
spec = MiniwobTaskSpec.from_data(pool.pending[pending].candidate.task.data)
rolled, _ = collector.collect([spec], seed=1, task_ids=[pending])
acc = sum(e.won for e in rolled) / len(rolled)
decision = pool.resolve(pending, acc, iteration=1)
print(f"\nparent success {parent_acc:.2f} -> candidate {pending} success {acc:.2f}: accepted={decision.accepted}")

# %% [markdown]
# ## 4 · The loop on real pages
#
# The same wiring as `python -m experiments.train +setting=miniwob +profile=smoke`: a pool of training pages (the
# families of `setting.train_families`), worker processes that own their browsers (a crashed browser ends its episode
# with a reason, a hung one restarts its worker), the GUI judge, hint rewrites, and an evaluation on unseen seeds
# (In-Dom) and on held-out families (OOD: `setting.ood_families`).

# %%
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

shutdown_browsers()  # this process's browsers; the loop's workers start their own
REPO = Path.cwd().parent if Path.cwd().name == "tutorials" else Path.cwd()
sys.path.insert(0, str(REPO))
from rlanything_core.assembly import build_run
from rlanything_core.assembly.agent import close_shared_env_pools
from rlanything_core.conf import CONF_DIR

run_dir = Path(tempfile.mkdtemp(prefix="rlanything-gui-loop-"))
with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
    cfg = compose(config_name="train", overrides=["+setting=miniwob", "+profile=smoke", f"run_dir={run_dir}"])
print(OmegaConf.to_yaml(cfg.setting))
run = build_run(cfg)
run.loop.run()
close_shared_env_pools()
with open(run_dir / "logs" / "metrics.csv") as fh:
    rows = [{k: float(v) for k, v in r.items() if v} for r in csv.DictReader(fh)]
train = [r for r in rows if "rollout/success_rate" in r]
for r in train:
    print({k.split("/", 1)[1]: round(r[k], 2) for k in ("rollout/success_rate", "rollout/steps", "rollout/policy_rows",
           "rollout/judge_rows", "policy/updates", "judge/updates", "rollout/env/accepted_total") if k in r})
print({k: round(v, 2) for r in rows if "eval/iteration" in r for k, v in r.items() if k.endswith("success_rate")})

# %%
fig, axes = plt.subplots(1, 3, figsize=(12, 3.2))
its = [r["iteration"] for r in train]
for ax, names, title in [
    (axes[0], ["rollout/success_rate"], "training success rate"),
    (axes[1], ["rollout/policy_rows", "rollout/judge_rows"], "rows trained on"),
    (axes[2], ["rollout/env/valid_candidates", "rollout/env/accepted_total"], "environment adaptation"),
]:
    for name in names:
        ax.plot(its, [r.get(name, 0.0) for r in train], marker="o", label=name.split("/")[-1])
    ax.set_title(title)
    ax.set_xlabel("iteration")
    ax.legend(fontsize=8)
fig.tight_layout()
