"""Every public function of the advantages package raises ValueError naming the argument on bad input."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
import torch

import rlanything_core.advantages.functional as F
from rlanything_core.rewards import consistency_targets, standardize_votes, vote_agreement

B, S, M = 3, 4, 2
NAN = float("nan")


def good() -> dict[str, Any]:
    step_mask = torch.tensor([[True, True, True, False], [True, False, False, False], [True, True, True, True]])
    vote_mask = step_mask.unsqueeze(-1).expand(B, S, M).clone()
    vote_valid = vote_mask.clone()
    vote_valid[0, 0, 1] = False
    votes = torch.where(vote_valid, torch.tensor(1.0), torch.tensor(NAN))
    return {
        "outcome": torch.tensor([1.0, -1.0, 1.0]),
        "step_mask": step_mask,
        "group_index": torch.tensor([0, 0, 1]),
        "votes": votes,
        "vote_mask": vote_mask,
        "vote_valid": vote_valid,
        "step_reward": torch.where(step_mask, torch.tensor(0.5), torch.tensor(NAN)),
    }


CALLS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "mean_votes": lambda a: F.mean_votes(a["votes"], a["vote_mask"], a["vote_valid"]),
    "integrated_step_reward": lambda a: F.integrated_step_reward(
        a["outcome"], a["step_mask"], a["votes"], a["vote_mask"], a["vote_valid"]
    ),
    "outcome_step_reward": lambda a: F.outcome_step_reward(a["outcome"], a["step_mask"]),
    "step_only_reward": lambda a: F.step_only_reward(a["step_mask"], a["votes"], a["vote_mask"], a["vote_valid"]),
    "standardize_per_step": lambda a: F.standardize_per_step(a["step_reward"], a["step_mask"], a["group_index"]),
    "group_success_rate": lambda a: F.group_success_rate(a["outcome"], a["group_index"]),
    "consistency_targets": lambda a: consistency_targets(a["step_reward"], a["votes"], a["vote_mask"], a["vote_valid"]),
    "standardize_votes": lambda a: standardize_votes(torch.where(a["vote_mask"], 1.0, NAN), a["vote_mask"]),
    "vote_agreement": lambda a: vote_agreement(a["votes"], a["vote_valid"], a["outcome"]),
}

USES = {
    "outcome": ["integrated_step_reward", "outcome_step_reward", "group_success_rate", "vote_agreement"],
    "step_mask": ["integrated_step_reward", "outcome_step_reward", "step_only_reward", "standardize_per_step"],
    "group_index": ["standardize_per_step", "group_success_rate"],
    "votes": ["mean_votes", "integrated_step_reward", "step_only_reward", "consistency_targets", "vote_agreement"],
    "vote_mask": ["mean_votes", "integrated_step_reward", "step_only_reward", "consistency_targets"],
    "vote_valid": ["mean_votes", "integrated_step_reward", "step_only_reward", "consistency_targets", "vote_agreement"],
    "step_reward": ["standardize_per_step", "consistency_targets"],
}


def mutations() -> list[tuple[str, str, Callable[[Any], Any]]]:
    out: list[tuple[str, str, Callable[[Any], Any]]] = [
        ("outcome", "shape", lambda t: t[:2]),
        ("outcome", "shape", lambda t: t.unsqueeze(1)),
        ("outcome", "floating", lambda t: t.long()),
        ("outcome", "non-finite", lambda t: torch.tensor([1.0, NAN, 1.0])),
        ("outcome", "torch.Tensor", lambda t: t.tolist()),
        ("step_mask", "bool", lambda t: t.float()),
        ("step_mask", "shape", lambda t: t[:, :3]),
        ("step_mask", "shape", lambda t: t[:2]),
        ("group_index", "int64", lambda t: t.float()),
        ("group_index", "non-negative", lambda t: t - 1),
        ("group_index", "shape", lambda t: t[:2]),
        ("votes", "floating", lambda t: t.nan_to_num().long()),
        ("votes", "shape", lambda t: t[:, :, 0]),
        ("votes", "shape", lambda t: t[:, :3]),
        ("votes", "non-finite", lambda t: torch.full_like(t, NAN)),
        ("votes", r"\[-1, 1\]", lambda t: t * 2),
        ("vote_mask", "bool", lambda t: t.float()),
        ("vote_mask", "shape", lambda t: t[..., :1]),
        ("vote_valid", "bool", lambda t: t.float()),
        ("vote_valid", "shape", lambda t: t[..., :1]),
        ("step_reward", "shape", lambda t: t[:, :3]),
        ("step_reward", "floating", lambda t: t.nan_to_num().long()),
        ("step_reward", "non-finite", lambda t: torch.full_like(t, NAN)),
    ]
    return out


ANY_ARG = "|".join(USES)
# shape mutations that make two arguments disagree: naming either one is right ("votes: expected shape (3, 3, *)")
CROSS = {0, 6, 7, 10, 13, 14, 17, 19, 20}
SKIP = {("vote_agreement", 13), ("vote_agreement", 15), ("outcome_step_reward", 6)}  # a valid S; sign-based


CASES = [
    pytest.param(arg, ANY_ARG if i in CROSS else arg, expect, mutate, fn, id=f"{fn}-{arg}-{i}")
    for i, (arg, expect, mutate) in enumerate(mutations())
    for fn in USES[arg]
    if (fn, i) not in SKIP
]


@pytest.mark.parametrize(("arg", "named", "expect", "mutate", "fn"), CASES)
def test_bad_argument_raises_naming_it(
    arg: str, named: str, expect: str, mutate: Callable[[Any], Any], fn: str
) -> None:
    args = good()
    CALLS[fn](args)  # the good arguments pass
    args[arg] = mutate(args[arg])
    with pytest.raises(ValueError, match=f"^({named}): ") as info:
        CALLS[fn](args)
    assert re.search(expect, str(info.value)), str(info.value)


def test_masks_that_disagree() -> None:
    a = good()
    outside = a["vote_valid"].clone()
    outside[1, 3, 0] = True  # a valid vote where none was requested (and at a padded step)
    with pytest.raises(ValueError, match="vote_valid"):
        F.mean_votes(a["votes"].nan_to_num(1.0), a["vote_mask"], outside)
    at_padding = a["vote_mask"].clone()
    at_padding[1, 3, 0] = True  # a requested vote at a padded step
    with pytest.raises(ValueError, match="vote_mask"):
        F.integrated_step_reward(a["outcome"], a["step_mask"], a["votes"], at_padding, a["vote_valid"])
    with pytest.raises(ValueError, match="vote_mask"):
        F.step_only_reward(a["step_mask"], a["votes"], at_padding, a["vote_valid"])


@pytest.mark.parametrize("value", [-1.0, NAN, float("inf"), True, None])
def test_bad_scalars(value: object) -> None:
    a = good()
    with pytest.raises(ValueError, match="lam"):
        F.integrated_step_reward(a["outcome"], a["step_mask"], a["votes"], a["vote_mask"], a["vote_valid"], lam=value)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="eps"):
        F.standardize_per_step(a["step_reward"], a["step_mask"], a["group_index"], eps=value)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="eps"):
        standardize_votes(a["votes"], a["vote_valid"], eps=value)  # type: ignore[arg-type]
    if value != -1.0:
        with pytest.raises(ValueError, match="format_penalty"):
            consistency_targets(a["step_reward"], a["votes"], a["vote_mask"], a["vote_valid"], format_penalty=value)  # type: ignore[arg-type]


def test_bad_singleton() -> None:
    a = good()
    with pytest.raises(ValueError, match="singleton"):
        F.standardize_per_step(a["step_reward"], a["step_mask"], a["group_index"], singleton="raw")  # type: ignore[arg-type]
