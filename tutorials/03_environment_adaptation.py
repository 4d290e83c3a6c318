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
# # 03 · Environment adaptation: a pool of ALFWorld tasks drifts into the difficulty band
#
# RLAnything rewrites tasks whose success rate leaves the band `(0.2, 0.8)` (arXiv 2602.02488): too easy → harder,
# too hard → easier. A rewrite replaces its task only if its own fresh success rate moves the right way and stays
# valid (`accept_rewrite`). This notebook runs that loop on **real ALFWorld games on the real TextWorld engine**:
#
# 1. roll out every active and pending task, measure success rates;
# 2. resolve pending rewrites with the acceptance rule;
# 3. build critic feedback (per failed rollout: high-risk steps and a failure summary);
# 4. ask a task rewriter for candidates (here the rule-based ALFWorld rewriter: swap the goal's object/receptacle
#    types, ranked by rarity), validated against the game's facts, compiled and **solved by the planner**;
# 5. persist the pool atomically, and plot.
#
# **About the policy.** To keep this under a few minutes on a CPU the "policy" is *not* an LLM: it is a scripted
# plan-follower that plays the planner's optimal plan but, at every step, takes a random admissible action with
# probability `p` (then walks back to where it was). Its success rates are real measurements on the engine — longer
# plans and farther objects fail more often — but they say nothing about an LLM's competence. In training, the
# rollouts come from the policy model and the judge votes from the reward model.

# %%
import random
import tempfile
from pathlib import Path

from rlanything_core.adaptation import DifficultyCritic
from rlanything_core.adaptation.feedback import build_feedback, render_feedback
from rlanything_core.adaptation.metrics import (
    difficulty_before_after,
    plot_accepted_growth,
    plot_difficulty_shift,
    rejection_reasons,
    summarize,
)
from rlanything_core.adaptation.pool import TaskPool
from rlanything_core.adaptation.rewriters.alfworld_rules import AlfworldRuleRewriter
from rlanything_core.adaptation.rewriters.protocol import TaskSpec
from rlanything_core.envs.alfworld.env import AlfworldEnv
from rlanything_core.envs.alfworld.oracle import optimal_plan
from rlanything_core.records import AgentStep, Episode

SHARED = Path("..").resolve() / ".." / "shared" / "alfworld" / "json_2.1.1" / "valid_train"
if not SHARED.is_dir():  # run from the repository root
    SHARED = Path.cwd().resolve() / ".." / "shared" / "alfworld" / "json_2.1.1" / "valid_train"
NAMES = ["look_at_obj_in_light-Book-None-DeskLamp-302", "pick_two_obj_and_place-Book-None-Desk-302",
         "pick_and_place_simple-AlarmClock-None-Desk-307", "look_at_obj_in_light-CD-None-DeskLamp-307"]
roots = [TaskSpec(task_id=n, kind="alfworld", root_id=n,
                  data={"game_file": str(next((SHARED / n).glob("*/game.tw-pddl")))}) for n in NAMES]
run_dir = Path(tempfile.mkdtemp(prefix="rlanything-env-"))
pool = TaskPool.create(run_dir, roots)
pool.save()
print([t.task_id for t in pool.active_tasks()])  # the pool lives in a temporary run folder

# %% [markdown]
# ## The cheap policy, played on the engine
#
# `rollout` returns `records.Episode` objects, exactly what the agent collector produces (without tokens and without
# judge votes here, so the critic falls back to its deterministic template summary).

# %%
P_RANDOM, ROLLOUTS, SLACK = 0.12, 4, 3
_plans: dict[str, tuple[str, ...]] = {}


def plan_of(task: TaskSpec) -> tuple[str, ...]:
    if task.task_id not in _plans:
        _plans[task.task_id] = optimal_plan(task.data["game_file"]) or ()
    return _plans[task.task_id]


def rollout(task: TaskSpec, rng: random.Random) -> Episode:
    plan = plan_of(task)
    env = AlfworldEnv(task.data["game_file"], max_episode_steps=len(plan) + SLACK)
    first = env.reset()
    ep = Episode(task_id=task.task_id, group_id=0, goal=first.goal)
    obs, admissible, i, last_goto, detour = first.observation, first.admissible_actions, 0, None, False
    while True:
        if detour and last_goto:
            action, detour = last_goto, False
        elif rng.random() < P_RANDOM:
            action, detour = rng.choice(admissible), True
        else:
            action = plan[i] if i < len(plan) else "look"
            i += 1
            last_goto = action if action.startswith("go to") else last_goto
        result = env.step(action)
        ep.steps.append(AgentStep(observation=obs, admissible_actions=list(admissible), prompt_token_ids=[],
                                  token_ids=[], logprobs=[], response=action, action=action,
                                  next_observation=result.observation))
        obs, admissible = result.observation, result.admissible_actions
        if result.done:
            ep.won = result.won
            env.close()
            return ep


rng = random.Random(0)
demo = rollout(roots[0], rng)
print(demo.goal, "| won:", demo.won, "| steps:", [s.action for s in demo.steps])

# %% [markdown]
# ## The loop
#
# Each iteration rolls out the active tasks and the pending candidates, resolves the pending ones, then requests
# rewrites for active tasks outside the band. Every candidate is checked against the game's facts, written as a new
# versioned game under the run directory, compiled and planned; only valid ones are scheduled.

# %%
critic = DifficultyCritic(band=(0.2, 0.8))
rewriter = AlfworldRuleRewriter(out_dir=run_dir / "games", num_candidates=1, max_checks=2)
ITERATIONS = 3
log = []
for it in range(ITERATIONS):
    tasks = pool.sample(len(pool.slots), seed=0, iteration=it) + pool.pending_tasks()
    episodes = [rollout(t, rng) for t in tasks for _ in range(ROLLOUTS)]
    feedback = build_feedback(episodes)  # no LLM configured -> template summaries
    rates = {tid: fb.success_rate for tid, fb in feedback.items()}
    pool.record_rates(rates, iteration=it)
    for tid in list(pool.pending):
        d = pool.resolve(tid, rates[tid], iteration=it)
        verdict = "ACCEPT" if d.accepted else "reject"
        log.append(f"it{it} {verdict} {tid}: {d.direction}, {d.parent_acc:.2f} -> {d.acc:.2f}")
    for task, direction, acc in pool.requests({t: r for t, r in rates.items() if t not in pool.pending}):
        cands = rewriter.rewrite(task, direction, feedback[task.task_id])
        pool.add_candidates(cands, parent_acc=acc, iteration=it)
        for c in cands:
            log.append(f"it{it} candidate for {task.task_id} ({direction.value}, acc {acc:.2f}): "
                       f"{c.info.get('old_tokens')} -> {c.info.get('new_tokens')} "
                       f"{'valid' if c.valid else 'REJECTED: ' + c.reason.value}")
    pool.save()
    print(f"iteration {it}: " + ", ".join(f"{t.split('-')[1]}..{t[-12:]}={r:.2f}" for t, r in rates.items()))
print("\n".join(log))

# %% [markdown]
# One failed rollout's critic feedback (what an LLM rewriter would read in its prompt):

# %%
some = next((fb for fb in feedback.values() if fb.failures), None)
print(render_feedback(some) if some else "no failures in the last iteration")

# %% [markdown]
# ## Durability and metrics
#
# The pool is on disk (`pool/state.json` + one file per task version, atomic writes); a restarted run loads it.

# %%
pool.close()
resumed = TaskPool.load(run_dir, writer=False)
print("accepted:", resumed.accepted_ids())
print("active:", [t.task_id for t in resumed.active_tasks()])
print("candidate outcomes:", dict(rejection_reasons(resumed.events)))
print(summarize(resumed.events))

# %%
fig = plot_accepted_growth(resumed.events, num_iterations=ITERATIONS)
before, after = difficulty_before_after(resumed.events)
fig2 = plot_difficulty_shift(before, after)
fig.savefig(run_dir / "accepted.png")
fig2.savefig(run_dir / "difficulty.png")
fig

# %%
fig2

# %% [markdown]
# With an LLM the same loop uses `AlfworldLLMRewriter(chat_model=BackendChatModel(backend), out_dir=...)`: it asks for
# `\boxed{TOKEN_A,TOKEN_B}` from a summary of the game's facts and the critic's failure summaries, and applies the
# same validation (facts, goal change, compile, planner). Rejected proposals are kept with their reason.
