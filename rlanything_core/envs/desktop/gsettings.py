"""GSettings without a GNOME session: a per-episode keyfile in the episode's home, read and written by ``gsettings``.

OSWorld's OS tasks set up and check desktop settings with ``gsettings`` (dconf over the VM's D-Bus session, e.g.
``gsettings get org.gnome.desktop.session idle-delay``). Locally no session bus runs; GLib's ``keyfile`` backend keeps
the same settings in ``$XDG_CONFIG_HOME/glib-2.0/settings/keyfile``, here ``/home/user/.config/...`` inside the
sandboxes, i.e. in the episode's own home folder. Every task command (:func:`~.episode_fs.run_task_command`) and the
terminal (:mod:`.terminal`) run with :data:`GSETTINGS_ENV`, so that the set-up, the agent and the check read and
write one store, per episode, as the app uid. A ``gsettings`` command whose schema is not installed here (Debian's
``gsettings-desktop-schemas`` holds ``org.gnome.desktop.*``; GNOME Shell's ``org.gnome.shell`` is not) is refused at
load by :func:`missing_schema`.

An episode starts from the schemas' defaults (an empty keyfile); OSWorld's VM starts from its image's values, which
the task files do not record. A check that the default already passes (:func:`default_value`; e.g. ``lock-enabled``
is ``true`` by default) would reward doing nothing, so the loader refuses it (:mod:`.task`).
"""

from __future__ import annotations

import functools
import shlex
import shutil
import subprocess
from typing import Any

__all__ = ["GSETTINGS_ENV", "default_value", "installed_schemas", "missing_schema"]

GSETTINGS_ENV = {"GSETTINGS_BACKEND": "keyfile", "XDG_CONFIG_HOME": "/home/user/.config"}
"""The environment of every process of an episode that may run ``gsettings`` (paths as the sandboxes see them)."""

# subcommands whose next argument is a schema (``SCHEMA[:PATH]``)
_WITH_SCHEMA = frozenset(
    {"get", "set", "reset", "range", "describe", "writable", "monitor", "list-keys", "list-children",
     "list-recursively", "reset-recursively"}
)


@functools.lru_cache(maxsize=1)
def installed_schemas() -> frozenset[str]:
    """The schemas this machine's ``gsettings`` knows (empty when ``gsettings``, Debian's libglib2.0-bin, is missing).

    Our own fixed command (no task text in it), with the in-memory backend: nothing is read or written but the
    compiled schemas under ``/usr/share/glib-2.0``.
    """
    if shutil.which("gsettings") is None:
        return frozenset()
    proc = subprocess.run(
        ["gsettings", "list-schemas"],
        env={"PATH": "/usr/bin:/bin", "GSETTINGS_BACKEND": "memory"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return frozenset(proc.stdout.split()) if proc.returncode == 0 else frozenset()


def _words(line: str) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError:  # unbalanced quotes: the plain words still name the program and schema
        return line.split()


def missing_schema(command: Any) -> str | None:
    """What a command's ``gsettings`` use needs and this machine lacks (``None``: nothing, or no gsettings use).

    Returns ``"gsettings"`` when the program itself is missing or an invocation cannot be read (an option such as
    ``--schemadir`` names a VM folder), else the first schema that is not installed.
    """
    text = command if isinstance(command, str) else " ".join(shlex.quote(str(c)) for c in command)
    schemas = None
    for line in text.replace(";", "\n").replace("&&", "\n").replace("||", "\n").replace("|", "\n").splitlines():
        words = _words(line)
        for i, word in enumerate(words):
            if word.rsplit("/", 1)[-1] != "gsettings":
                continue
            schemas = installed_schemas() if schemas is None else schemas
            rest = words[i + 1 :]
            if not schemas or not rest or rest[0].startswith("-"):
                return "gsettings"
            if rest[0] in _WITH_SCHEMA:
                if len(rest) < 2:
                    return "gsettings"
                schema = rest[1].split(":", 1)[0]
                if schema not in schemas:
                    return schema
    return None


def default_value(command: Any) -> str | None:
    """The output ``command`` gives on an untouched episode when it is one ``gsettings get SCHEMA KEY``, else None.

    Runs our own argv (no shell; the schema must be installed) with the in-memory backend, i.e. the schema default.
    """
    words = _words(command) if isinstance(command, str) else [str(c) for c in command]
    while words and "=" in words[0] and not words[0].startswith("-"):
        words = words[1:]  # leading VAR=value assignments
    if len(words) != 4 or words[0].rsplit("/", 1)[-1] != "gsettings" or words[1] != "get":
        return None
    if words[2] not in installed_schemas():
        return None
    proc = subprocess.run(
        ["gsettings", "get", words[2], words[3]],
        env={"PATH": "/usr/bin:/bin", "GSETTINGS_BACKEND": "memory"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return proc.stdout if proc.returncode == 0 else None
