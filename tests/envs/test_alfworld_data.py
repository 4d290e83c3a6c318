import io
import tarfile
from collections import Counter
from pathlib import Path

import pytest

from rlanything_core.envs.alfworld import (
    TASK_TYPES,
    AlfworldDataNotFoundError,
    AlfworldSplit,
    list_games,
    resolve_data_root,
    split_dir,
)

pytestmark = pytest.mark.alfworld


@pytest.mark.parametrize(("split", "raw"), [("valid_train", 200), ("valid_seen", 140), ("valid_unseen", 134)])
def test_split_counts_before_and_after_alfworld_filtering(split, raw):
    everything = list_games(split, apply_filter=False)
    kept = list_games(split)
    assert len(everything) == raw
    # This mirror holds exactly the games ALFWorld keeps: the filter removes none of them.
    assert len(kept) == raw
    assert {g.task_type for g in kept} <= set(TASK_TYPES.values())
    assert not [g for g in kept if "movable" in str(g.game_file) or "Sliced" in str(g.game_file)]
    assert all(g.split is AlfworldSplit(split) and g.game_file.name == "game.tw-pddl" for g in kept)
    assert kept == sorted(kept, key=lambda g: str(g.game_file))


def test_task_type_filter_and_goals():
    games = list_games("valid_seen", task_types=(1,), read_goals=True)
    counts = Counter(g.task_type for g in list_games("valid_seen"))
    assert len(games) == counts["pick_and_place_simple"] > 0
    assert all(g.task_type == "pick_and_place_simple" for g in games)
    assert all(g.goal and g.goal.startswith("put") for g in games)


def test_bad_arguments_raise_value_error():
    with pytest.raises(ValueError, match="split"):
        list_games("validation")
    with pytest.raises(ValueError, match="task_types"):
        list_games("valid_seen", task_types=(7,))


def test_missing_data_error_says_where_and_how(tmp_path, monkeypatch):
    with pytest.raises(AlfworldDataNotFoundError) as err:
        resolve_data_root(tmp_path / "nowhere")
    msg = str(err.value)
    assert str(tmp_path / "nowhere") in msg and "alfworld-download" in msg and "ALFWORLD_DATA" in msg
    with pytest.raises(FileNotFoundError):  # it is a FileNotFoundError too
        split_dir("valid_seen", tmp_path)
    # An empty $ALFWORLD_DATA (what `import alfworld` sets) falls through to the default location.
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path))
    assert resolve_data_root() != tmp_path and len(list_games("valid_seen")) == 140


def test_env_var_points_at_the_data(monkeypatch):
    real = resolve_data_root()
    monkeypatch.setenv("ALFWORLD_DATA", str(real))
    assert resolve_data_root() == real


def test_train_archive_is_unpacked_once_atomically(tmp_path, capsys):
    # A small archive with the layout of train.tar.gz, built from two real games.
    root = tmp_path / "data"
    root.mkdir()
    sources = list_games("valid_seen")[:2]
    with tarfile.open(root / "train.tar.gz", "w:gz") as tar:
        for g in sources:
            trial = g.game_file.parent
            for f in trial.iterdir():
                tar.add(f, arcname=f"json_2.1.1/train/{trial.parent.name}/{trial.name}/{f.name}")
        tar.addfile(tarfile.TarInfo("json_2.1.1/README"), io.BytesIO(b""))
    cache = tmp_path / "cache"
    games = list_games("train", root, cache_dir=cache)
    assert [g.game_file.parent.parent.name for g in games] == [g.game_file.parent.parent.name for g in sources]
    assert all(Path(g.game_file).is_relative_to(cache) for g in games)
    assert not [p for p in (cache / "json_2.1.1").iterdir() if p.name.startswith(".")]  # no temp leftovers
    # the first run's minute or two of unpacking is announced, and its end
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and "unpacking" in lines[0] and lines[0].endswith("(once): started"), lines
    assert "(once): done in " in lines[1], lines
    (root / "train.tar.gz").write_bytes(b"not a tar file")  # the second listing reads the cache only
    assert list_games("train", root, cache_dir=cache) == games
    assert capsys.readouterr().out == ""


@pytest.mark.slow
def test_real_train_split_unpacks_and_filters(tmp_path):
    games = list_games("train", cache_dir=tmp_path)
    assert len(list_games("train", cache_dir=tmp_path, apply_filter=False)) == 3553
    assert len(games) == 3553
    assert set(Counter(g.task_type for g in games)) == set(TASK_TYPES.values())
