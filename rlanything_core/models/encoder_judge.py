"""Encoder judge: a pretrained sentence encoder with a ±1 head over a step's text (CPU-scale reward model).

``P(+1 | step) = sigmoid(w . f(step) + b)`` where ``f`` is all-MiniLM-L6-v2 (bottom layers frozen and cached, top
layers fine-tuned; :class:`~rlanything_core.models.encoder.SplitEncoder`) over the goal, the step's context, its action
and the next observation. Each of the ``m`` votes per step is a sample from it; each vote's log-probability is what
the consistency loss trains (``ConsistencyRewardLoss``). The head starts untrained (seeded small random weights,
``P(+1)`` near 1/2 everywhere): the judge starts weak and learns from consistency feedback alone.

Votes travel through the loop's token rows like the policy's decisions (``models.scorer_rows``): the response token is
``choice_base + 1`` for a +1 vote and ``choice_base + 0`` for -1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from rlanything_core.models.encoder import FrozenPrecision, load_minilm
from rlanything_core.models.encoder_rows import EncoderRowModel
from rlanything_core.models.scorer_rows import DecodedRow

__all__ = ["EncoderJudge", "minilm_judge"]

TokenIds = tuple[int, ...]


class EncoderJudge(EncoderRowModel):
    """The ±1 encoder judge (see the module docstring).

    Args:
        bert: a transformers ``BertModel``.
        tokenizer: its tokenizer.
        trainable_layers: top encoder layers fine-tuned.
        max_tokens: token budget of the step text, specials included (cut at the end, counted).
        head_init_std: standard deviation of the head's initial weights (small: votes start near coin flips).
        seed: seeds the head's initialization.
        cache_size: frozen-bottom outputs kept (LRU).
        frozen_precision: the precision of the frozen bottom layers (``"float32"``, exact, or ``"bfloat16"``,
            faster; :class:`~rlanything_core.models.encoder.FrozenPrecision`).
        bucket_rows: texts per padded batch, grouped by length (0: one batch; the numbers change by float
            rounding; :class:`~rlanything_core.models.encoder.SplitEncoder`).
    """

    def __init__(
        self,
        bert: Any,
        tokenizer: Any,
        *,
        trainable_layers: int = 2,
        max_tokens: int = 160,
        head_init_std: float = 0.02,
        seed: int = 0,
        cache_size: int = 2048,
        frozen_precision: FrozenPrecision | str = FrozenPrecision.FLOAT32,
        bucket_rows: int = 0,
    ) -> None:
        super().__init__(
            bert,
            tokenizer,
            budget_name="max_tokens",
            budget=max_tokens,
            trainable_layers=trainable_layers,
            cache_size=cache_size,
            frozen_precision=frozen_precision,
            bucket_rows=bucket_rows,
        )
        self.head = nn.Linear(self.encoder.hidden_size, 1)
        gen = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            self.head.weight.copy_(torch.randn(self.head.weight.shape, generator=gen) * head_init_std)
            self.head.bias.zero_()
        self.max_tokens = int(max_tokens)
        self.stats: dict[str, int] = {"texts": 0, "truncated_texts": 0, "vote_rows": 0, "vote_forwards": 0}

    def text_ids(self, text: str) -> TokenIds:
        """The step text's ids within the budget (truncation counted)."""
        return self.cut_ids(text, self.max_tokens, self.stats, "texts", "truncated_texts")

    def vote_log_probs(self, texts: Sequence[TokenIds]) -> Tensor:
        """``(N, 2)``: ``[log P(-1), log P(+1)]`` of each step text (differentiable in the trainable parts)."""
        logit = self.head(self.encoder(texts)).squeeze(-1)  # (N,)
        return torch.stack([nn.functional.logsigmoid(-logit), nn.functional.logsigmoid(logit)], dim=-1)

    def decision_logprobs(self, rows: Sequence[DecodedRow], indices: Sequence[int]) -> Tensor:
        """``log P(vote)`` of each row (the row scoring of :meth:`EncoderRowModel.row_logprobs`).

        Raises:
            ValueError: a row holds no judge vote (its choice is not 0 or 1); the error names its batch index.
        """
        for r, n in zip(rows, indices):
            if r.choice not in (0, 1):
                raise ValueError(f"input_ids: row {n} holds no judge vote (choice {r.choice}, expected 0 or 1)")
        # The m vote rows of a step share one text: one forward of each distinct text (its top layers and head), read
        # by every row that holds it; exact, since the encoder has no dropout (``load_minilm``), and the gradient of a
        # shared text sums its rows' gradients, as separate forwards would.
        distinct: dict[TokenIds, int] = {}
        which = torch.tensor([distinct.setdefault(r.text, len(distinct)) for r in rows])
        logp = self.vote_log_probs(list(distinct))[which]
        self.stats["vote_rows"] += len(rows)
        self.stats["vote_forwards"] += len(distinct)
        return logp[torch.arange(len(rows)), torch.tensor([r.choice for r in rows])]

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False) -> Any:
        """``nn.Module.load_state_dict``, with a clear error when the checkpoint's head has another shape."""
        for key in ("head.weight", "head.bias"):
            if key in state_dict:
                want, got = tuple(self.state_dict()[key].shape), tuple(state_dict[key].shape)
                if want != got:
                    raise ValueError(
                        f"state_dict[{key!r}]: the judge checkpoint's ±1 head has shape {got}, this judge's {want} "
                        "(a checkpoint of another judge family or width)"
                    )
        return super().load_state_dict(state_dict, strict=strict, assign=assign)


def minilm_judge(
    *,
    trainable_layers: int = 2,
    max_tokens: int = 160,
    head_init_std: float = 0.02,
    seed: int = 0,
    cache_size: int = 2048,
    frozen_precision: FrozenPrecision | str = FrozenPrecision.FLOAT32,
    bucket_rows: int = 0,
) -> tuple[EncoderJudge, Any]:
    """``(judge, tokenizer)``: the all-MiniLM-L6-v2 ±1 judge (Hydra ``model=minilm-scorer``'s judge).

    The keywords are :class:`EncoderJudge`'s, spelled out so that the config check refuses a misspelt key before any
    work (``rlanything_core/config_targets.py`` reads this signature).
    """
    bert, tokenizer = load_minilm()
    judge = EncoderJudge(
        bert,
        tokenizer,
        trainable_layers=trainable_layers,
        max_tokens=max_tokens,
        head_init_std=head_init_std,
        seed=seed,
        cache_size=cache_size,
        frozen_precision=frozen_precision,
        bucket_rows=bucket_rows,
    )
    return judge, tokenizer
