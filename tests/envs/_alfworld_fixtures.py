"""Shared helpers for the ALFWorld tests: small real games (cheap planner calls) from ../shared/alfworld."""

from __future__ import annotations

import json
from pathlib import Path

from rlanything_core.envs.alfworld import AlfworldGame, list_games

# Small rooms: reset about 1 s, planner calls about 10-100 ms.
PENCIL = "pick_and_place_simple-Pencil-None-Desk-310"  # 4-step walkthrough
CD = "pick_two_obj_and_place-CD-None-Drawer-304"  # 5 steps
SPRAY = "pick_and_place_simple-SprayBottle-None-Toilet-418"  # 4 steps
SOAP = "pick_clean_then_place_in_recep-SoapBar-None-Drawer-423"  # 7 steps, one cost-5 "clean"


def game(task_folder: str) -> AlfworldGame:
    found = [g for g in list_games("valid_seen") if g.game_file.parent.parent.name == task_folder]
    assert found, f"{task_folder} missing from valid_seen"
    return found[0]


def walkthrough(g: AlfworldGame) -> list[str]:
    return list(json.loads(Path(g.game_file).read_text())["walkthrough"])
