"""PolicyLoss and the functional clipped objective: plain-Python equivalence, micro-batching, masking, clipping."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rlanything_core.losses import (
    Aggregation,
    KLEstimator,
    KLReference,
    PolicyLoss,
    aggregate,
    clipped_policy_objective,
    count_normalizer,
    kl_penalty,
    overlong_penalty,
)

# ----------------------------------------------------------------------------------------------------------------------
# plain-Python reference (nested lists, math module only)


def plain_kl(logp: float, ref: float, est: KLEstimator, clamp: float) -> float:
    d = max(-clamp, min(clamp, ref - logp))
    if est is KLEstimator.K1:
        return -d
    if est is KLEstimator.K2:
        return 0.5 * d * d
    return math.exp(d) - 1.0 - d


def plain_objective(
    logp: list[list[float]],
    old: list[list[float]],
    adv: list[float],
    mask: list[list[bool]],
    *,
    ref: list[list[float]] | None = None,
    eps_low: float = 0.2,
    eps_high: float = 0.2,
    clamp: float = 10.0,
    kl_coef: float = 0.01,
    est: KLEstimator = KLEstimator.K3,
    agg: Aggregation = Aggregation.SEQ_MEAN_TOKEN_MEAN,
) -> tuple[float, float]:
    reference = old if ref is None else ref
    pg_rows: list[list[float]] = []
    kl_rows: list[list[float]] = []
    for i, row in enumerate(mask):
        pg_row, kl_row = [], []
        for t, keep in enumerate(row):
            if not keep:
                continue
            d = max(-clamp, min(clamp, logp[i][t] - old[i][t]))
            ratio = math.exp(d)
            clipped = max(1 - eps_low, min(1 + eps_high, ratio))
            pg_row.append(-min(ratio * adv[i], clipped * adv[i]))
            kl_row.append(plain_kl(logp[i][t], reference[i][t], est, clamp))
        pg_rows.append(pg_row)
        kl_rows.append(kl_row)

    def reduce(rows: list[list[float]]) -> float:
        if agg is Aggregation.TOKEN_MEAN:
            n = sum(len(r) for r in rows)
            return sum(sum(r) for r in rows) / max(n, 1)
        nonempty = [r for r in rows if r]
        if agg is Aggregation.SEQ_MEAN_TOKEN_MEAN:
            return sum(sum(r) / len(r) for r in nonempty) / max(len(nonempty), 1)
        return sum(sum(r) for r in nonempty) / max(len(nonempty), 1)

    pg, kl = reduce(pg_rows), reduce(kl_rows)
    return pg + kl_coef * kl, pg


def random_inputs(
    n: int, length: int, seed: int, *, dtype: torch.dtype = torch.float64, nan_padding: bool = True
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    old = -torch.rand(n, length, generator=g, dtype=dtype) * 3
    logp = old + 0.5 * torch.randn(n, length, generator=g, dtype=dtype)
    ref = old + 0.3 * torch.randn(n, length, generator=g, dtype=dtype)
    adv = torch.randn(n, generator=g, dtype=dtype)
    lengths = torch.randint(0, length + 1, (n,), generator=g)
    mask = torch.arange(length).unsqueeze(0) < lengths.unsqueeze(1)
    if nan_padding:
        nan = torch.tensor(float("nan"), dtype=dtype)
        logp, old, ref = (torch.where(mask, x, nan) for x in (logp, old, ref))
    return logp, old, ref, adv, mask


AGGS = list(Aggregation)
ESTS = list(KLEstimator)


@pytest.mark.parametrize("agg", AGGS)
@pytest.mark.parametrize("est", ESTS)
@pytest.mark.parametrize("frozen", [False, True])
def test_matches_plain_python(agg: Aggregation, est: KLEstimator, frozen: bool) -> None:
    logp, old, ref, adv, mask = random_inputs(6, 7, seed=3)
    kwargs = dict(clip_eps_low=0.2, clip_eps_high=0.28, kl_coef=0.1, kl_estimator=est, aggregation=agg)
    loss_fn = PolicyLoss(kl_reference=KLReference.FROZEN if frozen else KLReference.ROLLOUT, **kwargs)  # type: ignore[arg-type]
    out = loss_fn(logp, old, adv, mask, ref_logprobs=ref if frozen else None)
    want, want_pg = plain_objective(
        logp.tolist(),
        old.tolist(),
        adv.tolist(),
        mask.tolist(),
        ref=ref.tolist() if frozen else None,
        eps_high=0.28,
        kl_coef=0.1,
        est=est,
        agg=agg,
    )
    assert float(out.loss) == pytest.approx(want, rel=1e-12, abs=1e-12)
    assert float(out.metrics["policy_loss"]) == pytest.approx(want_pg, rel=1e-12, abs=1e-12)
    assert all(not v.requires_grad for v in out.metrics.values())


def test_per_token_advantages_equal_broadcast_sequence_advantages() -> None:
    logp, old, _, adv, mask = random_inputs(5, 6, seed=4)
    loss_fn = PolicyLoss()
    a = loss_fn(logp, old, adv, mask).loss
    per_token = torch.where(mask, adv.unsqueeze(1).expand_as(mask), torch.tensor(float("nan"), dtype=adv.dtype))
    b = loss_fn(logp, old, per_token, mask).loss
    assert torch.equal(a, b)


def _grad(loss_fn: PolicyLoss, logp: torch.Tensor, *args: torch.Tensor, **kwargs: object) -> torch.Tensor:
    x = logp.detach().clone().requires_grad_(True)
    loss_fn(x, *args, **kwargs).loss.backward()  # type: ignore[arg-type]
    assert x.grad is not None
    return x.grad


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 9),
    length=st.integers(1, 8),
    seed=st.integers(0, 2**31 - 1),
    cuts=st.lists(st.integers(0, 9), max_size=4),
    agg=st.sampled_from(AGGS),
    est=st.sampled_from(ESTS),
)
def test_micro_batch_invariance(
    n: int, length: int, seed: int, cuts: list[int], agg: Aggregation, est: KLEstimator
) -> None:
    logp, old, _, adv, mask = random_inputs(n, length, seed)
    loss_fn = PolicyLoss(aggregation=agg, kl_coef=0.05, kl_estimator=est, clip_eps_high=0.3)
    full_x = logp.detach().clone().requires_grad_(True)
    full = loss_fn(full_x, old, adv, mask).loss
    full.backward()
    assert full_x.grad is not None
    ntok = count_normalizer(mask, Aggregation.TOKEN_MEAN)
    nseq = count_normalizer(mask, Aggregation.SEQ_MEAN_TOKEN_MEAN)
    bounds = sorted({0, n, *(min(c, n) for c in cuts)})
    micro_x = logp.detach().clone().requires_grad_(True)
    total = torch.zeros((), dtype=logp.dtype)
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        out = loss_fn(micro_x[lo:hi], old[lo:hi], adv[lo:hi], mask[lo:hi], num_tokens_global=ntok, num_seqs_global=nseq)
        out.loss.backward()
        total = total + out.loss.detach()
    assert micro_x.grad is not None
    assert float(total) == pytest.approx(float(full.detach()), abs=1e-5)
    torch.testing.assert_close(micro_x.grad, full_x.grad, atol=1e-5, rtol=0)


def test_global_count_below_local_raises() -> None:
    logp, old, _, adv, mask = random_inputs(4, 5, seed=0, nan_padding=False)
    mask[:] = True
    with pytest.raises(ValueError, match="num_tokens_global"):
        PolicyLoss(aggregation=Aggregation.TOKEN_MEAN)(logp, old, adv, mask, num_tokens_global=3)
    with pytest.raises(ValueError, match="num_seqs_global"):
        PolicyLoss()(logp, old, adv, mask, num_seqs_global=2)


@pytest.mark.parametrize("agg", AGGS)
def test_padding_values_never_matter(agg: Aggregation) -> None:
    logp, old, ref, adv, mask = random_inputs(5, 6, seed=7, nan_padding=False)
    adv_tok = adv.unsqueeze(1).expand_as(mask).clone()
    loss_fn = PolicyLoss(aggregation=agg, kl_reference=KLReference.FROZEN)
    results = []
    for fill in (0.0, float("nan"), float("inf"), -1e30):
        f = torch.tensor(fill, dtype=logp.dtype)
        args = [torch.where(mask, x, f) for x in (logp, old, adv_tok, ref)]
        x = args[0].clone().requires_grad_(True)
        out = loss_fn(x, args[1], args[2], mask, ref_logprobs=args[3])
        out.loss.backward()
        assert x.grad is not None
        assert torch.isfinite(x.grad).all()
        assert (x.grad[~mask] == 0).all()
        results.append((out.loss.detach(), x.grad, out.metrics))
    for loss, grad, metrics in results[1:]:
        assert torch.equal(loss, results[0][0])
        assert torch.equal(grad, results[0][1])
        for key, value in metrics.items():
            assert torch.equal(value, results[0][2][key]), key


@pytest.mark.parametrize("agg", AGGS)
def test_all_masked_batch_gives_zero_with_graph(agg: Aggregation) -> None:
    logp = torch.full((3, 4), float("nan"), requires_grad=True)
    mask = torch.zeros(3, 4, dtype=torch.bool)
    out = PolicyLoss(aggregation=agg)(logp, torch.full((3, 4), float("nan")), torch.full((3,), float("nan")), mask)
    assert out.loss.requires_grad
    assert float(out.loss.detach()) == 0.0
    out.loss.backward()
    assert logp.grad is not None and torch.equal(logp.grad, torch.zeros(3, 4))
    assert all(torch.isfinite(v).all() for v in out.metrics.values())
    empty = PolicyLoss(aggregation=agg)(
        torch.zeros(0, 4, requires_grad=True), torch.zeros(0, 4), torch.zeros(0), mask[:0]
    )
    assert float(empty.loss.detach()) == 0.0 and empty.loss.requires_grad


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), agg=st.sampled_from(AGGS))
def test_zero_advantage_gives_zero_surrogate_gradient(seed: int, agg: Aggregation) -> None:
    logp, old, _, adv, mask = random_inputs(5, 6, seed)
    grad = _grad(PolicyLoss(kl_coef=0.0, aggregation=agg), logp, old, torch.zeros_like(adv), mask)
    assert torch.equal(grad, torch.zeros_like(grad))


@pytest.mark.parametrize("eps_low,eps_high", [(0.2, 0.2), (0.2, 0.28), (0.1, 0.5)])
def test_clip_bounds_zero_gradient_in_the_advantage_direction(eps_low: float, eps_high: float) -> None:
    # Columns: ratio far above 1+eps_high, inside, far below 1-eps_low.
    ratios = torch.tensor([1 + eps_high + 0.05, 1.0 + 0.01, 1 - eps_low - 0.05], dtype=torch.float64)
    old = torch.full((2, 3), -1.0, dtype=torch.float64)
    logp = old + ratios.log().unsqueeze(0)
    adv = torch.tensor([1.0, -1.0], dtype=torch.float64)
    mask = torch.ones(2, 3, dtype=torch.bool)
    loss_fn = PolicyLoss(clip_eps_low=eps_low, clip_eps_high=eps_high, kl_coef=0.0)
    grad = _grad(loss_fn, logp, old, adv, mask)
    # A > 0: clipped above (zero grad), active inside and below (the clip never stops pushing a low ratio up).
    assert grad[0, 0] == 0 and grad[0, 1] != 0 and grad[0, 2] != 0
    # A < 0: clipped below (zero grad), active inside and above.
    assert grad[1, 2] == 0 and grad[1, 1] != 0 and grad[1, 0] != 0
    out = loss_fn(logp, old, adv, mask)
    assert float(out.metrics["clip_frac_high"]) == pytest.approx(1 / 6)
    assert float(out.metrics["clip_frac_low"]) == pytest.approx(1 / 6)
    assert float(out.metrics["clip_frac"]) == pytest.approx(2 / 6)


def test_gradient_at_ratio_one_is_minus_advantage_over_length() -> None:
    old = torch.zeros(2, 4, dtype=torch.float64)
    mask = torch.tensor([[True, True, False, False], [True, True, True, True]])
    adv = torch.tensor([2.0, -1.0], dtype=torch.float64)
    grad = _grad(PolicyLoss(kl_coef=0.0), old, old, adv, mask)
    want = torch.tensor([[-1 / 2, -1 / 2, 0, 0], [1 / 8, 1 / 8, 1 / 8, 1 / 8]], dtype=torch.float64)
    torch.testing.assert_close(grad, want)


def test_metrics_at_ratio_one() -> None:
    old = torch.randn(3, 4)
    mask = torch.ones(3, 4, dtype=torch.bool)
    out = PolicyLoss()(old.clone(), old, torch.randn(3), mask)
    assert float(out.metrics["ratio_mean"]) == pytest.approx(1.0)
    assert float(out.metrics["approx_kl"]) == 0.0
    assert float(out.metrics["kl"]) == 0.0
    assert float(out.metrics["clip_frac"]) == 0.0
    assert int(out.metrics["num_tokens"]) == 12 and int(out.metrics["num_seqs"]) == 3


def test_log_ratio_clamp_bounds_the_ratio() -> None:
    old = torch.zeros(1, 2)
    logp = torch.tensor([[50.0, -50.0]], requires_grad=True)
    out = PolicyLoss(log_ratio_clamp=2.0, clip_eps_high=100.0, clip_eps_low=0.0, kl_coef=0.0)(
        logp, old, torch.tensor([1.0]), torch.ones(1, 2, dtype=torch.bool)
    )
    assert torch.isfinite(out.loss)
    assert float(out.loss.detach()) == pytest.approx(-(math.exp(2.0) + math.exp(-2.0)) / 2)


@pytest.mark.parametrize("est", ESTS)
def test_kl_estimators(est: KLEstimator) -> None:
    logp = torch.tensor([[-1.0, -2.0, -0.5, float("nan")]], dtype=torch.float64)
    ref = torch.tensor([[-1.0, -1.5, -0.7, 3.0]], dtype=torch.float64)
    mask = torch.tensor([[True, True, True, False]])
    kl = kl_penalty(logp, ref, mask, estimator=est)
    want = [plain_kl(a, b, est, 10.0) for a, b in zip(logp[0, :3].tolist(), ref[0, :3].tolist())] + [0.0]
    torch.testing.assert_close(kl, torch.tensor([want], dtype=torch.float64))
    assert kl[0, 0] == 0
    if est is not KLEstimator.K1:
        assert (kl >= 0).all()


def test_kl_reference_rules() -> None:
    logp, old, ref, adv, mask = random_inputs(3, 4, seed=1)
    with pytest.raises(ValueError, match="ref_logprobs"):
        PolicyLoss(kl_reference=KLReference.FROZEN)(logp, old, adv, mask)
    with pytest.raises(ValueError, match="ref_logprobs"):
        PolicyLoss()(logp, old, adv, mask, ref_logprobs=ref)
    frozen = PolicyLoss(kl_reference=KLReference.FROZEN)(logp, old, adv, mask, ref_logprobs=old).loss
    rollout = PolicyLoss()(logp, old, adv, mask).loss
    assert torch.equal(frozen, rollout)


def test_overlong_penalty_values_and_shaping() -> None:
    lengths = torch.tensor([0, 10, 12, 15, 20, 25])
    got = overlong_penalty(lengths, max_len=20, buffer=10, penalty_factor=2.0)
    plain = [0.0 if x <= 10 else (-2.0 if x > 20 else (20 - 10 - x) / 10 * 2.0) for x in lengths.tolist()]
    torch.testing.assert_close(got, torch.tensor(plain))
    logp, old, _, adv, mask = random_inputs(6, 8, seed=2)
    shaped = PolicyLoss(overlong_max_len=8, overlong_buffer=4, overlong_penalty_factor=1.0)(logp, old, adv, mask)
    penalty = overlong_penalty(mask.sum(1), max_len=8, buffer=4).to(adv.dtype)
    manual = PolicyLoss()(logp, old, adv + penalty, mask)
    assert torch.equal(shaped.loss, manual.loss)
    with pytest.raises(ValueError, match="overlong_buffer"):
        PolicyLoss(overlong_max_len=8)
    with pytest.raises(ValueError, match="buffer"):
        overlong_penalty(lengths, max_len=5, buffer=6)


def test_aggregate_doc_semantics() -> None:
    v = torch.tensor([[1.0, 3.0, 100.0], [5.0, 100.0, 100.0], [100.0, 100.0, 100.0]])
    m = torch.tensor([[True, True, False], [True, False, False], [False, False, False]])
    assert float(aggregate(v, m, Aggregation.TOKEN_MEAN)) == 3.0
    assert float(aggregate(v, m, Aggregation.SEQ_MEAN_TOKEN_MEAN)) == 3.5  # the empty row is not counted
    assert float(aggregate(v, m, Aggregation.SEQ_MEAN_TOKEN_SUM)) == 4.5
    assert float(aggregate(v, m, Aggregation.TOKEN_MEAN, num_tokens_global=6)) == 1.5


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"clip_eps_low": 1.0}, "clip_eps_low"),
        ({"clip_eps_high": -0.1}, "clip_eps_high"),
        ({"kl_coef": -1.0}, "kl_coef"),
        ({"log_ratio_clamp": 0.0}, "log_ratio_clamp"),
        ({"aggregation": "token_mean"}, "aggregation"),
        ({"kl_estimator": "k3"}, "kl_estimator"),
        ({"kl_reference": "rollout"}, "kl_reference"),
    ],
)
def test_bad_hyperparameters(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        PolicyLoss(**kwargs)  # type: ignore[arg-type]


def test_bad_inputs_name_the_argument() -> None:
    logp, old, _, adv, mask = random_inputs(3, 4, seed=5)
    loss_fn = PolicyLoss()
    with pytest.raises(ValueError, match="response_mask"):
        loss_fn(logp, old, adv, mask.float())
    with pytest.raises(ValueError, match="old_logprobs"):
        loss_fn(logp, old[:, :3], adv, mask)
    with pytest.raises(ValueError, match="advantages"):
        loss_fn(logp, old, adv[:2], mask)
    bad = logp.clone()
    bad[0, 0] = float("nan")
    mask2 = mask.clone()
    mask2[0, 0] = True
    with pytest.raises(ValueError, match="logprobs"):
        clipped_policy_objective(bad, torch.zeros_like(old), adv, mask2)
