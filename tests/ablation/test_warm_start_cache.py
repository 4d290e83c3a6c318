"""The warm start's cache key (``rlanything_core/ablation/warm_start_cache.py``): the recipe, the data, the code."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rlanything_core.ablation import warm_start_cache
from rlanything_core.ablation.warm_start_cache import warm_start_dir, weights_key

MODULE = "ablation/warm_start_encoder.py"


def test_the_key_follows_the_recipe_the_games_bytes_and_the_code(tmp_path: Path, monkeypatch) -> None:
    games = [tmp_path / "g1.tw-pddl", tmp_path / "g2.tw-pddl"]
    for i, g in enumerate(games):
        g.write_text(f'{{"game": {i}}}')
    key = weights_key({"epochs": 2}, [str(g) for g in games], MODULE)
    assert key == weights_key({"epochs": 2}, [str(g) for g in games], MODULE)  # deterministic
    assert key != weights_key({"epochs": 3}, [str(g) for g in games], MODULE)
    assert key != weights_key({"epochs": 2}, [str(games[1]), str(games[0])], MODULE)  # another order: other data
    moved = tmp_path / "other_checkout"
    moved.mkdir()
    copies = [shutil.copy(g, moved / g.name) for g in games]
    assert key == weights_key({"epochs": 2}, [str(c) for c in copies], MODULE)  # another checkout: the same key
    games[0].write_text('{"game": "rewritten"}')
    assert key != weights_key({"epochs": 2}, [str(g) for g in games], MODULE)
    monkeypatch.setattr(warm_start_cache, "source_digest", lambda modules: "other code")
    assert weights_key({"epochs": 2}, [str(c) for c in copies], MODULE) != key
    with pytest.raises(ValueError, match="games"):
        weights_key({}, [], MODULE)


def test_the_cache_folder_is_the_users(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RLANYTHING_CACHE", str(tmp_path))
    assert warm_start_dir() == tmp_path / "warm_start"
