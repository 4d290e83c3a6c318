"""Supervised warm start of the encoder scorer: it learns the teacher's commands, and an interrupted fit resumes to
exactly the weights of an uninterrupted one."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from rlanything_core.models.scorer import minilm_scorer
from rlanything_core.training.scorer_sft import ScorerExample, candidate_cross_entropy, fit_scorer, top1_agreement

COMMANDS = ("go to fridge 1", "open drawer 2", "take mug 1 from desk 1", "look")
# the teacher's choice depends on the state: the pretrained similarity alone does not give it
EXAMPLES = [ScorerExample(f"task: step {k}\nobservation: {obs}", COMMANDS, target)
            for k, (obs, target) in enumerate([("the room is dark", 3), ("a cold room", 1), ("a desk is here", 0),
                                               ("the room is dark", 3), ("a cold room", 1), ("a desk is here", 0)])]


class Interrupt(Exception):
    pass


def _trainable(policy: torch.nn.Module) -> dict[str, torch.Tensor]:
    names = {n for n, p in policy.named_parameters() if p.requires_grad}
    return {k: v.clone() for k, v in policy.state_dict().items() if k in names}


def test_the_fit_learns_the_teachers_commands() -> None:
    policy = minilm_scorer(max_state_tokens=32)[0]
    losses = fit_scorer(policy, EXAMPLES, epochs=8, batch_size=3, encoder_lr=1e-3, head_lr=1e-2, progress=False)
    assert losses[-1] < 0.5 * losses[0]
    assert top1_agreement(policy, EXAMPLES) == 1.0


def test_an_interrupted_fit_resumes_to_the_same_weights(tmp_path: Path) -> None:
    reference = minilm_scorer(max_state_tokens=32)[0]
    fit_scorer(reference, EXAMPLES, epochs=2, batch_size=2, progress=False)
    checkpoint = tmp_path / "fit.pt"

    def stop(epoch: int) -> None:
        raise Interrupt

    interrupted = minilm_scorer(max_state_tokens=32)[0]
    with pytest.raises(Interrupt):
        fit_scorer(interrupted, EXAMPLES, epochs=2, batch_size=2, checkpoint=checkpoint, progress=False,
                   on_epoch_end=stop)
    resumed = minilm_scorer(max_state_tokens=32)[0]
    losses = fit_scorer(resumed, EXAMPLES, epochs=2, batch_size=2, checkpoint=checkpoint, progress=False)
    assert len(losses) == 3  # only the second epoch's batches ran here
    want, got = _trainable(reference), _trainable(resumed)
    assert all(torch.equal(want[k], got[k]) for k in want)
    with pytest.raises(ValueError, match="examples"):
        fit_scorer(resumed, EXAMPLES[:4], epochs=2, checkpoint=checkpoint, progress=False)


def test_bad_examples_are_refused() -> None:
    with pytest.raises(ValueError, match="target"):
        ScorerExample("s", ("a",), 1)
    with pytest.raises(ValueError, match="logits, targets"):
        candidate_cross_entropy([], [])
