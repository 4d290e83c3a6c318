"""``+setting=coding`` and ``+setting=livebench``: programs from the policy, unit tests from the judge, problems
rewritten by the judge's LM; evaluation on LeetCode problems of the LiveCodeBench v5 window or on LiveCodeBench itself.

The parts ``experiments/conf/setting/coding.yaml`` names (``experiments/setting.py``): :func:`coding_tasks`,
:func:`coding_rewriter`, :func:`validate_coding` and :func:`coding_loop` (the coding driver and evaluator:
single-step episodes scored in the sandbox, which ``Tasks.runner`` holds). The keys of the agent settings that coding
does not read are :data:`CODING_FIXED_KEYS`, refused by :func:`validate_coding` at any other value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from experiments import components
from experiments.backends import sampling
from experiments.config_checks import band
from experiments.setting import LoopParts, Tasks
from rlanything_core.collect.coding import CodeCollector, UnitTestCollector
from rlanything_core.config import ConfigError
from rlanything_core.config.fixed import FixedKey, refuse_changed
from rlanything_core.environment.llm import BackendChatModel
from rlanything_core.environment.rewriters.protocol import TaskSpec
from rlanything_core.envs.coding.livecodebench import load_livebench
from rlanything_core.envs.coding.loaders import default_shared_dir, load_codecontests, load_kickstart, load_leetcode
from rlanything_core.envs.coding.task import CodingTask
from rlanything_core.loop.coding_driver import CodingLoopDriver, coding_spec
from rlanything_core.loop.coding_evaluation import CodingEvalSplit, CodingEvaluator
from rlanything_core.sandbox import Sandbox

__all__ = [
    "CODING_FILES",
    "CODING_FIXED_KEYS",
    "coding_dir",
    "coding_loop",
    "coding_problems",
    "coding_rewriter",
    "coding_tasks",
    "first",
    "validate_coding",
]


def first(items: list[Any], count: Any) -> list[Any]:
    """The first ``count`` items (``count`` null: all of them, e.g. a whole evaluation split)."""
    return list(items) if count is None else list(items)[: int(count)]


def coding_tasks(cfg: DictConfig) -> Tasks:
    """The training problems as pool roots, the evaluation split, one sandbox running both."""
    train, evals = coding_problems(cfg)
    roots = [coding_spec(p, max_tests=int(cfg.setting.gt_tests)) for p in train]
    sandbox = Sandbox()
    split_name = "livebench" if str(cfg.setting.eval_set) == "livebench" else "lcb_v5"
    splits = [CodingEvalSplit(split_name, tuple(CodingTask(p, sandbox) for p in evals))]
    return Tasks(roots=roots, splits=splits, runner=sandbox, eval_runner=sandbox)


def coding_problems(cfg: DictConfig) -> tuple[list[Any], list[Any]]:
    """Training problems (stdin, sets interleaved, shortest statements first) and evaluation problems."""
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
        integrator=components.integrator(cfg),
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


def coding_dir(cfg: DictConfig) -> Path:
    """``setting.data_dir``, else ``$RLANYTHING_SHARED_DIR/coding`` (``../shared/coding`` beside the repository)."""
    return Path(str(cfg.setting.data_dir)) if cfg.setting.data_dir is not None else default_shared_dir() / "coding"


CODING_FILES = {
    "kickstart": "kickstart/problems.jsonl",
    "codecontests": "codecontests_test/problems.jsonl",
    "leetcode_lcb": "leetcodedataset_v0.3.1_test/problems.jsonl",
}


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
"""The keys of the agent settings that coding does not read, with the one value it accepts (``config_checks``)."""


def validate_coding(cfg: DictConfig) -> None:
    """The data files exist; the rewriter has the judge's LM; no key coding does not read is changed."""
    refuse_changed(cfg, CODING_FIXED_KEYS, str(cfg.setting.name))
    st = cfg.setting
    root = coding_dir(cfg)  # the sets' names, the counts' ranges: config_schema.CodingSetting
    needed = [str(n) for n in st.train_sets] + ["leetcode_lcb"]
    for name in needed:
        if not (root / CODING_FILES[name]).is_file():
            raise ConfigError(
                "setting.data_dir",
                f"{root / CODING_FILES[name]} does not exist",
                "point setting.data_dir (or RLANYTHING_SHARED_DIR/coding) at the offline coding data",
            )
    if st.livebench_file is not None and not Path(str(st.livebench_file)).is_file():
        raise ConfigError(
            "setting.livebench_file", f"{st.livebench_file!r} does not exist", "point it at a question.jsonl or null"
        )
    if cfg.arm.adapt_environment and not cfg.arm.use_judge:
        raise ConfigError(
            "arm.adapt_environment", "the coding rewriter uses the judge's model", "set arm.use_judge=true"
        )
