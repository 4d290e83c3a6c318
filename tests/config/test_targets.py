"""Every ``_target_`` node of a config imports and takes its keys as parameters; an error names the dotted key."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from rlanything_core.config import ConfigError
from rlanything_core.config.targets import check_targets, target_nodes


def test_nested_and_listed_nodes_are_found_with_their_dotted_keys_and_interpolations_skipped() -> None:
    cfg = OmegaConf.create({
        "a": {"_target_": "x.A", "b": {"_target_": "x.B"}},
        "items": [{"_target_": "x.C"}],
        "alias": "${a}",
    })  # fmt: skip
    assert [key for key, _ in target_nodes("", cfg)] == ["a", "a.b", "items[0]"]


@pytest.mark.parametrize(
    ("node", "key", "fix"),
    [
        ({"_target_": "no.such.Thing"}, "opt._target_", "importable dotted path"),
        ({"_target_": "collections.Counter.nope"}, "opt._target_", "importable dotted path"),
        ({"_target_": "rlanything_core.nothing_here"}, "opt._target_", "importable dotted path"),
        ({"_target_": "collections.abc"}, "opt._target_", "importable dotted path"),  # a module: not callable
        ({"_target_": "fractions.Fraction", "numeratr": 1}, "opt.numeratr", "did you mean numerator?"),
        ({"_target_": "collections.OrderedDict", "inner": {"_target_": "fractions.Fraction", "x": 1}}, "opt.inner.x",
         "use one of ['_normalize', 'denominator', 'numerator']".replace("'_normalize', ", "")),
    ],
)
def test_a_bad_target_or_key_is_refused_naming_the_dotted_key(node: dict, key: str, fix: str) -> None:
    with pytest.raises(ConfigError) as err:
        check_targets(OmegaConf.create({"opt": node}))
    assert err.value.key == key
    assert fix in str(err.value).split("Fix:")[1]


def test_good_targets_and_hydras_own_node_pass() -> None:
    check_targets(OmegaConf.create({
        "opt": {"_target_": "fractions.Fraction", "numerator": 1, "_partial_": True},
        "anything": {"_target_": "functools.partial", "func": 1, "whatever": 1},  # **kwargs: nothing to check
        "unsigned": {"_target_": "builtins.dict", "whatever": 1},  # no signature to read: nothing to check
        "hydra": {"job": {"_target_": "no.such.Thing"}},
    }))  # fmt: skip
