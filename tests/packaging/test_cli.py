"""The ``rlanything`` command, the extras check, the data folder setting and the README's example."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from rlanything_core import cli, data_dir, extras
from rlanything_core.conf import CONF_DIR, SEARCH_PATH

REPO = Path(__file__).resolve().parents[2]


def _python(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m rlanything_core ...`` of this checkout, as a user runs it."""
    import os

    full = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([sys.executable, "-m", "rlanything_core", *args], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=600)  # fmt: skip


def test_the_configs_are_in_the_package_and_listed_as_package_data() -> None:
    assert CONF_DIR == REPO / "rlanything_core" / "conf" and (CONF_DIR / "train.yaml").is_file()
    assert SEARCH_PATH == "pkg://rlanything_core.conf"
    assert not (REPO / "experiments" / "conf").exists()
    pyproject = (REPO / "pyproject.toml").read_text()
    package_data = '"rlanything_core.conf" = ["*.yaml", "*/*.yaml", "model_configs/*.json", "iteration_rates.json"]'
    assert package_data in pyproject
    assert 'rlanything = "rlanything_core.cli:main"' in pyproject
    deepest = max(len(p.relative_to(CONF_DIR).parts) for p in CONF_DIR.rglob("*.yaml"))
    assert deepest <= 2, "a config folder deeper than the package-data globs: it would be left out of the wheel"


def test_usage_and_an_unknown_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == 2 and "usage: rlanything {train,evaluate,ablate}" in capsys.readouterr().out
    assert cli.main(["--help"]) == 0
    assert cli.main(["fit"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ERROR: unknown command 'fit'; choose one of train, evaluate, ablate")


def test_a_bad_override_is_one_error_line(tmp_path: Path) -> None:
    done = _python("train", "+setting=alfworld", "+no_such_key=1", f"run_dir={tmp_path / 'run'}", cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ERROR: config key 'no_such_key'"), done.stderr[-2000:]
    assert "Traceback" not in done.stderr


def test_python_m_prints_the_composed_config_from_the_package(tmp_path: Path) -> None:
    done = _python("train", "+setting=alfworld", "+profile=smoke", "--cfg", "job", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(r"^iterations: 2$", done.stdout, re.M) and "name: alfworld" in done.stdout


@pytest.mark.alfworld
def test_an_unwritable_run_dir_is_one_error_line(tmp_path: Path) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    done = _python("train", "+setting=alfworld", "+profile=smoke", f"run_dir={blocker / 'run'}", cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1 and str(blocker) in errors[0] and "run_dir=" in errors[0], done.stderr[-2000:]
    assert "Traceback" not in done.stderr


def test_a_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(extras.EXTRA_MODULES, "loop", ("omegaconf", "no_such_module_for_this_test"))
    with pytest.raises(extras.MissingExtraError, match=r"needs the 'loop' extra .*pip install 'rlanything\[loop\]'"):
        extras.require_extra("loop", "rlanything_core.assembly")
    assert cli.main(["train", "+setting=alfworld"]) == 2
    assert "ERROR: rlanything train needs the 'loop' extra (missing: no_such_module_for_this_test)" in (
        capsys.readouterr().err
    )
    with pytest.raises(ValueError, match="extra: unknown extra 'nope'"):
        extras.require_extra("nope", "x")


def test_the_data_folder_is_one_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RLANYTHING_DATA", str(tmp_path))
    assert data_dir.data_dir() == tmp_path.resolve()
    monkeypatch.delenv("RLANYTHING_DATA")
    assert data_dir.checkout_root() == REPO
    assert data_dir.data_dir() == (REPO.parent / "shared").resolve()  # a checkout: beside it, whatever the cwd


def test_missing_alfworld_data_names_the_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from rlanything_core.envs.alfworld.data import resolve_data_root

    monkeypatch.setenv("RLANYTHING_DATA", str(tmp_path / "nowhere"))
    monkeypatch.delenv("ALFWORLD_DATA", raising=False)
    with pytest.raises(FileNotFoundError, match="RLANYTHING_DATA") as err:
        resolve_data_root()
    assert str(tmp_path / "nowhere" / "alfworld") in str(err.value)


def readme_example() -> str:
    """The README's Python block (the one a reader copies)."""
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    assert len(blocks) == 1, "the README should hold one Python example"
    return str(blocks[0])


def test_the_readme_example_runs_as_written(tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(readme_example())
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "format failures 0.056"


def test_the_docs_home_shows_the_same_example() -> None:
    assert readme_example() in (REPO / "docs" / "index.md").read_text()


def test_error_lines_name_the_path_and_the_fix() -> None:
    import errno

    from rlanything_core.assembly.train_app import error_line

    unwritable = PermissionError(errno.EACCES, "Permission denied", "/runs/x")
    assert error_line(unwritable) == (
        "ERROR: Permission denied (/runs/x): choose a writable place (run_dir=...) or free the disk"
    )
    assert error_line(FileNotFoundError(errno.ENOENT, "No such file or directory", "/a/b")) == (
        "ERROR: No such file or directory: /a/b"
    )
    assert error_line(FileNotFoundError("the judge checkpoint full_seed0 is not there")) == (
        "ERROR: the judge checkpoint full_seed0 is not there"
    )
