"""OSWorld's published tasks, loaded unchanged from ``../shared/osworld`` (or ``$RLANYTHING_OSWORLD_DIR``).

For every supported task: stand-in files in a cache of OSWorld's layout (``_osworld_standins``), the task loads, a
correct result scores 1.0 and each wrong one (one per checked rule) 0.0, through the checker path
(:func:`~rlanything_core.envs.desktop.file_check.score_files`, no display). Every other task is refused at load
with an error naming the piece that cannot run here. Skipped with the reason when the task files are absent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _osworld_impress_standins import impress_case
from _osworld_standins import (
    EXAMPLES,
    PROFILE_FUNCS,
    Case,
    calc_case,
    os_case,
    placeholders,
    profile_case,
    task_ids,
    task_path,
)
from _osworld_writer_standins import writer_case

from rlanything_core.envs.desktop.episode_fs import EpisodeFS
from rlanything_core.envs.desktop.file_check import score_files
from rlanything_core.envs.desktop.osworld_cache import MissingTaskFile
from rlanything_core.envs.desktop.task import UnsupportedTaskError, load_task

pytest.importorskip("openpyxl")
ABSENT = pytest.mark.skipif(not EXAMPLES.is_dir(), reason=f"OSWorld task files not found at {EXAMPLES}")

# tasks refused at load, with the piece the refusal names (the docs' supported-check table lists them)
CALC_REFUSED: dict[str, str] = {}


def _ids(domain: str) -> list[str]:
    return task_ids(domain) or ["absent"]


def _prove(task_path_: Path, case: Case, cache: Path, work: Path) -> None:
    case.write_cache()
    task = load_task(task_path_, cache_dir=cache)
    good = EpisodeFS(work / "good")
    Case.apply(case.good, good)
    outcome = score_files(task, good)
    assert outcome.score == 1.0, f"correct result scored {outcome}"
    assert case.wrongs, "a proof needs at least one wrong result"
    for label, files in case.wrongs.items():
        fs = EpisodeFS(work / label.replace(":", "_"))
        Case.apply(files, fs)
        outcome = score_files(task, fs)
        limit = case.wrong_max.get(label, 0.0)
        assert outcome.score <= limit, f"wrong result {label!r} scored {outcome} (at most {limit})"
    # the untouched episode (nothing saved) scores 0 too
    assert score_files(task, EpisodeFS(work / "empty")).score == 0.0


@ABSENT
@pytest.mark.parametrize("task_id", _ids("libreoffice_calc"))
def test_calc_task(task_id: str, tmp_path: Path) -> None:
    path = task_path("libreoffice_calc", task_id)
    raw = json.loads(path.read_text())
    cache = tmp_path / "cache"
    if raw["evaluator"]["func"] == "infeasible":
        task = load_task(path, cache_dir=cache)
        assert score_files(task, EpisodeFS(tmp_path / "ep"), last_action="FAIL").score == 1.0
        assert score_files(task, EpisodeFS(tmp_path / "ep"), last_action="DONE").score == 0.0
        return
    if task_id in CALC_REFUSED:
        calc_case(raw, cache).write_cache()
        with pytest.raises(UnsupportedTaskError, match=CALC_REFUSED[task_id]):
            load_task(path, cache_dir=cache)
        return
    _prove(path, calc_case(raw, cache), cache, tmp_path)


@ABSENT
def test_a_missing_cache_file_names_task_url_and_path(tmp_path: Path) -> None:
    task_id = _ids("libreoffice_calc")[1]
    path = task_path("libreoffice_calc", task_id)
    raw = json.loads(path.read_text())
    url = raw["config"][0]["parameters"]["files"][0]["url"]
    with pytest.raises(UnsupportedTaskError) as info:
        load_task(path, cache_dir=tmp_path / "cache")
    message = str(info.value)
    assert task_id in message and url in message and str(tmp_path / "cache" / task_id) in message
    with pytest.raises(UnsupportedTaskError, match="no cache folder is set"):
        load_task(path)
    assert issubclass(MissingTaskFile, FileNotFoundError)


def _unsupported(path: Path, cache: Path, named: str) -> None:
    with pytest.raises(UnsupportedTaskError, match=named):
        load_task(path, cache_dir=cache)


def _domain_test(domain: str, make_case, refused: dict[str, str], task_id: str, tmp_path: Path) -> None:
    path = task_path(domain, task_id)
    raw = json.loads(path.read_text())
    cache = tmp_path / "cache"
    if task_id in refused:
        placeholders(raw, cache)
        _unsupported(path, cache, refused[task_id])
        pytest.skip(f"refused at load, naming {refused[task_id]!r} (asserted)")
    if raw["evaluator"]["func"] == "infeasible":
        placeholders(raw, cache)
        task = load_task(path, cache_dir=cache)
        assert score_files(task, EpisodeFS(tmp_path / "ep"), last_action="FAIL").score == 1.0
        assert score_files(task, EpisodeFS(tmp_path / "ep"), last_action="DONE").score == 0.0
        return
    maker = profile_case if raw["evaluator"]["func"] in PROFILE_FUNCS else make_case
    _prove(path, maker(raw, cache), cache, tmp_path)


# Writer and Impress tasks refused at load, with the piece the refusal names
WRITER_REFUSED: dict[str, str] = {}
IMPRESS_REFUSED = {
    "c59742c0-4323-4b9d-8a02-723c251deaa0": "compare_audios",
    "ef9d12bd-bcee-4ba0-a40e-918400f43ddf": "check_left_panel",
    "ac9bb6cb-1888-43ab-81e4-a98a547918cd": "check_page_number_colors",
}


@ABSENT
@pytest.mark.parametrize("task_id", _ids("libreoffice_writer"))
def test_writer_task(task_id: str, tmp_path: Path) -> None:
    _domain_test("libreoffice_writer", writer_case, WRITER_REFUSED, task_id, tmp_path)


@ABSENT
@pytest.mark.parametrize("task_id", _ids("libreoffice_impress"))
def test_impress_task(task_id: str, tmp_path: Path) -> None:
    _domain_test("libreoffice_impress", impress_case, IMPRESS_REFUSED, task_id, tmp_path)


# OS tasks refused at load (the piece named). 94d95f96 ("install Spotify", checked by `which spotify`) is refused as
# a check no action can change here (no package manager, a read-only system): it could only ever score 0.
OS_REFUSED = {
    "94d95f96-9699-4208-98ba-3c3119edf9c2": "checks whether 'spotify' is installed",
    "ec4e3f68-9ea4-4c18-a5c9-69f89d1178b3": "DBUS_SESSION_BUS_ADDRESS",
    "a462a795-fdc7-4b23-b689-e8b6df786b78": "sudo",
    "28cc3b7e-b194-4bc9-8353-d04c0f4d56d2": "pulseaudio",
    "5ea617a3-0e86-4ba6-aab2-dac9aa2e8d57": "gio",
    "e0df059f-28a6-4169-924f-b9623e7184cc": "sudo",
    "b6781586-6346-41cd-935a-a6b1487918fc": "is_utc_0",
    "a4d98375-215b-4a4d-aee9-3d4370fccc41": "gsettings' default .* already passes",
    "13584542-872b-42d8-b299-866967b5c3ef": "vm_terminal_output",
    "5812b315-e7bd-4265-b51f-863c02174c28": "sudo",
    "4127319a-8b79-4410-b58a-7a151e15f3d7": "xdg-open",
}


@ABSENT
@pytest.mark.parametrize("task_id", _ids("os"))
def test_os_task(task_id: str, tmp_path: Path) -> None:
    _domain_test("os", os_case, OS_REFUSED, task_id, tmp_path)
