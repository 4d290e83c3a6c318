"""The coding settings (coding, livebench): programs from the policy, unit tests from the judge, problems rewritten by
the judge's LM; evaluation on LeetCode problems of the LiveCodeBench v5 window or on LiveCodeBench itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from experiments import components
from experiments.backends import prepare, rollout_backends, rollout_context, sampling
from experiments.config_checks import CODING_FILES, band, coding_dir
from experiments.trainer_setup import Run, make_module, make_run

__all__ = ["build_coding", "coding_problems", "first"]


def first(items: list[Any], count: Any) -> list[Any]:
    """The first ``count`` items (``count`` null: all of them, e.g. a whole evaluation split)."""
    return list(items) if count is None else list(items)[: int(count)]


def build_coding(cfg: DictConfig) -> Run:
    """The coding loop (see the module docstring)."""
    from rlanything_core.lightning import CodingModule, RolloutDataModule
    from rlanything_core.loop.coding_driver import coding_spec
    from rlanything_core.sandbox import Sandbox

    run_dir, policy, judge, tokenizer, pad_id = prepare(cfg)
    policy_backend, judge_backend = rollout_backends(cfg, policy, judge, tokenizer)
    train, evals = coding_problems(cfg)
    roots = [coding_spec(p, max_tests=int(cfg.setting.gt_tests)) for p in train]
    sandbox = Sandbox()
    driver = _driver(cfg, run_dir, roots, policy_backend, judge_backend, sandbox, pad_id)
    evaluator = _evaluator(cfg, evals, policy_backend, judge_backend, sandbox)
    module = make_module(cfg, CodingModule, policy, judge, components.judge_loss(cfg), evaluator)
    module.rollout_context = rollout_context(cfg, [(policy, policy_backend), (judge, judge_backend)])
    return make_run(cfg, run_dir, module, RolloutDataModule(driver, iterations=int(cfg.iterations)))


def coding_problems(cfg: DictConfig) -> tuple[list[Any], list[Any]]:
    """Training problems (stdin, sets interleaved, shortest statements first) and evaluation problems."""
    from rlanything_core.envs.coding.livecodebench import load_livebench
    from rlanything_core.envs.coding.loaders import load_codecontests, load_kickstart, load_leetcode

    st = cfg.setting
    root = coding_dir(cfg)
    loaders = {"kickstart": load_kickstart, "codecontests": load_codecontests}
    limit = int(st.max_statement_chars)
    per_set = [
        sorted(
            (p for p in loaders[str(n)](root / CODING_FILES[str(n)]) if len(p.prompt) <= limit),
            key=lambda p: (len(p.prompt), p.id),
        )
        for n in st.train_sets
    ]
    train = [p for group in zip(*per_set) for p in group] if per_set else []
    if st.train_problems is not None:
        train = train[: int(st.train_problems)]
    if str(st.eval_set) == "livebench" and st.livebench_file is not None:
        evals = load_livebench(str(st.livebench_file))
    else:
        evals = [p for p in load_leetcode(root / CODING_FILES["leetcode_lcb"]) if p.also_in_lcb_v5_window]
    return train, first(evals, st.eval_problems)


def _test_writer(cfg: DictConfig, judge_backend: Any, tests_per_task: int) -> Any:
    """The judge writing ``tests_per_task`` unit tests per problem, or ``None`` without a judge."""
    from rlanything_core.collect.coding import UnitTestCollector

    if judge_backend is None:
        return None
    st = cfg.setting
    params = sampling(cfg, max_new_tokens=int(st.test_max_new_tokens), temperature=float(st.test_temperature))
    return UnitTestCollector(
        judge_backend, tests_per_task=tests_per_task, sampling=params, scaffold=bool(st.test_scaffold)
    )


def _coder(cfg: DictConfig, policy_backend: Any, samples: int, temperature: float) -> Any:
    """The policy writing ``samples`` programs per problem at ``temperature``."""
    from rlanything_core.collect.coding import CodeCollector

    st = cfg.setting
    params = sampling(cfg, max_new_tokens=int(st.max_new_tokens), temperature=temperature)
    return CodeCollector(
        policy_backend, samples_per_task=samples, sampling=params, max_workers=int(st.sandbox_workers),
        prefill=str(st.code_prefill),  # how responses begin (collect/prefill.py)
    )  # fmt: skip


def _driver(
    cfg: DictConfig, run_dir: Path, roots: list[Any], policy_backend: Any, judge_backend: Any, sandbox: Any, pad_id: int
) -> Any:
    from rlanything_core.environment.llm import BackendChatModel
    from rlanything_core.loop.adaptation import EnvironmentAdaptation
    from rlanything_core.loop.coding_driver import CodingLoopDriver

    st = cfg.setting
    pool = components.task_pool(cfg, run_dir, roots)
    writer = _test_writer(cfg, judge_backend, int(st.tests_per_task))
    adaptation = None
    if cfg.arm.adapt_environment and judge_backend is not None:
        chat = BackendChatModel(judge_backend, max_new_tokens=int(st.rewriter_max_new_tokens))
        rewriter = components.rewriter(cfg, "coding", chat_model=chat, roots={r.task_id: r for r in roots})
        adaptation = EnvironmentAdaptation(rewriter, max_requests=int(cfg.max_rewrites_per_iteration))
    return CodingLoopDriver(
        coder=_coder(cfg, policy_backend, int(cfg.group_size), float(cfg.model.temperature)),
        test_writer=writer,
        pool=pool,
        adaptation=adaptation,
        tasks_per_iteration=int(cfg.tasks_per_iteration),
        seed=int(cfg.seed),
        pad_id=pad_id,
        judge_targets=components.unit_test_targets(cfg),
        policy_band=band(cfg, "policy_band"),
        sandbox=sandbox,
        max_workers=int(st.sandbox_workers),
    )


def _evaluator(cfg: DictConfig, evals: list[Any], policy_backend: Any, judge_backend: Any, sandbox: Any) -> Any:
    from rlanything_core.envs.coding.task import CodingTask
    from rlanything_core.loop.coding_evaluation import CodingEvalSplit, CodingEvaluator

    st = cfg.setting
    split_name = "livebench" if str(st.eval_set) == "livebench" else "lcb_v5"
    return CodingEvaluator(
        _coder(cfg, policy_backend, int(st.eval_samples), float(cfg.eval.temperature)),
        [CodingEvalSplit(split_name, tuple(CodingTask(p, sandbox) for p in evals))],
        test_writer=_test_writer(cfg, judge_backend, int(st.eval_tests_per_task)),
        seed=int(cfg.seed) + 4242,
        max_workers=int(st.sandbox_workers),
        sharded=True,  # every rank evaluates a share of the problems (a pass-through in one process)
    )
