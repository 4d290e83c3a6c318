from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED = Path(os.environ.get("RLANYTHING_SHARED", Path(__file__).resolve().parents[2] / ".." / "shared")).resolve()
ALF = SHARED / "alfworld" / "json_2.1.1"


def game(name: str, split: str = "valid_train") -> str:
    hits = sorted((ALF / split / name).glob("*/game.tw-pddl"))
    if not hits:
        pytest.skip(f"ALFWorld game {name} not found under {ALF}")
    return str(hits[0])


@pytest.fixture
def alf_root() -> Path:
    if not ALF.is_dir():
        pytest.skip(f"no ALFWorld data at {ALF}")
    return ALF


@pytest.fixture
def alf_game():  # type: ignore[no-untyped-def]
    return game
