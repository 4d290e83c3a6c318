"""A config schema generated from the part's dataclass: its types made concrete, its defaults and ranges kept."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import pytest
from omegaconf import OmegaConf

from rlanything_core.config import ConfigError, bounded
from rlanything_core.config.derive import schema_of
from rlanything_core.config.schema import check_node


@dataclass(frozen=True)
class Part:
    kind: ClassVar[str] = "demo"
    sizes: Sequence[int] = (1, 2)
    names: Mapping[str, str] = field(default_factory=dict)
    count: int = bounded(3, ge=1)
    path: str | None = None
    internal: int = 0


@dataclass
class Shared:
    name: str = "x"


def test_the_schema_has_the_shared_and_the_chosen_fields_with_concrete_types_defaults_and_ranges() -> None:
    schema = schema_of(Part, keys=("sizes", "names", "count", "path"), base=Shared, name="PartSchema")
    fields = {f.name: f for f in dataclasses.fields(schema)}
    assert list(fields) == ["name", "sizes", "names", "count", "path"]
    assert (fields["sizes"].type, fields["names"].type) == (list[int], dict[str, str])
    assert fields["count"].metadata == {"ge": 1}
    made = OmegaConf.structured(schema)
    assert made.sizes == [1, 2] and made.names == {} and made.count == 3 and made.path is None
    check_node("part.", OmegaConf.create({"sizes": [4], "count": 2}), schema, strict=True)
    faults = (({"count": 0}, "part.count"), ({"sizes": ["a"]}, "part.sizes"), ({"internal": 1}, "part.internal"))
    for node, key in faults:
        with pytest.raises(ConfigError) as err:
            check_node("part.", OmegaConf.create(node), schema, strict=True)
        assert err.value.key == key


def test_a_key_that_is_no_field_of_the_part_is_refused() -> None:
    with pytest.raises(ValueError, match=r"keys \['cuont'\] are not fields of Part"):
        schema_of(Part, keys=("cuont",), base=Shared, name="Bad")
