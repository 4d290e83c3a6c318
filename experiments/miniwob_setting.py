"""The MiniWoB++ GUI setting (``+setting=miniwob``): real pages in Debian's Chromium through the whole loop.

Hooked into ``builders.build`` with one line. Tasks: the training pool holds the curated pages
(``rlanything_core.envs.miniwob.tasks``) of ``setting.train_families`` plus ``setting.train_tasks``, any of the
wheel's 130 pages or of one's own page folder (``setting.pages_dir``), named by task or by family; each with
``setting.seeds_per_task`` problem seeds. The evaluation splits are ``in_domain`` (the training pages, unseen seeds)
and ``out_of_domain`` (the curated pages of ``setting.ood_families`` plus ``setting.ood_tasks``, never trained on).
The policy scores the DOM-derived candidate actions like ALFWorld's admissible commands; the judge votes with the
paper's GUI rubric; the environment rewrites hints and settings.
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig

from experiments.config_checks import ConfigError

__all__ = ["build_miniwob", "miniwob_tasks", "validate_miniwob"]

EVAL_SEED_BASE = 100_000  # evaluation problems: seeds no training task uses


def validate_miniwob(cfg: DictConfig) -> None:
    """Refuse unknown families or tasks, a bad page folder and a missing browser, naming the key and the fix."""
    from rlanything_core.envs.miniwob.browser import BrowserStartError, browser_binaries
    from rlanything_core.envs.miniwob.tasks import CURATED_TASKS

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
    from rlanything_core.envs.miniwob.page_folder import PageFolderError, load_page_folder
    from rlanything_core.envs.miniwob.tasks import CURATED_TASKS, UnknownTaskError, select_tasks

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


def _spec(cfg: DictConfig, name: str, seed: int) -> Any:
    """The spec of page ``name``: a page of ``setting.pages_dir`` carries the folder (workers and reloads find it)."""
    from rlanything_core.envs.miniwob.tasks import MiniwobTaskSpec, resolve_task

    pages_dir = None if cfg.setting.pages_dir is None else str(cfg.setting.pages_dir)
    own = pages_dir is not None and resolve_task(name, pages_dir=pages_dir).folder is not None
    return MiniwobTaskSpec(name, seed=seed, pages_dir=pages_dir if own else None)


def miniwob_tasks(cfg: DictConfig) -> tuple[list[Any], dict[str, list[Any]]]:
    """``(training root TaskSpecs, {split: [MiniwobTaskSpec]})``: curated pages first (easy first), then named ones."""
    from rlanything_core.environment.rewriters.protocol import TaskSpec

    st = cfg.setting
    in_domain, ood_pages = _pages(cfg)
    train_pages = in_domain if st.train_games is None else in_domain[: int(st.train_games)]
    roots = []
    for name in train_pages:
        for k in range(int(st.seeds_per_task)):
            spec = _spec(cfg, name, k)
            task_id = f"{name}#s{k}"
            roots.append(TaskSpec(task_id=task_id, kind="miniwob", root_id=task_id, data=spec.to_data()))
    splits: dict[str, list[Any]] = {}
    for split, pages in (("in_domain", in_domain), ("out_of_domain", ood_pages)):
        n = int(cfg.eval.games)
        picked = [pages[(i * len(pages)) // n] for i in range(n)] if n <= len(pages) else pages * (n // len(pages))
        splits[split] = [_spec(cfg, p, EVAL_SEED_BASE + i) for i, p in enumerate(picked)]
    return roots, splits


def _env_task(task: Any) -> Any:
    from rlanything_core.envs.miniwob.tasks import MiniwobTaskSpec

    return MiniwobTaskSpec.from_data(task.data)


def _rewriter(cfg: DictConfig, judge_backend: Any) -> Any:
    from rlanything_core.environment.rewriters.gui_hints import GuiHintRewriter, GuiLLMRewriter

    if cfg.setting.rewriter == "rules":
        return GuiHintRewriter()
    from rlanything_core.environment.llm import BackendChatModel

    return GuiLLMRewriter(chat_model=BackendChatModel(judge_backend), seed=int(cfg.seed))


def _policy_selector(cfg: DictConfig, temperature: float) -> Any:
    """The config's selector; a likelihood scorer scores by mean per-token log-likelihood where configured."""
    from experiments.components import selector
    from rlanything_core.collect.action_selection import LikelihoodSelector

    if cfg.model.action_selection == "likelihood":
        return LikelihoodSelector(temperature=temperature, length_normalized=bool(cfg.setting.length_normalized))
    return selector(cfg, temperature)


def build_miniwob(cfg: DictConfig) -> Any:
    """The GUI loop: a browser pool, the DOM-candidate policy, the GUI-rubric judge, hint rewrites."""

    from experiments.agent_setting import loop_driver
    from experiments.backends import prepare
    from experiments.components import judge_loss as make_judge_loss
    from experiments.components import task_pool, vote_sampler
    from experiments.env_pools import shared_env_pool
    from experiments.trainer_setup import make_module, make_run
    from rlanything_core.collect.agent import AgentCollector
    from rlanything_core.collect.gui_prompts import gui_agent_messages, gui_judge_messages
    from rlanything_core.collect.judge import JudgeCollector
    from rlanything_core.envs.miniwob.env import MiniwobEnvFactory
    from rlanything_core.generation.transformers_backend import TransformersBackend
    from rlanything_core.lightning import AgentModule, RolloutDataModule
    from rlanything_core.loop.adaptation import EnvironmentAdaptation
    from rlanything_core.loop.evaluation import AgentEvaluator, EvalSplit

    validate_miniwob(cfg)
    st = cfg.setting
    run_dir, policy, judge, tokenizer, pad_id = prepare(cfg)
    policy_backend = TransformersBackend(policy, tokenizer, batch_size=int(cfg.model.batch_size))
    judge_backend = TransformersBackend(judge, tokenizer, batch_size=int(cfg.model.batch_size)) if judge else None
    roots, evals = miniwob_tasks(cfg)
    # One pool (its browsers) for training and evaluation: each collector stops its episodes at its own limit.
    limit = max(int(st.max_steps), int(st.eval_max_steps))
    factory = MiniwobEnvFactory(
        max_steps=limit, screenshots=bool(st.screenshots), offer_done=bool(st.offer_done),
        offer_wait=bool(st.offer_wait), wait_s=float(st.wait_s), max_clicks=int(st.max_clicks),
    )  # fmt: skip
    runner = shared_env_pool(factory, max(1, int(st.env_workers)), kind="browser")
    history = int(st.max_history_turns)
    collector = AgentCollector(
        policy_backend, runner, _policy_selector(cfg, float(cfg.model.temperature)), group_size=int(cfg.group_size),
        max_steps=int(st.max_steps), max_history_turns=history, progress=bool(cfg.progress),
        prompt_builder=gui_agent_messages,
    )  # fmt: skip
    judge_collector = (
        JudgeCollector(
            judge_backend, num_votes=int(cfg.num_votes), votes=vote_sampler(cfg), prompt_builder=gui_judge_messages
        )
        if judge_backend is not None
        else None
    )
    judge_loss = make_judge_loss(cfg)
    adaptation = None
    if cfg.arm.adapt_environment:
        rewriter = _rewriter(cfg, judge_backend)
        adaptation = EnvironmentAdaptation(rewriter, max_requests=int(cfg.max_rewrites_per_iteration))
    pool = task_pool(cfg, run_dir, roots)
    driver = loop_driver(cfg, collector, judge_collector, pool, _env_task, adaptation, pad_id)
    eval_collector = AgentCollector(
        policy_backend, runner, _policy_selector(cfg, float(cfg.eval.temperature)), group_size=int(cfg.eval.runs),
        max_steps=int(st.eval_max_steps), max_history_turns=history, prompt_builder=gui_agent_messages,
    )  # fmt: skip
    splits = [
        EvalSplit(name, tuple(specs), tuple(f"{s.name}#s{s.seed}" for s in specs)) for name, specs in evals.items()
    ]
    evaluator = AgentEvaluator(eval_collector, splits, judge=judge_collector, seed=int(cfg.seed) + 4242)
    module = make_module(cfg, AgentModule, policy, judge, judge_loss, evaluator)
    return make_run(cfg, run_dir, module, RolloutDataModule(driver, iterations=int(cfg.iterations)))
