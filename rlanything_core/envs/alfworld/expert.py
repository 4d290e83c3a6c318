"""Expert demonstrations on the *training* split: what the agent sees at each step, plus the expert's command.

Two experts (:class:`ExpertKind`):

- ``WALKTHROUGH``: replay the game's stored ``walkthrough``. It is 3-4 commands long because the expert goes straight
  to the object (it knows where it is): imitating it teaches no search, and a policy trained on it wins nothing.
- ``HANDCODED``: ALFWorld's own hand-coded expert (``alfworld.agents.expert.HandCodedTWAgent``, the DAgger expert that
  ``alfred_tw_env.AlfredExpert(expert_type="handcoded")`` wires in as ``extra.expert_plan``). It keeps its own map of
  the receptacles listed in the first observation and of the objects it has seen, visits the receptacles it has not
  checked yet (most likely first, by ALFRED's object/receptacle priors), opens and closes containers, and carries out
  the task's subgoals. It reads the engine's ``facts`` only to check whether its own subgoals are done (am I holding
  the object, is it hot, is one already in the receptacle). Using it for demonstrations is legitimate: it is not the
  PDDL planner (``envs/alfworld/oracle.py``, never a training signal), and its demonstrations teach search.

Each record holds the goal, the earlier ``(observation, action)`` turns, the observation, the admissible commands and
the expert's command, at every step of games the expert *wins* (failed runs are dropped).
"""

from __future__ import annotations

import enum
import json
import multiprocessing
import os
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rlanything_core.envs.alfworld.env import AlfworldEnv, parse_goal, start_engine
from rlanything_core.progress import Progress

__all__ = [
    "ExpertKind",
    "ExpertStep",
    "expert_labels",
    "expert_steps",
    "handcoded_expert_steps",
    "load_or_build_expert_steps",
]


class ExpertKind(str, enum.Enum):
    """Which expert produces the demonstrations."""

    WALKTHROUGH = "walkthrough"
    """Replay the stored walkthrough (no search; see the module docstring)."""
    HANDCODED = "handcoded"
    """ALFWorld's hand-coded DAgger expert (searches receptacles it has not seen)."""


@dataclass(frozen=True)
class ExpertStep:
    """One expert decision.

    Attributes:
        game_file: the game it comes from.
        goal: the task sentence.
        history: earlier ``(observation, action)`` turns (the actions actually executed).
        observation: the current observation.
        admissible_actions: the commands offered.
        action: the expert's command.
    """

    game_file: str
    goal: str
    history: tuple[tuple[str, str], ...]
    observation: str
    admissible_actions: tuple[str, ...]
    action: str


def expert_steps(game_file: str | os.PathLike[str], *, max_steps: int | None = None) -> list[ExpertStep]:
    """Replay the game's ``walkthrough`` and return one record per command (up to ``max_steps``).

    Raises:
        ValueError: the game has no walkthrough, or replaying it does not win (a broken demonstration).
    """
    path = Path(game_file)
    walkthrough = list(json.loads(path.read_text()).get("walkthrough") or [])
    if not walkthrough:
        raise ValueError(f"game_file: {path} has no walkthrough")
    env = AlfworldEnv(path, max_episode_steps=None)
    try:
        first = env.reset()
        observation, admissible = first.observation, first.admissible_actions
        history: list[tuple[str, str]] = []
        out: list[ExpertStep] = []
        won = False
        for action in walkthrough[: max_steps or len(walkthrough)]:
            out.append(ExpertStep(str(path), first.goal, tuple(history), observation, tuple(admissible), action))
            result = env.step(action)
            history.append((observation, action))
            observation, admissible = result.observation, result.admissible_actions
            won = result.won
            if result.done:
                break
        if max_steps is None and not won:
            raise ValueError(f"game_file: replaying the walkthrough of {path} does not win")
        return out
    finally:
        env.close()


_REPLANS = 3
"""Times the hand-coded expert may re-plan after proposing a command that is not admissible."""


def _forget_target(policy: Any, action: str) -> None:
    """After an inadmissible ``go to X``, drop ``X`` from the receptacles the expert still means to search."""
    if action.startswith("go to "):
        target = action[len("go to ") :]
        if target in policy.receptacles_to_check:
            policy.receptacles_to_check.remove(target)


def _held_object_move(action: str, admissible: Sequence[str]) -> str:
    """The admissible ``move <held object> to X`` for an inadmissible ``move <other object> to X``, else ``action``.

    ALFWorld's hand-coded expert names the *first* object in its put command of two-object tasks (it proposes
    ``move alarmclock 1 to desk 1`` while holding alarmclock 2, after alarmclock 1 is already on the desk), so it
    never won a ``pick_two_obj_and_place`` game. The agent holds one object at a time, so the only admissible move to
    the same receptacle is the command it means.
    """
    if not action.startswith("move ") or " to " not in action:
        return action
    target = action.rsplit(" to ", 1)[1]
    moves = [a for a in admissible if a.startswith("move ") and a.endswith(f" to {target}")]
    return moves[0] if len(moves) == 1 else action


def _checked_game(game_file: str | os.PathLike[str], *, max_steps: int, perturb_prob: float) -> Path:
    """The game file of ``handcoded_expert_steps``, after checking its arguments (see its ``Raises``)."""
    if max_steps < 1:
        raise ValueError(f"max_steps: expected >= 1, got {max_steps}")
    if not 0.0 <= perturb_prob < 1.0:
        raise ValueError(f"perturb_prob: expected a probability in [0, 1), got {perturb_prob!r}")
    path = Path(game_file)
    if not (path.is_file() and (path.parent / "traj_data.json").is_file()):
        raise ValueError(f"game_file: expected a game.tw-pddl next to a traj_data.json, got {str(path)!r}")
    return path


def _expert_action(agent: Any, state: Any, last: str, admissible: Sequence[str], path: Path) -> str:
    """The expert's admissible command in ``state``, re-planned up to ``_REPLANS`` times after inadmissible ones.

    Raises:
        ValueError: the expert still proposes an inadmissible command (its own failures propagate as they are).
    """
    action = _held_object_move(str(agent.act(state, 0, state["won"], last)), admissible)
    for _ in range(_REPLANS):  # ALFWorld's wrapper would send "look" instead: re-plan, wasting no step
        if action in admissible:
            break
        _forget_target(agent.policy, action)
        action = str(agent.policy.act(state, "look"))  # "look" changes none of the expert's state
    if action not in admissible:
        raise ValueError(f"game_file: the hand-coded expert proposed {action!r}, not admissible, on {path}")
    return action


def handcoded_expert_steps(
    game_file: str | os.PathLike[str],
    *,
    max_steps: int = 30,
    seed: int = 0,
    perturb_prob: float = 0.0,
    executed: Sequence[str] | None = None,
) -> list[ExpertStep]:
    """Play the game with ALFWorld's hand-coded expert and record every decision.

    The expert is started as ``AlfredExpert`` does, except that its initial ``look`` (which ALFWorld's wrapper emits
    before the expert's first real command) is skipped: the expert observes the first observation and acts on it as if
    it had just looked, so no demonstration wastes a step. Where ALFWorld's wrapper replaces an inadmissible proposal
    by ``look``, the expert re-plans here instead (up to three times; an inadmissible ``go to X`` drops ``X`` from its
    search list). With ``perturb_prob > 0`` (DART-style noise) each step after
    the first executes, with that probability, a random admissible command instead of the expert's one; the record
    still holds the expert's command (how to recover), and the history holds the command actually executed.

    With ``executed`` (DAgger), step ``t`` runs ``executed[t]`` (say, the policy's own command) while the expert, which
    observes every step, labels the state with the command it would have taken. The episode ends when ``executed``
    is used up or the game is won; it need not be won, and where the expert gives up on a state the policy led it
    into, the records stop there (the states before it keep their labels).

    Args:
        game_file: a ``game.tw-pddl`` whose folder holds ``traj_data.json`` (the expert reads the task's parameters).
        max_steps: the expert must win within this many steps.
        seed: seeds the expert's own random choices (it picks among equivalent objects) and the perturbation.
        perturb_prob: probability of executing a random admissible command instead (in ``[0, 1)``).
        executed: the commands to execute, one per step (``max_steps`` and ``perturb_prob`` then do not apply).

    Returns:
        One record per step, in order.

    Raises:
        ValueError: bad arguments, or (without ``executed``) the expert does not win within ``max_steps`` (it fails on
            some games: it proposes a command that is not admissible, or runs out of subgoals).
    """
    from alfworld.agents.expert import HandCodedAgentFailed, HandCodedAgentTimeout, HandCodedTWAgent

    # Over 60 lines for its docstring (two modes, DART and DAgger); the body is one episode loop.
    path = _checked_game(game_file, max_steps=max_steps, perturb_prob=perturb_prob)
    rng = random.Random(seed)
    saved_state = random.getstate()  # the expert draws from the global `random`: seed it, then restore the caller's
    random.seed(seed)
    engine = start_engine(path, facts=True)
    try:
        state = engine.reset()
        observation = str(state.feedback)
        goal = parse_goal(observation)
        agent = HandCodedTWAgent(max_steps=max_steps + 1)
        agent.reset(str(path))
        agent.observe(observation)
        history: list[tuple[str, str]] = []
        out: list[ExpertStep] = []
        last = "look"
        for t in range(max_steps if executed is None else len(executed)):
            admissible = tuple(state["admissible_commands"])
            try:
                action = _expert_action(agent, state, last, admissible, path)
            except (HandCodedAgentFailed, HandCodedAgentTimeout, IndexError, KeyError, ValueError) as exc:
                if executed is not None:
                    return out  # DAgger: a state the expert cannot label ends the records, not the batch
                if isinstance(exc, ValueError):
                    raise
                raise ValueError(f"game_file: the hand-coded expert gave up on {path} ({type(exc).__name__})") from None
            out.append(ExpertStep(str(path), goal, tuple(history), observation, admissible, action))
            command = action if executed is None else executed[t]
            if executed is None and t > 0 and perturb_prob > 0 and rng.random() < perturb_prob:
                command = admissible[rng.randrange(len(admissible))]
            state, _, _ = engine.step(command)
            history.append((observation, command))
            observation, last = str(state.feedback), command
            if state["won"]:
                return out
        if executed is not None:
            return out
        raise ValueError(f"game_file: the hand-coded expert did not win {path} within {max_steps} steps")
    finally:
        engine.close()
        random.setstate(saved_state)


@dataclass(frozen=True)
class _BuildSpec:
    expert: str
    max_steps: int
    seed: int
    perturb_prob: float
    executed: tuple[str, ...] | None = None


def _build_one(args: tuple[str, _BuildSpec]) -> tuple[str, list[ExpertStep] | None]:
    game, spec = args
    try:
        if spec.expert == ExpertKind.WALKTHROUGH.value:
            return game, expert_steps(game)
        return game, handcoded_expert_steps(game, max_steps=spec.max_steps, seed=spec.seed,
                                            perturb_prob=spec.perturb_prob, executed=spec.executed)
    except ValueError:
        return game, None


def _run_jobs(
    jobs: list[tuple[str, _BuildSpec]], num_workers: int, progress: str | None = None
) -> list[tuple[str, list[ExpertStep] | None]]:
    """Play the jobs in order, in ``num_workers`` spawned processes (``1``: in this process).

    ``progress``: the phase's name for progress lines (counts, ETA; :class:`~rlanything_core.progress.Progress`), or
    ``None`` for none.
    """
    if num_workers < 1:
        raise ValueError(f"num_workers: expected >= 1, got {num_workers}")
    with Progress(len(jobs), progress or "", unit="games", enabled=progress is not None) as shown:
        if num_workers == 1 or len(jobs) < 2:
            played = (_build_one(job) for job in jobs)
            return [_shown(result, shown) for result in played]
        with multiprocessing.get_context("spawn").Pool(min(num_workers, len(jobs))) as pool:
            return [_shown(result, shown) for result in pool.imap(_build_one, jobs, chunksize=4)]


def _shown(result: tuple[str, list[ExpertStep] | None], progress: Progress) -> tuple[str, list[ExpertStep] | None]:
    progress.update()
    return result


def expert_labels(
    episodes: Sequence[tuple[str | os.PathLike[str], Sequence[str]]], *, seed: int = 0, num_workers: int = 1
) -> list[ExpertStep]:
    """DAgger: the hand-coded expert's command at every state of episodes some other agent played.

    Each episode is replayed (the engine is deterministic) with the expert watching (see ``executed`` in
    :func:`handcoded_expert_steps`), so the records carry the states the *agent* reached, each labelled with what
    the expert would do there: the recoveries a policy trained only on the expert's own states never sees.

    Args:
        episodes: ``(game file, the commands the agent executed)`` pairs, training split only.
        seed: episode ``k``'s expert uses ``seed + k`` (it breaks ties between equivalent objects at random).
        num_workers: processes replaying episodes in parallel.

    Returns:
        The records of every episode, in order (an episode contributes up to its first state the expert gives up on).
    """
    jobs = [(str(g), _BuildSpec(ExpertKind.HANDCODED.value, max(1, len(actions)), seed + k, 0.0, tuple(actions)))
            for k, (g, actions) in enumerate(episodes)]
    return [s for _, found in _run_jobs(jobs, num_workers) if found is not None for s in found]


def _step_from_json(s: dict[str, Any]) -> ExpertStep:
    return ExpertStep(s["game_file"], s["goal"], tuple((str(o), str(a)) for o, a in s["history"]), s["observation"],
                      tuple(s["admissible_actions"]), s["action"])


def load_or_build_expert_steps(
    games: Sequence[str | os.PathLike[str]],
    cache_file: str | os.PathLike[str],
    *,
    expert: ExpertKind | str = ExpertKind.WALKTHROUGH,
    max_steps: int = 30,
    seed: int = 0,
    perturb_prob: float = 0.0,
    num_workers: int = 1,
    progress: bool = False,
) -> list[ExpertStep]:
    """Expert steps of ``games``, cached as JSON (written atomically) so each game is played once.

    The cache is reused only when it was built for the same games and the same expert settings. Games the expert does
    not win are skipped (and listed under ``"skipped"`` in the cache).

    Args:
        games: the game files (training split only).
        cache_file: the JSON cache.
        expert: which expert.
        max_steps: see :func:`handcoded_expert_steps` (ignored by the walkthrough expert).
        seed: see :func:`handcoded_expert_steps`; game ``k`` uses ``seed + k``.
        perturb_prob: see :func:`handcoded_expert_steps`.
        num_workers: processes playing games in parallel (spawned; ``1``: in this process).
        progress: print progress lines (counts, ETA) while the games are played (not when the cache has them).

    Raises:
        ValueError: ``expert`` is not an :class:`ExpertKind`, or ``num_workers < 1``.
    """
    try:
        kind = ExpertKind(expert)
    except ValueError:
        raise ValueError(f"expert: expected one of {[k.value for k in ExpertKind]}, got {expert!r}") from None
    if num_workers < 1:  # checked before the cache, so a bad value fails even when nothing needs playing
        raise ValueError(f"num_workers: expected >= 1, got {num_workers}")
    cache = Path(cache_file)
    wanted = [str(g) for g in games]
    config = {"expert": kind.value, "max_steps": max_steps, "seed": seed, "perturb_prob": perturb_prob}
    if kind is ExpertKind.WALKTHROUGH:
        config = {"expert": kind.value}
    if cache.is_file():
        data = json.loads(cache.read_text())
        if data.get("games") == wanted and data.get("config", {"expert": "walkthrough"}) == config:
            return [_step_from_json(s) for s in data["steps"]]
    jobs = [(g, _BuildSpec(kind.value, max_steps, seed + k, perturb_prob)) for k, g in enumerate(wanted)]
    results = _run_jobs(jobs, num_workers, f"the {kind.value} expert's demonstrations" if progress else None)
    steps = [s for _, found in results if found is not None for s in found]
    skipped = [g for g, found in results if found is None]
    payload = {"games": wanted, "config": config, "skipped": skipped, "steps": [asdict(s) for s in steps]}
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_name(f".{cache.name}.{os.getpid()}.tmp")
    with open(tmp, "w") as fh:
        json.dump(payload, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, cache)
    return steps
