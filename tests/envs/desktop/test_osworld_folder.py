"""Task folders (OSWorld's ``evaluation_examples`` or one's own JSONs) and ``setting.tasks_dir``/``cache_dir``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from _osworld_standins import EXAMPLES, calc_case, task_ids, task_path

from rlanything_core.envs.desktop.task import UnsupportedTaskError
from rlanything_core.envs.desktop.task_folder import find_task_files, load_task_folder

ABSENT = pytest.mark.skipif(not EXAMPLES.is_dir(), reason=f"OSWorld task files not found at {EXAMPLES}")


def _own_task(folder: Path, task_id: str, func: str = "compare_table") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "files").mkdir(exist_ok=True)
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    book.active.append(["Item", 1])
    book.save(folder / "files" / f"{task_id}.xlsx")
    raw = {
        "id": task_id,
        "instruction": "Put 2 in B1.",
        "config": [
            {
                "type": "download",
                "parameters": {"files": [{"url": f"files/{task_id}.xlsx", "path": "/home/user/a.xlsx"}]},
            },
            {"type": "open", "parameters": {"path": "/home/user/a.xlsx"}},
        ],
        "evaluator": {
            "func": func,
            "result": {"type": "vm_file", "path": "/home/user/a.xlsx", "dest": "a.xlsx"},
            "options": {
                "rules": [
                    {
                        "type": "check_cell",
                        "sheet_idx": 0,
                        "coordinate": "B1",
                        "props": {"value": {"method": "eq", "ref": 2}},
                    }
                ]
            },
        },
    }
    (folder / f"my-{task_id}.json").write_text(json.dumps(raw))


def test_a_folder_of_own_tasks_loads(tmp_path: Path) -> None:
    _own_task(tmp_path / "mine", "t1")
    _own_task(tmp_path / "mine", "t2")
    folder = load_task_folder(tmp_path / "mine")
    assert [t.task_id for t in folder.tasks] == ["t1", "t2"] and not folder.refused
    assert folder.tasks[0].json_path == (tmp_path / "mine" / "my-t1.json").resolve()


def test_bad_folders_and_tasks_are_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a folder"):
        find_task_files(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no task JSON"):
        find_task_files(tmp_path / "empty")
    _own_task(tmp_path / "mine", "t1")
    _own_task(tmp_path / "mine", "t2", func="compare_videos")
    with pytest.raises(UnsupportedTaskError, match=r"my-t2\.json.*compare_videos"):
        load_task_folder(tmp_path / "mine")
    folder = load_task_folder(tmp_path / "mine", skip_unsupported=True)
    assert [t.task_id for t in folder.tasks] == ["t1"] and list(folder.refused) == [
        str(tmp_path / "mine" / "my-t2.json")
    ]
    with pytest.raises(ValueError, match="cache_dir"):
        load_task_folder(tmp_path / "mine", cache_dir=tmp_path / "no-cache")


@ABSENT
def test_osworld_layout_lists_the_index(tmp_path: Path) -> None:
    calc = find_task_files(EXAMPLES, ["libreoffice_calc"])
    assert calc == [task_path("libreoffice_calc", i) for i in task_ids("libreoffice_calc")]
    with pytest.raises(ValueError, match="missing"):
        find_task_files(EXAMPLES, ["chrome"])
    # without a cache every Google Drive file is missing: refused, and the reason names the cache
    folder = load_task_folder(EXAMPLES, domains=["libreoffice_calc"], skip_unsupported=True)
    assert len(folder.tasks) == 1 and all("cache" in r for r in folder.refused.values())


def _cfg(*overrides: str):  # type: ignore[no-untyped-def]
    from hydra import compose, initialize_config_dir

    from rlanything_core.conf import CONF_DIR

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="train", overrides=list(overrides))


@ABSENT
def test_setting_trains_on_osworld_tasks_from_a_cache(tmp_path: Path) -> None:
    pytest.importorskip("hydra")
    from rlanything_core.assembly.setting import load_setting
    from rlanything_core.config import ConfigError
    from rlanything_core.settings.desktop import desktop_env_task

    def desktop_tasks(cfg):  # type: ignore[no-untyped-def]
        setting = load_setting(cfg)
        setting.validate(cfg)  # type: ignore[misc]  # the setting's checks: a ConfigError naming the key
        return setting.environment.task_list()

    def desktop_roots(cfg):  # type: ignore[no-untyped-def]
        return load_setting(cfg).environment.roots()

    cache = tmp_path / "cache"
    for task_id in task_ids("libreoffice_calc"):
        calc_case(json.loads(task_path("libreoffice_calc", task_id).read_text()), cache).write_cache()
    base = ["+setting=desktop", "+profile=smoke", f"run_dir={tmp_path / 'run'}"]
    cfg = _cfg(*base, f"setting.tasks_dir={EXAMPLES}", f"setting.cache_dir={cache}", "setting.train_games=null")
    tasks, hints = desktop_tasks(cfg)
    # every Calc task but the infeasible one, which opens no spreadsheet for the text view to read
    assert len(tasks) == len(task_ids("libreoffice_calc")) - 1 and hints == {}
    roots = desktop_roots(cfg)
    assert len(roots) == len(tasks)
    task = desktop_env_task(roots[0])
    assert task.cache_dir == cache.resolve() and task.files.task_id == roots[0].task_id
    with pytest.raises(ConfigError, match="setting.tasks_dir"):
        desktop_tasks(_cfg(*base, f"setting.tasks_dir={tmp_path / 'nowhere'}"))
    with pytest.raises(ConfigError, match="setting.tasks_dir.*cache"):
        desktop_tasks(_cfg(*base, f"setting.tasks_dir={EXAMPLES}"))  # no cache: the first task's file is missing
    with pytest.raises(ConfigError, match="setting.cache_dir"):
        desktop_tasks(_cfg(*base, f"setting.cache_dir={cache}"))
    with pytest.raises(ConfigError, match="spreadsheet"):
        desktop_tasks(
            _cfg(
                *base,
                f"setting.tasks_dir={EXAMPLES}",
                "setting.domains=[os]",
                f"setting.cache_dir={cache}",
                "setting.skip_unsupported=true",
            )
        )
    shutil.rmtree(cache)


@ABSENT
def test_coverage_counts_loaded_and_refused_tasks(capsys) -> None:  # type: ignore[no-untyped-def]
    from rlanything_core.envs.desktop.coverage import domain_coverage, main

    tasks, loaded, reasons = domain_coverage(EXAMPLES, "os")
    assert tasks == len(task_ids("os")) and loaded + sum(reasons.values()) == tasks
    assert any("sudo" in r for r in reasons) and loaded >= 1
    assert main([str(EXAMPLES), "--domains", "libreoffice_calc"]) == 0
    assert f"libreoffice_calc tasks={len(task_ids('libreoffice_calc'))} loaded=" in capsys.readouterr().out
