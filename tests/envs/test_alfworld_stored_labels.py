"""The ALFWorld setting's step oracle stores the real planner's labels (``loop/oracle_labels.StoredLabels``): the
stored labels equal the planner's, and a second labelling (another arm, seed or run) never plans."""

from __future__ import annotations

from pathlib import Path

import pytest
from _alfworld_fixtures import PENCIL, game, walkthrough

from rlanything_core.envs.alfworld.oracle import planner_version
from rlanything_core.loop.oracle_labels import StoredLabels
from rlanything_core.settings.alfworld import AlfworldTasks, alfworld_oracle

pytestmark = [pytest.mark.alfworld, pytest.mark.slow]


def test_the_alfworld_setting_stores_the_planners_labels_and_reads_them_back(tmp_path: Path) -> None:
    g = game(PENCIL)
    actions = ["look", *walkthrough(g)]
    oracle = AlfworldTasks(label_store_dir=str(tmp_path)).step_oracle()
    assert isinstance(oracle, StoredLabels) and oracle.version.startswith(planner_version())
    planned = alfworld_oracle(str(g.game_file), actions)
    assert oracle(str(g.game_file), actions) == planned and planned[1:] == [1] * len(walkthrough(g))
    assert oracle.misses == 1 and len(list(tmp_path.rglob("*.json"))) == 1
    later = AlfworldTasks(label_store_dir=str(tmp_path)).step_oracle()  # another run's evaluator
    assert later(str(g.game_file), actions) == planned and (later.hits, later.misses) == (1, 0)
    copy = tmp_path / "copy" / "game.tw-pddl"  # the same game in another checkout's data folder: the same entry
    copy.parent.mkdir()
    copy.write_bytes(g.game_file.read_bytes())
    assert later(str(copy), actions) == planned and later.hits == 2
    assert AlfworldTasks(label_store=False).step_oracle() is alfworld_oracle
