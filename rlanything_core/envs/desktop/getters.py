"""OSWorld's evaluator getters, mapped to local files.

=====================  =======================================================================================
``vm_file``            ``path`` (+ ``dest``, or lists with ``multi``/``gives``): the VM file copied to the cache
                       as ``dest``; a missing file raises ``FileNotFoundError`` (OSWorld then scores 0); LibreOffice's
                       profile (``~/.config/libreoffice/4/user/...``) is read from the app's real profile (the
                       environment's, after the app stopped; a file of that name in the home is not read), and
                       only from the home when no profile is given (the display-less checks of task authoring)
``cloud_file``         ``path`` = a URL: the file OSWorld's cache keeps as ``<task id>/<dest>`` (no network here;
                       without a cache, the file shipped beside the task), copied as ``dest``
``local_file``         ``path`` relative to the task's folder
``cache_file``         ``path``: a file already in the episode cache
``rule``               ``rules``: returned as given
``vm_command_line``    ``command`` (+ ``shell``): its stdout, run in the command sandbox (a command that needs
                       the VM's root or desktop session, :data:`~.config_steps.VM_ONLY`, is refused at load); a
                       file the task downloads that the command names (``bash eval.sh``) is first replaced by a
                       fresh copy of the task's own (the agent may have rewritten the one in its home)
``list_directory``     ``path``: the folder's tree, ``{"type": "directory", "name", "children": [...]}`` with
                       ``{"type": "file", "name"}`` leaves (OSWorld's server's layout); a missing folder raises
                       ``FileNotFoundError``
=====================  =======================================================================================

Every file is read without following a link or opening a special file (:mod:`.safe_paths`): the getters run as
the harness, in folders the agent wrote.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlanything_core.envs.desktop.config_steps import vm_only_word
from rlanything_core.envs.desktop.episode_fs import run_task_command
from rlanything_core.envs.desktop.osworld_cache import MissingTaskFile, TaskFiles, check_vm_path, episode_path
from rlanything_core.envs.desktop.safe_paths import copy_in, copy_out

__all__ = ["GETTERS", "VM_PROFILE", "Getter", "installed_program_check", "vm_local_path"]


@dataclass(frozen=True)
class Getter:
    """A getter: ``check(cfg, files)`` raises ``ValueError`` at load; ``get(ctx, cfg)`` reads the state."""

    check: Callable[[dict[str, Any], TaskFiles], None]
    get: Callable[[Any, dict[str, Any]], Any]


def _paths(cfg: dict[str, Any]) -> tuple[list[str], list[str], set[int], bool]:
    multi = bool(cfg.get("multi", False))
    paths = cfg["path"] if multi else [cfg["path"]]
    dests = cfg.get("dest", paths) if multi else [cfg.get("dest", Path(str(cfg["path"])).name)]
    gives = set(cfg.get("gives", [0])) if multi else {0}
    return list(paths), list(dests), gives, multi


def _check_paths(cfg: dict[str, Any], _files: TaskFiles) -> None:
    if "path" not in cfg:
        raise ValueError(f"getter {cfg.get('type')!r} needs 'path'")
    if cfg.get("time_suffix"):
        raise ValueError(f"getter {cfg.get('type')!r}: 'time_suffix' (a date in the file name) is not supported")
    paths, dests, _, multi = _paths(cfg)
    if not all(isinstance(p, str) for p in paths) or (multi and len(dests) != len(paths)):
        raise ValueError(f"getter {cfg.get('type')!r}: 'path'/'dest' must be strings (lists of equal length)")


# where OSWorld's VM keeps LibreOffice's user profile; here the running app has a private one (OfficeApp.profile_dir)
VM_PROFILE = "/home/user/.config/libreoffice/4/"


def _check_vm_paths(cfg: dict[str, Any], files: TaskFiles) -> None:
    _check_paths(cfg, files)
    for path in _paths(cfg)[0]:
        normal = check_vm_path(path)
        if normal.startswith("/home/user/.config/libreoffice/") and not normal.startswith(VM_PROFILE + "user/"):
            raise ValueError(f"vm_file {path!r}: only the profile's user folder ({VM_PROFILE}user/) is mapped")


def _profile_dir(ctx: Any) -> Path | None:
    profile = getattr(ctx, "profile_dir", None)
    if profile is None:
        profile = getattr(getattr(ctx, "office", None), "profile_dir", None)
    return None if profile is None else Path(profile)


def vm_local_path(ctx: Any, path: str) -> Path:
    """The local file of a VM path: the episode folder, or for LibreOffice's profile the app's real one."""
    return Path(os.path.join(*_vm_root_and_rel(ctx, path)))


def _vm_root_and_rel(ctx: Any, path: str) -> tuple[Path, str]:
    """``(root, path under it)`` of a VM path (:func:`vm_local_path`), for a read that follows no link."""
    normal = check_vm_path(path)
    profile = _profile_dir(ctx)
    if normal.startswith(VM_PROFILE) and profile is not None:
        return profile, normal[len(VM_PROFILE) :]
    return Path(ctx.fs.root), str(episode_path(ctx.fs, path).relative_to(ctx.fs.root))


def _give(copies: list[Path], gives: set[int], multi: bool) -> Any:
    chosen = [p for i, p in enumerate(copies) if i in gives]
    return str(chosen[0]) if (len(chosen) == 1 or not multi) else [str(p) for p in chosen]


def _copy_to_cache(ctx: Any, cfg: dict[str, Any], source_of: Callable[[str], tuple[Path, str]]) -> Any:
    """Copy the file of each of ``cfg``'s paths, found by ``source_of``, into the episode's cache.

    Each copy takes its ``dest`` name; the copies are given as ``cfg`` asks (one path or a list).
    """
    paths, dests, gives, multi = _paths(cfg)
    copies = []
    for path, dest in zip(paths, dests):
        root, rel = source_of(path)
        target = ctx.fs.cache / Path(dest).name
        target.unlink(missing_ok=True)
        copy_out(root, rel, target)
        copies.append(target)
    return _give(copies, gives, multi)


def _vm_file(ctx: Any, cfg: dict[str, Any]) -> Any:
    def source_of(path: str) -> tuple[Path, str]:
        try:
            return _vm_root_and_rel(ctx, path)
        except ValueError as exc:
            raise FileNotFoundError(f"vm_file {path!r}: {exc}") from None

    try:
        return _copy_to_cache(ctx, cfg, source_of)
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"vm_file {cfg['path']!r} does not exist ({exc})") from None


def _check_cloud(cfg: dict[str, Any], files: TaskFiles) -> None:
    _check_paths(cfg, files)
    for url, dest in zip(*_paths(cfg)[:2]):
        try:
            files.cloud_source(url, dest)
        except MissingTaskFile as exc:
            raise ValueError(str(exc)) from None


def _cloud_file(ctx: Any, cfg: dict[str, Any]) -> Any:
    urls, dests = _paths(cfg)[:2]
    dest_of = dict(zip(urls, dests))
    def source_of(url: str) -> tuple[Path, str]:
        # the task's own file, never the agent's: a cache may keep it as a link (resolved here, on the trusted side)
        source = ctx.task_files.cloud_source(url, dest_of[url]).resolve()
        return source.parent, source.name

    return _copy_to_cache(ctx, cfg, source_of)


def _check_local(cfg: dict[str, Any], files: TaskFiles) -> None:
    if not isinstance(cfg.get("path"), str) or not (files.task_dir / cfg["path"]).is_file():
        raise ValueError(f"local_file {cfg.get('path')!r} is not a file in {files.task_dir}")


def _check_rules(cfg: dict[str, Any], _files: TaskFiles) -> None:
    if "rules" not in cfg:
        raise ValueError("getter 'rule' needs 'rules'")


def _check_command(cfg: dict[str, Any], _files: TaskFiles) -> None:
    if not isinstance(cfg.get("command"), (str, list)):
        raise ValueError("getter 'vm_command_line' needs a 'command' string or list")
    word = vm_only_word(cfg["command"])
    if word is not None:
        raise ValueError(f"vm_command_line uses {word!r}, which only OSWorld's VM has: {cfg['command']!r}")
    program = installed_program_check(cfg["command"])
    if program is not None:
        # either always passes or never: a task that no action can win, or one that doing nothing wins
        raise ValueError(
            f"vm_command_line checks whether {program!r} is installed ({cfg['command']!r}); no action can change that "
            "here: nothing can be installed in the sandbox (no network, /usr read-only)"
        )


def installed_program_check(command: str | list[str]) -> str | None:
    """The program a ``which PROGRAM`` / ``command -v PROGRAM`` check looks for, else ``None``.

    Examples:
        >>> installed_program_check("which spotify"), installed_program_check(["ls", "-l"])
        ('spotify', None)
    """
    words = command.split() if isinstance(command, str) else [str(w) for w in command]
    if len(words) == 2 and words[0] == "which":
        return words[1]
    if len(words) == 3 and words[:2] == ["command", "-v"]:
        return words[2]
    return None


def _check_directory(cfg: dict[str, Any], _files: TaskFiles) -> None:
    check_vm_path(cfg.get("path"))


def _tree(folder: Path) -> dict[str, Any]:
    children: list[dict[str, Any]] = []
    for entry in sorted(folder.iterdir()):
        children.append(_tree(entry) if entry.is_dir() else {"type": "file", "name": entry.name})
    return {"type": "directory", "name": folder.name, "children": children}


def _list_directory(ctx: Any, cfg: dict[str, Any]) -> dict[str, Any]:
    folder = episode_path(ctx.fs, cfg["path"])
    if not folder.is_dir():
        raise FileNotFoundError(f"list_directory {cfg['path']!r} is not a folder")
    return _tree(folder)


def _command_line(ctx: Any, cfg: dict[str, Any]) -> str:
    _restore_scripts(ctx, cfg["command"])
    return run_task_command(cfg["command"], shell=bool(cfg.get("shell", False)), fs=ctx.fs).stdout


def _restore_scripts(ctx: Any, command: str | list[str]) -> None:
    """Put a fresh copy of each file the task downloads and ``command`` names (its check script) in place.

    The check runs after the episode (no agent process left, no link left in the episode folder); the copy comes
    from the task's own source, so a script the agent rewrote, replaced or removed in its home is not what runs.
    """
    text = command if isinstance(command, str) else " ".join(str(c) for c in command)
    words = set(re.split(r"[\s;|&<>()'\"]+", text))
    owner = ctx.fs.owner if os.getuid() == 0 else None
    for url, vm_path in getattr(ctx, "downloads", ()):
        normal = check_vm_path(vm_path)
        if not {vm_path, normal, Path(normal).name, f"./{Path(normal).name}"} & words:
            continue
        source = ctx.task_files.download_source(url, vm_path)
        rel = episode_path(ctx.fs, vm_path).relative_to(ctx.fs.root)
        copy_in(source, ctx.fs.root, rel, owner=owner, mode=0o755)


def _check_cache(cfg: dict[str, Any], _files: TaskFiles) -> None:
    if not isinstance(cfg.get("path"), str):
        raise ValueError("getter 'cache_file' needs a string 'path'")


def _cache_file(ctx: Any, cfg: dict[str, Any]) -> str:
    path = ctx.fs.cache / cfg["path"]
    if not path.is_file() or path.is_symlink():
        raise FileNotFoundError(f"cache_file {cfg['path']!r} does not exist")
    return str(path)


GETTERS: dict[str, Getter] = {
    "vm_file": Getter(_check_vm_paths, _vm_file),
    "cloud_file": Getter(_check_cloud, _cloud_file),
    "local_file": Getter(_check_local, lambda ctx, cfg: str(ctx.task_dir / cfg["path"])),
    "cache_file": Getter(_check_cache, _cache_file),
    "rule": Getter(_check_rules, lambda ctx, cfg: cfg["rules"]),
    "vm_command_line": Getter(_check_command, _command_line),
    "list_directory": Getter(_check_directory, _list_directory),
}
