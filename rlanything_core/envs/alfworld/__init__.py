"""ALFWorld on the real engine: game listing, one-episode env, and the PDDL planner as a step-label oracle.

Nothing here imports ``textworld``/``alfworld`` at import time; the engine loads on first use.
"""

from rlanything_core.envs.alfworld.data import (
    TASK_TYPES,
    AlfworldDataNotFoundError,
    AlfworldGame,
    AlfworldSplit,
    default_cache_dir,
    list_games,
    resolve_data_root,
    split_dir,
)
from rlanything_core.envs.alfworld.env import AlfworldEnv, AlfworldEnvFactory, compiles, parse_goal, start_engine
from rlanything_core.envs.alfworld.oracle import (
    OracleStep,
    StepLabel,
    clear_plan_cache,
    command_cost,
    is_solvable,
    label_trajectory,
    optimal_plan,
    plan_cost,
)
from rlanything_core.envs.alfworld.sampling import proportional_allocation, stratified_sample

__all__ = [
    "TASK_TYPES",
    "AlfworldDataNotFoundError",
    "AlfworldEnv",
    "AlfworldEnvFactory",
    "AlfworldGame",
    "AlfworldSplit",
    "OracleStep",
    "StepLabel",
    "clear_plan_cache",
    "command_cost",
    "compiles",
    "default_cache_dir",
    "is_solvable",
    "label_trajectory",
    "list_games",
    "optimal_plan",
    "parse_goal",
    "plan_cost",
    "proportional_allocation",
    "resolve_data_root",
    "split_dir",
    "start_engine",
    "stratified_sample",
]
