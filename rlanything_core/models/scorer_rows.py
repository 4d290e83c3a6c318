"""How a scorer's decision travels through the loop's token rows (``types.TokenRows``).

The loop stores every policy step and every judge vote as a token row: a prompt, then response tokens whose log-probs
the trainer recomputes. A scorer (an encoder that scores candidates, not a language model) fits that contract with
this layout, ids at and above the encoder's vocabulary marking the structure:

``prompt = text ids (no special tokens) + for each candidate: [CANDIDATE, candidate ids...]``
``response = [CHOICE + k]``: one pseudo-token, the index ``k`` of the chosen candidate (judge: ``k = 1`` for a +1
vote, ``0`` for -1, with no candidate in the prompt).

The model family decodes a row back with :meth:`ScorerRowLayout.decode` and puts ``log p(k)`` at the response
position, so advantages, ``PolicyLoss``, the old-log-prob recomputation and the KL term see one token per step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from torch import Tensor

__all__ = ["DecodedRow", "ScorerRowLayout"]


@dataclass(frozen=True)
class DecodedRow:
    """One row, decoded.

    Attributes:
        text: the state (or judge) text's ids.
        candidates: each candidate's ids (empty for a judge row).
        choice: the chosen index (``-1`` when the row has no response token).
        position: the column of the response token (``-1`` when none).
    """

    text: tuple[int, ...]
    candidates: tuple[tuple[int, ...], ...]
    choice: int
    position: int


@dataclass(frozen=True)
class ScorerRowLayout:
    """Marker ids for an encoder of ``vocab_size`` tokens (they never reach its embedding table).

    Args:
        vocab_size: the encoder's vocabulary size.
    """

    vocab_size: int

    @property
    def candidate_marker(self) -> int:
        """Starts each candidate's ids in the prompt."""
        return self.vocab_size

    @property
    def choice_base(self) -> int:
        """The response token of choice ``k`` is ``choice_base + k``."""
        return self.vocab_size + 1

    def encode(
        self, text: Sequence[int], candidates: Sequence[Sequence[int]], choice: int
    ) -> tuple[list[int], list[int]]:
        """``(prompt ids, response ids)`` of one decision.

        Raises:
            ValueError: ``choice`` is not a candidate's index (policy rows), or a text/candidate id is outside the
                vocabulary.
        """
        if candidates and not 0 <= choice < len(candidates):
            raise ValueError(f"choice: expected an index in [0, {len(candidates)}), got {choice}")
        if choice < 0:
            raise ValueError(f"choice: expected >= 0, got {choice}")
        if any(not 0 <= t < self.vocab_size for seq in (text, *candidates) for t in seq):
            raise ValueError(f"text, candidates: expected token ids in [0, {self.vocab_size})")
        prompt = list(text)
        for cand in candidates:
            prompt.append(self.candidate_marker)
            prompt.extend(cand)
        return prompt, [self.choice_base + choice]

    def decode(self, input_ids: Tensor, attention_mask: Tensor, response_mask: Tensor) -> DecodedRow:
        """Decode one right-padded row (``(L,)`` each) built by :meth:`encode`."""
        ids = input_ids[attention_mask].tolist()
        resp = response_mask[attention_mask].tolist()
        prompt = [t for t, r in zip(ids, resp) if not r]
        response = [(n, t) for n, (t, r) in enumerate(zip(ids, resp)) if r]
        choice, position = -1, -1
        if response:
            position, token = response[0]
            choice = token - self.choice_base
        text: list[int] = []
        candidates: list[list[int]] = []
        for t in prompt:
            if t == self.candidate_marker:
                candidates.append([])
            elif candidates:
                candidates[-1].append(t)
            else:
                text.append(t)
        return DecodedRow(tuple(text), tuple(tuple(c) for c in candidates), choice, position)
