"""ALFWorld game files: where the data lives, the splits, and ALFWorld's own game filtering.

The data folder is the one holding ``json_2.1.1/`` (ALFWorld's ``$ALFWORLD_DATA``). It is found from, in order: an
explicit argument, the ``ALFWORLD_DATA`` environment variable, then ``$RLANYTHING_DATA/alfworld`` (by default
``../shared/alfworld``: :mod:`rlanything_core.data_dir`). The ``train`` split ships as ``train.tar.gz`` and is
unpacked on first use into a cache folder (atomically: unpack to a temporary folder, then rename).
"""

from __future__ import annotations

import enum
import json
import os
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rlanything_core.data_dir import DATA_ENV, data_dir
from rlanything_core.files import cache_dir
from rlanything_core.progress import heartbeat

__all__ = [
    "TASK_TYPES",
    "AlfworldDataNotFoundError",
    "AlfworldGame",
    "AlfworldSplit",
    "default_cache_dir",
    "list_games",
    "resolve_data_root",
    "split_dir",
]

TASK_TYPES: dict[int, str] = {
    1: "pick_and_place_simple",
    2: "look_at_obj_in_light",
    3: "pick_clean_then_place_in_recep",
    4: "pick_heat_then_place_in_recep",
    5: "pick_cool_then_place_in_recep",
    6: "pick_two_obj_and_place",
}
"""ALFWorld's task-type ids (``alfworld.agents.environment.alfred_tw_env.TASK_TYPES``)."""

_GAME_FILE = "game.tw-pddl"
_TRAJ_FILE = "traj_data.json"
_JSON_DIR = "json_2.1.1"


class AlfworldSplit(enum.Enum):
    """The ALFWorld splits; ``VALID_SEEN`` is the in-distribution and ``VALID_UNSEEN`` the out-of-distribution eval."""

    TRAIN = "train"
    VALID_TRAIN = "valid_train"
    VALID_SEEN = "valid_seen"
    VALID_UNSEEN = "valid_unseen"


class AlfworldDataNotFoundError(FileNotFoundError):
    """No ALFWorld game data where we looked; the message says where and how to get it."""


@dataclass(frozen=True)
class AlfworldGame:
    """One ALFWorld game.

    Attributes:
        game_file: path to the ``game.tw-pddl`` file the engine plays.
        task_type: one of :data:`TASK_TYPES` values (e.g. ``"pick_and_place_simple"``).
        split: the split the game was listed from.
        goal: the task sentence (``"put two newspaper in drawer."``) when read, else ``None``.
    """

    game_file: Path
    task_type: str
    split: AlfworldSplit
    goal: str | None = None


def _repo_default() -> Path:
    return data_dir() / "alfworld"  # $RLANYTHING_DATA/alfworld, or ../shared/alfworld (rlanything_core.data_dir)


def resolve_data_root(data_root: str | os.PathLike[str] | None = None) -> Path:
    """Find the folder holding ``json_2.1.1/`` (or ``train.tar.gz``).

    Args:
        data_root: explicit folder; when ``None``, the first of ``$ALFWORLD_DATA`` and ``$RLANYTHING_DATA/alfworld``
            that holds data.

    Returns:
        The resolved folder.

    Raises:
        AlfworldDataNotFoundError: nothing usable at the chosen place; the message lists where it looked.
    """
    if data_root is not None:
        candidates = [("argument data_root", Path(data_root))]
    else:  # `import alfworld` sets $ALFWORLD_DATA to an empty ~/.cache/alfworld: fall through to the default then
        candidates = [("$ALFWORLD_DATA", Path(os.environ["ALFWORLD_DATA"]))] if os.environ.get("ALFWORLD_DATA") else []
        candidates.append((f"${DATA_ENV}/alfworld (default ../shared/alfworld)", _repo_default()))
    for _, path in candidates:
        if (path / _JSON_DIR).is_dir() or (path / "train.tar.gz").is_file():
            return path.resolve()
    looked = "; ".join(f"{name}: {path}" for name, path in candidates)
    raise AlfworldDataNotFoundError(
        f"No ALFWorld game data found (looked for json_2.1.1/ or train.tar.gz in {looked}). "
        "Get the games with `alfworld-download` (needs network; it fills ~/.cache/alfworld) and set "
        f"{DATA_ENV} to the folder holding alfworld/json_2.1.1/ (or ALFWORLD_DATA to the one holding json_2.1.1/), or "
        "pass data_root= explicitly."
    )


def default_cache_dir() -> Path:
    """Cache folder for unpacked archives: ``$RLANYTHING_CACHE/alfworld`` or ``~/.cache/rlanything/alfworld``."""
    return cache_dir("alfworld")


def _unpack_train(archive: Path, cache_dir: Path) -> Path:
    """Unpack ``train.tar.gz`` once into ``cache_dir/json_2.1.1/train`` (tmp folder + rename, so never half-done)."""
    target = cache_dir / _JSON_DIR / "train"
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".train-unpack-", dir=target.parent))
    try:
        # a first run spends a minute or two here, before any other line: say what it is doing
        with heartbeat(f"unpacking {archive} into {target} (once)"), tarfile.open(archive, "r:gz") as tar:
            if hasattr(tarfile, "data_filter"):  # safe extraction (Python >= 3.10.12)
                tar.extractall(tmp, filter="data")
            else:  # pragma: no cover - old interpreters
                tar.extractall(tmp)  # noqa: S202
        found = [p for p in tmp.rglob("train") if p.is_dir() and p.parent.name == _JSON_DIR]
        source = found[0] if found else tmp
        try:
            os.replace(source, target)
        except OSError:
            if not target.is_dir():  # lost a race with another process: theirs is as good as ours
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def split_dir(
    split: AlfworldSplit | str,
    data_root: str | os.PathLike[str] | None = None,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
) -> Path:
    """The folder of one split (unpacking ``train.tar.gz`` into ``cache_dir`` when needed).

    Args:
        split: the split (an :class:`AlfworldSplit` or its value).
        data_root: see :func:`resolve_data_root`.
        cache_dir: where ``train`` is unpacked; default :func:`default_cache_dir`.

    Raises:
        ValueError: ``split`` is not a split name.
        AlfworldDataNotFoundError: the split is absent.
    """
    split = _as_split(split)
    root = resolve_data_root(data_root)
    direct = root / _JSON_DIR / split.value
    if direct.is_dir():
        return direct
    archive = root / "train.tar.gz"
    if split is AlfworldSplit.TRAIN and archive.is_file():
        return _unpack_train(archive, Path(cache_dir) if cache_dir is not None else default_cache_dir())
    raise AlfworldDataNotFoundError(
        f"ALFWorld split {split.value!r} not found under {root} (expected {direct}"
        + (" or train.tar.gz" if split is AlfworldSplit.TRAIN else "")
        + "). Get the games with `alfworld-download` or set ALFWORLD_DATA."
    )


def _as_split(split: AlfworldSplit | str) -> AlfworldSplit:
    if isinstance(split, AlfworldSplit):
        return split
    try:
        return AlfworldSplit(split)
    except ValueError:
        names = [s.value for s in AlfworldSplit]
        raise ValueError(f"split must be one of {names}, got {split!r}") from None


def _read_goal(game_file: Path) -> str | None:
    """The goal sentence from the game's grammar (``"Your task is to: ..."``), without playing it."""
    grammar = json.loads(game_file.read_text())["grammar"]
    marker = "Your task is to: "
    start = grammar.find(marker)
    if start < 0:
        return None
    end = grammar.find('"', start)
    return grammar[start + len(marker) : end].strip() or None


def list_games(
    split: AlfworldSplit | str,
    data_root: str | os.PathLike[str] | None = None,
    *,
    task_types: tuple[int, ...] = (1, 2, 3, 4, 5, 6),
    apply_filter: bool = True,
    read_goals: bool = False,
    cache_dir: str | os.PathLike[str] | None = None,
) -> list[AlfworldGame]:
    """List the games of a split, filtered as ALFWorld's ``AlfredTWEnv.collect_game_files`` does.

    The filter keeps a trial folder when it holds ``traj_data.json`` and ``game.tw-pddl``, its task folder name
    contains neither ``movable`` nor ``Sliced``, its ``task_type`` is one of ``task_types`` and its game file says
    ``"solvable": true``. Games come sorted by path (deterministic).

    Args:
        split: the split.
        data_root: see :func:`resolve_data_root`.
        task_types: ALFWorld task-type ids (1-6) to keep.
        apply_filter: ``False`` lists every trial folder with a game file (no movable/Sliced/type/solvable filter).
        read_goals: also read each game's goal sentence (one JSON parse per game).
        cache_dir: see :func:`split_dir`.

    Returns:
        The games.

    Raises:
        ValueError: a task-type id outside 1-6.
        AlfworldDataNotFoundError: the split is absent.
    """
    bad = [t for t in task_types if t not in TASK_TYPES]
    if bad or not task_types:
        raise ValueError(f"task_types must be a non-empty tuple of ids in {sorted(TASK_TYPES)}, got {task_types!r}")
    split = _as_split(split)
    wanted = {TASK_TYPES[t] for t in task_types}
    games: list[AlfworldGame] = []
    for game_file in sorted(split_dir(split, data_root, cache_dir=cache_dir).glob(f"*/*/{_GAME_FILE}")):
        trial = game_file.parent
        traj = trial / _TRAJ_FILE
        task_type = trial.parent.name.split("-", 1)[0]
        if traj.is_file():
            task_type = json.loads(traj.read_text()).get("task_type", task_type)
        if apply_filter:
            if not traj.is_file() or "movable" in trial.parent.name or "Sliced" in trial.parent.name:
                continue
            if task_type not in wanted or not json.loads(game_file.read_text()).get("solvable", False):
                continue
        goal = _read_goal(game_file) if read_goals else None
        games.append(AlfworldGame(game_file=game_file, task_type=task_type, split=split, goal=goal))
    return games
