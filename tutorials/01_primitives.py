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
# # 01 · The primitives of RLAnything, by hand
#
# RLAnything trains three things in one loop: a **policy** with *integrated feedback* (outcome + judge votes per
# step), a **generative reward model** (the judge) with *consistency feedback*, and an **environment** that rewrites
# tasks toward a difficulty band. This notebook builds a tiny batch by hand and walks it through every primitive:
#
# 1. a `StepBatch` of ragged multi-step trajectories with judge votes (one of them unparseable);
# 2. step advantages: outcome-only (GRPO) vs integrated feedback;
# 3. the policy loss and the judge's consistency loss;
# 4. the environment's difficulty critic and acceptance rule;
# 5. Theorem 1 (more votes help iff the judge beats chance) and Theorem 2 (what the judge's objective really rewards).
#
# Only the public API is used. It runs on CPU in seconds.

# %%
import matplotlib.pyplot as plt  # Jupyter's inline backend works headless (no display needed)
import torch

from rlanything_core import FORMAT_PENALTY, StepBatch
from rlanything_core.adaptation import DifficultyCritic, Direction, accept_rewrite
from rlanything_core.advantages import IntegratedIntegrator, OutcomeOnlyIntegrator, StepReward
from rlanything_core.losses import Aggregation, ConsistencyRewardLoss, PolicyLoss
from rlanything_core.rewards import consistency_targets, standardize_votes, vote_agreement
from rlanything_core.theory import importance_weights, step_precision, step_precision_bound, theorem2_sides

torch.manual_seed(0)
torch.set_printoptions(precision=3, sci_mode=False)

# %% [markdown]
# ## 1. A batch of trajectories
#
# Two tasks, four rollouts each (`group_index` says which task a rollout belongs to). Rollouts have different numbers
# of steps: the step grid `(B, S)` is right-padded and `step_mask` marks real steps. For each step the judge was asked
# `m = 3` times; `votes` holds `+1`/`-1` where the answer parsed (`vote_valid`) and anything (here NaN) elsewhere.
# One judge output of rollout 0, step 1 could not be parsed: it stays in `vote_mask` (it was requested and will be
# penalized) but not in `vote_valid`.

# %%
lengths = torch.tensor([3, 2, 4, 1, 2, 3, 3, 1])  # steps taken by each rollout
outcome = torch.tensor([1.0, -1.0, 1.0, -1.0, -1.0, 1.0, -1.0, -1.0])  # verifiable outcome O in {+1, -1}
group_index = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
B, S, M = 8, 4, 3
step_mask = torch.arange(S).unsqueeze(0) < lengths.unsqueeze(1)

# Judge votes: mostly agreeing with the outcome, with some noise.
agree = torch.rand(B, S, M) < 0.75
votes = torch.where(agree, outcome.view(B, 1, 1), -outcome.view(B, 1, 1)).expand(B, S, M).clone()
vote_mask = step_mask.unsqueeze(-1).expand(B, S, M).clone()
vote_valid = vote_mask.clone()
vote_valid[0, 1, 2] = False  # one unparseable judge output
votes = torch.where(vote_valid, votes, torch.tensor(float("nan")))  # padding and failures may hold anything

batch = StepBatch(outcome, step_mask, group_index, votes, vote_mask, vote_valid)
print("rollouts:", batch.num_rollouts, " max steps:", batch.max_steps, " steps per rollout:", batch.num_steps.tolist())
print("votes of rollout 0:\n", batch.votes[0])

# %% [markdown]
# ## 2. Advantages: outcome only vs integrated feedback
#
# Outcome-only (GRPO) gives every step of a rollout the same reward `O`. Integrated feedback adds the judge's mean vote,
# `R = O + λ · mean_j S_j` (λ = 1), so good steps of a failed rollout are punished less and bad steps of a successful
# one are rewarded less. Either reward is then standardized across the rollouts of the same task **at the same step
# index** (only those that reached it). A cell reached by a single rollout has no baseline and gets 0.
#
# `StepReward` owns λ and computes `R` once; the integrator standardizes that same `R`, and the judge's targets
# (section 3) use it too, so the policy and the judge never see two different step rewards.

# %%
step_reward = StepReward(lam=1.0)(batch)
adv_outcome = OutcomeOnlyIntegrator()(batch)
adv_integrated = IntegratedIntegrator()(batch, step_reward)
print("step reward R = O + mean vote:\n", step_reward)
print("outcome-only advantages:\n", adv_outcome)
print("integrated advantages:\n", adv_integrated)

# %% [markdown]
# ## 3. Losses
#
# **Policy.** Each step is a separate policy-gradient sample (prompt = context at that step, response = the step's
# output). With log-probabilities from the model, `PolicyLoss` applies the PPO/GRPO clipped surrogate plus a KL
# penalty (against the rollout policy, as in the authors' code). Here random numbers stand in for a model's
# log-probabilities; padding tokens hold NaN on purpose — masks select, so it never leaks.

# %%
step_adv = adv_integrated[step_mask]  # one advantage per (rollout, step) sample
n, L = step_adv.shape[0], 6
response_mask = torch.arange(L).unsqueeze(0) < torch.randint(2, L + 1, (n, 1))
old_logprobs = torch.where(response_mask, -torch.rand(n, L) * 2, torch.tensor(float("nan")))
logprobs = (old_logprobs + 0.1 * torch.randn(n, L)).requires_grad_(True)

policy_loss = PolicyLoss(clip_eps_low=0.2, clip_eps_high=0.28, kl_coef=0.01, aggregation=Aggregation.TOKEN_MEAN)
out = policy_loss(logprobs, old_logprobs, step_adv, response_mask)
out.loss.backward()
print("loss:", float(out.loss.detach()))
print({k: round(float(v), 4) for k, v in out.metrics.items()})
print("gradient is finite everywhere (padding included):", bool(torch.isfinite(logprobs.grad).all()))

# %% [markdown]
# **Judge.** Every judge output gets the consistency reward `R · S` (rewarded when its vote agrees in sign
# with the integrated feedback), or the format penalty (`FORMAT_PENALTY`, −2) when it did not parse. The `m` rewards
# of one step are z-scored among themselves; a step whose votes all got the same reward teaches nothing.

# %%
targets = consistency_targets(step_reward, votes, vote_mask, vote_valid, format_penalty=FORMAT_PENALTY)
z = standardize_votes(targets, vote_mask)
print("raw consistency targets of rollout 0:\n", targets[0])
print("standardized over the 3 votes of each step:\n", z[0])
print("vote agreement with the outcome:", float(vote_agreement(votes, vote_valid, outcome)))

# %% [markdown]
# `ConsistencyRewardLoss` (these targets plus the policy's clipped objective, for a whole batch) takes one row per
# requested vote, in the order of `batch.vote_mask.nonzero()` (rollout, step, vote). Rows whose advantage is exactly
# 0 are left out, as in the authors' code. The training loop splits the two: it builds the targets once
# (`ConsistencyTargets`) and trains the judge with a plain `PolicyLoss`, the policy's signature. Before the first
# update the ratio is 1, so the loss *value* is minus the mean advantage — 0 for z-scores — but its gradient is not.

# %%
rows = int(vote_mask.sum())
judge_mask = torch.arange(8).unsqueeze(0) < torch.randint(3, 9, (rows, 1))
judge_old = torch.where(judge_mask, -torch.rand(rows, 8), torch.tensor(float("nan")))
judge_logprobs = judge_old.clone().requires_grad_(True)
judge_loss = ConsistencyRewardLoss()
out = judge_loss(judge_logprobs, judge_old, judge_mask, batch=batch, step_reward=step_reward)
out.loss.backward()
print("rows:", rows, " loss:", round(float(out.loss.detach()), 4), " grad norm:", float(judge_logprobs.grad.norm()))
print({k: round(float(v), 4) for k, v in out.metrics.items()})

# %% [markdown]
# ## 4. The environment: difficulty critic and acceptance rule
#
# A task whose success rate falls outside `(0.2, 0.8)` is rewritten (harder if `acc ≥ 0.8`, easier if `acc ≤ 0.2`).
# A rewrite with success rate `acc'` replaces the task only if it moved strictly toward the band and is solvable:
# harder `0.2 < acc' < acc`, easier `acc < acc' < 0.8`, never `acc' = 0`.

# %%
critic = DifficultyCritic(band=(0.2, 0.8))
task_rates = [0.0, 0.125, 0.5, 0.875, 1.0]
for rate, direction in zip(task_rates, critic.directions(task_rates)):
    print(f"acc = {rate:<5}  ->  {direction.name}")

cases = [
    (Direction.HARDER, 1.0, 0.875),
    (Direction.HARDER, 0.875, 0.2),
    (Direction.HARDER, 0.875, 0.9),
    (Direction.EASIER, 0.0, 0.25),
    (Direction.EASIER, 0.125, 0.0),
    (Direction.EASIER, 0.125, 0.8),
]
for direction, acc, acc_new in cases:
    print(f"{direction.name:<6} {acc:5} -> {acc_new:5}: accepted = {accept_rewrite(direction, acc, acc_new)}")

# %% [markdown]
# ## 5. Theorem 1: when do more votes help?
#
# Let `p+` be the probability that a vote on a step of a successful trajectory is `+1`, `p-` that a vote on a step of
# a failed one is `-1`, and `μ = p+ + p-`. The precision `A(m) = P(mean vote on the success > mean vote on the
# failure)` with `m` votes tends to 1 **iff** `μ > 1`, and then `A(m) ≥ 1 − exp(−m (μ−1)² / 4)`. At `μ = 1` it tends
# to 1/2; below, to 0. `step_precision` computes `A(m)` exactly (binomial sums); `step_precision_bound` the bound.

# %%
ms = list(range(1, 129))
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
for mu, color in [(1.1, "tab:blue"), (1.2, "tab:orange"), (1.4, "tab:green")]:
    p = mu / 2
    axes[0].plot(ms, [float(step_precision(p, p, m)) for m in ms], color=color, label=f"exact, μ={mu}")
    axes[0].plot(ms, [float(step_precision_bound(p, p, m)) for m in ms], color=color, ls="--", label=f"bound, μ={mu}")
axes[0].set(xlabel="votes per step m", ylabel="precision A(m)", title="μ > 1: A(m) → 1, above the bound")
axes[0].legend(fontsize=7)
for mu, color in [(0.9, "tab:red"), (1.0, "tab:gray"), (1.1, "tab:blue")]:
    p = mu / 2
    axes[1].plot(ms, [float(step_precision(p, p, m)) for m in ms], color=color, label=f"μ={mu}")
axes[1].axhline(0.5, color="k", lw=0.5)
axes[1].set(xlabel="votes per step m", ylabel="precision A(m)", title="μ = 1 is the threshold: → 1, → 1/2, → 0")
axes[1].legend(fontsize=7)
fig.tight_layout()
plt.show()
a_512 = float(step_precision(0.9, 0.2, 512))
print(f"the split of μ does not matter for large m: A(512) at (p+, p-) = (0.9, 0.2) is {a_512:.6f}")

# %% [markdown]
# ## 6. Theorem 2: what the judge's objective rewards
#
# With `λ = 1`, the judge's expected consistency reward equals `4 (⟨p+, f+⟩ + ⟨p-, f-⟩) + C` with nonnegative
# weights `f+ = 1{O=1}(1+s̄)/2`, `f- = 1{O=-1}(1−s̄)/2` and a constant `C` that does not depend on the judge. On a batch
# of mostly failures, `f+` is almost always 0: the objective only rewards saying `-1`. Keeping task success rates in
# the band keeps both terms alive — the reason for the environment's rewriting.

# %%
mean_vote = torch.nanmean(torch.where(vote_valid, votes, torch.tensor(float("nan"))), dim=-1)[step_mask]
step_outcome = outcome.unsqueeze(1).expand(B, S)[step_mask]
p_plus_vote = torch.rand(step_outcome.shape[0], dtype=torch.float64)  # a judge's P(vote = +1) per step
sides = theorem2_sides(step_outcome.double(), mean_vote.double(), p_plus_vote)
print(f"E[consistency reward] = {float(sides.lhs):.6f};  4(<p+,f+> + <p-,f->) + C = {float(sides.rhs):.6f}")
f_plus, f_minus = importance_weights(step_outcome.double(), mean_vote.double())
print("weights in [0, 1]:", bool(((f_plus >= 0) & (f_plus <= 1) & (f_minus >= 0) & (f_minus <= 1)).all()))
