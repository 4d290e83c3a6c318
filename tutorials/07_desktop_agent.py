# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 07 · A desktop agent in real LibreOffice Calc (OSWorld format)
#
# The paper's GUI setting (arXiv 2602.02488) runs an agent on real desktop applications and scores it with
# the task's own checker. Here the applications are **LibreOffice Calc on a private Xvfb display**, started inside a
# bubblewrap application sandbox, and the tasks are **OSWorld-format JSON files** (instruction, set-up steps,
# evaluator). This notebook runs one shipped task end to end:
#
# 1. the task's JSON: instruction, `config` (set-up) and `evaluator`;
# 2. `LocalDesktopEnv.reset`, the first screenshot, the good solution's actions step by step, the screenshot after,
#    and the verdict (1.0);
# 3. the wrong solution's verdict (0.0);
# 4. a hostile attempt from the GUI threat model (`docs/sandbox.md`): a formula that reads the hidden gold workbook,
#    scoring 0.0;
# 5. an OSWorld task JSON loaded through a stand-in file cache and scored at file level, without the GUI.
#
# Writing tasks of your own: `docs/desktop/authoring.md`.

# %%
import json
import tempfile
import time
from pathlib import Path

import matplotlib.pyplot as plt

from rlanything_core.envs.desktop.cli import load_actions, run_task
from rlanything_core.envs.desktop.env import LocalDesktopEnv
from rlanything_core.envs.desktop.variants import TASKS_DIR, shipped_tasks

print(f"{len(shipped_tasks())} shipped Calc tasks:", *[t.task_id for t in shipped_tasks()], sep="\n  ")

# %% [markdown]
# ## 1 · The task
#
# A task is one JSON file. `config` sets the VM up (here: copy the input workbook into `/home/user` and open it);
# `evaluator` says how to score: `postconfig` steps run after the agent (activate the window, press Ctrl+S), then the
# metric `func` compares the `result` file (from the VM) with the `expected` file (the gold workbook, shipped beside
# the task and hidden from the agent and the apps) under the `options` rules. VM paths are printed with the VM's home
# `/home/user` as `~` (the loader reads both the same way), so that the committed outputs hold no home-folder paths.

# %%
TASK = TASKS_DIR / "calc-04-sum.json"
raw = json.loads(TASK.read_text())


def vm_json(value):
    return json.dumps(value, indent=1).replace('"/home/user/', '"~/')


print("instruction:", raw["instruction"])
print("config:", vm_json(raw["config"]))
print("evaluator:", vm_json(raw["evaluator"]))


# %% [markdown]
# ## 2 · One episode: reset, act, look, evaluate
#
# `LocalDesktopEnv` owns one Xvfb display, one LibreOffice profile and one sandboxed action worker. `reset(task)`
# gives the app a fresh profile and fresh files and runs the task's `config`; the observation holds the instruction
# and a screenshot (a `PIL.Image`). `reset` returns once Calc's window is up; its first frame can come before Calc has
# painted the sheet (an agent would `WAIT` one step), so the notebook waits for a drawn frame before showing it.

# %%
def show(image, title):
    plt.figure(figsize=(8, 5))
    plt.imshow(image)
    plt.axis("off")
    plt.title(title)
    plt.show()


def drawn(env, shot, timeout_s=10.0):
    """The first frame with the window painted: a bare window frame has a few hundred colours, a drawn sheet more."""
    deadline = time.monotonic() + timeout_s
    while shot.getcolors(1000) is not None and time.monotonic() < deadline:
        time.sleep(0.2)
        shot = env.display.screenshot()
    return shot


env = LocalDesktopEnv(settle_s=0.3)
obs = env.reset(TASK)
print("instruction:", obs.instruction, "| step:", obs.step)
show(drawn(env, obs.screenshot), "after reset: sales.xlsx open in Calc")

# %% [markdown]
# Actions are OSWorld's: `pyautogui` code (run in the sandboxed worker, which sees only the display), or the special
# `WAIT`, `DONE`, `FAIL`. The good solution (`tasks/solutions/calc-04-sum.good.py`, the list the tests play) clicks
# the Name Box, goes to C8 and types the sum.

# %%
good = load_actions(TASKS_DIR / "solutions" / "calc-04-sum.good.py")
for action in good:
    obs, done = env.step(action)
    print(f"step {obs.step}: {action!r:60.60} invalid={obs.info.invalid} error={obs.info.error!r} done={done}")
show(obs.screenshot, "after the good solution: C8 holds =SUM(C2:C7)")

# %% [markdown]
# `evaluate()` ends the episode: the evaluator's `postconfig` saves the workbook, the apps stop, and a separate
# check process compares the saved file with the gold one.

# %%
outcome = env.evaluate()
print("good solution:", outcome)
assert outcome.score == 1.0

# %% [markdown]
# ## 3 · The wrong solution
#
# The wrong solution sums C2:C6 (one row short). `run_task` plays a whole action list on the same environment and
# returns a report.

# %%
wrong = load_actions(TASKS_DIR / "solutions" / "calc-04-sum.wrong.py")
print(wrong)
report = run_task(TASK, wrong, env=env)
print("wrong solution: score", report["score"], "| steps", report["steps"], "| error", repr(report["error"]))
assert report["score"] == 0.0

# %% [markdown]
# ## 4 · A hostile attempt: read the gold workbook from a formula
#
# Rewards are security boundaries: a policy that finds a way to copy the expected answer gets 1.0 without doing the
# task. LibreOffice can reference cells of *another* file by URL, so a policy can type
# `='file:///<package>/envs/desktop/tasks/files/calc-04-sum_gold.xlsx'#$Sheet1.C8` into C8. Before the application
# sandbox (`docs/sandbox.md`), LibreOffice ran with the host visible and this copied the expected value: score 1.0
# with no arithmetic. Now the apps run in a bubblewrap sandbox in which the package folder (where the gold files
# live) and the task's file cache do not exist, so the link resolves to `#REF!` (the screenshot below) and the check
# scores 0.0. The formula's path is built here, not printed (it is this machine's path).

# %%
gold = TASKS_DIR / "files" / "calc-04-sum_gold.xlsx"
assert gold.is_file()  # the host has it; the sandboxed app does not see it
goto_c8 = good[0]
formula = f"='{gold.as_uri()}'#$Sheet1.C8\n"
hostile = [goto_c8, f"pyautogui.write({formula!r}, interval=0.01)"]
env.reset(TASK)
for action in hostile:
    obs, _ = env.step(action)
show(obs.screenshot, "C8 after the link to the gold workbook")
obs, _ = env.step("DONE")
outcome = env.evaluate()
print("hostile attempt:", outcome)
assert outcome.score == 0.0
from openpyxl import load_workbook

saved = load_workbook(env.fs.home / "sales.xlsx", data_only=True).active  # the file the checker scored
print("C8 as saved:", repr(saved["C8"].value), "| the gold workbook's C8:", load_workbook(gold).active["C8"].value)
env.close()

# %% [markdown]
# The same threat model covers DDE and WEBSERVICE links, the file dialog, macros, daemons that outlive the episode and
# a poisoned profile: each is a test in `tests/envs/desktop/test_hostile_apps.py` (and the checker's side, such as a
# result file that is a link to the gold file, in `test_hostile_checker.py`).
#
# ## 5 · An OSWorld task through a stand-in cache (no GUI)
#
# OSWorld's own task files fetch their inputs and gold files from remote URLs. Here there is no network: the loader
# reads them from a **file cache in OSWorld's layout** (`osworld_cache.py`: `download_cache_path` for a `download`
# step's file, `cloud_cache_path` for a `cloud_file` getter's). The task below has OSWorld's shape (its URLs are
# placeholders); the tests in `tests/envs/desktop/test_osworld_tasks.py` do the same for every published Calc task,
# with stand-in files authored from what each evaluator checks. Scoring at file level
# (`file_check.score_files`) runs the evaluator on the files of an episode folder, without a display.

# %%
from openpyxl import Workbook

from rlanything_core.envs.desktop.episode_fs import EpisodeFS
from rlanything_core.envs.desktop.file_check import score_files
from rlanything_core.envs.desktop.osworld_cache import cloud_cache_path, download_cache_path
from rlanything_core.envs.desktop.task import UnsupportedTaskError, load_task

work = Path(tempfile.mkdtemp(prefix="osworld-tutorial-"))
INPUT_URL = "https://drive.google.com/uc?id=INPUT-PLACEHOLDER&export=download"
GOLD_URL = "https://drive.google.com/uc?id=GOLD-PLACEHOLDER&export=download"
osworld_task = {
    "id": "0000tutorial-profit-column",
    "snapshot": "libreoffice_calc",
    "instruction": "Fill column C with the profit (Revenue - Cost) of each row.",
    "source": "a task in OSWorld's format, written for this tutorial",
    "config": [
        {"type": "download", "parameters": {"files": [{"url": INPUT_URL, "path": "/home/user/profit.xlsx"}]}},
        {"type": "open", "parameters": {"path": "/home/user/profit.xlsx"}},
    ],
    "related_apps": ["libreoffice_calc"],
    "evaluator": {
        "func": "compare_table",
        "result": {"type": "vm_file", "path": "/home/user/profit.xlsx", "dest": "profit.xlsx"},
        "expected": {"type": "cloud_file", "path": GOLD_URL, "dest": "profit_gold.xlsx"},
        "options": {"rules": [{"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}]},
    },
}
task_file = work / "examples" / "libreoffice_calc" / f"{osworld_task['id']}.json"
task_file.parent.mkdir(parents=True)
task_file.write_text(json.dumps(osworld_task, indent=1))


def write_book(path, profits):
    """A workbook with Revenue, Cost and the given Profit column (None: the unsolved input)."""
    wb = Workbook()
    ws = wb.active
    ws.append(["Revenue", "Cost", "Profit"])
    for (revenue, cost), profit in zip([(10, 4), (20, 5), (7, 7)], profits):
        ws.append([revenue, cost, profit])
    path.parent.mkdir(parents=True, exist_ok=True)
    wb.save(path)


cache = work / "cache"
try:
    load_task(task_file, cache_dir=cache)
except UnsupportedTaskError as exc:  # an empty cache: refused at load, naming the step, the URL and the cache path
    print(type(exc).__name__ + ":", str(exc).replace(str(work), "<work>"))

write_book(download_cache_path(cache, osworld_task["id"], INPUT_URL, "/home/user/profit.xlsx"), [None] * 3)
write_book(cloud_cache_path(cache, osworld_task["id"], "profit_gold.xlsx"), [6, 15, 0])
task = load_task(task_file, cache_dir=cache)
print("loaded:", task.task_id, "|", task.instruction)

for label, profits in {"correct result": [6, 15, 0], "wrong result": [6, 15, 1], "untouched input": [None] * 3}.items():
    fs = EpisodeFS(work / label.replace(" ", "-"))
    write_book(fs.home / "profit.xlsx", profits)  # the file the agent's app would have saved at /home/user
    print(f"{label:16s} -> {score_files(task, fs)}")

# %% [markdown]
# With OSWorld's checkout and its file cache on disk, the same `load_task(path, cache_dir=...)` loads the published
# tasks and `LocalDesktopEnv.reset` runs them in Calc (`docs/desktop/osworld.md` lists what is supported and how to
# fill the cache). To write tasks of your own, with good and wrong solutions proven by the tests, see
# `docs/desktop/authoring.md`.
