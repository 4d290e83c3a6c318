"""Attacks on OSWorld's postconfig steps and on the checks' inputs, each refused.

Before these defences: the ``--convert-to`` export ran as the harness on whatever the workbook's path held (a link
to the gold workbook converted the gold), a download followed a link the agent left (overwriting a host file), a
``bash eval.sh`` check ran the script in the agent's home (a rewritten one printed the success line), the settings
checks read ``registrymodifications.xcu`` from the episode home (a hand-written one scored 1.0), two OSWorld os tasks
loaded by path scored 1.0 untouched, and the ``.odt`` readers missed headers and footers (``styles.xml``).
"""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from pathlib import Path

import pytest
from _osworld_standins import EXAMPLES, task_path

from rlanything_core.envs.desktop.checker import check_files
from rlanything_core.envs.desktop.config_steps import StepContext, is_export, postconfig_phases, run_step
from rlanything_core.envs.desktop.coverage import write_placeholders
from rlanything_core.envs.desktop.episode_fs import EpisodeFS
from rlanything_core.envs.desktop.metrics.docs import check_highlighted_words, compare_docx_files
from rlanything_core.envs.desktop.osworld_cache import download_cache_path
from rlanything_core.envs.desktop.safe_paths import UnsafePath, copy_in, copy_out
from rlanything_core.envs.desktop.task import UnsupportedTaskError, load_task, parse_task
from rlanything_core.envs.desktop.variants import TASKS_DIR
from rlanything_core.sandbox.bwrap import bwrap_status

ABSENT = pytest.mark.skipif(not EXAMPLES.is_dir(), reason=f"OSWorld task files not found at {EXAMPLES}")
NEEDS_BWRAP = pytest.mark.skipif(not bwrap_status()[0], reason="bubblewrap does not work here")
NEEDS_SOFFICE = pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice is not installed")
SCREEN = (1280, 800)
GOLD = TASKS_DIR / "files" / "calc-04-sum_gold.xlsx"
XCU = "/home/user/.config/libreoffice/4/user/registrymodifications.xcu"


def _load(domain: str, task_id: str, cache: Path):  # type: ignore[no-untyped-def]
    path = task_path(domain, task_id)
    write_placeholders(json.loads(path.read_text()), cache)
    return load_task(path, cache_dir=cache)


# --- checks that pass on the untouched start state -----------------------------------------------------------------


@ABSENT
@pytest.mark.parametrize("task_id", ["cc9d4f34-1ca0-4a1b-8ff2-09302696acb9", "ddc75b62-7311-4af8-bfb3-859558542b36"])
def test_os_tasks_that_pass_untouched_are_refused_by_path(task_id: str) -> None:
    """``ps -ef | grep my_process.sh`` / ``dpkg -l | grep mahjongg`` must not show a string: here they print
    nothing whatever the agent does (fresh pid namespace, no dpkg database), so the untouched episode scored 1.0."""
    with pytest.raises(UnsupportedTaskError, match="passes when .* prints nothing"):
        load_task(task_path("os", task_id))


def test_any_check_that_an_empty_output_passes_is_refused(tmp_path: Path) -> None:
    """The rule is general: an exclude-only or empty-expected check on a command, in a folder of one's own."""
    for expected in ({"include": [], "exclude": ["anything"]},):
        raw = {"id": "t", "instruction": "x", "config": [], "evaluator": {
            "func": "check_include_exclude", "result": {"type": "vm_command_line", "command": "ps -ef", "shell": True},
            "expected": {"type": "rule", "rules": expected}}}
        with pytest.raises(UnsupportedTaskError, match="prints nothing"):
            parse_task(raw, tmp_path)
    raw["evaluator"]["expected"]["rules"] = {"include": ["done"], "exclude": []}  # type: ignore[index]
    parse_task(raw, tmp_path)  # an include the command must print: the untouched episode fails it


# --- .odt headers and footers --------------------------------------------------------------------------------------

_NS = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
       'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
       'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
       'xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"')
_YELLOW = ('<office:automatic-styles><style:style style:name="T1" style:family="text">'
           '<style:text-properties fo:background-color="#ffff00"/></style:style></office:automatic-styles>')


def _odt(path: Path, body: str, header: str, *, header_highlighted: bool) -> Path:
    content = (f'<office:document-content {_NS}><office:body><office:text><text:p>{body}</text:p>'
               "</office:text></office:body></office:document-content>")
    span = f'<text:span text:style-name="T1">{header}</text:span>' if header_highlighted else header
    styles = (f"<office:document-styles {_NS}>{_YELLOW if header_highlighted else ''}<office:master-styles>"
              f'<style:master-page style:name="Standard"><style:header><text:p>{span}</text:p></style:header>'
              "</style:master-page></office:master-styles></office:document-styles>")
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        z.writestr("content.xml", content)
        z.writestr("styles.xml", styles)
    return path


def test_a_highlight_left_in_a_header_fails_check_highlighted_words(tmp_path: Path) -> None:
    expected = _odt(tmp_path / "gold.odt", "Body text", "Header", header_highlighted=False)
    clean = _odt(tmp_path / "clean.odt", "Body text", "Header", header_highlighted=False)
    left = _odt(tmp_path / "left.odt", "Body text", "Header", header_highlighted=True)
    assert check_highlighted_words(clean, expected) == 1.0
    assert check_highlighted_words(left, expected) == 0.0


def test_an_edit_in_a_header_fails_the_text_comparison(tmp_path: Path) -> None:
    expected = _odt(tmp_path / "gold.odt", "Body text", "Header", header_highlighted=False)
    edited = _odt(tmp_path / "edited.odt", "Body text", "Another header", header_highlighted=False)
    assert compare_docx_files(edited, expected) == 0.0
    assert check_highlighted_words(edited, expected) == 0.0


# --- links and FIFOs are never followed by the trusted side ---------------------------------------------------------


def test_safe_copies_refuse_links_and_fifos(tmp_path: Path) -> None:
    root, secret = tmp_path / "episode", tmp_path / "secret.txt"
    (root / "home").mkdir(parents=True)
    secret.write_text("host secret")
    (root / "home" / "link.txt").symlink_to(secret)
    (root / "folder-link").symlink_to(tmp_path)
    os.mkfifo(root / "home" / "fifo")
    for rel in ("home/link.txt", "folder-link/secret.txt", "home/fifo"):
        with pytest.raises(UnsafePath):
            copy_out(root, rel, tmp_path / "copy")
    source = tmp_path / "source"
    source.write_text("harness copy")
    copy_in(source, root, "home/link.txt")  # the link is replaced, its target untouched
    assert secret.read_text() == "host secret" and (root / "home" / "link.txt").read_text() == "harness copy"
    with pytest.raises(UnsafePath):
        copy_in(source, root, "folder-link/secret.txt")
    assert secret.read_text() == "host secret"


def test_a_download_does_not_write_through_a_link(tmp_path: Path) -> None:
    """A link at a download's target would make the harness overwrite the file it points to."""
    victim = tmp_path / "victim.txt"
    victim.write_text("host file")
    (tmp_path / "task").mkdir()
    (tmp_path / "task" / "data.csv").write_text("a,b\n")
    fs = EpisodeFS(tmp_path / "episode")
    (fs.home / "data.csv").symlink_to(victim)
    ctx = StepContext(fs, None, None, tmp_path / "task", SCREEN)
    step = {"type": "download", "parameters": {"files": [{"url": "data.csv", "path": "/home/user/data.csv"}]}}
    run_step(step, ctx)
    assert victim.read_text() == "host file"
    assert not (fs.home / "data.csv").is_symlink() and (fs.home / "data.csv").read_text() == "a,b\n"


# --- the --convert-to export ----------------------------------------------------------------------------------------

_EXPORT = ["libreoffice", "--convert-to", "csv:Text - txt - csv (StarCalc):44,34,UTF-8,,,,false,true,true,false,"
           "false,1", "--outdir", "/home/user", "/home/user/sales.xlsx"]


@pytest.mark.slow
@NEEDS_BWRAP
@NEEDS_SOFFICE
def test_the_export_of_a_link_to_the_gold_workbook_is_refused(tmp_path: Path) -> None:
    """A link at the workbook's path made the harness's export convert the gold workbook (or any host file)."""
    fs = EpisodeFS(tmp_path / "episode")
    (fs.home / "sales.xlsx").symlink_to(GOLD)
    ctx = StepContext(fs, None, None, tmp_path, SCREEN)
    with pytest.raises(UnsafePath):
        run_step({"type": "execute", "parameters": {"command": _EXPORT}}, ctx)
    assert not list(fs.home.glob("*.csv"))


@pytest.mark.slow
@NEEDS_BWRAP
@NEEDS_SOFFICE
def test_the_export_runs_in_a_sandbox_on_a_copy(tmp_path: Path) -> None:
    """The control: a real workbook converts, inside the sandbox, and the CSV lands beside it."""
    fs = EpisodeFS(tmp_path / "episode")
    shutil.copyfile(GOLD, fs.home / "sales.xlsx")
    ctx = StepContext(fs, None, None, tmp_path, SCREEN)
    note = run_step({"type": "execute", "parameters": {"command": _EXPORT}}, ctx)
    csvs = sorted(p.name for p in fs.home.glob("*.csv"))
    assert csvs and note.startswith("converted"), (note, csvs)
    assert (fs.home / csvs[0]).read_text().strip()


@ABSENT
def test_postconfig_file_steps_run_after_the_desktop_steps() -> None:
    """Every export and every download of OSWorld's postconfigs falls in the phase run after the apps stopped, except
    where a desktop step (an ``open`` of the download) follows it."""
    seen = 0
    for path in sorted((EXAMPLES / "examples").glob("*/*.json")):
        steps = json.loads(path.read_text())["evaluator"].get("postconfig") or []
        checked = [s for s in steps if isinstance(s, dict) and s.get("type") in ("execute", "command", "download")]
        if not checked:
            continue
        live, after = postconfig_phases(steps)
        for step in live:
            if step.get("type") in ("execute", "command") and "command" in (step.get("parameters") or {}):
                assert not is_export(step), path.name
        seen += sum(1 for s in after if s.get("type") == "download" or is_export(s))
    assert seen >= 9  # 5 sheet_print exports, 4 eval.sh downloads


# --- check scripts and settings come from where the agent cannot write ----------------------------------------------

_FAKE = "#!/bin/sh\necho '{line}'\n"


@ABSENT
@NEEDS_BWRAP
@pytest.mark.parametrize("task_id", ["5ced85fc-fa1a-4217-95fd-0fb530545ce2", "5c1075ca-bb34-46a3-a7a0-029bd7463e79"])
def test_an_eval_sh_the_agent_rewrote_is_not_what_runs(task_id: str, tmp_path: Path) -> None:
    """``bash eval.sh`` ran the script in the agent's home: one that prints the success line scored 1.0."""
    cache = tmp_path / "cache"
    task = _load("os", task_id, cache)
    line = task.evaluator["expected"]["rules"]["include"][0]
    # the task's own script (the cache's) checks for a file the instruction asks for
    for step in [*task.config, *(task.evaluator.get("postconfig") or [])]:
        for f in (step.get("parameters") or {}).get("files", []) if step["type"] == "download" else []:
            if Path(f["path"]).name == "eval.sh":
                download_cache_path(cache, task.task_id, f["url"], f["path"]).write_text(
                    f"#!/bin/sh\n[ -f /home/user/done.txt ] && echo '{line}'\n")
    untouched = EpisodeFS(tmp_path / "untouched")
    (untouched.home / "eval.sh").write_text(_FAKE.format(line=line))
    assert check_files(task, untouched, screen=SCREEN).outcome.score == 0.0
    done = EpisodeFS(tmp_path / "done")
    (done.home / "done.txt").write_text("x")
    (done.home / "eval.sh").write_text("#!/bin/sh\necho nothing\n")  # a broken script of the agent's: restored too
    assert check_files(task, done, screen=SCREEN).outcome.score == 1.0


def _xcu(minutes: int) -> str:
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<oor:items xmlns:oor="http://openoffice.org/2001/registry">\n'
            '<item oor:path="/org.openoffice.Office.Common/Save/Document"><prop oor:name="AutoSaveTimeIntervall" '
            f'oor:op="fuse"><value>{minutes}</value></prop></item>\n</oor:items>\n')


@ABSENT
def test_the_settings_check_reads_the_apps_real_profile(tmp_path: Path) -> None:
    """2cd43775 read ``registrymodifications.xcu`` from the episode home: a hand-written one scored 1.0."""
    task = _load("libreoffice_impress", "2cd43775-7085-45d8-89fa-9e35c0a915cf", tmp_path / "cache")
    minutes = int(task.evaluator["expected"]["rules"]["minutes"])
    profile = tmp_path / "profile"
    (profile / "user").mkdir(parents=True)
    (profile / "user" / "registrymodifications.xcu").write_text(_xcu(10))  # the app's real setting: unchanged
    forged = EpisodeFS(tmp_path / "forged")
    home_xcu = forged.local(XCU)
    home_xcu.parent.mkdir(parents=True)
    home_xcu.write_text(_xcu(minutes))
    assert check_files(task, forged, screen=SCREEN, profile_dir=profile).outcome.score == 0.0
    (profile / "user" / "registrymodifications.xcu").write_text(_xcu(minutes))  # the app saved the setting
    assert check_files(task, EpisodeFS(tmp_path / "set"), screen=SCREEN, profile_dir=profile).outcome.score == 1.0


@ABSENT
def test_a_link_in_the_real_profile_is_not_followed(tmp_path: Path) -> None:
    """The profile is the app uid's: a link there to a host file that would pass is refused."""
    task = _load("libreoffice_impress", "2cd43775-7085-45d8-89fa-9e35c0a915cf", tmp_path / "cache")
    minutes = int(task.evaluator["expected"]["rules"]["minutes"])
    host = tmp_path / "host.xcu"
    host.write_text(_xcu(minutes))
    (tmp_path / "profile" / "user").mkdir(parents=True)
    (tmp_path / "profile" / "user" / "registrymodifications.xcu").symlink_to(host)
    result = check_files(task, EpisodeFS(tmp_path / "ep"), screen=SCREEN, profile_dir=tmp_path / "profile")
    assert result.outcome.score == 0.0


# --- end to end in the environment: the agent's own processes race the postconfig ----------------------------------

NEEDS_GUI = pytest.mark.skipif(
    not bwrap_status()[0] or shutil.which("xterm") is None, reason="needs bubblewrap and xterm (apt-get install xterm)"
)
_TERMINAL = {"type": "activate_window", "parameters": {"window_name": "Terminal"}}


def _typed(line: str) -> str:
    return f"pyautogui.write({line!r}, interval=0.01)"


def _eval_sh_task(folder: Path) -> Path:
    """5ced85fc's shape: set-up opens the terminal, postconfig downloads eval.sh, the check runs ``bash eval.sh``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "eval.sh").write_text("#!/bin/sh\n[ -f /home/user/done.txt ] && echo 'Success: done'\n")
    task = folder / "eval-sh.json"
    task.write_text(json.dumps({
        "id": "eval-sh-race", "instruction": "Create done.txt in the home folder.", "config": [_TERMINAL],
        "evaluator": {
            "postconfig": [
                {"type": "download", "parameters": {"files": [{"url": "eval.sh", "path": "eval.sh"}]}},
                {"type": "execute", "parameters": {"command": "chmod +x eval.sh", "shell": True}},
            ],
            "func": "check_include_exclude",
            "result": {"type": "vm_command_line", "command": "bash eval.sh", "shell": True},
            "expected": {"type": "rule", "rules": {"include": ["Success: done"], "exclude": []}},
        },
    }))
    return task


@NEEDS_GUI
@pytest.mark.slow
def test_a_background_loop_rewriting_eval_sh_during_the_postconfig_scores_zero(desktop_env, tmp_path: Path) -> None:
    """A loop the agent left in its terminal rewrote eval.sh right after the postconfig downloaded it (the download
    and ``chmod`` ran while the agent's processes lived): the forged script printed the success line."""
    from rlanything_core.envs.desktop.cli import run_task

    task = _eval_sh_task(tmp_path / "task")
    loop = "(while true; do echo 'echo Success: done' > eval.sh 2>/dev/null; sleep 0.005; done) &\n"
    forged = run_task(task, [_typed(loop), "WAIT", "DONE"], env=desktop_env)
    assert forged["score"] == 0.0, forged
    solved = run_task(task, [_typed("touch done.txt\n"), "WAIT", "DONE"], env=desktop_env)
    assert (solved["score"], solved["error"]) == (1.0, ""), solved


@NEEDS_GUI
@pytest.mark.slow
def test_a_settings_file_written_in_the_home_is_not_the_apps_setting(desktop_env, tmp_path: Path) -> None:
    """2cd43775's check (auto-save every 3 minutes) read the file at its VM path in the episode home: one the agent
    wrote there from the terminal scored 1.0 while the app's setting stayed untouched."""
    from rlanything_core.envs.desktop.cli import run_task

    folder = tmp_path / "task"
    folder.mkdir()
    (folder / "forged.xcu").write_text(_xcu(3))
    task = folder / "autosave.json"
    task.write_text(json.dumps({
        "id": "autosave-forged", "instruction": "Auto-save every 3 minutes.",
        "config": [{"type": "download", "parameters": {"files": [{"url": "forged.xcu", "path": "forged.xcu"}]}},
                   _TERMINAL],
        "evaluator": {"func": "check_auto_saving_time",
                      "result": {"type": "vm_file", "path": XCU, "dest": "registrymodifications.xcu"},
                      "expected": {"type": "rule", "rules": {"minutes": 3}}},
    }))
    line = "mkdir -p .config/libreoffice/4/user && cp forged.xcu .config/libreoffice/4/user/registrymodifications.xcu\n"
    forged = run_task(task, [_typed(line), "WAIT", "DONE"], env=desktop_env)
    assert forged["score"] == 0.0, forged
    # the control: the same file in the app's real profile (bound at PROFILE_MOUNT inside) is what the check reads
    from rlanything_core.envs.desktop.office import PROFILE_MOUNT

    line = f"cp forged.xcu {PROFILE_MOUNT}/user/registrymodifications.xcu\n"
    real = run_task(task, [_typed(line), "WAIT", "DONE"], env=desktop_env)
    assert (real["score"], real["error"]) == (1.0, ""), real


def _gold_in_home_task(folder: Path) -> Path:
    """4e6fcf72's shape: the postconfig saves the result, downloads the gold workbook into the home, opens and saves it
    there, and the check compares the two files of the home."""
    (folder / "files").mkdir(parents=True)
    for name in ("calc-04-sum.xlsx", "calc-04-sum_gold.xlsx"):
        shutil.copyfile(TASKS_DIR / "files" / name, folder / "files" / name)
    raw = json.loads((TASKS_DIR / "calc-04-sum.json").read_text())
    save = raw["evaluator"]["postconfig"]
    gold = "/home/user/sales_gold.xlsx"
    raw["id"] = "gold-in-home"
    raw["evaluator"]["postconfig"] = [
        *save,
        {"type": "download", "parameters": {"files": [{"url": "files/calc-04-sum_gold.xlsx", "path": gold}]}},
        {"type": "open", "parameters": {"path": gold}},
        {"type": "activate_window",
         "parameters": {"window_name": "sales_gold.xlsx - LibreOffice Calc", "strict": True}},
        *save[1:],
    ]
    raw["evaluator"]["expected"] = {"type": "vm_file", "path": gold, "dest": "sales_gold.xlsx"}
    task = folder / "gold-in-home.json"
    task.write_text(json.dumps(raw))
    return task


@NEEDS_GUI
@pytest.mark.slow
def test_a_loop_copying_the_result_over_the_gold_the_postconfig_opens_scores_zero(desktop_env, tmp_path: Path) -> None:
    """A loop the agent left in its terminal copied its (wrong) result over the gold workbook the postconfig had just
    downloaded into the home, before the postconfig opened and saved it: both files agreed."""
    from rlanything_core.envs.desktop.cli import run_task

    task = _gold_in_home_task(tmp_path / "task")
    loop = "(while true; do cp -f sales.xlsx sales_gold.xlsx 2>/dev/null; sleep 0.005; done) &\n"
    actions = ["pyautogui.hotkey('ctrl', 'alt', 't')", _typed(loop), "WAIT", "DONE"]
    forged = run_task(task, actions, env=desktop_env)
    assert forged["score"] == 0.0, forged
    good = ["pyautogui.click(65, 107); pyautogui.write('C8\\n')", "pyautogui.write('=SUM(C2:C7)\\n', interval=0.01)",
            "DONE"]
    solved = run_task(task, good, env=desktop_env)
    assert (solved["score"], solved["error"]) == (1.0, ""), solved
