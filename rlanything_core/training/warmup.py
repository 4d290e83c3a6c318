"""Linear learning-rate warmup for an RL update whose optimizer starts cold at every run.

Adam's first steps move every trained weight by about the learning rate whatever its gradient's size (the first
bias-corrected step is ``lr * g / |g|``), so a learning rate that is safe once the moments have averaged a few
gradients can leave the trust region in the first iteration. Measured on the CPU ALFWorld policy (docs/results.md):
the first iteration's approx KL was 4e-3 at lr 3e-5, 3e-2 at 1e-4 and 0.7 at 3e-4, and at 3e-4 training success fell
to near 0 and did not recover. A warmup ramps the step size over the first ``warmup_steps`` optimizer steps.

The step count and the base rate live in the optimizer's parameter groups (``warmup_step``, ``warmup_base_lr``), so a
checkpoint restores them with the optimizer and a resumed run continues the ramp where it stopped.
"""

from __future__ import annotations

import torch

__all__ = ["warm_up", "warmup_factor"]


def warmup_factor(step: int, warmup_steps: int) -> float:
    """The fraction of the base learning rate for optimizer step ``step`` (0-based).

    ``min(1, (step + 1) / warmup_steps)``; ``warmup_steps`` 0 is no warmup (always 1).

    Raises:
        ValueError: a negative ``step`` or ``warmup_steps``.
    """
    if step < 0 or warmup_steps < 0:
        raise ValueError(f"step, warmup_steps: expected >= 0, got {step}, {warmup_steps}")
    if warmup_steps == 0:
        return 1.0
    return min(1.0, (step + 1) / warmup_steps)


def warm_up(optimizer: torch.optim.Optimizer, warmup_steps: int) -> None:
    """Set every parameter group's learning rate for the optimizer step about to be taken, and count it.

    The first call records each group's learning rate as its base; call once before each ``optimizer.step()``.
    """
    for group in optimizer.param_groups:
        base = group.setdefault("warmup_base_lr", group["lr"])
        step = int(group.setdefault("warmup_step", 0))
        group["lr"] = base * warmup_factor(step, warmup_steps)
        group["warmup_step"] = step + 1
