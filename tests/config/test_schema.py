"""A config part against its schema dataclass: types, Enums, unknown keys, ranges, each fault naming key and fix."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import pytest
from omegaconf import OmegaConf

from rlanything_core.config import ConfigError, bounded
from rlanything_core.config.fields import describe_bounds, within
from rlanything_core.config.schema import check_closed, check_node, suggest


class Colour(Enum):
    red = "red"
    blue = "blue"


@dataclass
class Part:
    name: str = bounded()  # required
    rate: float = bounded(0.1, gt=0, lt=1)
    steps: int | None = bounded(None, ge=1)
    colours: list[Colour] = bounded(["red"])
    flag: bool = True


def _refused(node: dict, *, strict: bool = True) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        check_node("part.", OmegaConf.create(node), Part, strict=strict)
    assert "Fix:" in str(err.value)
    return err.value


def test_a_good_part_passes_and_an_interpolated_value_is_checked_where_it_points() -> None:
    good = OmegaConf.create({"name": "a", "rate": 0.5, "steps": 3, "colours": ["blue"]})
    check_node("part.", good, Part, strict=True)
    cfg = OmegaConf.create({"top": 5, "part": {"name": "a", "rate": "${top}"}})  # out of range at `top`, not here
    check_node("part.", cfg.part, Part, strict=True)


@pytest.mark.parametrize(
    ("node", "key", "problem", "fix"),
    [
        ({"name": "a", "rate": 0.0}, "part.rate", "out of range: 0.0", "float (> 0, < 1)"),
        ({"name": "a", "rate": float("nan")}, "part.rate", "out of range", "> 0"),
        ({"name": "a", "steps": 0}, "part.steps", "out of range: 0", "int | None (>= 1)"),
        ({"name": "a", "steps": "two"}, "part.steps", "could not be converted", "int | None"),
        ({"name": "a", "flag": "maybe"}, "part.flag", "maybe", "type bool"),
        ({"name": "a", "colours": ["green"]}, "part.colours", "green", "use one of ['red', 'blue']"),
        ({"name": "a", "stpes": 2}, "part.stpes", "unknown key", "did you mean steps?"),
        ({"rate": 0.5}, "part.name", "missing", "set part.name"),
    ],
)
def test_a_fault_names_the_key_the_problem_and_the_fix(node: dict, key: str, problem: str, fix: str) -> None:
    err = _refused(node)
    assert err.key == key
    assert problem in str(err).split("Fix:")[0]
    assert fix in str(err).split("Fix:")[1]


def test_a_loose_check_ignores_unknown_keys_but_checks_the_known_ones() -> None:
    check_node("part.", OmegaConf.create({"name": "a", "other": 1}), Part, strict=False)
    assert _refused({"name": "a", "other": 1, "rate": 2.0}, strict=False).key == "part.rate"


def test_a_part_that_is_not_a_mapping_is_refused() -> None:
    with pytest.raises(ConfigError, match="config key 'part': expected a group of keys"):
        check_node("part.", 3, Part, strict=True)


def test_a_closed_set_of_keys_refuses_others_suggesting_the_nearest() -> None:
    check_closed(OmegaConf.create({"seed": 1}), {"seed", "iterations"})
    with pytest.raises(ConfigError) as err:
        check_closed(OmegaConf.create({"seed": 1, "iteration": 2}), {"seed", "iterations"}, problem="unknown here")
    assert err.value.key == "iteration"
    assert "unknown here" in str(err.value) and "did you mean iterations? remove +iteration=..." in str(err.value)
    assert suggest("zzz", {"seed"}) == ""


def test_ranges() -> None:
    assert within(1.0, {"ge": 1}) and not within(1.0, {"gt": 1}) and not within(float("inf"), {})
    assert not within(1.0, {"lt": 1}) and within(0.5, {"ge": 0, "lt": 1})
    assert describe_bounds({"ge": 0, "lt": 1}) == ">= 0, < 1"
    assert Part(name="a").colours is not Part(name="b").colours  # a list default is fresh per instance
