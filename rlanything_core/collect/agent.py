"""Agent rollouts: ``G`` rollouts per task, all live episodes batched into each model call.

The collector owns no maths: it plays episodes and records, per step, the prompt, the response, its token log-probs,
the action and the next observation (``records.Episode``). Environments come from an ``EpisodeRunner``: in-process
(``SequentialRunner``) or the worker-process pool of ``rlanything_core.envs.parallel``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tqdm.auto import tqdm

from rlanything_core.collect.action_selection import ActionSelector
from rlanything_core.collect.prompts import Messages, agent_messages
from rlanything_core.envs.protocols import AgentEnv, AgentObservation, StepResult
from rlanything_core.progress import Progress, heartbeat
from rlanything_core.records import AgentStep, Episode
from rlanything_core.seeding import derive_seed

__all__ = ["AgentCollector", "EpisodeRunner", "RolloutStats", "SequentialRunner"]


class EpisodeRunner(Protocol):
    """Hosts a batch of episodes: reset them all, then step the live ones."""

    def reset_all(self, tasks: Sequence[Any]) -> list[AgentObservation]:
        """Start one episode per task (tasks may repeat); episode ``i`` is ``tasks[i]``."""
        ...

    def step_all(self, actions: Sequence[str | None]) -> Sequence[StepResult | None]:
        """Step episode ``i`` with ``actions[i]``; ``None`` skips a finished episode (its entry is then unused)."""
        ...

    def close(self) -> None:
        """Release every episode."""
        ...


class SequentialRunner:
    """Episodes in this process, stepped one after another (tests, fast procedural games)."""

    def __init__(self, env_factory: Callable[[Any], AgentEnv]) -> None:
        self.env_factory = env_factory
        self._envs: list[AgentEnv] = []

    def reset_all(self, tasks: Sequence[Any]) -> list[AgentObservation]:
        """Build and reset one environment per task."""
        self.close()
        self._envs = [self.env_factory(t) for t in tasks]
        return [env.reset() for env in self._envs]

    def step_all(self, actions: Sequence[str | None]) -> list[StepResult | None]:
        """Step the episodes whose action is not ``None``."""
        return [None if a is None else env.step(a) for env, a in zip(self._envs, actions)]

    def close(self) -> None:
        """Close every environment."""
        for env in self._envs:
            env.close()
        self._envs = []


@dataclass
class RolloutStats:
    """Counters of one collection (logged as metrics)."""

    episodes: int = 0
    steps: int = 0
    won: int = 0
    action_parse_failures: int = 0
    env_failures: int = 0
    failure_reasons: dict[str, int] = field(default_factory=dict)
    model: dict[str, float] = field(default_factory=dict)
    """The policy backend's own counters of the collection (an encoder scorer: truncated states, cache hits)."""


@dataclass
class _Play:
    """The state of one ``AgentCollector.collect`` batch between steps (index ``i``: the ``i``-th episode)."""

    episodes: list[Episode]
    keys: list[tuple[int, int]]  # (group id, rollout index): the seed key of each episode
    observations: list[str]  # each episode's current observation
    admissible: list[list[str]]  # each episode's current admissible actions
    stats: RolloutStats
    live: list[int] = field(default_factory=list)  # the episodes still playing


class AgentCollector:
    """Play ``group_size`` rollouts of each task with a policy backend.

    Args:
        backend: the policy's generation backend (``generate`` / ``score_continuations``).
        runner: hosts the episodes.
        selector: how a response becomes an action.
        group_size: ``G`` rollouts per task.
        max_steps: step limit per episode (training 40, evaluation 60 in the paper).
        max_history_turns: turns of history rendered into each prompt.
        progress: show a progress bar over steps; a name (e.g. ``"evaluation"``): also a line every 2% of the step
            limit, with counts and ETA (:class:`~rlanything_core.progress.Progress`; evaluations take the longest).
        prompt_builder: renders a step's prompt, with :func:`~rlanything_core.collect.prompts.agent_messages`'s
            signature (text games by default; ``gui_agent_messages`` for web pages).
    """

    def __init__(
        self,
        backend: Any,
        runner: EpisodeRunner,
        selector: ActionSelector,
        *,
        group_size: int = 8,
        max_steps: int = 40,
        max_history_turns: int | None = 10,
        progress: bool | str = False,
        prompt_builder: Callable[..., Messages] = agent_messages,
    ) -> None:
        if group_size < 1:
            raise ValueError(f"group_size: expected >= 1, got {group_size}")
        if max_steps < 1:
            raise ValueError(f"max_steps: expected >= 1, got {max_steps}")
        self.backend = backend
        self.runner = runner
        self.selector = selector
        self.group_size = group_size
        self.max_steps = max_steps
        self.max_history_turns = max_history_turns
        self.progress = progress
        self.prompt_builder = prompt_builder

    def collect(
        self,
        tasks: Sequence[Any],
        *,
        seed: int,
        task_ids: Sequence[str] | None = None,
        group_ids: Sequence[int] | None = None,
    ) -> tuple[list[Episode], RolloutStats]:
        """Roll out every task ``group_size`` times.

        Args:
            tasks: what the runner's environments are built from (game files, specs).
            seed: run/iteration seed. Rollout ``j`` of group ``g`` at step ``t`` samples with
                ``derive_seed(seed, g, j, t)``, so an episode does not depend on what else is in the batch (the same
                groups split over several ranks play exactly as on one process).
            task_ids: names recorded on the episodes (default ``str(task)``).
            group_ids: the group id of each task (default ``0..len(tasks)-1``).
        """
        ids = [str(t) for t in tasks] if task_ids is None else list(task_ids)
        groups = list(range(len(tasks))) if group_ids is None else list(group_ids)
        if len(ids) != len(tasks):
            raise ValueError(f"task_ids: expected {len(tasks)} ids, got {len(ids)}")
        if len(groups) != len(tasks):
            raise ValueError(f"group_ids: expected {len(tasks)} ids, got {len(groups)}")
        named = isinstance(self.progress, str)
        resetting = f"{self.progress} ({len(tasks) * self.group_size} episodes): resetting the environments"
        with heartbeat(resetting, enabled=named):  # ALFWorld: about a second a game, minutes for a whole split
            play = self._reset(tasks, ids, groups)
        bar: Progress | Any
        if named:
            what = f"{self.progress} ({len(play.episodes)} episodes)"
            bar = Progress(self.max_steps, what, unit="steps", log_every=2)
        else:
            bar = tqdm(total=self.max_steps, desc="rollout steps", disable=not self.progress, leave=False)
        for t in range(self.max_steps):
            if not play.live:
                break
            seeds = [derive_seed(seed, *play.keys[i], t) for i in play.live]
            picks = self.selector.select(
                self.backend, self._prompts(play), [play.admissible[i] for i in play.live], seeds=seeds
            )
            actions: list[str | None] = [None] * len(play.episodes)
            for i, pick in zip(play.live, picks):
                actions[i] = pick.action
            self._record(play, picks, self.runner.step_all(actions))
            bar.update(1)
        bar.close()
        play.stats.won = sum(e.won for e in play.episodes)
        pop_stats = getattr(self.backend, "pop_stats", None)
        play.stats.model = dict(pop_stats()) if callable(pop_stats) else {}
        return play.episodes, play.stats

    def _reset(self, tasks: Sequence[Any], ids: list[str], groups: list[int]) -> _Play:
        """Start ``group_size`` episodes per task; those with a failed reset or no admissible action end at once."""
        flat = [t for t in tasks for _ in range(self.group_size)]
        episodes = [
            Episode(task_id=ids[k], group_id=groups[k], goal="")
            for k in range(len(tasks))
            for _ in range(self.group_size)
        ]
        keys = [(groups[k], j) for k in range(len(tasks)) for j in range(self.group_size)]
        first = self.runner.reset_all(flat)
        play = _Play(
            episodes=episodes,
            keys=keys,
            observations=[o.observation for o in first],
            admissible=[list(o.admissible_actions) for o in first],
            stats=RolloutStats(episodes=len(episodes)),
        )
        for i, obs in enumerate(first):
            episodes[i].goal = obs.goal
            if obs.failure_reason is not None:
                episodes[i].failure_reason = obs.failure_reason
            elif play.admissible[i]:
                play.live.append(i)
            else:
                episodes[i].failure_reason = "no_admissible_actions"
        return play

    def _prompts(self, play: _Play) -> list[Any]:
        """The selector's input for every live episode.

        A selector that reads its own state text (an encoder scorer) renders it; the others get the chat prompt.
        """
        render_state = getattr(self.selector, "render_state", None)
        prompts = []
        for i in play.live:
            history = [(s.observation, s.action) for s in play.episodes[i].steps]
            if render_state is not None:
                prompts.append(render_state(play.episodes[i].goal, history, play.observations[i]))
                continue
            prompts.append(
                self.prompt_builder(
                    play.episodes[i].goal,
                    history,
                    play.observations[i],
                    play.admissible[i],
                    max_history_turns=self.max_history_turns,
                    boxed_answer=self.selector.boxed_answer,
                )
            )
        return prompts

    @staticmethod
    def _record(play: _Play, picks: Sequence[Any], results: Sequence[Any]) -> None:
        """Append each live episode's step, count it, and keep the episodes that go on live."""
        stats = play.stats
        still_live = []
        for i, pick in zip(play.live, picks):
            res = results[i]
            assert res is not None
            play.episodes[i].steps.append(
                AgentStep(
                    observation=play.observations[i],
                    admissible_actions=play.admissible[i],
                    prompt_token_ids=pick.prompt_token_ids,
                    token_ids=pick.token_ids,
                    logprobs=pick.logprobs,
                    response=pick.response,
                    action=pick.action,
                    action_parse_failed=pick.parse_failed,
                    next_observation=res.observation,
                )
            )
            stats.steps += 1
            stats.action_parse_failures += int(pick.parse_failed)
            if res.failure_reason is not None:
                play.episodes[i].failure_reason = res.failure_reason
                stats.env_failures += 1
                stats.failure_reasons[res.failure_reason] = stats.failure_reasons.get(res.failure_reason, 0) + 1
            elif res.won:
                play.episodes[i].won = True
            elif not res.done and res.admissible_actions:
                play.observations[i], play.admissible[i] = res.observation, list(res.admissible_actions)
                still_live.append(i)
            elif not res.done:  # nothing left to choose from: the episode ends, failed, with its reason
                play.episodes[i].failure_reason = "no_admissible_actions"
                reasons = stats.failure_reasons
                reasons["no_admissible_actions"] = reasons.get("no_admissible_actions", 0) + 1
        play.live = still_live
