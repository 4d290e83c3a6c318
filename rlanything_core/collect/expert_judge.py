"""A judge of known quality: votes from the expert-agreement label, exact or flipped at a given rate.

Each step's label is whether its action is ALFWorld's hand-coded expert's next command from that state
(``envs/alfworld/expert_agreement.py``, the label of the step records). Each of the ``m`` votes is ``+1`` on an
agreeing step and ``-1`` elsewhere, flipped independently with probability ``flip_prob`` (seeded by the vote's own
seed): ``P(+1) = 1 - flip_prob`` on an agreeing step, ``flip_prob`` elsewhere. A state the expert cannot label (it gave
up there) gets coin-flip votes (``P(+1) = 1/2``): no information, never a guess.

It replaces the encoder judge's votes (a ``VoteSampler`` with ``render_step``, like ``EncoderVotes``) and is not
trained (arm ``policy``'s ``train_judge: false``): the experiment asks whether the integration helps given a judge
of a measured quality, which a trained judge cannot hold fixed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from rlanything_core.collect.prompts import Messages
from rlanything_core.envs.alfworld.expert_agreement import expert_commands
from rlanything_core.records import AgentStep, Episode, JudgeSample

__all__ = ["ExpertLabelJudge"]

_LABELS = {"agrees": 1, "differs": 0, "unknown": -1}


class ExpertLabelJudge:
    """Votes from the hand-coded expert's label (see the module docstring).

    Args:
        flip_prob: probability that a vote is flipped, in ``[0, 1/2]`` (0: the exact label).
        seed: mixed into every vote's seed (the loop's vote seeds already differ by iteration, step and vote).
        expert_seed: seeds the expert's own tie-breaks (as the step records' labeller does).

    The game file of an episode comes from ``bind_tasks`` (the assembly binds the pool's and the evaluation's
    tasks): episodes carry their task id, not the file.
    """

    def __init__(self, *, flip_prob: float = 0.0, seed: int = 0, expert_seed: int = 0) -> None:
        if not 0.0 <= float(flip_prob) <= 0.5:
            raise ValueError(f"flip_prob: expected a probability in [0, 0.5], got {flip_prob!r}")
        self.flip_prob = float(flip_prob)
        self.seed = int(seed)
        self.expert_seed = int(expert_seed)
        self._game_of: Callable[[str], Any] | None = None
        self._labels: dict[int, tuple[Episode, list[int]]] = {}

    def bind_tasks(self, game_of: Callable[[str], Any]) -> None:
        """Where episodes' games are found: ``game_of(task_id)`` -> the game file."""
        self._game_of = game_of

    def labels(self, episode: Episode) -> list[int]:
        """``1`` / ``0`` / ``-1`` (agrees, differs, unknown) of every step of ``episode`` (one replay per episode)."""
        cached = self._labels.get(id(episode))
        if cached is not None and cached[0] is episode:
            return cached[1]
        if self._game_of is None:
            raise ValueError("game_of: ExpertLabelJudge needs bind_tasks(game_of) before it votes")
        actions = [s.action for s in episode.steps]
        commands = expert_commands(self._game_of(episode.task_id), actions, seed=self.expert_seed)
        out = [-1 if c is None else int(c == a) for c, a in zip(commands, actions)]
        if len(self._labels) > 4096:  # one iteration's episodes are what is re-read; older ones are not
            self._labels.clear()
        self._labels[id(episode)] = (episode, out)
        return out

    def render_step(self, episode: Episode, step: AgentStep) -> Messages:
        """The step's label as the judge's "prompt" (what ``sample`` reads)."""
        index = next((t for t, s in enumerate(episode.steps) if s is step), None)
        if index is None:
            raise ValueError(f"step: not a step of episode {episode.task_id!r}")
        label = self.labels(episode)[index]
        return [{"role": "user", "content": next(k for k, v in _LABELS.items() if v == label)}]

    def sample(self, backend: Any, prompts: Sequence[Messages], seeds: Sequence[int]) -> list[JudgeSample]:
        """One vote per prompt: the label, flipped with ``flip_prob`` by the vote's own seed."""
        out = []
        for prompt, seed in zip(prompts, seeds):
            label = _LABELS[prompt[-1]["content"]]
            p_plus = 0.5 if label < 0 else (1.0 - self.flip_prob if label else self.flip_prob)
            gen = torch.Generator().manual_seed((int(seed) * 1_000_003 + self.seed) % (2**63))
            vote = 1 if float(torch.rand((), generator=gen, dtype=torch.float64)) < p_plus else -1
            out.append(JudgeSample(vote, f"{vote:+d}", p_plus=p_plus))
        return out
