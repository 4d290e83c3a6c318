"""``+setting=miniwob``: real MiniWoB++ pages in Debian's Chromium through the whole loop.

The parts ``experiments/conf/setting/miniwob.yaml`` names (``experiments/setting.py``): :func:`miniwob_tasks`,
:func:`miniwob_rewriter` and :func:`validate_miniwob`, the GUI prompts of the policy and the judge; the loop is the
agent loop (``experiments/agent_loop.py``). Tasks: the training pool holds the curated pages
(``rlanything_core.envs.miniwob.tasks``) of ``setting.train_families`` plus ``setting.train_tasks``, any of the
wheel's 130 pages or of one's own page folder (``setting.pages_dir``), named by task or by family; each with
``setting.seeds_per_task`` problem seeds. The evaluation splits are ``in_domain`` (the training pages, unseen seeds)
and ``out_of_domain`` (the curated pages of ``setting.ood_families`` plus ``setting.ood_tasks``, never trained on).
The policy scores the DOM-derived candidate actions like ALFWorld's admissible commands; the judge votes with the
paper's GUI rubric; the environment rewrites hints and settings. Rollouts run on the transformers backend only (the
yaml's ``backends``): ``backend=vllm`` is refused by name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from experiments.config_error import ConfigError
from experiments.env_pools import shared_env_pool
from experiments.setting import Tasks
from rlanything_core.environment.llm import BackendChatModel
from rlanything_core.environment.rewriters.gui_hints import GuiHintRewriter, GuiLLMRewriter
from rlanything_core.environment.rewriters.protocol import TaskSpec
from rlanything_core.envs.miniwob.browser import BrowserStartError, browser_binaries
from rlanything_core.envs.miniwob.env import MiniwobEnvFactory
from rlanything_core.envs.miniwob.page_folder import PageFolderError, load_page_folder
from rlanything_core.envs.miniwob.tasks import (
    CURATED_TASKS,
    MiniwobTaskSpec,
    UnknownTaskError,
    resolve_task,
    select_tasks,
)
from rlanything_core.loop.evaluation import EvalSplit

__all__ = ["miniwob_env_task", "miniwob_rewriter", "miniwob_specs", "miniwob_tasks", "validate_miniwob"]

EVAL_SEED_BASE = 100_000  # evaluation problems: seeds no training task uses


def validate_miniwob(cfg: DictConfig) -> None:
    """Refuse unknown families or tasks, a bad page folder and a missing browser, naming the key and the fix."""
    st = cfg.setting
    families = sorted({t.family for t in CURATED_TASKS.values()})
    for key in ("train_families", "ood_families"):
        for fam in st[key]:
            if str(fam) not in families:
                fix = f"use some of {families}, or name any page or family in setting.{key.split('_')[0]}_tasks"
                raise ConfigError(f"setting.{key}", f"unknown task family {fam!r}", fix)
    train, ood = _pages(cfg)
    if not train:
        raise ConfigError("setting.train_families", "no training page", "name families or setting.train_tasks")
    overlap = sorted(set(train) & set(ood))
    if overlap:
        raise ConfigError("setting.ood_families" if not st.ood_tasks else "setting.ood_tasks",
                          f"{overlap} are also training pages",
                          "keep the held-out pages disjoint from the training pages")  # fmt: skip
    if st.rewriter not in ("rules", "llm"):
        raise ConfigError("setting.rewriter", f"unknown {st.rewriter!r}", "use rules or llm")
    if st.rewriter == "llm" and cfg.arm.adapt_environment and not cfg.arm.use_judge:
        raise ConfigError("setting.rewriter", "the LLM rewriter uses the judge's model", "set setting.rewriter=rules")
    if not 0 <= float(st.wait_s) <= 10:
        raise ConfigError("setting.wait_s", f"expected 0..10 seconds, got {st.wait_s}", "set a short wait")
    if int(st.max_clicks) < 1:
        raise ConfigError("setting.max_clicks", f"expected >= 1, got {st.max_clicks}", "set e.g. 60")
    try:
        browser_binaries()
    except BrowserStartError as err:
        raise ConfigError("setting", str(err), "apt-get install -y chromium chromium-driver") from err


def _pages(cfg: DictConfig) -> tuple[list[str], list[str]]:
    """``(training pages, held-out pages)``: the curated pages of the families, then the named tasks and families.

    Raises:
        ConfigError: ``setting.pages_dir`` is not a valid page folder, or a task list names an unknown page.
    """
    st = cfg.setting
    pages_dir = None if st.pages_dir is None else str(st.pages_dir)
    if pages_dir is not None:
        try:
            load_page_folder(pages_dir)
        except PageFolderError as err:
            raise ConfigError("setting.pages_dir", str(err), "fix the folder (see docs/api/miniwob.md)") from err
    out = []
    for fams, key in ((st.train_families, "train_tasks"), (st.ood_families, "ood_tasks")):
        curated = [t.name for t in CURATED_TASKS.values() if t.family in set(map(str, fams))]
        try:
            named = select_tasks(list(map(str, st[key])), pages_dir=pages_dir, key=f"setting.{key}")
        except UnknownTaskError as err:
            raise ConfigError(f"setting.{key}", str(err), "name pages or families of all_tasks()") from err
        out.append(list(dict.fromkeys([*curated, *named])))
    return out[0], out[1]


def _spec(cfg: DictConfig, name: str, seed: int) -> MiniwobTaskSpec:
    """The spec of page ``name``: a page of ``setting.pages_dir`` carries the folder (workers and reloads find it)."""
    pages_dir = None if cfg.setting.pages_dir is None else str(cfg.setting.pages_dir)
    own = pages_dir is not None and resolve_task(name, pages_dir=pages_dir).folder is not None
    return MiniwobTaskSpec(name, seed=seed, pages_dir=pages_dir if own else None)


def miniwob_specs(cfg: DictConfig) -> tuple[list[TaskSpec], dict[str, list[MiniwobTaskSpec]]]:
    """``(training root TaskSpecs, {split: [MiniwobTaskSpec]})``: curated pages first (easy first), then named ones."""
    st = cfg.setting
    in_domain, ood_pages = _pages(cfg)
    train_pages = in_domain if st.train_games is None else in_domain[: int(st.train_games)]
    roots = []
    for name in train_pages:
        for k in range(int(st.seeds_per_task)):
            spec = _spec(cfg, name, k)
            task_id = f"{name}#s{k}"
            roots.append(TaskSpec(task_id=task_id, kind="miniwob", root_id=task_id, data=spec.to_data()))
    splits: dict[str, list[MiniwobTaskSpec]] = {}
    for split, pages in (("in_domain", in_domain), ("out_of_domain", ood_pages)):
        n = int(cfg.eval.games)
        picked = [pages[(i * len(pages)) // n] for i in range(n)] if n <= len(pages) else pages * (n // len(pages))
        splits[split] = [_spec(cfg, p, EVAL_SEED_BASE + i) for i, p in enumerate(picked)]
    return roots, splits


def miniwob_tasks(cfg: DictConfig) -> Tasks:
    """The pool and splits of :func:`miniwob_specs`, played on one browser pool (training and evaluation)."""
    st = cfg.setting
    roots, evals = miniwob_specs(cfg)
    # One pool (its browsers) for training and evaluation: each collector stops its episodes at its own limit.
    limit = max(int(st.max_steps), int(st.eval_max_steps))
    factory = MiniwobEnvFactory(
        max_steps=limit, screenshots=bool(st.screenshots), offer_done=bool(st.offer_done),
        offer_wait=bool(st.offer_wait), wait_s=float(st.wait_s), max_clicks=int(st.max_clicks),
    )  # fmt: skip
    runner = shared_env_pool(factory, max(1, int(st.env_workers)), kind="browser")
    splits = [
        EvalSplit(name, tuple(specs), tuple(f"{s.name}#s{s.seed}" for s in specs)) for name, specs in evals.items()
    ]
    return Tasks(roots=roots, splits=splits, runner=runner, eval_runner=runner, to_env_task=miniwob_env_task)


def miniwob_env_task(task: TaskSpec) -> MiniwobTaskSpec:
    """What a MiniWoB++ environment is built from: the page spec of the pool task."""
    return MiniwobTaskSpec.from_data(task.data)


def miniwob_rewriter(cfg: DictConfig, run_dir: Path, judge_backend: Any, roots: list[TaskSpec]) -> Any:
    """Curated hints and page settings (``setting.rewriter=rules``), or the judge's LM proposing JSON rewrites."""
    if cfg.setting.rewriter == "rules":
        return GuiHintRewriter()
    return GuiLLMRewriter(chat_model=BackendChatModel(judge_backend), seed=int(cfg.seed))
