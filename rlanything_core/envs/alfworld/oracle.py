"""The PDDL planner as an exact oracle for ALFWorld step labels (evaluation only, never a training signal).

From any state, fast-downward (the search TextWorld's ``policy_commands`` runs: uniform-cost search, so the plan is
optimal for the domain's action costs) returns an optimal remaining plan. A played step is labelled by comparing the
optimal cost-to-go before and after it: shortened -> ``PROGRESS``, unchanged -> ``NEUTRAL``, lengthened (or the goal
became unreachable) -> ``REGRESS``. ALFWorld's domain charges 1 per action, 5 for clean/heat/cool/toggle/slice and 0
for look/inventory/examine/help; :func:`command_cost` mirrors that table.

Two exact shortcuts avoid most planner calls (each can take from 10 ms to tens of seconds in large kitchens):
if the action is the first step of the current optimal plan, the rest of that plan is optimal from the next state
(cost-to-go ``c' >= c - cost(a)`` always holds, and the plan tail attains it); if the action left every PDDL fact
unchanged, the plan is unchanged.
"""

from __future__ import annotations

import enum
import functools
import os
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlanything_core.digests import distribution_versions, imported_modules, source_digest
from rlanything_core.envs.alfworld.env import compiles, start_engine

__all__ = [
    "OracleStep",
    "StepLabel",
    "PLAN_CACHE_SIZE",
    "clear_plan_cache",
    "command_cost",
    "compiles",  # re-exported from .env: the environment-adaptation entry points live together here
    "is_solvable",
    "label_trajectory",
    "optimal_plan",
    "plan_cost",
    "planner_version",
]

_COST5 = ("clean ", "heat ", "cool ", "use ", "slice ")
_COST0 = ("look", "inventory", "examine ", "help")


_PLANNER_DISTRIBUTIONS = ("textworld", "fast-downward-textworld", "alfworld")


@functools.cache  # the code and the installed planner do not change within a process
def planner_version() -> str:
    """A digest of what a label depends on besides the game and the actions (stored labels are keyed by it).

    The code of this module and of every package module it imports (the engine's start and its output-preserving
    speed-ups among them: :func:`~rlanything_core.digests.imported_modules`), and the installed TextWorld,
    fast-downward and ALFWorld.
    """
    versions = distribution_versions(_PLANNER_DISTRIBUTIONS)
    code = source_digest(imported_modules("envs/alfworld/oracle.py"))
    return code + ":" + ",".join(f"{k}={v}" for k, v in sorted(versions.items()))


class StepLabel(enum.Enum):
    """The planner's verdict on one step."""

    PROGRESS = "progress"
    """The optimal remaining cost shrank."""
    NEUTRAL = "neutral"
    """The optimal remaining cost is unchanged (a detour that did not hurt, or an inadmissible command)."""
    REGRESS = "regress"
    """The optimal remaining cost grew, or the goal became unreachable."""


@dataclass(frozen=True)
class OracleStep:
    """One labelled step.

    Attributes:
        action: the command played.
        plan_before: an optimal remaining plan before the action (``()`` when already won, ``None`` if unsolvable).
        plan_after: an optimal remaining plan after it.
        length_before: ``len(plan_before)`` (``None`` if unsolvable).
        length_after: ``len(plan_after)`` (``None`` if unsolvable).
        cost_before: optimal remaining cost before (``None`` if unsolvable).
        cost_after: optimal remaining cost after.
        label: PROGRESS / NEUTRAL / REGRESS from the costs.
        won_after: the goal holds after the action.
        replanned: the planner ran for ``plan_after`` (``False`` when a shortcut gave it exactly).
    """

    action: str
    plan_before: tuple[str, ...] | None
    plan_after: tuple[str, ...] | None
    length_before: int | None
    length_after: int | None
    cost_before: int | None
    cost_after: int | None
    label: StepLabel
    won_after: bool
    replanned: bool


def command_cost(command: str) -> int:
    """ALFWorld's PDDL action cost of a command (1; 5 for clean/heat/cool/use/slice; 0 for look/examine/...)."""
    c = command.strip()
    if c.startswith(_COST0):
        return 0
    if c.startswith(_COST5):
        return 5
    return 1


def plan_cost(plan: tuple[str, ...] | None) -> int | None:
    """Total cost of a plan (``None`` for ``None``)."""
    return None if plan is None else sum(command_cost(a) for a in plan)


def _backend(engine: Any) -> Any:
    """The ``PddlEnv`` under ALFWorld's wrappers (textworld 1.7: ``_wrapped_env`` chain)."""
    env = engine
    for _ in range(16):
        if hasattr(env, "_pddl_state") and "_pddl_state" in vars(env):
            return env
        env = vars(env).get("_wrapped_env")
        if env is None:
            break
    raise RuntimeError("cannot reach textworld's PddlEnv under the wrappers (textworld version changed?)")


_PLAN_CACHE: OrderedDict[tuple[str, int, frozenset[str]], tuple[str, ...] | None] = OrderedDict()
PLAN_CACHE_SIZE = 20_000
"""Plans remembered per (game file, its mtime, exact PDDL state): rollouts of one game share many states, and the
initial-state search is the slow one (up to tens of seconds in large kitchens)."""


def _cached_plan(path: Path, backend: Any, facts: frozenset[str]) -> tuple[str, ...] | None:
    key = (str(path.resolve()), path.stat().st_mtime_ns, facts)
    if key in _PLAN_CACHE:
        _PLAN_CACHE.move_to_end(key)
        return _PLAN_CACHE[key]
    plan = _plan(backend)
    _PLAN_CACHE[key] = plan
    while len(_PLAN_CACHE) > PLAN_CACHE_SIZE:
        _PLAN_CACHE.popitem(last=False)
    return plan


def clear_plan_cache() -> None:
    """Forget remembered plans (e.g. to time the planner)."""
    _PLAN_CACHE.clear()


def _plan(backend: Any) -> tuple[str, ...] | None:
    """Optimal remaining plan from the backend's current state; ``()`` if won, ``None`` if the planner finds none."""
    state = backend._pddl_state
    if state.check_goal():
        return ()
    plan = tuple(state.replan(backend._entity_infos))
    return plan if plan else None


def _facts(backend: Any) -> frozenset[str]:
    return frozenset(str(f) for f in backend._pddl_state.facts)


def _compare(before: int | None, after: int | None) -> StepLabel:
    if before == after:
        return StepLabel.NEUTRAL
    if after is None:
        return StepLabel.REGRESS
    if before is None or after < before:
        return StepLabel.PROGRESS
    return StepLabel.REGRESS


def _plan_after(
    plan: tuple[str, ...] | None,
    action: str,
    facts: tuple[frozenset[str], frozenset[str]],
    *,
    won: bool,
    use_shortcuts: bool,
    plan_from: Callable[[frozenset[str]], tuple[str, ...] | None],
) -> tuple[tuple[str, ...] | None, bool]:
    """``(the plan after action, whether the planner ran)``, from the ``plan`` and the ``facts`` before and after it.

    Won: the empty plan. With the shortcuts, exact: the state did not change, the same plan; the action was the
    plan's first step, the rest of it. Otherwise the planner's plan from the new facts, ``plan_from(after)``.
    """
    before, after = facts
    if won:
        return (), False
    if use_shortcuts and after == before:
        return plan, False
    if use_shortcuts and plan and plan[0] == action.strip():
        return plan[1:], False
    return plan_from(after), True


def _oracle_step(
    action: str, plan: tuple[str, ...] | None, new_plan: tuple[str, ...] | None, *, won_after: bool, replanned: bool
) -> OracleStep:
    """The record of one step from the plans before and after it."""
    return OracleStep(
        action=action,
        plan_before=plan,
        plan_after=new_plan,
        length_before=None if plan is None else len(plan),
        length_after=None if new_plan is None else len(new_plan),
        cost_before=plan_cost(plan),
        cost_after=plan_cost(new_plan),
        label=_compare(plan_cost(plan), plan_cost(new_plan)),
        won_after=won_after,
        replanned=replanned,
    )


def label_trajectory(
    game_file: str | os.PathLike[str],
    actions: list[str] | tuple[str, ...],
    *,
    use_shortcuts: bool = True,
    use_cache: bool = True,
) -> list[OracleStep]:
    """Label every step of a played trajectory with the planner's exact verdict.

    Args:
        game_file: the ``game.tw-pddl`` that was played.
        actions: the commands, in order, from the initial state. Steps after the goal is reached are labelled too
            (cost stays 0 unless the action undoes the goal).
        use_shortcuts: use the two exact shortcuts of the module docstring; ``False`` re-plans at every step.
        use_cache: look plans up in (and add them to) the per-process cache keyed by the exact PDDL state.

    Returns:
        One :class:`OracleStep` per action.

    Raises:
        ValueError: ``game_file`` is missing or ``actions`` holds a non-string.
    """
    path = Path(game_file)
    if not path.is_file():
        raise ValueError(f"game_file must be an existing game.tw-pddl file, got {str(path)!r}")
    if not all(isinstance(a, str) for a in actions):
        raise ValueError("actions must be a sequence of str")
    engine = start_engine(path)
    try:
        engine.reset()
        backend = _backend(engine)
        facts = _facts(backend)

        def plan_here(current: frozenset[str]) -> tuple[str, ...] | None:
            return _cached_plan(path, backend, current) if use_cache else _plan(backend)

        plan = plan_here(facts)
        out: list[OracleStep] = []
        for action in actions:
            state, _, _ = engine.step(action)
            new_facts = _facts(backend)
            won = bool(state["won"])
            new_plan, replanned = _plan_after(
                plan, action, (facts, new_facts), won=won, use_shortcuts=use_shortcuts, plan_from=plan_here
            )
            out.append(_oracle_step(action, plan, new_plan, won_after=won, replanned=replanned))
            plan, facts = new_plan, new_facts
        return out
    finally:
        engine.close()


def optimal_plan(game_file: str | os.PathLike[str]) -> tuple[str, ...] | None:
    """An optimal plan from the game's initial state (``None`` when the planner finds none).

    Raises:
        ValueError: ``game_file`` is missing.
    """
    path = Path(game_file)
    if not path.is_file():
        raise ValueError(f"game_file must be an existing game.tw-pddl file, got {str(path)!r}")
    engine = start_engine(path)
    try:
        engine.reset()
        backend = _backend(engine)
        return _cached_plan(path, backend, _facts(backend))
    finally:
        engine.close()


def _solvable_child(game_file: str, conn: Any) -> None:
    conn.send(is_solvable(game_file))
    conn.close()


def is_solvable(game_file: str | os.PathLike[str], *, timeout_s: float | None = None) -> bool:
    """Whether the planner finds a plan from the initial state (a file that does not load is not solvable).

    The stored ``"solvable"`` flag of a game file is not trusted: rewritten games keep a stale copy of it.

    Args:
        game_file: the game.
        timeout_s: give up after this many seconds (the search runs in a forked child that is killed): a game the
            planner cannot solve in time counts as not solvable, so it is never scheduled. Searches from the start
            of a large kitchen took 6-155 s here. ``None``: no limit, in this process.
    """
    if timeout_s is None:
        try:
            return optimal_plan(game_file) is not None
        except Exception:  # noqa: BLE001 - a broken candidate is data, not an error
            return False
    import multiprocessing as mp

    ctx = mp.get_context("fork")  # the engine is already imported here; a spawned child would re-import it (~5 s)
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_solvable_child, args=(str(game_file), send), daemon=True)
    child.start()
    send.close()
    try:
        if receive.poll(timeout_s):
            return bool(receive.recv())
        return False
    except EOFError:  # the child died without answering
        return False
    finally:
        if child.is_alive():
            child.kill()
        child.join(timeout=5)
        receive.close()
