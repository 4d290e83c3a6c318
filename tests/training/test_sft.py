import pytest
import torch

from rlanything_core.generation.prompts import render_prompt
from rlanything_core.generation.transformers_backend import TransformersBackend
from rlanything_core.models.tiny import tiny_model_and_tokenizer
from rlanything_core.training.sft import SftLoss, candidate_scores, supervised_warm_start

COMMANDS = ["go to desk 1", "go to desk 10", "open drawer 2", "take pen 1 from desk 1", "look"]


def _examples() -> tuple[list, list[list[str]]]:
    """Four states, each with its own right command among the same five candidates."""
    examples, candidates = [], []
    for k, obs in enumerate(["You see a desk.", "The drawer 2 is closed.", "On the desk 1, you see a pen 1.", "Hi."]):
        messages = [{"role": "user", "content": obs}]
        examples.append((messages, COMMANDS[[1, 2, 3, 4][k]]))
        candidates.append(list(COMMANDS))
    return examples, candidates


def _selector_probs(model, tok, examples) -> list[list[float]]:
    backend = TransformersBackend(model, tok, batch_size=8)
    return [torch.softmax(torch.tensor(backend.score_continuations(m, COMMANDS)), 0).tolist() for m, _ in examples]


def test_candidate_scores_match_the_backend_scores_and_carry_gradients() -> None:
    model, tok = tiny_model_and_tokenizer("tiny", hidden=32, layers=1, seed=0)
    messages = _examples()[0][0][0]
    eos = tok.eos_token_id
    cands = [list(tok(c, add_special_tokens=False)["input_ids"]) + [eos] for c in COMMANDS]
    scores = candidate_scores(model, render_prompt(tok, messages), cands, pad_id=tok.pad_token_id)
    expected = TransformersBackend(model, tok, batch_size=2).score_continuations(messages, COMMANDS)
    assert scores.shape == (5,) and torch.allclose(scores, torch.tensor(expected), atol=1e-4)
    one_token = candidate_scores(model, render_prompt(tok, messages), [[eos]], pad_id=tok.pad_token_id)
    assert one_token.shape == (1,) and float(one_token[0].detach()) < 0
    scores.sum().backward()
    assert any(p.grad is not None and bool(p.grad.abs().sum() > 0) for p in model.parameters())
    with pytest.raises(ValueError, match="candidates"):
        candidate_scores(model, [1, 2], [[]], pad_id=0)


def test_token_loss_raises_the_demonstrated_commands_likelihood() -> None:
    model, tok = tiny_model_and_tokenizer("tiny", hidden=32, layers=1, seed=0)
    examples, _ = _examples()
    before = _selector_probs(model, tok, examples)
    losses = supervised_warm_start(model, tok, examples, epochs=40, lr=1e-2, batch_size=4)
    assert len(losses) == 40 and losses[-1] < 0.5 * losses[0] and not model.training
    after = _selector_probs(model, tok, examples)
    for (_, response), p0, p1 in zip(examples[:3], before, after):  # the 4th ("look") is already near 1
        k = COMMANDS.index(response)
        assert p1[k] > p0[k]


@pytest.mark.parametrize("loss", [SftLoss.CANDIDATE, SftLoss.MIXED])
def test_candidate_losses_make_the_expert_command_the_selectors_choice(loss: SftLoss) -> None:
    # the token loss alone, same budget, leaves "look" (the shortest command) the choice in most states
    model, tok = tiny_model_and_tokenizer("tiny", hidden=32, layers=1, seed=0)
    examples, candidates = _examples()
    losses = supervised_warm_start(model, tok, examples, epochs=40, lr=1e-2, batch_size=4, loss=loss,
                                   candidates=candidates, max_candidates=4 if loss is SftLoss.MIXED else None)
    assert losses[-1] < 0.5 * losses[0]
    after = _selector_probs(model, tok, examples)
    for (_, response), p1 in zip(examples, after):
        assert p1[COMMANDS.index(response)] == max(p1)


def test_bad_arguments_are_refused() -> None:
    model, tok = tiny_model_and_tokenizer("tiny", hidden=16, layers=1, seed=0)
    examples, candidates = _examples()
    with pytest.raises(ValueError, match="loss"):
        supervised_warm_start(model, tok, examples, loss="hinge")
    with pytest.raises(ValueError, match="candidates"):
        supervised_warm_start(model, tok, examples, loss="candidate")
    with pytest.raises(ValueError, match=r"candidates\[0\]"):
        supervised_warm_start(model, tok, examples, loss="candidate", candidates=[["look"]] + candidates[1:])
    with pytest.raises(ValueError, match="max_candidates"):
        supervised_warm_start(model, tok, examples, loss="candidate", candidates=candidates, max_candidates=1)
    with pytest.raises(ValueError, match="epochs"):
        supervised_warm_start(model, tok, examples, epochs=0)


def test_negatives_put_commands_with_the_same_verb_first_then_short_ones() -> None:
    import random

    from rlanything_core.training.sft import _subset

    others = ["take cd 1 from desk 1", "take pen 2 from desk 1", "look", "inventory", "go to bed 1", "go to desk 2",
              "examine desk 1", "open drawer 1"]
    for seed in range(5):
        picked = _subset(others, 4, random.Random(seed), len, "take book 1 from desk 1")
        assert len(picked) == len(set(picked)) == 4 and set(picked) <= set(others)
        assert set(picked[:2]) == {"take cd 1 from desk 1", "take pen 2 from desk 1"}  # hard negatives
        assert picked[2] == "look"  # then the shortest
    assert sorted(_subset(others, len(others), random.Random(0), len, "go to sofa 1")) == sorted(others)
