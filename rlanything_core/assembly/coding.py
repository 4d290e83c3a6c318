"""``+setting=coding`` and ``+setting=livebench``: programs from the policy, unit tests from the judge.

Problems are rewritten by the judge's LM; evaluation runs on LeetCode problems of the LiveCodeBench v5 window or on
LiveCodeBench itself.

``rlanything_core/conf/setting/coding.yaml`` names :func:`coding_setting` with the setting's own parts
(``rlanything_core.settings.coding.CodingTasks``: its problems, roots and evaluation split); this module adds the
coding loop (single-step episodes scored in the sandbox, which ``Tasks.runner`` holds), the rewriter and the checks.
The keys of the agent settings that coding does not read are :data:`CODING_FIXED_KEYS`, refused by
:func:`validate_coding` at any other value.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from hydra.utils import instantiate
from omegaconf import DictConfig

from rlanything_core.adaptation.llm import BackendChatModel
from rlanything_core.adaptation.rewriters.protocol import TaskSpec
from rlanything_core.assembly import components
from rlanything_core.assembly.backends import sampling
from rlanything_core.assembly.checks import band
from rlanything_core.assembly.setting import LoopParts, Setting, Tasks, check_parts
from rlanything_core.collect.coding import CodeCollector, UnitTestCollector
from rlanything_core.config import ConfigError
from rlanything_core.config.fixed import FixedKey, refuse_changed
from rlanything_core.loop.coding_driver import CodingLoopDriver
from rlanything_core.loop.coding_evaluation import CodingEvaluator
from rlanything_core.sandbox import Sandbox
from rlanything_core.settings.coding import CodingTasks

__all__ = ["CODING_FIXED_KEYS", "coding_loop", "coding_rewriter", "coding_setting", "coding_tasks", "validate_coding"]


def coding_setting(environment: CodingTasks) -> Setting:
    """The :class:`Setting` of coding: ``environment``'s problems on the coding loop."""
    return Setting(
        tasks=partial(coding_tasks, environment=environment),
        rewriter=coding_rewriter,
        loop=coding_loop,
        validate=partial(validate_coding, environment=environment),
        environment=environment,
    )


def coding_tasks(cfg: DictConfig, environment: CodingTasks) -> Tasks:
    """The training problems as pool roots, the evaluation split, one sandbox running both."""
    sandbox = Sandbox()
    roots, splits = environment.roots_and_splits(sandbox)
    return Tasks(roots=roots, splits=splits, runner=sandbox, eval_runner=sandbox)


def coding_rewriter(cfg: DictConfig, run_dir: Path, judge_backend: Any, roots: list[TaskSpec]) -> Any:
    """``rewriters.coding`` on the judge's LM, or ``None`` without a judge (nothing can rewrite the problems)."""
    if judge_backend is None:
        return None
    chat = BackendChatModel(judge_backend, max_new_tokens=int(cfg.setting.rewriter_max_new_tokens))
    return components.rewriter(cfg, "coding", chat_model=chat, roots={r.task_id: r for r in roots})


def coding_loop(parts: LoopParts) -> tuple[Any, Any]:
    """``(CodingLoopDriver, CodingEvaluator)``: the policy's programs and the judge's unit tests, run in the sandbox."""
    cfg, st, sandbox = parts.cfg, parts.cfg.setting, parts.tasks.runner
    driver = CodingLoopDriver(
        coder=_coder(cfg, parts.policy_backend, int(cfg.group_size), float(cfg.model.temperature)),
        test_writer=_test_writer(cfg, parts.judge_backend, int(st.tests_per_task)),
        pool=parts.pool,
        adaptation=parts.adaptation,
        tasks_per_iteration=int(cfg.tasks_per_iteration),
        seed=int(cfg.seed),
        pad_id=parts.pad_id,
        judge_targets=components.unit_test_targets(cfg),
        policy_band=band(cfg, "policy_band"),
        sandbox=sandbox,
        max_workers=int(st.sandbox_workers),
        integrator=instantiate(cfg.arm.integrator),
    )
    evaluator = CodingEvaluator(
        _coder(cfg, parts.policy_backend, int(st.eval_samples), float(cfg.eval.temperature)),
        parts.tasks.splits,
        test_writer=_test_writer(cfg, parts.judge_backend, int(st.eval_tests_per_task)),
        seed=int(cfg.seed) + 4242,
        max_workers=int(st.sandbox_workers),
        sharded=True,  # every rank evaluates a share of the problems (a pass-through in one process)
    )
    return driver, evaluator


def _test_writer(cfg: DictConfig, judge_backend: Any, tests_per_task: int) -> UnitTestCollector | None:
    """The judge writing ``tests_per_task`` unit tests per problem, or ``None`` without a judge."""
    if judge_backend is None:
        return None
    st = cfg.setting
    params = sampling(cfg, max_new_tokens=int(st.test_max_new_tokens), temperature=float(st.test_temperature))
    return UnitTestCollector(
        judge_backend, tests_per_task=tests_per_task, sampling=params, scaffold=bool(st.test_scaffold)
    )


def _coder(cfg: DictConfig, policy_backend: Any, samples: int, temperature: float) -> CodeCollector:
    """The policy writing ``samples`` programs per problem at ``temperature``."""
    st = cfg.setting
    params = sampling(cfg, max_new_tokens=int(st.max_new_tokens), temperature=temperature)
    return CodeCollector(
        policy_backend, samples_per_task=samples, sampling=params, max_workers=int(st.sandbox_workers),
        prefill=str(st.code_prefill),  # how responses begin (collect/prefill.py)
    )  # fmt: skip


CODING_FIXED_KEYS = (
    FixedKey(
        "arm.integrator._target_",
        "rlanything_core.rewards.pass_fraction.PassFractionIntegrator",
        "z-scores each program's GT pass fraction per task (setting/coding.yaml sets it for every arm); integrated "
        "and step-only advantages need judge votes, and the coding judge writes unit tests instead",
    ),
    FixedKey("lam", 1.0, "has no judge votes to weigh: a program's step reward is its GT pass fraction"),
    FixedKey(
        "step_reward",
        {"_target_": "rlanything_core.advantages.step_reward.StepReward", "lam": 1.0},
        "builds no StepReward: a program's step reward is its GT pass fraction",
    ),
    FixedKey("num_votes", 3, "casts no votes: the judge writes setting.tests_per_task unit tests per problem"),
    FixedKey(
        "judge_band",
        [0.2, 0.8],
        "trains the judge on the unit tests of every problem with a correct program (of every problem with "
        "setting.test_format_without_reference), not on a success-rate band",
    ),
    FixedKey(
        "judge_targets._target_",
        "rlanything_core.rewards.targets.ConsistencyTargets",
        "always scores unit tests with rewards.targets.UnitTestTargets (from judge_targets.format_penalty, .eps and "
        ".drop_zero_rows)",
    ),
)
"""The keys of the agent settings that coding does not read, with the one value it accepts (``checks.py``)."""


def validate_coding(cfg: DictConfig, environment: CodingTasks) -> None:
    """No key coding does not read is changed; the data files exist; the rewriter has the judge's LM."""
    refuse_changed(cfg, CODING_FIXED_KEYS, str(cfg.setting.name))
    check_parts(cfg, environment)
    if cfg.arm.adapt_environment and not cfg.arm.use_judge:
        raise ConfigError(
            "arm.adapt_environment", "the coding rewriter uses the judge's model", "set arm.use_judge=true"
        )
