"""The MiniWoB++ GUI setting (``+setting=miniwob``): real pages in Debian's Chromium through the whole loop.

Hooked into ``builders.build`` with one line. Tasks: the curated pages of ``rlanything_core.envs.miniwob.tasks``; the
training pool holds the pages of ``setting.train_families`` (each with ``setting.seeds_per_task`` problem seeds); the
evaluation splits are ``in_domain`` (the same families, unseen seeds) and ``out_of_domain`` (the pages of
``setting.ood_families``, never trained on). The policy scores the DOM-derived candidate actions like ALFWorld's
admissible commands; the judge votes with the paper's GUI rubric; the environment rewrites hints and settings.
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig

from experiments.config_checks import ConfigError

__all__ = ["build_miniwob", "miniwob_tasks", "validate_miniwob"]

EVAL_SEED_BASE = 100_000  # evaluation problems: seeds no training task uses


def validate_miniwob(cfg: DictConfig) -> None:
    """Refuse unknown families or tasks and a missing browser, naming the key and the fix."""
    from rlanything_core.envs.miniwob.browser import BrowserStartError, browser_binaries
    from rlanything_core.envs.miniwob.tasks import CURATED_TASKS

    st = cfg.setting
    families = sorted({t.family for t in CURATED_TASKS.values()})
    for key in ("train_families", "ood_families"):
        for fam in st[key]:
            if str(fam) not in families:
                raise ConfigError(f"setting.{key}", f"unknown task family {fam!r}", f"use some of {families}")
    overlap = set(map(str, st.train_families)) & set(map(str, st.ood_families))
    if overlap:
        raise ConfigError("setting.ood_families", f"{sorted(overlap)} are also training families",
                          "keep the held-out families disjoint from setting.train_families")  # fmt: skip
    if st.rewriter not in ("rules", "llm"):
        raise ConfigError("setting.rewriter", f"unknown {st.rewriter!r}", "use rules or llm")
    if st.rewriter == "llm" and cfg.arm.adapt_environment and not cfg.arm.use_judge:
        raise ConfigError("setting.rewriter", "the LLM rewriter uses the judge's model", "set setting.rewriter=rules")
    try:
        browser_binaries()
    except BrowserStartError as err:
        raise ConfigError("setting", str(err), "apt-get install -y chromium chromium-driver") from err


def miniwob_tasks(cfg: DictConfig) -> tuple[list[Any], dict[str, list[Any]]]:
    """``(training root TaskSpecs, {split: [MiniwobTaskSpec]})``: pages in curated order (easy first)."""
    from rlanything_core.environment.rewriters.protocol import TaskSpec
    from rlanything_core.envs.miniwob.tasks import CURATED_TASKS, MiniwobTaskSpec

    st = cfg.setting
    train_pages = [t.name for t in CURATED_TASKS.values() if t.family in set(map(str, st.train_families))]
    if st.train_games is not None:
        train_pages = train_pages[: int(st.train_games)]
    roots = []
    for name in train_pages:
        for k in range(int(st.seeds_per_task)):
            spec = MiniwobTaskSpec(name, seed=k)
            task_id = f"{name}#s{k}"
            roots.append(TaskSpec(task_id=task_id, kind="miniwob", root_id=task_id, data=spec.to_data()))
    splits: dict[str, list[Any]] = {}
    for split, fams in (("in_domain", st.train_families), ("out_of_domain", st.ood_families)):
        pages = [t.name for t in CURATED_TASKS.values() if t.family in set(map(str, fams))]
        n = int(cfg.eval.games)
        picked = [pages[(i * len(pages)) // n] for i in range(n)] if n <= len(pages) else pages * (n // len(pages))
        splits[split] = [MiniwobTaskSpec(p, seed=EVAL_SEED_BASE + i) for i, p in enumerate(picked)]
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
    factory = MiniwobEnvFactory(max_steps=limit, screenshots=bool(st.screenshots), offer_done=bool(st.offer_done))
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
    driver = loop_driver(cfg, collector, judge_collector, judge_loss, pool, _env_task, adaptation, pad_id)
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
