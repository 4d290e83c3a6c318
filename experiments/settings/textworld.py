"""``+setting=textworld``: generated games on a grid of (rooms, quest length) cells; one split per quest length.

The parts ``experiments/conf/setting/textworld.yaml`` names (``experiments/setting.py``): :func:`textworld_tasks`
and :func:`textworld_rewriter`; the loop is the agent loop (``experiments/agent_loop.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from experiments import components
from experiments.agent_loop import worker_runner
from experiments.setting import Tasks
from rlanything_core.environment.rewriters.protocol import TaskSpec
from rlanything_core.envs.textworld_games import TextWorldChallenge, TextWorldEnvFactory, TextWorldSpec
from rlanything_core.loop.evaluation import EvalSplit

__all__ = ["textworld_env_task", "textworld_rewriter", "textworld_spec", "textworld_tasks"]


def textworld_tasks(cfg: DictConfig) -> Tasks:
    """The training cells' games as pool roots, one evaluation split per ``setting.eval_quest_lengths``."""
    st = cfg.setting
    cache = None if st.cache_dir is None else str(st.cache_dir)
    roots = []
    for rooms in st.train_rooms:
        for quest in st.train_quest_lengths:
            for k in range(int(st.seeds_per_cell)):
                params = {
                    "nb_rooms": int(rooms),
                    "nb_objects": int(st.nb_objects),
                    "quest_length": int(quest),
                    "seed": 100 * k + 10 * int(rooms) + int(quest),
                }
                task_id = "tw-r{nb_rooms}-o{nb_objects}-q{quest_length}-s{seed}".format(**params)
                roots.append(TaskSpec(task_id=task_id, kind="textworld", root_id=task_id, data=params))
    splits = []
    for quest in st.eval_quest_lengths:
        specs = [
            textworld_spec(
                {"nb_rooms": int(st.eval_rooms), "nb_objects": int(st.nb_objects), "quest_length": int(quest),
                 "seed": 777_000 + k}
            )
            for k in range(int(cfg.eval.games))
        ]  # fmt: skip
        splits.append(EvalSplit(f"quest_{quest}", tuple(specs), tuple(s.key for s in specs)))
    return Tasks(
        roots=roots,
        splits=splits,
        runner=worker_runner(cfg, TextWorldEnvFactory(max_episode_steps=int(st.max_steps), cache_dir=cache)),
        eval_runner=worker_runner(cfg, TextWorldEnvFactory(max_episode_steps=int(st.eval_max_steps), cache_dir=cache)),
        to_env_task=textworld_env_task,
    )


def textworld_spec(params: dict[str, Any]) -> TextWorldSpec:
    """The generator spec of a TextWorld task's parameters."""
    return TextWorldSpec(
        challenge=TextWorldChallenge.CUSTOM,
        world_size=int(params["nb_rooms"]),
        nb_objects=int(params["nb_objects"]),
        quest_length=int(params["quest_length"]),
        seed=int(params["seed"]),
    )


def textworld_env_task(task: TaskSpec) -> TextWorldSpec:
    """What a TextWorld environment is built from: the generator spec of the pool task's parameters."""
    return textworld_spec(task.data)


def textworld_rewriter(cfg: DictConfig, run_dir: Path, judge_backend: Any, roots: list[TaskSpec]) -> Any:
    """``rewriters.textworld``: harder or easier parameters of the same game (no LM, no folder)."""
    return components.rewriter(cfg, "textworld")
