"""``PassFractionIntegrator``: the coding setting's policy advantages, behind the agent settings' integrator interface.

In coding (arXiv 2602.02488, Sec. 4; Open-AgentRL's coding reward) each program is a one-step episode whose step reward
is the fraction of ground-truth tests it passes (partial credit, :func:`rewards.unit_tests.code_pass_fraction`), and
its advantage is that reward z-scored over the programs of its task. This class is that rule with the signature of
``advantages.integrators.Integrator``: ``(batch, step_reward) -> (B, S)`` advantages, so the loop's one row builder
(``loop.iteration.build_rows``) takes coding's advantages the way it takes the agent settings'.

The z-score is :func:`rewards.unit_tests.standardize_unit_test_rewards` (float64 statistics, a degenerate spread
gives 0), applied to each (task group, step index) cell on its own rollouts: exactly the numbers the coding loop has
always trained on. It lives in ``rewards/`` (not ``advantages/``) because it uses that function, and the maths layer
imports one way only (``rewards`` -> ``advantages``).
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import Tensor

from rlanything_core._validation import check_floating, check_shape, check_tensor
from rlanything_core.advantages._checks import check_nonnegative_scalar
from rlanything_core.advantages.functional import SingletonRule
from rlanything_core.constants import EPS
from rlanything_core.rewards.unit_tests import standardize_unit_test_rewards
from rlanything_core.types import StepBatch

__all__ = ["PassFractionIntegrator"]


class PassFractionIntegrator:
    """The given step reward (coding: the GT pass fraction) z-scored per (task group, step index); needs no votes.

    Args:
        eps: degenerate-std threshold, finite and ``> 0`` (the z-score's; the agent integrators' key of the same name).
        singleton: a cell reached by one rollout of its group gets 0 (``ZERO``) or its raw reward (``RAW``).

    Examples:
        >>> mask = torch.ones(3, 1, dtype=torch.bool)
        >>> batch = StepBatch(torch.tensor([1.0, -1.0, -1.0]), mask, torch.tensor([0, 0, 0]))
        >>> PassFractionIntegrator()(batch, torch.tensor([[1.0], [0.5], [0.0]]))
        tensor([[ 1.2247],
                [ 0.0000],
                [-1.2247]])
    """

    needs_votes: ClassVar[bool] = False

    def __init__(self, *, eps: float = EPS, singleton: SingletonRule = SingletonRule.ZERO) -> None:
        self.eps = check_nonnegative_scalar("eps", eps)
        if self.eps == 0.0:
            raise ValueError("eps: expected > 0 (the unit-test z-score divides by max(std, eps)), got 0")
        if not isinstance(singleton, SingletonRule):
            raise ValueError(f"singleton: expected a SingletonRule, got {singleton!r}")
        self.singleton = singleton

    def __repr__(self) -> str:
        return f"{type(self).__name__}(eps={self.eps}, singleton={self.singleton})"

    def __call__(self, batch: StepBatch, step_reward: Tensor | None = None) -> Tensor:
        """Return ``(B, S)`` advantages: ``step_reward`` z-scored over each task group's rollouts at each step index.

        Raises:
            ValueError: ``batch`` is not a ``StepBatch``, or ``step_reward`` is missing or not ``(B, S)`` floating.
        """
        if not isinstance(batch, StepBatch):
            raise ValueError(f"batch: expected a StepBatch, got {type(batch).__name__}")
        if step_reward is None:
            raise ValueError(
                "step_reward: expected the scorer's (B, S) step reward (coding: GT pass fraction), got None"
            )
        check_tensor("step_reward", step_reward)
        check_floating("step_reward", step_reward)
        check_shape("step_reward", step_reward, tuple(batch.step_mask.shape))
        out = torch.zeros_like(step_reward)
        # One call per task: the statistics of a task never see another task's rewards or any padding, so each z-score
        # is the one the task alone gives (bit for bit, not only to rounding).
        for step in range(step_reward.shape[1]):
            for group in torch.unique(batch.group_index).tolist():
                rows = ((batch.group_index == group) & batch.step_mask[:, step]).nonzero().squeeze(1)
                if rows.numel() == 1 and self.singleton is SingletonRule.RAW:
                    out[rows, step] = step_reward[rows, step]
                elif rows.numel():
                    out[rows, step] = standardize_unit_test_rewards(step_reward[rows, step], eps=self.eps)
        return out
