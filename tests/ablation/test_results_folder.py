"""An ablation never writes into the committed reference results unless asked to publish.

Every profile's results folder (where ``ablate.py`` writes its tables, plots, warm starts, run folders and worker
logs: all below it) lies outside ``experiments/results`` and is ignored by git, so that ``make main`` leaves
``git status`` clean; ``publish=true`` is the one way to write the references. The committed table of the same
setting and profile is what the run prints beside its own.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from rlanything_core.ablation.app import reference_table, results_folder

REPO = Path(__file__).resolve().parents[2]
PROFILES = [[], ["+profile=smoke"], ["+profile=full"], ["+profile=step_only"], ["+profile=hard"]]


def _compose(*overrides: str):  # type: ignore[no-untyped-def]
    from hydra import compose, initialize_config_dir

    from rlanything_core.conf import CONF_DIR

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return compose("ablate", overrides=["+setting=alfworld", *overrides])


def _ignored(path: Path) -> bool:
    done = subprocess.run(["git", "check-ignore", "-q", str(path / "table.md")], cwd=REPO, capture_output=True)
    return done.returncode == 0


@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(), reason="not a git checkout")
@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p[0] if p else "default")
def test_every_profile_writes_outside_the_references_and_git_ignores_it(profile: list[str]) -> None:
    out = results_folder(_compose(*profile))
    references = REPO / "experiments" / "results"
    assert not out.resolve().is_relative_to(references.resolve()), out
    assert out.resolve().is_relative_to(REPO / "runs"), out
    assert _ignored(out) and _ignored(out / "runs" / "full_seed0") and _ignored(out / "init"), out


def test_publishing_is_the_one_way_to_the_references() -> None:
    cfg = _compose("publish=true")
    assert results_folder(cfg) == REPO / "experiments" / "results" / "alfworld" / "default"
    assert reference_table(cfg, results_folder(cfg)) is None  # the published run is the reference: nothing beside it


def test_the_run_prints_the_committed_reference_beside_its_own() -> None:
    cfg = _compose()
    text = reference_table(cfg, results_folder(cfg))
    committed = REPO / "experiments" / "results" / "alfworld" / "default" / "table.md"
    assert text == committed.read_text() and "outcome" in text.lower()
    assert reference_table(_compose("run_id=no_such_profile"), results_folder(cfg)) is None
