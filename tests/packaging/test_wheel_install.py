"""The built wheel in a fresh virtual environment outside the checkout: what a user who runs `pip install` gets.

The wheel is built from a copy of the package's files (so the checkout gains no build folders), installed with
``--no-deps`` into a new venv in a temporary folder. First, with nothing else installed, the command must say which
extra is missing; then the dependencies come from the running interpreter's site-packages (a ``.pth`` line: the same
torch, transformers and ALFWorld, no download), never the package, which is imported from the venv's own
site-packages. From a temporary folder (no checkout, no ``PYTHONPATH``): the smoke training on ALFWorld, through
``rlanything train`` with the configs the wheel ships, a tiny ``rlanything ablate`` (results under the current
directory, no committed reference to print) and the README's example.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from rlanything_core.data_dir import data_dir

pytestmark = [pytest.mark.slow, pytest.mark.alfworld]

REPO = Path(__file__).resolve().parents[2]
SUMMARY = re.compile(r"^iterations=2 policy_updates=\d+ judge_updates=\d+ accepted_tasks=\d+ checkpoint=\S+$", re.M)


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment without this checkout on the path (no PYTHONPATH, no virtual env of the test runner)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    return {**env, **extra}


def _run(cmd: list[str], cwd: Path, timeout: float = 900, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=_clean_env(**env), capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding only the built wheel (``--no-deps``); returns its folder."""
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, src / name)
    shutil.copytree(REPO / "rlanything_core", src / "rlanything_core",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))  # fmt: skip
    built = _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                  str(base / "dist"), str(src)], cwd=base)  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    assert "License classifiers are deprecated" not in built.stderr, built.stderr[-3000:]
    (wheel,) = (base / "dist").glob("rlanything-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "rlanything_core/conf/train.yaml" in names and "rlanything_core/conf/setting/alfworld.yaml" in names
    assert any(n.endswith("LICENSE") for n in names)
    (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
    meta = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "License-Expression: Apache-2.0" in meta and "License ::" not in meta  # PEP 639: no deprecated classifier
    assert not any(n.startswith(("experiments/", "tests/")) for n in names)
    entry = [n for n in names if n.endswith("entry_points.txt")]
    assert entry and "rlanything = rlanything_core.cli:main" in zipfile.ZipFile(wheel).read(entry[0]).decode()
    env = base / "venv"
    made = _run([sys.executable, "-m", "venv", str(env)], cwd=base)
    assert made.returncode == 0, made.stderr[-3000:]
    installed = _run([str(env / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                      str(wheel)], cwd=base)  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-3000:]
    return env


def _site_packages(env: Path) -> Path:
    (site,) = (env / "lib").glob("python3*/site-packages")
    return site


def test_without_extras_the_command_names_the_extra(venv: Path, tmp_path: Path) -> None:
    done = _run([str(venv / "bin" / "rlanything"), "train", "+setting=alfworld"], cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip().startswith("ERROR: rlanything train needs the 'loop' extra (missing: omegaconf")
    assert "pip install 'rlanything[loop]'" in done.stderr and "Traceback" not in done.stderr
    imported = _run([str(venv / "bin" / "python"), "-c", "import rlanything_core.assembly"], cwd=tmp_path)
    assert "MissingExtraError: rlanything_core.assembly needs the 'loop' extra" in imported.stderr, imported.stderr


@pytest.fixture(scope="module")
def with_deps(venv: Path) -> Path:
    """The same venv, the dependencies visible through a ``.pth`` line (the running interpreter's site-packages)."""
    deps = sysconfig.get_paths(vars={"base": sys.prefix, "platbase": sys.prefix})["purelib"]
    (_site_packages(venv) / "_rlanything_test_deps.pth").write_text(deps + "\n")
    return venv


def test_the_package_comes_from_the_wheel(with_deps: Path, tmp_path: Path) -> None:
    code = "import rlanything_core, rlanything_core.conf as c; print(rlanything_core.__file__); print(c.CONF_DIR)"
    done = _run([str(with_deps / "bin" / "python"), "-c", code], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    site = _site_packages(with_deps).resolve()
    for line in done.stdout.split():
        assert Path(line).resolve().is_relative_to(site), (line, site)


def test_the_smoke_training_runs_from_a_temporary_folder(with_deps: Path, tmp_path: Path) -> None:
    data = data_dir()
    if not (data / "alfworld" / "json_2.1.1").is_dir():
        pytest.skip(f"no ALFWorld games in {data}/alfworld (set RLANYTHING_DATA)")
    done = _run([str(with_deps / "bin" / "rlanything"), "train", "+setting=alfworld", "+profile=smoke"], cwd=tmp_path,
                timeout=1200, RLANYTHING_DATA=str(data))  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert SUMMARY.search(done.stdout), done.stdout[-2000:]
    assert (tmp_path / "runs" / "alfworld" / "full" / "seed0" / "checkpoints" / "last.ckpt").is_file()


ABLATION_SUMMARY = re.compile(
    r"^arms=2 seeds=1 minutes=\S+ total_minutes=\S+ full_beats_outcome_only=na sample_efficiency=na$", re.M
)
# One TextWorld seed, the "before" evaluation and one outcome-only iteration: one-room quests of length 1 and
# near-uniform sampling, as tests/experiments/_runs.py (TextWorld makes its games: no data folder, no warm start).
TINY_ABLATION = [
    "+setting=textworld", "setting.train_quest_lengths=[1]", "setting.train_rooms=[1]", "setting.seeds_per_cell=2",
    "setting.nb_objects=3", "setting.eval_quest_lengths=[1]", "setting.max_steps=8", "setting.eval_max_steps=8",
    "model.temperature=20", "model.judge_temperature=20", "iterations=1", "tasks_per_iteration=2", "group_size=4",
    "eval.games=1", "progress=false", "arms=[outcome_only]", "seeds=[0]", "jobs=1", "run_id=wheel",
]


def test_a_tiny_ablation_runs_from_a_temporary_folder(with_deps: Path, tmp_path: Path) -> None:
    done = _run([str(with_deps / "bin" / "rlanything"), "ablate", *TINY_ABLATION], cwd=tmp_path, timeout=900,
                OMP_NUM_THREADS="1")  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert ABLATION_SUMMARY.search(done.stdout), done.stdout[-2000:]
    out = tmp_path / "runs" / "ablations" / "textworld" / "wheel"  # results_root, relative: the current directory
    for name in ("table.md", "table.csv", "episodes.csv", "meta.json", "runs.json"):
        assert (out / name).is_file(), name
    assert "Committed reference" not in done.stdout  # no checkout: no committed references to compare with
    assert '"command": "rlanything ablate' in (out / "meta.json").read_text()


def test_the_readme_example_runs_against_the_wheel(with_deps: Path, tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    (tmp_path / "example.py").write_text(blocks[0])
    done = _run([str(with_deps / "bin" / "python"), "example.py"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "format failures 0.056"
