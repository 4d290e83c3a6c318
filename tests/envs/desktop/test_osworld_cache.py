"""OSWorld's cache layout, VM path mapping, the shared-string rewrite and the headless export step."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

from rlanything_core.envs.desktop.config_steps import StepContext, run_step
from rlanything_core.envs.desktop.episode_fs import EpisodeFS
from rlanything_core.envs.desktop.metrics.cells import read_cell_value
from rlanything_core.envs.desktop.osworld_cache import (
    MissingTaskFile,
    TaskFiles,
    check_vm_path,
    cloud_cache_path,
    download_cache_path,
    vm_path_to_local,
)
from rlanything_core.envs.desktop.task import UnsupportedTaskError, parse_task
from rlanything_core.envs.desktop.xlsx_strings import share_strings

DRIVE = "https://drive.google.com/uc?id={}&export=download"


def test_download_cache_path_is_osworlds_layout() -> None:
    url = DRIVE.format("abc")
    path = download_cache_path("/c", "task-1", url, "/home/user/Sales.xlsx")
    assert path == Path("/c/task-1") / f"{uuid.uuid5(uuid.NAMESPACE_URL, url)}_Sales.xlsx"
    assert cloud_cache_path("/c", "task-1", "Sales_gold.xlsx") == Path("/c/task-1/Sales_gold.xlsx")


def test_input_and_gold_with_the_same_url_tail_do_not_collide() -> None:
    # every Google Drive URL ends in "uc" or "download": the key is the task id plus a file name, never the URL's tail
    a = download_cache_path("/c", "t", DRIVE.format("1"), "/home/user/a.xlsx")
    b = download_cache_path("/c", "t", DRIVE.format("2"), "/home/user/a.xlsx")
    other_task = download_cache_path("/c", "u", DRIVE.format("1"), "/home/user/a.xlsx")
    gold = cloud_cache_path("/c", "t", "a_gold.xlsx")
    assert len({a, b, other_task, gold}) == 4


@pytest.mark.parametrize("bad", ["", "../x", "a/b", "."])
def test_cache_keys_must_be_plain_names(bad: str) -> None:
    with pytest.raises(ValueError, match="task_id"):
        download_cache_path("/c", bad, "https://x/y", "/home/user/a")
    if bad:
        with pytest.raises(ValueError):
            cloud_cache_path("/c", "t", bad)


@pytest.mark.parametrize(
    ("vm", "local"),
    [
        ("/home/user/Desktop/a.xlsx", "/ep/home/Desktop/a.xlsx"),
        ("~/a.docx", "/ep/home/a.docx"),
        ("eval.sh", "/ep/home/eval.sh"),
        ("/home/user", "/ep/home"),
        ("/tmp/x/y.csv", "/ep/tmp/x/y.csv"),
        ("/home/user/a/../b.txt", "/ep/home/b.txt"),
    ],
)
def test_vm_paths_map_into_the_episode(vm: str, local: str) -> None:
    assert vm_path_to_local(vm, home="/ep/home", tmp="/ep/tmp") == Path(local)


@pytest.mark.parametrize("vm", ["/etc/passwd", "/home/user/../../etc/x", "/home/userx/a", "/home/test1", "", None])
def test_vm_paths_outside_home_and_tmp_are_refused(vm: object) -> None:
    with pytest.raises(ValueError):
        check_vm_path(vm)


def _task(url: str, dest_path: str = "/home/user/a.xlsx") -> dict:
    return {
        "id": "t1",
        "instruction": "do it",
        "config": [{"type": "download", "parameters": {"files": [{"url": url, "path": dest_path}]}}],
        "evaluator": {"func": "infeasible"},
    }


def test_loading_reads_the_cache_and_names_a_missing_file(tmp_path: Path) -> None:
    url = DRIVE.format("zz")
    with pytest.raises(UnsupportedTaskError) as info:
        parse_task(_task(url), tmp_path, cache_dir=tmp_path / "cache")
    expected = download_cache_path(tmp_path / "cache", "t1", url, "/home/user/a.xlsx")
    assert "t1" in str(info.value) and url in str(info.value) and str(expected) in str(info.value)
    expected.parent.mkdir(parents=True)
    expected.write_bytes(b"x")
    task = parse_task(_task(url), tmp_path, cache_dir=tmp_path / "cache")
    assert task.files.download_source(url, "/home/user/a.xlsx") == expected
    assert str((tmp_path / "cache").resolve()) in task.private_paths
    # a hint variant keeps reading the original task's cache folder
    assert task.with_instruction("x", task_id="t1__hint").files.download_source(url, "/home/user/a.xlsx") == expected


def test_a_download_outside_the_mapped_folders_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.xlsx").write_bytes(b"x")
    with pytest.raises(UnsupportedTaskError, match="outside"):
        parse_task(_task("a.xlsx", "/opt/a.xlsx"), tmp_path)


def test_missing_files_raise_file_not_found(tmp_path: Path) -> None:
    files = TaskFiles("t", tmp_path, tmp_path / "cache")
    with pytest.raises(MissingTaskFile, match="task t: cloud_file url .* is not in the cache; expected it at"):
        files.cloud_source(DRIVE.format("q"), "g.xlsx")
    with pytest.raises(MissingTaskFile, match="task t: download url 'https://x/a.xlsx' is not in the cache"):
        files.download_source("https://x/a.xlsx", "/home/user/a.xlsx")
    with pytest.raises(MissingTaskFile, match="task t: download source 'nope.xlsx' is not a file"):
        files.download_source("nope.xlsx", "/home/user/a.xlsx")
    with pytest.raises(MissingTaskFile, match="task t: cloud_file 'nope.xlsx' is not a file"):
        files.cloud_source("nope.xlsx", "g.xlsx")
    with pytest.raises(MissingTaskFile, match="task t: cloud_file url .* is neither shipped beside the task"):
        TaskFiles("t", tmp_path).cloud_source(DRIVE.format("q"), "g.xlsx")


def test_share_strings_makes_openpyxl_strings_readable(tmp_path: Path) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    path = tmp_path / "b.xlsx"
    book = openpyxl.Workbook()
    book.active["A1"], book.active["A2"], book.active["B1"] = "Total", "Total", 3
    book.save(path)
    assert read_cell_value(str(path), "Sheet", "A1") is None  # the pitfall: inline strings read as None
    assert share_strings(path) == 2
    assert read_cell_value(str(path), "Sheet", "A1") == "Total" == read_cell_value(str(path), "Sheet", "A2")
    assert read_cell_value(str(path), "Sheet", "B1") == 3.0
    assert openpyxl.load_workbook(path).active["A1"].value == "Total"
    assert share_strings(path) == 0
    with pytest.raises(ValueError, match="not an xlsx"):
        share_strings(tmp_path / "missing.xlsx")


@pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice (soffice) is not installed")
def test_convert_to_step_writes_the_csv_a_sheet_print_rule_reads(tmp_path: Path) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    fs = EpisodeFS(tmp_path / "ep")
    book = openpyxl.Workbook()
    book.active.title = "Sheet1"
    book.active.append(["Item", 2.5])
    book.save(fs.local("/home/user/A.xlsx"))
    step = {
        "type": "execute",
        "parameters": {
            "command": [
                "libreoffice",
                "--convert-to",
                "csv:Text - txt - csv (StarCalc):44,34,UTF-8,,,,false,true,true,false,false,1",
                "--outdir",
                "/home/user",
                "/home/user/A.xlsx",
            ]
        },
    }
    run_step(step, StepContext(fs, None, None, tmp_path, (1920, 1080)))
    assert fs.local("/home/user/A-Sheet1.csv").read_text().splitlines() == ["Item,2.5"]


def test_the_libreoffice_profile_path_reads_the_running_apps_profile(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from rlanything_core.envs.desktop.getters import vm_local_path

    fs = EpisodeFS(tmp_path / "ep")
    xcu = "/home/user/.config/libreoffice/4/user/registrymodifications.xcu"
    office = SimpleNamespace(profile_dir=tmp_path / "profile")  # the one attribute of OfficeApp this reads
    with_app = StepContext(fs, office, None, tmp_path, (1920, 1080))
    assert vm_local_path(with_app, xcu) == tmp_path / "profile" / "user" / "registrymodifications.xcu"
    assert vm_local_path(with_app, "~/a.docx") == fs.home / "a.docx"
    without_app = StepContext(fs, None, None, tmp_path, (1920, 1080))  # the checker path: files as written
    assert vm_local_path(without_app, xcu) == fs.home / ".config/libreoffice/4/user/registrymodifications.xcu"


@pytest.mark.parametrize("dest", ["../../etc/passwd", "sub/gold.xlsx", ".."])
def test_a_cloud_file_dest_cannot_leave_the_task_folder(tmp_path: Path, dest: str) -> None:
    # a task JSON is input too: its gold file's name must not point the cache reader (or the copy) elsewhere
    raw = {
        "id": "t1",
        "instruction": "do it",
        "config": [],
        "evaluator": {
            "func": "compare_table",
            "result": {"type": "vm_file", "path": "/home/user/a.xlsx", "dest": "a.xlsx"},
            "expected": {"type": "cloud_file", "path": DRIVE.format("g"), "dest": dest},
            "options": {"rules": [{"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}]},
        },
    }
    with pytest.raises(UnsupportedTaskError, match="plain file name"):
        parse_task(raw, tmp_path, cache_dir=tmp_path / "cache")


@pytest.mark.parametrize("vm", ["/home/user/Desktop/a.xlsx", "~/b.docx", "c.sh", "/tmp/d/e.csv", "/home/user"])
def test_episode_path_agrees_with_the_episode_folder(tmp_path: Path, vm: str) -> None:
    from rlanything_core.envs.desktop.osworld_cache import episode_path

    fs = EpisodeFS(tmp_path / "ep")
    assert episode_path(fs, vm) == fs.local(vm)
    with pytest.raises(ValueError):
        episode_path(fs, "/etc/passwd")
