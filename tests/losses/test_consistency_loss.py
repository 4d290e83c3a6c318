"""ConsistencyRewardLoss: row order, targets vs a plain-Python version, micro-batching with rows, metrics."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rlanything_core import StepBatch
from rlanything_core.advantages import integrated_step_reward
from rlanything_core.constants import EPS, FORMAT_PENALTY
from rlanything_core.losses import Aggregation, ConsistencyRewardLoss, PolicyLoss, count_normalizer


def make_batch(seed: int, b: int = 6, s: int = 4, m: int = 3, p_fail: float = 0.2) -> StepBatch:
    g = torch.Generator().manual_seed(seed)
    outcome = torch.where(torch.rand(b, generator=g) < 0.5, 1.0, -1.0)
    lengths = torch.randint(1, s + 1, (b,), generator=g)
    step_mask = torch.arange(s).unsqueeze(0) < lengths.unsqueeze(1)
    vote_mask = step_mask.unsqueeze(-1) & (torch.rand(b, s, m, generator=g) < 0.9)
    vote_valid = vote_mask & (torch.rand(b, s, m, generator=g) >= p_fail)
    votes = torch.where(torch.rand(b, s, m, generator=g) < 0.5, 1.0, -1.0)
    votes = torch.where(vote_valid, votes, torch.tensor(float("nan")))
    group_index = torch.arange(b) // 2
    return StepBatch(outcome, step_mask, group_index, votes, vote_mask, vote_valid)


def plain_row_advantages(batch: StepBatch, step_reward: torch.Tensor, penalty: float = FORMAT_PENALTY) -> list[float]:
    """Targets R*S (valid) / penalty (unparseable), z-scored over the requested votes of each step; row-major."""
    assert batch.votes is not None and batch.vote_mask is not None and batch.vote_valid is not None
    rows: list[float] = []
    b_, s_, m_ = batch.votes.shape
    for b in range(b_):
        for s in range(s_):
            cells = []
            for j in range(m_):
                if not bool(batch.vote_mask[b, s, j]):
                    continue
                if bool(batch.vote_valid[b, s, j]):
                    cells.append(float(step_reward[b, s]) * float(batch.votes[b, s, j]))
                else:
                    cells.append(penalty)
            if not cells:
                continue
            mean = sum(cells) / len(cells)
            std = math.sqrt(sum((c - mean) ** 2 for c in cells) / len(cells))
            rows.extend((c - mean) / std if std > EPS else 0.0 for c in cells)
    return rows


def judge_tensors(n: int, length: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    old = -torch.rand(n, length, generator=g, dtype=torch.float64) * 2
    logp = old + 0.3 * torch.randn(n, length, generator=g, dtype=torch.float64)
    lengths = torch.randint(1, length + 1, (n,), generator=g)
    mask = torch.arange(length).unsqueeze(0) < lengths.unsqueeze(1)
    nan = torch.tensor(float("nan"), dtype=torch.float64)
    return torch.where(mask, logp, nan), torch.where(mask, old, nan), mask


def step_reward_of(batch: StepBatch) -> torch.Tensor:
    assert batch.votes is not None and batch.vote_mask is not None and batch.vote_valid is not None
    return integrated_step_reward(batch.outcome, batch.step_mask, batch.votes, batch.vote_mask, batch.vote_valid)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), m=st.integers(1, 5))
def test_row_advantages_match_plain_python(seed: int, m: int) -> None:
    batch = make_batch(seed, m=m)
    reward = step_reward_of(batch)
    got = ConsistencyRewardLoss().row_advantages(batch, reward)
    want = plain_row_advantages(batch, reward)
    assert batch.vote_mask is not None
    assert got.shape == (int(batch.vote_mask.sum()),) == (len(want),)
    torch.testing.assert_close(got, torch.tensor(want, dtype=got.dtype), atol=1e-6, rtol=1e-6)


def test_row_order_is_vote_mask_nonzero_order() -> None:
    # Two steps with distinct raw targets: the row order must follow (rollout, step, vote).
    outcome = torch.tensor([1.0, -1.0])
    step_mask = torch.tensor([[True], [True]])
    votes = torch.tensor([[[1.0, -1.0]], [[1.0, float("nan")]]])
    vote_mask = torch.ones(2, 1, 2, dtype=torch.bool)
    vote_valid = torch.tensor([[[True, True]], [[True, False]]])
    batch = StepBatch(outcome, step_mask, torch.tensor([0, 0]), votes, vote_mask, vote_valid)
    reward = torch.tensor([[1.0], [-1.0]])
    loss_fn = ConsistencyRewardLoss()
    raw, _ = loss_fn.targets(batch, reward)
    assert raw[vote_mask].tolist() == [1.0, -1.0, -1.0, FORMAT_PENALTY]
    assert loss_fn.row_advantages(batch, reward).tolist() == [1.0, -1.0, 1.0, -1.0]


@pytest.mark.parametrize("drop", [True, False])
def test_forward_equals_policy_loss_on_row_advantages(drop: bool) -> None:
    batch = make_batch(11)
    reward = step_reward_of(batch)
    loss_fn = ConsistencyRewardLoss(drop_zero_advantage=drop, kl_coef=0.02)
    adv = loss_fn.row_advantages(batch, reward).to(torch.float64)
    logp, old, mask = judge_tensors(adv.shape[0], 5, seed=1)
    out = loss_fn(logp, old, mask, batch=batch, step_reward=reward)
    keep = mask & (adv != 0).unsqueeze(1) if drop else mask
    want = PolicyLoss(kl_coef=0.02)(logp, old, adv, keep)
    assert torch.equal(out.loss, want.loss)
    if drop:
        assert bool((adv == 0).any())  # the case is exercised: zero-variance steps exist


def test_micro_batching_with_rows_sums_to_full_batch() -> None:
    batch = make_batch(5, b=8)
    reward = step_reward_of(batch)
    loss_fn = ConsistencyRewardLoss(aggregation=Aggregation.TOKEN_MEAN)
    adv = loss_fn.row_advantages(batch, reward)
    logp, old, mask = judge_tensors(adv.shape[0], 6, seed=2)
    keep = mask & (adv != 0).unsqueeze(1)
    ntok = count_normalizer(keep, Aggregation.TOKEN_MEAN)
    full_x = logp.clone().requires_grad_(True)
    full = loss_fn(full_x, old, mask, batch=batch, step_reward=reward).loss
    full.backward()
    micro_x = logp.clone().requires_grad_(True)
    perm = torch.randperm(adv.shape[0], generator=torch.Generator().manual_seed(0))
    total = 0.0
    for rows in perm.split(5):
        out = loss_fn(
            micro_x[rows], old[rows], mask[rows], batch=batch, step_reward=reward, rows=rows, num_tokens_global=ntok
        )
        out.loss.backward()
        total += float(out.loss.detach())
    assert full_x.grad is not None and micro_x.grad is not None
    assert total == pytest.approx(float(full.detach()), abs=1e-10)
    torch.testing.assert_close(micro_x.grad, full_x.grad, atol=1e-10, rtol=0)


def test_metrics() -> None:
    outcome = torch.tensor([1.0])
    step_mask = torch.tensor([[True, True]])
    votes = torch.tensor([[[1.0, 1.0, float("nan")], [-1.0, 1.0, 1.0]]])
    vote_mask = torch.tensor([[[True, True, True], [True, True, False]]])
    vote_valid = torch.tensor([[[True, True, False], [True, True, False]]])
    batch = StepBatch(outcome, step_mask, torch.tensor([0]), votes, vote_mask, vote_valid)
    reward = torch.tensor([[2.0, 1.0]])
    n = int(vote_mask.sum())
    logp = torch.zeros(n, 3, requires_grad=True)
    out = ConsistencyRewardLoss()(
        logp, torch.zeros(n, 3), torch.ones(n, 3, dtype=torch.bool), batch=batch, step_reward=reward
    )
    # raw targets: 2, 2, -2 (format), -1, 1 -> mean 0.4
    assert float(out.metrics["target_mean"]) == pytest.approx(0.4)
    assert float(out.metrics["format_failure_rate"]) == pytest.approx(1 / 5)
    assert float(out.metrics["vote_agreement"]) == pytest.approx(3 / 4)
    assert int(out.metrics["num_rows"]) == 5
    assert int(out.metrics["num_zero_advantage_rows"]) == 0
    assert "clip_frac" in out.metrics
    out.loss.backward()
    assert logp.grad is not None and torch.isfinite(logp.grad).all()


def test_consistent_votes_without_failures_give_no_gradient() -> None:
    # All votes of every step equal -> zero variance -> zero advantage -> nothing to learn (KL off).
    outcome = torch.tensor([1.0, -1.0])
    step_mask = torch.ones(2, 2, dtype=torch.bool)
    votes = torch.tensor([[[1.0] * 3] * 2, [[-1.0] * 3] * 2])
    vote_mask = torch.ones(2, 2, 3, dtype=torch.bool)
    batch = StepBatch(outcome, step_mask, torch.tensor([0, 0]), votes, vote_mask, vote_mask)
    reward = step_reward_of(batch)
    logp = torch.randn(12, 4, requires_grad=True)
    out = ConsistencyRewardLoss(kl_coef=0.0, drop_zero_advantage=False)(
        logp, logp.detach() + 0.1, torch.ones(12, 4, dtype=torch.bool), batch=batch, step_reward=reward
    )
    out.loss.backward()
    assert logp.grad is not None and torch.equal(logp.grad, torch.zeros(12, 4))


def test_validation() -> None:
    batch = make_batch(3)
    reward = step_reward_of(batch)
    loss_fn = ConsistencyRewardLoss()
    n = int(loss_fn.row_advantages(batch, reward).shape[0])
    logp, old, mask = judge_tensors(n, 4, seed=0)
    with pytest.raises(ValueError, match="logprobs"):
        loss_fn(logp[:-1], old[:-1], mask[:-1], batch=batch, step_reward=reward)
    with pytest.raises(ValueError, match="rows"):
        loss_fn(logp[:1], old[:1], mask[:1], batch=batch, step_reward=reward, rows=torch.tensor([n]))
    with pytest.raises(ValueError, match="step_reward"):
        loss_fn(logp, old, mask, batch=batch, step_reward=reward[:, :1])
    no_votes = StepBatch(batch.outcome, batch.step_mask, batch.group_index)
    with pytest.raises(ValueError, match="batch"):
        loss_fn(logp, old, mask, batch=no_votes, step_reward=reward)
    with pytest.raises(ValueError, match="response_mask"):
        loss_fn(logp, old, mask.float(), batch=batch, step_reward=reward)
