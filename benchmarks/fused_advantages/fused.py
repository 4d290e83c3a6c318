"""One validated pass for the whole feedback step: the policy's advantages and the judge's consistency targets.

:func:`integrated_advantages_and_consistency` returns what the composition of the public functions returns::

    reward = integrated_step_reward(outcome, step_mask, votes, vote_mask, vote_valid, lam=lam)
    advantages = standardize_per_step(reward, step_mask, group_index, eps=eps, singleton=singleton)
    targets = standardize_votes(consistency_targets(reward, votes, vote_mask, vote_valid, ...), vote_mask, eps=eps)

(arXiv 2602.02488), equal within float rounding (the tests check 1e-5 in float32 and 1e-12 in float64 against the
composition, and 1e-5 against the plain-Python reference), with the same ``ValueError`` s; but it validates once
(shapes and dtypes, then one range check that also catches non-finite valid votes) and makes far fewer passes.

Two implementations, same values within float rounding (``backend``; the tests run both):

* ``"numba"`` (what ``"auto"`` picks when numba is installed, ``pip install 'rlanything[fast]'``, and the tensors are
  float32/float64 on the CPU): the compiled loops of ``_kernels``, one read of every vote and one write of
  every target, float64 accumulators. Measured on the 2-core CPU this runs on between generation calls: ~7 ms of CPU
  time at 1M votes (m = 3), 4-6x faster than the torch path and ~15x faster than the composition.
* ``"torch"`` (everything else: no numba, GPU tensors, half precision, autograd). torch's CPU kernels are fast on
  contiguous same-shape operands and several times slower on strided ones, on broadcasts along a small trailing axis,
  on reductions over it, on ``torch.where``, on float comparisons and on ``sqrt(0)``. So each chunk of rows of the
  ``(B, S, M)`` vote grid (sized to stay in cache) is turned once into ``M`` contiguous ``(rows, S)`` planes, every sum
  over the votes is an add of planes and every per-step value broadcasts along the leading axis, and the last multiply
  writes the z-scored targets back in the ``(B, S, M)`` layout. The step reward of every chunk lands in one ``(B, S)``
  grid, standardized per (task group, step index) at the end. Selections are exact arithmetic (``nan_to_num`` then a
  0/1 product; ``sign(std - tol).clamp(0)`` for ``std > tol``), equal to ``torch.where`` for the finite values
  involved. ~25 ms at 1M votes on an idle machine, ~600 small ops.

Both validate the same way: the kernels report a bad vote grid as a status and the tensor path then raises its
precise ``ValueError``.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import numpy as np
import torch
from torch import Tensor

from benchmarks.fused_advantages import _kernels
from rlanything_core._validation import (
    check_bool,
    check_floating,
    check_index,
    check_shape,
    check_tensor,
)
from rlanything_core.advantages._checks import (
    check_finite_scalar,
    check_nonnegative_scalar,
    check_vote_grid,
)
from rlanything_core.advantages.functional import SingletonRule
from rlanything_core.constants import EPS, FORMAT_PENALTY
from rlanything_core.types import StepBatch

__all__ = [
    "Backend",
    "FeedbackTargets",
    "batch_advantages_and_consistency",
    "integrated_advantages_and_consistency",
    "kernels_available",
]

Backend = Literal["auto", "numba", "torch"]
"""Which implementation runs: ``"auto"`` (the compiled kernels when numba is installed and the inputs fit, else
torch), ``"numba"`` (the kernels or a ``ValueError``), ``"torch"`` (the tensor path)."""
_BACKENDS: tuple[Backend, ...] = ("auto", "numba", "torch")
_KERNEL_DTYPES = (torch.float32, torch.float64)
_KERNEL_INPUTS = "the kernels take CPU tensors without autograd, outcome and votes in float32 or float64"

_CHUNK_CELLS = 1 << 17  # vote cells per row chunk: the chunk's working set stays in cache (~3 MiB in float32)
_DENSE_IDS = 8  # compact group ids with a bincount when max id < _DENSE_IDS * B + 1024, else with torch.unique


class FeedbackTargets(NamedTuple):
    """The two training signals of one iteration (a named tuple: ``advantages, targets = ...`` works).

    Attributes:
        advantages: ``(B, S)`` policy advantages, 0 at padding.
        targets: ``(B, S, M)`` z-scored consistency rewards of the judge votes, 0 where no vote was requested.
    """

    advantages: Tensor
    targets: Tensor


def kernels_available() -> bool:
    """Whether the compiled kernels can run (numba is installed: ``pip install 'rlanything[fast]'``)."""
    return _kernels.compiled() is not None


def _check_tensors(
    outcome: object, step_mask: object, group_index: object, votes: object, vote_mask: object, vote_valid: object
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    """Types, dtypes and shapes (no pass over the data except the small ``(B,)`` ones)."""
    out = check_tensor("outcome", outcome)
    check_floating("outcome", out)
    check_shape("outcome", out, (None,))
    if out.numel() and not bool(torch.isfinite(out).all()):
        bad = int((~torch.isfinite(out)).nonzero()[0, 0])
        raise ValueError(f"outcome: non-finite value at unmasked position ({bad},); only padding may hold NaN/inf")
    (b,) = out.shape
    mask = check_tensor("step_mask", step_mask)
    check_bool("step_mask", mask)
    check_shape("step_mask", mask, (b, None))
    groups = check_tensor("group_index", group_index)
    check_index("group_index", groups)
    check_shape("group_index", groups, (b,))
    v = check_tensor("votes", votes)
    vm = check_tensor("vote_mask", vote_mask)
    vv = check_tensor("vote_valid", vote_valid)
    check_floating("votes", v)
    check_shape("votes", v, (b, mask.shape[1], None))
    check_bool("vote_mask", vm)
    check_shape("vote_mask", vm, tuple(v.shape))
    check_bool("vote_valid", vv)
    check_shape("vote_valid", vv, tuple(v.shape))
    return out, mask, groups, v, vm, vv


def _compact_groups(group_index: Tensor) -> tuple[Tensor, int]:
    """Map group ids to ``0..K-1`` (same grouping as ``masking.compact_index``; a bincount when the ids are dense).

    On the CPU in numpy (:func:`_compact_ids`): single-threaded, where torch's bincount and cumsum are OpenMP regions
    that wait for a descheduled peer at 2 threads on a busy machine (measured at 1M votes, load 5: 12 ms with torch at
    2 threads, 0.2 ms in numpy).
    """
    if group_index.device.type != "cpu":
        return _compact_ids_torch(group_index)
    compact, num_groups = _compact_ids(group_index.numpy())
    return torch.from_numpy(compact), num_groups


def _compact_ids(group_index: np.ndarray) -> tuple[np.ndarray, int]:
    """:func:`_compact_groups` in numpy: int64 ids ``0..K-1`` in the order of the group ids, and ``K``."""
    ids = group_index.astype(np.int64, copy=False)
    if ids.size == 0:
        return ids.copy(), 0
    if int(ids.max()) < _DENSE_IDS * ids.size + 1024:
        remap = np.cumsum(np.bincount(ids) > 0) - 1
        return remap[ids], int(remap[-1]) + 1
    unique, inverse = np.unique(ids, return_inverse=True)
    return inverse.astype(np.int64, copy=False).reshape(-1), int(unique.size)


def _compact_ids_torch(group_index: Tensor) -> tuple[Tensor, int]:
    """:func:`_compact_ids` in torch, on the tensor's device."""
    ids = group_index.to(torch.int64)
    if ids.numel() == 0:
        return ids, 0
    if int(ids.max()) < _DENSE_IDS * ids.numel() + 1024:
        remap = torch.cumsum(torch.bincount(ids) > 0, 0) - 1
        return remap[ids], int(remap[-1]) + 1
    unique, inverse = torch.unique(ids, return_inverse=True)
    return inverse, int(unique.numel())


def _inverse_std_(var: Tensor, mean: Tensor, eps: float, scratch: Tensor) -> Tensor:
    """``inverse_std(sqrt(var), mean, eps)`` (see ``advantages._checks``) in arithmetic, in ``var`` (and ``scratch``).

    ``sign(std - tol).clamp(min=0)`` is 1 exactly where ``std > tol`` (the difference of two distinct finite floats is
    never 0) and 0 elsewhere, and ``1 / std`` is finite, so the product selects exactly like ``torch.where``. The
    variance is clamped to ``tiny`` before the square root: CPU ``sqrt`` is ~40x slower on zeros, and padding is
    mostly zeros. That changes nothing unless ``tol < sqrt(tiny)`` (``~1e-19`` in float32; ``eps`` is ``1e-8``).
    """
    finfo = torch.finfo(var.dtype)
    std = var.clamp_(min=finfo.tiny).sqrt_()
    gate = torch.abs(mean, out=scratch).mul_(8 * finfo.eps).clamp_(min=eps)  # tol
    torch.sub(std, gate, out=gate).sign_().clamp_(min=0.0)
    return std.reciprocal_().mul_(gate)


class _Workspace:
    """Buffers reused across row chunks: three ``(M, rows, S)`` planes, four ``(rows, S)``, the ``uint8`` codes."""

    def __init__(self, rows: int, steps: int, votes: int, dtype: torch.dtype, device: torch.device) -> None:
        self.planes = torch.empty(3, votes * rows * steps, dtype=dtype, device=device)
        self.steps = torch.empty(4, rows * steps, dtype=dtype, device=device)
        self.code = torch.empty(rows * steps * votes, dtype=torch.uint8, device=device)
        self.code_planes = torch.empty_like(self.code)

    def plane(self, i: int, shape: tuple[int, int, int]) -> Tensor:
        return self.planes[i, : shape[0] * shape[1] * shape[2]].view(shape)

    def step(self, i: int, shape: tuple[int, int]) -> Tensor:
        return self.steps[i, : shape[0] * shape[1]].view(shape)


def _reward_and_targets(
    votes: Tensor,
    vote_mask: Tensor,
    vote_valid: Tensor,
    step_w: Tensor,
    outcome: Tensor,
    reward: Tensor,
    targets: Tensor,
    work: _Workspace,
    *,
    lam: float,
    eps: float,
    penalty: float,
) -> None:
    """Rows of one chunk: validate the votes, write ``R`` into ``reward`` and the z-scored targets into ``targets``.

    The ``(rows, S, M)`` votes become ``M`` contiguous ``(rows, S)`` planes: the two masks fold into one ``uint8`` code
    per slot (0 not requested, 1 valid, 2 unparseable, 255 valid but not requested: an error), then one strided copy
    each for the code and the votes. Sums over the votes are adds of planes, per-step values broadcast along the
    leading axis, and the last multiply writes the ``(rows, S, M)`` layout back.
    """
    b, s, m = votes.shape
    vm8, vv8 = vote_mask.view(torch.uint8), vote_valid.view(torch.uint8)
    code = torch.add(vm8, vm8, out=work.code[: b * s * m].view(b, s, m)).sub_(vv8)
    if code.numel() and int(code.max()) > 2:
        raise ValueError("vote_valid: a valid vote lies outside vote_mask (vote_valid must imply vote_mask)")
    code_planes = work.code_planes[: b * s * m].view(m, b, s).copy_(code.permute(2, 0, 1))  # (u8 -> u8 is faster)
    failed = work.plane(0, (m, b, s)).copy_(code_planes)  # the code as floats for now
    asked = torch.clamp(failed, max=1.0, out=work.plane(1, (m, b, s)))  # 1 where requested
    failed.sub_(asked)  # 1 where unparseable (code 2), else 0
    clean = work.plane(2, (m, b, s)).copy_(votes.permute(2, 0, 1))
    clean.nan_to_num_(nan=2.0, posinf=2.0, neginf=-2.0).mul_(asked)
    clean.addcmul_(clean, failed, value=-1.0)  # valid votes, 0 elsewhere (NaN-safe: non-finite ones are +-2 now)
    if clean.numel():
        low, high = torch.aminmax(clean)  # a non-finite valid vote is +-2 now: one range check finds both
        if float(low) < -1.0 or float(high) > 1.0:
            check_vote_grid(votes, vote_mask, vote_valid)  # raises the precise error (non-finite, or not in [-1, 1])
            raise ValueError("votes: expected finite values in [-1, 1] where vote_valid")
    denom = torch.sum(asked, 0, out=work.step(0, (b, s)))  # number of requested votes per step
    scratch = torch.addcmul(denom, denom, step_w, value=-1.0, out=work.step(1, (b, s)))  # requested at padding
    if scratch.numel() and float(scratch.max()) > 0:
        raise ValueError("vote_mask: a vote is marked at a padded step (vote_mask must lie inside step_mask)")
    denom.clamp_(min=1.0)

    # Integrated step reward R = O + lam * mean vote, 0 at padding (an unparseable vote counts 0 in the mean).
    torch.sum(clean, 0, out=reward).div_(denom).mul_(lam).add_(outcome.unsqueeze(1)).mul_(step_w)

    # Consistency targets R * vote (penalty if unparseable), z-scored over the requested votes of each step.
    dev = clean.mul_(reward).add_(failed, alpha=penalty)  # raw targets; 0 where no vote was requested
    mean = torch.sum(dev, 0, out=work.step(2, (b, s))).div_(denom)
    dev.addcmul_(asked, mean, value=-1.0)  # centred; still 0 where no vote was requested
    var = torch.mul(dev[0], dev[0], out=scratch) if m else scratch.zero_()
    for plane in dev[1:]:
        var.addcmul_(plane, plane)
    inv = _inverse_std_(var.div_(denom), mean, eps, work.step(3, (b, s)))
    torch.mul(dev.permute(1, 2, 0), inv.unsqueeze(-1), out=targets).add_(0.0)  # back to (rows, S, M); no -0


def _standardize_steps(
    reward: Tensor, step_w: Tensor, group_index: Tensor, *, eps: float, singleton: SingletonRule
) -> Tensor:
    """Advantages: z-score of ``R`` per (task group, step index), as ``functional.standardize_per_step``.

    Segment sums are row-wise ``index_add`` into a ``(K, S)`` table, read back with a row gather.
    """
    groups, num_groups = _compact_groups(group_index)
    table = torch.zeros(num_groups, reward.shape[1], dtype=reward.dtype, device=reward.device)
    count = table.index_add(0, groups, step_w)
    count_d = count.clamp(min=1.0)
    mean = table.index_add(0, groups, reward).div_(count_d)
    dev = mean.index_select(0, groups)
    torch.sub(reward, dev, out=dev).mul_(step_w)
    var = table.index_add_(0, groups, dev * dev).div_(count_d)
    single = count.eq(1.0).to(reward.dtype) if singleton is SingletonRule.RAW else None
    inv = _inverse_std_(var, mean, eps, torch.empty_like(mean)).mul_(count.sub_(1.0).clamp_(0.0, 1.0))  # >= 2 only
    advantages = dev.mul_(inv.index_select(0, groups))
    if single is not None:  # SingletonRule.RAW: a singleton cell has dev == 0 exactly, add its raw reward
        advantages.addcmul_(reward, single.index_select(0, groups))
    return advantages.add_(0.0)  # no -0


def integrated_advantages_and_consistency(
    outcome: Tensor,
    step_mask: Tensor,
    group_index: Tensor,
    votes: Tensor,
    vote_mask: Tensor,
    vote_valid: Tensor,
    *,
    lam: float = 1.0,
    eps: float = EPS,
    singleton: SingletonRule = SingletonRule.ZERO,
    format_penalty: float = FORMAT_PENALTY,
    backend: Backend = "auto",
) -> FeedbackTargets:
    """Advantages ``(R - mean) / std`` per (group, step) and z-scored consistency targets of ``R * vote``, fused.

    ``R = O + lam * mean_j S_j`` (unparseable votes count 0 in the mean over the requested ones); the advantages
    standardize ``R`` over the rollouts of a task group that reach the step (arXiv 2602.02488; ``singleton`` for a step
    reached by one rollout); the consistency reward of a vote is ``R * S`` (``format_penalty`` if it did not parse),
    z-scored over the requested votes of its step (§2.3). Degenerate spreads (``std <= eps`` or within float
    rounding of the mean) give 0. Same values as the composition in the module docstring, same ``ValueError`` s.

    Args:
        outcome: ``(B,)`` floating, finite.
        step_mask: ``(B, S)`` bool, ``True`` at real steps.
        group_index: ``(B,)`` int64 (or int32) non-negative task group of each rollout.
        votes: ``(B, S, M)`` floating; finite and in ``[-1, 1]`` where ``vote_valid`` (padding may hold anything).
        vote_mask: ``(B, S, M)`` bool, ``True`` where a vote was requested; inside ``step_mask``.
        vote_valid: ``(B, S, M)`` bool, ``True`` where it parsed; inside ``vote_mask``.
        lam: weight of the judge's mean vote, finite and ``>= 0``.
        eps: degenerate-std threshold, ``>= 0``.
        singleton: rule for a (group, step) cell reached by one rollout.
        format_penalty: raw consistency reward of an unparseable vote, finite.
        backend: ``"auto"`` (default): the compiled kernels when numba is installed and the inputs fit (CPU, no
            autograd, float32/float64), else the tensor path; ``"numba"`` or ``"torch"`` to choose (``"numba"``
            raises ``ValueError`` when it cannot run). Both give the same values within float rounding.

    Returns:
        :class:`FeedbackTargets`: ``advantages`` ``(B, S)`` and ``targets`` ``(B, S, M)``, contiguous, in the promoted
        dtype of ``outcome`` and ``votes``; 0 at padding, never NaN.

    Examples:
        >>> import torch
        >>> step_mask = torch.tensor([[True, True], [True, False]])
        >>> votes = torch.tensor([[[1.0, 1.0], [1.0, -1.0]], [[-1.0, float("nan")], [0.0, 0.0]]])
        >>> vote_mask = step_mask.unsqueeze(-1).expand(2, 2, 2)
        >>> vote_valid = vote_mask & ~votes.isnan()
        >>> out = integrated_advantages_and_consistency(
        ...     torch.tensor([1.0, -1.0]), step_mask, torch.tensor([0, 0]), votes, vote_mask, vote_valid
        ... )
        >>> out.advantages
        tensor([[ 1.,  0.],
                [-1.,  0.]])
        >>> out.targets
        tensor([[[ 0.,  0.],
                 [ 1., -1.]],
        <BLANKLINE>
                [[ 1., -1.],
                 [ 0.,  0.]]])
    """
    # Stays one function: checks, then one of two passes; the length is its doctested docstring of the equations.
    out, mask, groups_in, v, vm, vv = _check_tensors(outcome, step_mask, group_index, votes, vote_mask, vote_valid)
    lam = check_nonnegative_scalar("lam", lam)
    eps = check_nonnegative_scalar("eps", eps)
    penalty = check_finite_scalar("format_penalty", format_penalty)
    if not isinstance(singleton, SingletonRule):
        raise ValueError(f"singleton: expected a SingletonRule, got {singleton!r}")
    if backend not in _BACKENDS:
        raise ValueError(f"backend: expected one of {', '.join(map(repr, _BACKENDS))}, got {backend!r}")
    fits = _fits_kernels(out, v, mask, groups_in, vm, vv)
    kernels = _kernels.compiled() if backend == "numba" or (backend == "auto" and fits) else None
    if backend == "numba" and (kernels is None or not fits):
        why = "numba is not installed (pip install 'rlanything[fast]')" if kernels is None else _KERNEL_INPUTS
        raise ValueError(f"backend: 'numba' cannot run: {why}")
    if kernels is not None and fits:
        done = _kernel_pass(
            out, mask, groups_in, v, vm, vv, kernels, lam=lam, eps=eps, singleton=singleton, penalty=penalty
        )
        if done is not None:
            return done
        # a bad input: the tensor path below finds it again and raises its precise ValueError
    return _tensor_pass(out, mask, groups_in, v, vm, vv, lam=lam, eps=eps, singleton=singleton, penalty=penalty)


def _fits_kernels(outcome: Tensor, votes: Tensor, *masks: Tensor) -> bool:
    """Whether the compiled kernels take these tensors (see ``_KERNEL_INPUTS``); the tensor path takes any."""
    tensors = (outcome, votes, *masks)
    on_cpu = all(t.device.type == "cpu" and not t.requires_grad for t in tensors)  # .numpy() needs both
    return on_cpu and outcome.dtype in _KERNEL_DTYPES and votes.dtype in _KERNEL_DTYPES


def _kernel_pass(
    out: Tensor,
    mask: Tensor,
    groups_in: Tensor,
    v: Tensor,
    vm: Tensor,
    vv: Tensor,
    kernels: _kernels.Kernels,
    *,
    lam: float,
    eps: float,
    singleton: SingletonRule,
    penalty: float,
) -> FeedbackTargets | None:
    """The compiled loops (``_kernels``) on numpy views of the tensors; ``None`` if they report a bad input.

    The kernels take flat views, so inputs are made contiguous (a no-op for the usual ones; it also keeps numba to
    one compiled version per dtype and ``m``).
    The advantages tensor carries the outcome per step into the first kernel, the step reward out of it, and the
    second kernel standardizes it in place.
    """
    b, s, m = v.shape
    dtype = torch.promote_types(out.dtype, v.dtype)
    rel_tol = 8 * torch.finfo(dtype).eps  # as inverse_std in advantages._checks, in the dtype of the outputs
    # The grid-sized steps around the kernels run in numpy: single-threaded, where a torch op would be an OpenMP
    # region that waits for a descheduled peer on a busy 2-core machine (measured at 1M votes, load 6, with these
    # steps and the group ids in torch: 11 ms at 1 torch thread, 70 ms at 2; in numpy: ~9 ms CPU time at both).
    vm8, vv8 = vm.contiguous().numpy().view(np.uint8), vv.contiguous().numpy().view(np.uint8)
    code = vm8 + vm8 - vv8  # uint8: 0 not requested, 1 valid, 2 unparseable, 255 valid but not requested
    step_mask = mask.contiguous().numpy()
    advantages = torch.empty((b, s), dtype=dtype)
    advantages.numpy()[:] = out.numpy()[:, None]  # the outcome per step; then R; then the advantages
    targets = torch.empty((b, s, m), dtype=dtype)
    status = kernels.step_feedback(
        v.contiguous().numpy().reshape(-1), code.reshape(-1), step_mask.reshape(-1),
        lam, eps, rel_tol, penalty, advantages.numpy().reshape(-1), targets.numpy().reshape(-1), tuple(range(m)),
    )  # fmt: skip
    if status != _kernels.OK:
        return None
    groups, num_groups = _compact_ids(groups_in.numpy())
    raw_singletons = singleton is SingletonRule.RAW
    kernels.standardize_cells(advantages.numpy(), step_mask, groups, num_groups, eps, rel_tol, raw_singletons)
    return FeedbackTargets(advantages, targets)


def _tensor_pass(
    out: Tensor,
    mask: Tensor,
    groups_in: Tensor,
    v: Tensor,
    vm: Tensor,
    vv: Tensor,
    *,
    lam: float,
    eps: float,
    singleton: SingletonRule,
    penalty: float,
) -> FeedbackTargets:
    """The torch implementation: row chunks of the vote grid, then the per-(group, step) standardization."""
    b, s, m = v.shape
    dtype = torch.promote_types(out.dtype, v.dtype)
    wd = torch.promote_types(dtype, torch.float32)  # work dtype (half inputs are computed in float32)
    device = v.device

    reward = torch.empty((b, s), dtype=wd, device=device)
    targets = torch.empty((b, s, m), dtype=wd, device=device)
    step_w = mask.view(torch.uint8).to(wd)  # (B, S) 0/1
    outcome_w = out.to(wd)
    rows = max(1, _CHUNK_CELLS // max(1, s * m))
    work = _Workspace(min(rows, b), s, m, wd, device)
    for start in range(0, b, rows):
        part = slice(start, min(b, start + rows))
        _reward_and_targets(
            v[part], vm[part], vv[part], step_w[part], outcome_w[part], reward[part], targets[part], work,
            lam=lam, eps=eps, penalty=penalty,
        )  # fmt: skip
    advantages = _standardize_steps(reward, step_w, groups_in.to(device), eps=eps, singleton=singleton)
    return FeedbackTargets(advantages.to(dtype), targets.to(dtype))


def batch_advantages_and_consistency(
    batch: StepBatch,
    *,
    lam: float = 1.0,
    eps: float = EPS,
    singleton: SingletonRule = SingletonRule.ZERO,
    format_penalty: float = FORMAT_PENALTY,
    backend: Backend = "auto",
) -> FeedbackTargets:
    """:func:`integrated_advantages_and_consistency` on the tensors of a :class:`StepBatch` with votes.

    Args:
        batch: a :class:`StepBatch` with ``votes``, ``vote_mask`` and ``vote_valid``.
        lam: weight of the judge's mean vote.
        eps: degenerate-std threshold.
        singleton: rule for a (group, step) cell reached by one rollout.
        format_penalty: raw consistency reward of an unparseable vote.
        backend: ``"auto"``, ``"numba"`` or ``"torch"`` (see :func:`integrated_advantages_and_consistency`).

    Returns:
        :class:`FeedbackTargets` ``(advantages (B, S), targets (B, S, M))``.
    """
    if not isinstance(batch, StepBatch):
        raise ValueError(f"batch: expected a StepBatch, got {type(batch).__name__}")
    if batch.votes is None or batch.vote_mask is None or batch.vote_valid is None:
        raise ValueError("batch: expected judge votes (votes, vote_mask, vote_valid), got a batch without votes")
    return integrated_advantages_and_consistency(
        batch.outcome,
        batch.step_mask,
        batch.group_index,
        batch.votes,
        batch.vote_mask,
        batch.vote_valid,
        lam=lam,
        eps=eps,
        singleton=singleton,
        format_penalty=format_penalty,
        backend=backend,
    )
