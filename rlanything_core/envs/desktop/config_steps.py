"""OSWorld's set-up steps (``config`` and ``evaluator.postconfig``) with local equivalents.

======================  ===================================================================================
``download``            ``files: [{url, path}]``: copy a local/``file://`` file, or an ``http(s)`` file from the task's
                        OSWorld cache (:mod:`.osworld_cache`; without a cache: shipped beside the task under the
                        URL's file name), to the VM path (under ``/home/user`` or ``/tmp``)
``open``                ``path``: open a spreadsheet in LibreOffice Calc, or a document or presentation in
                        LibreOffice, and wait for its window
``launch``              ``command``: start ``libreoffice``/``soffice`` (other programs are refused at load)
``execute``/``command`` ``command`` (+ ``shell``): ``python -c CODE`` runs CODE in the action sandbox (it is
                        pyautogui code, e.g. the Ctrl+S of a postconfig); a LibreOffice command is a launch, or
                        with ``--convert-to`` a headless export in a fresh sandbox on copies of its inputs
                        (:mod:`.export`; the CSV a ``sheet_print`` rule reads);
                        any other command runs in the command sandbox with ``/home/user`` mapped; commands that need
                        the VM's root, desktop session or package manager (:data:`VM_ONLY`) are refused at load
``sleep``               ``seconds``
``activate_window``     ``window_name`` (+ ``strict``): raise and focus the window; ``Terminal`` with no such window
                        starts one (xterm in the episode's app sandbox, :mod:`.terminal`: OSWorld opens it with
                        Ctrl+Alt+T, a key the local desktop does not bind)
======================  ===================================================================================

A download is written without following a link the agent left (:func:`~.safe_paths.copy_in`). The evaluator runs
a postconfig in two phases (:func:`postconfig_phases`): the steps up to the last one that needs the running desktop
(:func:`acts_on_desktop`) while the apps live, the rest (exports, downloads, commands) after every app is stopped and
the links and special files are gone.

Every step is checked at load by :func:`check_step`, which raises the caller's error naming the step and what in it
cannot run; a remote file missing from the cache is named with its task, URL and expected path.
"""

from __future__ import annotations

import os
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlanything_core.envs.desktop.actions import InvalidAction, parse_action
from rlanything_core.envs.desktop.episode_fs import EpisodeFS, run_task_command
from rlanything_core.envs.desktop.export import export_in_sandbox
from rlanything_core.envs.desktop.gsettings import missing_schema
from rlanything_core.envs.desktop.osworld_cache import MissingTaskFile, TaskFiles, check_vm_path, episode_path
from rlanything_core.envs.desktop.safe_paths import copy_in
from rlanything_core.envs.desktop.terminal import is_terminal, open_terminal

__all__ = [
    "DOCUMENTS",
    "STEP_TYPES",
    "VM_ONLY",
    "StepContext",
    "acts_on_desktop",
    "check_step",
    "is_export",
    "needs_display",
    "postconfig_phases",
    "run_step",
    "vm_only_word",
]

STEP_TYPES = ("download", "open", "launch", "execute", "command", "sleep", "activate_window")
_OFFICE = ("libreoffice", "soffice", "localc", "scalc")
_PYTHON = ("python", "python3")
_SHEETS = (".xlsx", ".xls", ".ods", ".csv")
DOCUMENTS = (*_SHEETS, ".docx", ".doc", ".odt", ".rtf", ".txt", ".pptx", ".ppt", ".odp")
# what only OSWorld's VM has: root (sudo), the GNOME session (gio, xdg-open over D-Bus), a package manager; gsettings
# runs on a per-episode keyfile (:mod:`.gsettings`) when its schema is installed here
VM_ONLY = (
    "sudo",
    "su",
    "gio",
    "xdg-open",
    "DBUS_SESSION_BUS_ADDRESS",
    "apt-get",
    "apt",
    "pulseaudio",
    "pactl",
    "timedatectl",
)


@dataclass
class StepContext:
    """What a step acts on (built by the environment for each episode)."""

    fs: EpisodeFS
    office: Any  # OfficeApp
    sandbox: Any  # ActionSandbox
    task_dir: Path
    screen: tuple[int, int]
    files: TaskFiles | None = None
    profile_dir: Path | None = None  # LibreOffice's real profile (read after the app stopped); None: the home's
    downloads: tuple[tuple[str, str], ...] = ()  # the task's (url, VM path) downloads: the harness's own copies

    @property
    def task_files(self) -> TaskFiles:
        """Where the task's files come from (files shipped beside the task when the context names none)."""
        return self.files if self.files is not None else TaskFiles(self.task_dir.name, self.task_dir)


def _argv(command: Any) -> list[str]:
    return shlex.split(command) if isinstance(command, str) else [str(c) for c in command]


def _program(argv: list[str]) -> str:
    return Path(argv[0]).name if argv else ""


def _python_code(argv: list[str]) -> str | None:
    if len(argv) >= 3 and _program(argv) in _PYTHON and argv[1] == "-c":
        return argv[2]
    return None


def _fill(text: str, screen: tuple[int, int]) -> str:
    """OSWorld's placeholders in set-up commands."""
    w, h = screen
    for key, value in (("SCREEN_WIDTH_HALF", w // 2), ("SCREEN_HEIGHT_HALF", h // 2), ("SCREEN_WIDTH", w)):
        text = text.replace("{" + key + "}", str(value))
    return text.replace("{SCREEN_HEIGHT}", str(h))


def vm_only_word(command: Any) -> str | None:
    """What in ``command`` only OSWorld's VM has, or None.

    The first word of :data:`VM_ONLY` it uses (as a shell word), else what its ``gsettings`` use lacks here
    (:func:`~.gsettings.missing_schema`).
    """
    text = command if isinstance(command, str) else " ".join(str(c) for c in command)
    words = set(text.replace(";", " ").replace("|", " ").replace("&", " ").replace("=", " ").split())
    word = next((w for w in VM_ONLY if w in words), None)
    if word is None and (missing := missing_schema(command)) is not None:
        return "gsettings" if missing == "gsettings" else f"gsettings schema {missing}"
    return word


def check_step(step: Any, where: str, task_files: TaskFiles, error: type[Exception]) -> None:
    """Raise ``error`` naming what in ``step`` cannot run here (``task_files``: where the task's files come from)."""
    if not isinstance(step, dict) or not isinstance(step.get("type"), str):
        raise error(f"{where} must be a dict with a string 'type', got {step!r}")
    kind, params = step["type"], step.get("parameters", {}) or {}
    if kind not in STEP_TYPES:
        raise error(f"{where}: unsupported config type {kind!r} (supported: {list(STEP_TYPES)})")
    if kind == "download":
        files = params.get("files")
        if not isinstance(files, list) or not files:
            raise error(f"{where}: download needs a non-empty 'files' list")
        for f in files:
            url = f.get("url") if isinstance(f, dict) else None
            if not isinstance(url, str) or not isinstance(f.get("path"), str):
                raise error(f"{where}: each download file needs string 'url' and 'path', got {f!r}")
            try:
                check_vm_path(f["path"])
                task_files.download_source(url, f["path"])
            except (MissingTaskFile, ValueError) as exc:
                raise error(f"{where}: {exc}") from None
    elif kind == "open":
        path = params.get("path")
        if not isinstance(path, str) or Path(path).suffix.lower() not in DOCUMENTS:
            raise error(f"{where}: open supports LibreOffice documents {DOCUMENTS} only, got {path!r}")
        try:
            check_vm_path(path)
        except ValueError as exc:
            raise error(f"{where}: {exc}") from None
    elif kind in ("launch", "execute", "command"):
        if "command" not in params:
            raise error(f"{where}: {kind} needs 'command'")
        argv = _argv(params["command"])
        if kind == "launch" and _program(argv) not in _OFFICE:
            raise error(f"{where}: unsupported launch program {_program(argv)!r} (supported: {list(_OFFICE)})")
        code = _python_code(argv)
        if code is not None:
            try:
                parse_action(code)
            except InvalidAction as exc:
                raise error(f"{where}: python -c code does not compile: {exc}") from None
        elif _program(argv) not in _OFFICE and (word := vm_only_word(params["command"])) is not None:
            raise error(f"{where}: {kind} command uses {word!r}, which only OSWorld's VM has: {params['command']!r}")
    elif kind == "sleep":
        seconds = params.get("seconds")
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
            raise error(f"{where}: sleep needs 'seconds' >= 0, got {seconds!r}")
    elif kind == "activate_window":
        name = params.get("window_name")
        if not isinstance(name, str):
            raise error(f"{where}: activate_window needs a string 'window_name'")


def needs_display(step: dict[str, Any]) -> bool:
    """Whether a checked step acts on the desktop (windows, keys, the office app) rather than on files only."""
    kind, params = step["type"], step.get("parameters", {}) or {}
    if kind in ("open", "launch", "activate_window", "sleep"):
        return True
    if kind in ("execute", "command"):
        argv = _argv(params["command"])
        return _python_code(argv) is not None or _program(argv) in _OFFICE
    return False


def is_export(step: dict[str, Any]) -> bool:
    """Whether a checked step is a LibreOffice ``--convert-to`` export (a file step, run in its own sandbox)."""
    if step["type"] not in ("execute", "command"):
        return False
    argv = _argv((step.get("parameters", {}) or {})["command"])
    return _program(argv) in _OFFICE and "--convert-to" in argv


def acts_on_desktop(step: dict[str, Any]) -> bool:
    """Whether a checked step needs the running desktop and apps.

    :func:`needs_display`, less exports and sleeps (a sleep waits as well after the apps stopped).
    """
    return needs_display(step) and not is_export(step) and step["type"] != "sleep"


def postconfig_phases(steps: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(live, after)``: the steps up to the last desktop step and the sleeps right after it; then the rest.

    A desktop step is one that :func:`acts_on_desktop`. The live ones run while the apps run (a Ctrl+S saves the
    agent's open document; the sleep after it lets the app finish writing before it is stopped); the others
    (exports, downloads, commands) after every app is stopped, so that no process of the agent races them.

    Examples:
        >>> save = {"type": "execute", "parameters": {"command": ["python", "-c", "pass"]}}
        >>> export = {"type": "execute", "parameters": {"command": "libreoffice --convert-to csv /home/user/a.xlsx"}}
        >>> sleep = {"type": "sleep", "parameters": {"seconds": 1}}
        >>> [len(p) for p in postconfig_phases([save, sleep, export, sleep])]
        [2, 2]
    """
    end = max((i + 1 for i, step in enumerate(steps) if acts_on_desktop(step)), default=0)
    while end and end < len(steps) and steps[end]["type"] == "sleep":
        end += 1
    return list(steps[:end]), list(steps[end:])


def _launch(ctx: StepContext, argv: list[str]) -> None:
    args = []
    for arg in argv[1:]:
        if arg.startswith(("/", "~")) and not arg.startswith("--"):
            args.append(str(ctx.fs.local(arg)))
        else:
            args.append(arg)
    documents = [Path(a).name for a in args if not a.startswith("-")]
    ctx.office.launch(args, wait_for=documents[-1] if documents else "LibreOffice")


def run_step(step: dict[str, Any], ctx: StepContext) -> str:
    """Run one checked step; returns a short note for the log. Failures raise (the episode ends with a reason)."""
    from rlanything_core.envs.desktop.office import find_windows, focus_window

    kind, params = step["type"], step.get("parameters", {}) or {}
    if kind == "download":
        for f in params["files"]:
            source = ctx.task_files.download_source(f["url"], f["path"])
            target = episode_path(ctx.fs, f["path"]).relative_to(ctx.fs.root)
            copy_in(source, ctx.fs.root, target, owner=ctx.fs.owner if os.getuid() == 0 else None)
        return f"downloaded {len(params['files'])} file(s)"
    if kind == "open":
        local = episode_path(ctx.fs, params["path"])
        if local.suffix.lower() in _SHEETS:
            ctx.office.open(local)
        else:  # Writer and Impress: LibreOffice picks the module from the file
            ctx.office.launch([str(local)], wait_for=local.name)
        return f"opened {params['path']}"
    if kind == "sleep":
        time.sleep(float(params["seconds"]))
        return f"slept {params['seconds']}s"
    if kind == "activate_window":
        ids = find_windows(ctx.office.display, params["window_name"], strict=bool(params.get("strict", False)))
        if ids:
            focus_window(ctx.office.display, ids[-1])
            return f"activated {params['window_name']!r}"
        if is_terminal(params["window_name"]):
            open_terminal(ctx.office)
            return f"opened and activated {params['window_name']!r}"
        return f"no window {params['window_name']!r} to activate"  # OSWorld logs and goes on
    argv = _argv(params["command"])
    if _program(argv) in _OFFICE and "--convert-to" in argv:
        return export_in_sandbox(ctx.fs, argv)
    if kind == "launch" or _program(argv) in _OFFICE:
        _launch(ctx, argv)
        return f"launched {' '.join(argv)}"
    code = _python_code(argv)
    if code is not None:
        result = ctx.sandbox.execute(parse_action(_fill(code, ctx.screen)))
        if not result.ok:
            raise RuntimeError(f"{kind} python code failed: {result.error}")
        return f"{kind}: python code ran"
    command = params["command"]
    command = _fill(command, ctx.screen) if isinstance(command, str) else [_fill(str(c), ctx.screen) for c in command]
    proc = run_task_command(command, shell=bool(params.get("shell", False)), fs=ctx.fs)
    return f"{kind}: exit {proc.returncode}"
