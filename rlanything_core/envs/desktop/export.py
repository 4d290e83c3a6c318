"""OSWorld's ``libreoffice --convert-to`` postconfig step, run in a fresh sandbox on copies of its files.

The ``sheet_print`` Calc tasks export the agent's workbook to CSV after the episode and score the CSV. The export
parses a file the agent wrote, so it must not run as the harness: it runs after the agent's processes are stopped,
in a bubblewrap sandbox of its own (no network, read-only ``/usr``, LibreOffice's and fontconfig's ``/etc`` files),
as the episode's app uid, with a throw-away profile. The sandbox sees only a private folder holding copies of the
input files (read from the episode folder without following a link, :mod:`.safe_paths`): a link at the workbook's
path is refused, not converted, and nothing of the host but the system is visible to the converter. The files it
writes are copied back into the episode's output folder (again without following a link).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from rlanything_core.envs.desktop.app_sandbox import APP_READ_ONLY
from rlanything_core.envs.desktop.osworld_cache import episode_path
from rlanything_core.envs.desktop.safe_paths import copy_in, copy_out
from rlanything_core.sandbox.bwrap import bwrap_command, bwrap_status

__all__ = ["export_in_sandbox"]

_SETPRIV = "/usr/bin/setpriv"


def _relative(fs: Any, vm_path: str) -> Path:
    return episode_path(fs, vm_path).relative_to(fs.root)


def export_in_sandbox(fs: Any, argv: list[str], *, timeout_s: float = 180.0) -> str:
    """Run ``libreoffice ... --convert-to ... [--outdir DIR] FILE...`` (``argv``) on copies, in a fresh sandbox.

    VM paths (``/...``, ``~...``) in ``argv`` are the inputs, except the ``--outdir`` value (the episode folder the
    results are copied into; the input's folder when absent, as LibreOffice's default is the working folder, the
    home, there).

    Raises:
        RuntimeError: bubblewrap does not work here, or the export failed.
        FileNotFoundError: an input is missing.
        UnsafePath: an input is a link or a special file.
    """
    works, reason = bwrap_status()
    if not works:
        raise RuntimeError(f"--convert-to runs only inside bubblewrap, which does not work here: {reason}")
    args, outdir, inputs = [], "/home/user", []
    rest = iter(argv[1:])
    for arg in rest:
        if arg == "--outdir":
            outdir = next(rest, "/home/user")
        elif arg.startswith(("/", "~")):
            inputs.append(arg)
        else:
            args.append(arg)
    if not inputs:
        raise RuntimeError(f"--convert-to names no input file: {argv!r}")
    owner = fs.owner if fs.owner is not None and os.getuid() == 0 else None
    with tempfile.TemporaryDirectory(prefix="lo-export-") as work:
        folder = Path(work)
        for name in ("in", "out", "profile"):
            (folder / name).mkdir()
        inside = []
        for vm_path in inputs:
            name = Path(vm_path).name
            copy_out(fs.root, _relative(fs, vm_path), folder / "in" / name)
            inside.append(f"/tmp/in/{name}")
        if owner is not None:
            for path in (folder, *folder.rglob("*")):
                os.chown(path, owner, owner, follow_symlinks=False)
        cmd = bwrap_command(tmpfs_mb=0, binds=APP_READ_ONLY, tmp_dir=work)[:-1] + ["--new-session", "--"]
        if owner is not None:
            cmd += [_SETPRIV, f"--reuid={owner}", f"--regid={owner}", "--clear-groups", "--"]
        else:
            cmd[-1:-1] = ["--cap-drop", "ALL"]
        cmd += ["soffice", "-env:UserInstallation=file:///tmp/profile", "--headless", "--norestore", *args,
                "--outdir", "/tmp/out", *inside]
        env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"}
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"libreoffice --convert-to failed ({proc.returncode}): {proc.stderr.strip()[-300:]}")
        written = []
        with os.scandir(folder / "out") as entries:
            for entry in entries:
                if entry.is_file(follow_symlinks=False):  # the converter's own files; nothing else is trusted
                    copy_in(entry.path, fs.root, _relative(fs, f"{outdir.rstrip('/')}/{entry.name}"), owner=owner)
                    written.append(entry.name)
    return f"converted: {', '.join(sorted(written)) or 'nothing'}"
