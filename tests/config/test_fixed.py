"""Keys a part does not read are refused at any value but their fixed one, compared after resolution."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from rlanything_core.config import ConfigError
from rlanything_core.config.fixed import FixedKey, refuse_changed


def test_refuse_changed_compares_resolved_values() -> None:
    cfg = OmegaConf.create({"a": 1, "b": {"c": "${a}"}, "band": [0.2, 0.8]})
    refuse_changed(cfg, [FixedKey("b", {"c": 1}, "x"), FixedKey("band", [0.2, 0.8], "y")], "demo")
    with pytest.raises(ConfigError, match="config key 'band': \\[0.2, 0.9\\] would do nothing in the demo setting"):
        refuse_changed(OmegaConf.create({"band": [0.2, 0.9]}), [FixedKey("band", [0.2, 0.8], "y")], "demo")
