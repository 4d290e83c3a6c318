"""The encoder judge: seeded votes from P(+1), their log-probs through token rows, an untrained head, bad input."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from rlanything_core.collect.judge import JudgeCollector
from rlanything_core.collect.scorer_selection import EncoderVotes
from rlanything_core.records import AgentStep, Episode
from rlanything_core.training.logprobs import sequence_token_logprobs
from rlanything_core.types import judge_rows


def _episode() -> Episode:
    e = Episode("game", 0, "put a clean mug in coffeemachine.")
    for action, result in [("go to countertop 1", "On the countertop 1, you see a mug 1."),
                           ("take mug 1 from countertop 1", "You pick up the mug 1 from the countertop 1.")]:
        e.steps.append(AgentStep("obs", [action, "look"], [], [], [], action, action, next_observation=result))
    return e


def test_votes_are_seeded_samples_of_p_plus_one(minilm_judge_model: Any) -> None:
    votes = EncoderVotes()
    e = _episode()
    prompt = votes.render_step(e, e.steps[1])
    assert "previous actions: go to countertop 1" in prompt[-1]["content"]
    samples = votes.sample(minilm_judge_model, [prompt] * 400, list(range(400)))
    again = votes.sample(minilm_judge_model, [prompt] * 400, list(range(400)))
    assert [s.vote for s in samples] == [s.vote for s in again]
    with torch.no_grad():
        logp = minilm_judge_model.vote_log_probs([minilm_judge_model.text_ids(prompt[-1]["content"])])[0]
    p_plus = float(logp[1].exp())
    share = sum(s.vote == 1 for s in samples) / len(samples)
    assert abs(share - p_plus) < 0.08  # 400 Bernoulli draws: 3.2 standard deviations at p = 1/2
    assert {s.vote for s in samples} == {1, -1}
    for s in samples[:10]:  # each vote carries its own log-prob
        assert s.logprobs == [pytest.approx(float(logp[1 if s.vote == 1 else 0]), abs=1e-6)]


def test_an_untrained_head_starts_near_a_coin_flip_and_depends_on_its_seed(minilm_judge_model: Any) -> None:
    from rlanything_core.models.encoder_judge import minilm_judge

    texts = [minilm_judge_model.text_ids(t) for t in ("task: a\naction: look", "task: b\naction: go to desk 1")]
    with torch.no_grad():
        p = minilm_judge_model.vote_log_probs(texts)[:, 1].exp()
        other = minilm_judge(max_tokens=64, seed=4)[0]
        q = other.vote_log_probs(texts)[:, 1].exp()
    assert ((p - 0.5).abs() < 0.1).all()
    assert not torch.allclose(p, q)


def test_vote_rows_recompute_the_votes_log_probs(minilm_judge_model: Any) -> None:
    judged, _ = JudgeCollector(minilm_judge_model, num_votes=3, votes=EncoderVotes()).judge([_episode()], seed=5)
    rows = judge_rows(judged, pad_id=0)
    assert rows.num_rows == 6
    lp = sequence_token_logprobs(minilm_judge_model, rows.input_ids, rows.attention_mask,
                                 score_mask=rows.response_mask)
    recorded = torch.tensor([x for e in judged for s in e.steps for j in s.judge for x in j.logprobs])
    assert torch.allclose(lp[rows.response_mask], recorded, atol=1e-5)


def test_a_checkpoint_with_another_head_shape_is_a_clear_error(minilm_judge_model: Any) -> None:
    state = dict(minilm_judge_model.state_dict())
    state["head.weight"] = torch.zeros(2, state["head.weight"].shape[1])
    with pytest.raises(ValueError, match=r"head\.weight.*\(2, 384\).*\(1, 384\)"):
        minilm_judge_model.load_state_dict(state)


def test_a_judge_text_over_the_budget_is_cut_and_counted(minilm_judge_model: Any) -> None:
    before = minilm_judge_model.stats["truncated_texts"]
    ids = minilm_judge_model.text_ids("result: " + "you see a mug 1, " * 100)
    assert len(ids) == minilm_judge_model.max_tokens - 2
    assert minilm_judge_model.stats["truncated_texts"] == before + 1


def test_the_m_vote_rows_of_a_step_share_one_forward_with_the_same_values_and_gradients(
    minilm_judge_model: Any,
) -> None:
    """The 3 vote rows of each step hold one text; one forward per text gives what a forward per row gives."""
    judge = minilm_judge_model
    judged, _ = JudgeCollector(judge, num_votes=3, votes=EncoderVotes()).judge([_episode()], seed=5)
    rows = judge_rows(judged, pad_id=0)
    params = [p for p in judge.parameters() if p.requires_grad]
    before = dict(judge.stats)
    judge.zero_grad()
    shared = judge.row_logprobs(rows.input_ids, rows.attention_mask, rows.response_mask)
    shared.sum().backward()
    shared_grads = [p.grad.clone() for p in params]  # type: ignore[union-attr]
    assert judge.stats["vote_rows"] - before["vote_rows"] == 6
    assert judge.stats["vote_forwards"] - before["vote_forwards"] == 2  # two steps
    # the reference: every row on its own forward
    judge.zero_grad()
    single = torch.stack([
        judge.row_logprobs(rows.input_ids[n : n + 1], rows.attention_mask[n : n + 1], rows.response_mask[n : n + 1])[0]
        for n in range(rows.num_rows)
    ])  # fmt: skip
    single.sum().backward()
    assert torch.allclose(shared, single, atol=1e-6)
    for a, p in zip(shared_grads, params):
        assert torch.allclose(a, p.grad, atol=1e-6)  # type: ignore[arg-type]
    judge.zero_grad()


def test_a_row_without_a_vote_is_a_clear_error_naming_the_row(minilm_judge_model: Any) -> None:
    from rlanything_core.types import rows_from_sequences

    judge = minilm_judge_model
    good = judge.layout.encode(judge.text_ids("task: a\naction: look"), [], 1)
    bad = judge.layout.encode(judge.text_ids("task: b\naction: look"), [], 2)  # a policy's choice 2, not a vote
    rows = rows_from_sequences([good[0], bad[0]], [good[1], bad[1]], [(0, 0, 0), (0, 1, 0)], pad_id=0)
    with pytest.raises(ValueError, match=r"row 1 holds no judge vote \(choice 2"):
        judge.row_logprobs(rows.input_ids, rows.attention_mask, rows.response_mask)
