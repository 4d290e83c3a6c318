"""Coding setting: rewards of generated unit tests (the judge writes tests) and of the policy's code.

Inputs per task are pass matrices from the sandbox: ``gt_pass (C, T_gt)`` (codes x ground-truth tests),
``gen_pass (C, K)`` (codes x generated tests) and ``parsed (K,)`` (the generated test parsed into an input/output pair).
A *correct code* passes every ground-truth test; a generated test is *correct* when every correct code passes it.
Semantics follow the authors' ``reward/llm_rl_reward.py`` (Open-AgentRL reward/llm_rl_reward.py) plus an explicit format
penalty (they have none: an unparseable test fails every code and scores like a correct but useless test).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from rlanything_core._validation import (
    check_bool,
    check_finite_where,
    check_floating,
    check_number,
    check_shape,
    check_tensor,
)
from rlanything_core.constants import EPS, FORMAT_PENALTY

_ROUNDING_ULPS = 16
"""A std below this many ulps of the input dtype (relative to the row's scale) is rounding noise, not spread."""

__all__ = [
    "UnitTestCounts",
    "code_pass_fraction",
    "correct_codes",
    "standardize_unit_test_rewards",
    "unit_test_counts",
    "unit_test_rewards",
]


@dataclass(frozen=True)
class UnitTestCounts:
    """Numerators and denominators of Table 1's "UT" and "Detect"; add the counts of several tasks with ``+``.

    Attributes:
        ut_correct: generated tests passed by every correct code (tasks with >= 1 correct code).
        ut_total: generated tests of tasks with >= 1 correct code (the authors' ``syn_ut_acc`` denominator).
        detect_correct: generated tests passed by every correct code and failed by every wrong code (tasks with
            >= 1 correct and >= 1 wrong code).
        detect_total: generated tests of tasks with >= 1 correct and >= 1 wrong code (``perfect_ut_rate``'s).
    """

    ut_correct: int = 0
    ut_total: int = 0
    detect_correct: int = 0
    detect_total: int = 0

    def __add__(self, other: UnitTestCounts) -> UnitTestCounts:
        return UnitTestCounts(
            self.ut_correct + other.ut_correct,
            self.ut_total + other.ut_total,
            self.detect_correct + other.detect_correct,
            self.detect_total + other.detect_total,
        )

    @property
    def ut_accuracy(self) -> float:
        """Table 1 "UT" (``syn_ut_acc``): ``ut_correct / ut_total``; 0.0 when the denominator is 0 (log it too)."""
        return self.ut_correct / self.ut_total if self.ut_total else 0.0

    @property
    def detect_rate(self) -> float:
        """Table 1 "Detect" (``perfect_ut_rate``): ``detect_correct / detect_total``; 0.0 when the denominator is 0."""
        return self.detect_correct / self.detect_total if self.detect_total else 0.0


def correct_codes(gt_pass: Tensor) -> Tensor:
    """``(C,)`` bool: the codes that pass every ground-truth test.

    Args:
        gt_pass: ``(C, T_gt)`` bool with ``T_gt >= 1`` (a task without ground-truth tests has no notion of correct).
    """
    _check_matrix("gt_pass", gt_pass)
    if gt_pass.shape[1] < 1:
        raise ValueError("gt_pass: expected at least one ground-truth test (T_gt >= 1), got 0 columns")
    return gt_pass.all(dim=1)


def code_pass_fraction(gt_pass: Tensor, *, truncated: Tensor | None = None) -> Tensor:
    """Policy reward in the coding setting: fraction of ground-truth tests each code passes (partial credit).

    Args:
        gt_pass: ``(C, T_gt)`` bool, ``T_gt >= 1``.
        truncated: optional ``(C,)`` bool; a code cut at the length limit scores 0 (as the authors intended).

    Returns:
        ``(C,)`` float32 in ``[0, 1]``.

    Examples:
        >>> import torch
        >>> code_pass_fraction(torch.tensor([[True, True], [True, False]]))
        tensor([1.0000, 0.5000])
    """
    correct_codes(gt_pass)  # validates
    reward = gt_pass.to(torch.float32).mean(dim=1)
    if truncated is not None:
        check_tensor("truncated", truncated)
        check_bool("truncated", truncated)
        check_shape("truncated", truncated, (gt_pass.shape[0],))
        reward = torch.where(truncated, torch.zeros_like(reward), reward)
    return reward


def unit_test_rewards(
    gt_pass: Tensor,
    gen_pass: Tensor,
    parsed: Tensor,
    *,
    format_penalty: float = FORMAT_PENALTY,
    strictly_lowest: bool = True,
    format_without_reference: bool = False,
) -> Tensor | None:
    """Raw reward of each generated unit test of one task (CURE-style, Open-AgentRL reward/llm_rl_reward.py).

    With ``G`` the correct codes and ``N`` the wrong ones, a parsed test ``k`` is *correct* iff every code in ``G``
    passes it; its reward is ``#{N failing k}`` if correct, ``-#{N passing k}`` otherwise; when ``N`` is empty,
    ``+1`` if correct else ``-1``. An unparseable test gets ``format_penalty``; with ``strictly_lowest`` (default) the
    penalty is lowered to ``-(max(|N|, 1) + 1)`` when needed, so it stays strictly below every parseable test
    (a wrong test can reach ``-|N|``).

    Without a correct code there is no reference for a test's correctness, and the authors give the task no signal
    (``None``). Its tests' format can still be judged: with ``format_without_reference`` every parsed test scores 0
    and every unparseable one the penalty above (every code counts as wrong), which is what lets a small writer
    whose policy solves nothing learn the format.

    Args:
        gt_pass: ``(C, T_gt)`` bool, codes x ground-truth tests (``T_gt >= 1``).
        gen_pass: ``(C, K)`` bool, codes x generated tests (columns of unparseable tests are ignored).
        parsed: ``(K,)`` bool.
        format_penalty: raw reward of an unparseable test.
        strictly_lowest: see above.
        format_without_reference: without a correct code, score the format only (see above) instead of ``None``.

    Returns:
        ``(K,)`` float32 raw rewards, or ``None`` when no code is correct and ``format_without_reference`` is off
        (there is no reference to judge the tests against; the task gives the judge no training signal).

    Examples:
        >>> import torch
        >>> gt = torch.tensor([[True], [False], [False]])          # code 0 correct, codes 1-2 wrong
        >>> gen = torch.tensor([[True, True, False], [False, True, False], [False, True, False]])
        >>> unit_test_rewards(gt, gen, torch.tensor([True, True, False]))
        tensor([ 2.,  0., -3.])
        >>> unit_test_rewards(gt[1:], gen[1:], torch.tensor([True, True, False]), format_without_reference=True)
        tensor([ 0.,  0., -3.])
    """
    # Stays one function: the reward rule of the docstring, case by case; the length is its doctested docstring.
    format_penalty = check_number("format_penalty", format_penalty)  # NaN would compare false everywhere
    if abs(format_penalty) > torch.finfo(torch.float32).max:
        raise ValueError(f"format_penalty: expected a value representable in float32, got {format_penalty}")
    correct = correct_codes(gt_pass)
    num_codes = gt_pass.shape[0]
    _check_matrix("gen_pass", gen_pass)
    check_shape("gen_pass", gen_pass, (num_codes, None))
    num_tests = gen_pass.shape[1]
    check_tensor("parsed", parsed)
    check_bool("parsed", parsed)
    check_shape("parsed", parsed, (num_tests,))
    wrong = ~correct
    num_wrong = int(wrong.sum())
    penalty = min(format_penalty, -(max(num_wrong, 1) + 1.0)) if strictly_lowest else format_penalty
    if not bool(correct.any()):
        if not format_without_reference:
            return None
        return torch.where(parsed, torch.tensor(0.0), torch.tensor(penalty, dtype=torch.float32))
    is_correct_test = parsed & (gen_pass | wrong.unsqueeze(1)).all(dim=0)
    if num_wrong == 0:
        reward = torch.where(is_correct_test, 1.0, -1.0)
    else:
        wrong_failing = (~gen_pass & wrong.unsqueeze(1)).sum(dim=0)
        wrong_passing = (gen_pass & wrong.unsqueeze(1)).sum(dim=0)
        reward = torch.where(is_correct_test, wrong_failing, -wrong_passing).to(torch.float32)
    return torch.where(parsed, reward.to(torch.float32), torch.tensor(penalty, dtype=torch.float32))


def standardize_unit_test_rewards(rewards: Tensor, mask: Tensor | None = None, *, eps: float = EPS) -> Tensor:
    """Z-score rewards over the generated tests of each task (last axis; population std); zero variance -> 0.

    The statistics are computed in float64, and a row whose std is within rounding of zero (at most ``eps``, or at
    most a few ulps of ``rewards.dtype`` relative to the row's largest magnitude) counts as degenerate: seven codes
    that each pass 1/3 of the tests (float32 ``0.33333334``) all get 0, not +-1 from a mean one ulp off.

    Args:
        rewards: ``(..., K)`` float, one row per task; finite where ``mask`` is set.
        mask: optional ``(..., K)`` bool for ragged tasks (padding may hold NaN; it comes out as 0).
        eps: degenerate-std threshold, finite and ``> 0``.

    Returns:
        Tensor shaped like ``rewards``, in its dtype.

    Examples:
        >>> import torch
        >>> standardize_unit_test_rewards(torch.tensor([2.0, 0.0, -2.0]))
        tensor([ 1.2247,  0.0000, -1.2247])
    """
    check_tensor("rewards", rewards)
    check_floating("rewards", rewards)
    eps = check_number("eps", eps, gt=0.0)
    if mask is None:
        mask = torch.ones_like(rewards, dtype=torch.bool)
    check_bool("mask", mask)
    check_shape("mask", mask, tuple(rewards.shape))
    check_finite_where("rewards", rewards, mask)
    x = torch.where(mask, rewards.to(torch.float64), 0.0)
    count = mask.sum(dim=-1, keepdim=True).clamp(min=1).to(torch.float64)
    mean = x.sum(dim=-1, keepdim=True) / count
    dev = torch.where(mask, x - mean, 0.0)
    std = ((dev * dev).sum(dim=-1, keepdim=True) / count).sqrt()
    scale = x.abs().amax(dim=-1, keepdim=True) if x.shape[-1] else torch.zeros_like(std)
    rounding = _ROUNDING_ULPS * torch.finfo(rewards.dtype).eps * scale
    degenerate = (std <= eps) | (std <= rounding)
    z = torch.where(degenerate, 0.0, dev / std.clamp(min=eps))
    return torch.where(mask, z, 0.0).to(rewards.dtype)


def unit_test_counts(gt_pass: Tensor, gen_pass: Tensor, parsed: Tensor) -> UnitTestCounts:
    """UT / Detect counts of one task (Open-AgentRL reward/llm_rl_reward.py: ``syn_ut_acc``, ``perfect_ut_rate``).

    Unparseable tests count in the denominators and never in the numerators. A task without a correct code
    contributes nothing; a task without a wrong code contributes to UT only.

    Args:
        gt_pass: ``(C, T_gt)`` bool.
        gen_pass: ``(C, K)`` bool.
        parsed: ``(K,)`` bool.
    """
    correct = correct_codes(gt_pass)
    _check_matrix("gen_pass", gen_pass)
    check_shape("gen_pass", gen_pass, (gt_pass.shape[0], None))
    check_tensor("parsed", parsed)
    check_bool("parsed", parsed)
    check_shape("parsed", parsed, (gen_pass.shape[1],))
    num_tests = int(gen_pass.shape[1])
    if not bool(correct.any()):
        return UnitTestCounts()
    wrong = ~correct
    passed_by_correct = parsed & (gen_pass | wrong.unsqueeze(1)).all(dim=0)
    counts = UnitTestCounts(ut_correct=int(passed_by_correct.sum()), ut_total=num_tests)
    if not bool(wrong.any()):
        return counts
    failed_by_wrong = (~gen_pass | correct.unsqueeze(1)).all(dim=0)
    perfect = int((passed_by_correct & failed_by_wrong).sum())
    return counts + UnitTestCounts(detect_correct=perfect, detect_total=num_tests)


def _check_matrix(name: str, value: Tensor) -> None:
    check_tensor(name, value)
    check_bool(name, value)
    check_shape(name, value, (None, None))
