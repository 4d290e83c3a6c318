"""Step many text-game episodes at once over worker processes, surviving crashed or hung workers.

A pool of ``num_workers`` processes hosts the episodes (episode ``i`` lives on worker ``i % num_workers``). The batch
API is :meth:`EnvPool.reset_all` then :meth:`EnvPool.step_all`; each worker runs its share sequentially and streams
one answer per episode, so when a worker dies (``"worker_crash"``) or stops answering (``"worker_timeout"``), the
parent knows which episode it was running: that episode ends as failed, the worker is restarted, and the other
episodes it hosted are rebuilt by replaying their actions (the engines are deterministic), so the batch goes on.
An exception raised by the engine ends only its episode (``"env_error: ..."``).

The pool is generic over a picklable ``env_factory(game) -> AgentEnv`` (e.g.
:class:`~rlanything_core.envs.alfworld.env.AlfworldEnvFactory`, :class:`~rlanything_core.envs.textworld_games.
TextWorldEnvFactory`). Workers are started with ``spawn`` by default: scripts using the pool need the usual
``if __name__ == "__main__":`` guard.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any, ClassVar

from rlanything_core.envs.protocols import AgentEnv, AgentObservation, StepResult

__all__ = ["WORKER_CRASH", "WORKER_TIMEOUT", "EnvPool"]

WORKER_CRASH = "worker_crash"
WORKER_TIMEOUT = "worker_timeout"


def _worker_main(conn: Connection, env_factory: Callable[[Any], AgentEnv]) -> None:
    """Worker loop: host env instances by episode index; answer one message per item, in order."""
    envs: dict[int, AgentEnv] = {}
    while True:
        try:
            kind, items = conn.recv()
        except EOFError:
            return
        if kind == "close":
            return
        if kind == "clear":
            for env in envs.values():
                _quiet_close(env)
            envs.clear()
            conn.send(("ok", -1, None))
            continue
        for item in items:
            slot = item[0]
            try:
                if kind == "reset":
                    envs[slot] = env_factory(item[1])
                    payload: Any = envs[slot].reset()
                elif kind == "restore":
                    envs[slot] = env_factory(item[1])
                    envs[slot].reset()
                    for action in item[2]:
                        envs[slot].step(action)
                    payload = None
                else:  # "step"
                    payload = envs[slot].step(item[1])
                conn.send(("ok", slot, payload))
            except Exception as exc:  # noqa: BLE001 - an engine error ends that episode only
                envs.pop(slot, None)
                conn.send(("err", slot, f"env_error: {type(exc).__name__}: {exc}"[:500]))


def _quiet_close(env: AgentEnv) -> None:
    try:
        env.close()
    except Exception:  # noqa: BLE001
        pass


@dataclass
class _Episode:
    game: Any
    worker: int
    actions: list[str] = field(default_factory=list)
    final: StepResult | None = None  # set once the episode is over (done or failed)


@dataclass
class _Worker:
    process: Any
    conn: Connection


@dataclass
class _Round:
    """One dispatch of one kind of message: what each worker still owes, by when, and the answers so far.

    A restart in the middle of a round rebuilds the worker's episodes in a nested round of its own (``restore``),
    then resends this round's remaining items; the state travels as this one object.
    """

    kind: str  # "clear" | "reset" | "restore" | "step"
    timeout_s: float  # how long a worker may take for one item
    actions: Sequence[str | None] | None  # the step's actions (recorded on each episode once answered)
    pending: dict[int, list[tuple[Any, ...]]]  # worker -> items sent and not answered yet, in order
    deadline: dict[int, float] = field(default_factory=dict)  # worker -> monotonic time its next answer is due
    answers: dict[int, tuple[bool, Any]] = field(default_factory=dict)  # episode -> (ok, payload or reason)


class EnvPool:
    """A pool of worker processes stepping a batch of episodes.

    Args:
        env_factory: picklable ``game -> AgentEnv``.
        num_workers: number of worker processes.
        step_timeout_s: a worker that gives no answer for one episode's step within this time is killed.
        reset_timeout_s: the same for a reset (includes engine start; a fresh worker also imports the engine).
        start_method: multiprocessing start method (``"spawn"`` is safe with threads and C extensions).

    Example:
        >>> with EnvPool(AlfworldEnvFactory(), num_workers=2) as pool:  # doctest: +SKIP
        ...     obs = pool.reset_all(games)
        ...     results = pool.step_all([o.admissible_actions[0] for o in obs])
    """

    # What each worker process runs; a subclass wraps it (BrowserEnvPool: in a session of its own). A module-level
    # function, so that it pickles for "spawn".
    _worker_loop: ClassVar[staticmethod[[Connection, Callable[[Any], AgentEnv]], None]] = staticmethod(_worker_main)

    def __init__(
        self,
        env_factory: Callable[[Any], AgentEnv],
        *,
        num_workers: int = 2,
        step_timeout_s: float = 60.0,
        reset_timeout_s: float = 180.0,
        start_method: str = "spawn",
    ) -> None:
        if num_workers < 1:
            raise ValueError(f"num_workers must be >= 1, got {num_workers}")
        if step_timeout_s <= 0 or reset_timeout_s <= 0:
            raise ValueError(f"timeouts must be > 0, got step={step_timeout_s}, reset={reset_timeout_s}")
        self._factory = env_factory
        self._ctx: Any = mp.get_context(start_method)
        self.num_workers = num_workers
        self.step_timeout_s = step_timeout_s
        self.reset_timeout_s = reset_timeout_s
        self._workers: list[_Worker] = [self._start_worker() for _ in range(num_workers)]
        self._episodes: list[_Episode] = []
        self.restarts = 0

    # ------------------------------------------------------------------ workers
    def _start_worker(self) -> _Worker:
        parent, child = self._ctx.Pipe(duplex=True)
        process = self._ctx.Process(target=self._worker_loop, args=(child, self._factory), daemon=True)
        process.start()
        child.close()
        return _Worker(process=process, conn=parent)

    def _stop_worker(self, w: int) -> None:
        worker = self._workers[w]
        if worker.process.is_alive():
            worker.process.kill()
        worker.process.join(timeout=10)
        worker.conn.close()

    def worker_pids(self) -> list[int]:
        """Process ids of the workers (for monitoring, or tests that kill one)."""
        return [int(w.process.pid) for w in self._workers]

    def worker_of(self, episode: int) -> int:
        """Index of the worker hosting ``episode``."""
        return self._episodes[episode].worker

    @property
    def num_episodes(self) -> int:
        """Episodes of the current batch."""
        return len(self._episodes)

    # ------------------------------------------------------------------ batch API
    def reset_all(self, games: Sequence[Any]) -> list[AgentObservation]:
        """Start one episode per game (ending the previous batch).

        Args:
            games: what ``env_factory`` takes (ALFWorld: :class:`AlfworldGame` or a game-file path).

        Returns:
            One observation per game; a failed start has ``failure_reason`` set and empty texts.
        """
        self._dispatch("clear", {w: [(-1,)] for w in range(self.num_workers)}, self.reset_timeout_s)
        self._episodes = [_Episode(game=g, worker=i % self.num_workers) for i, g in enumerate(games)]
        jobs: dict[int, list[tuple[Any, ...]]] = {w: [] for w in range(self.num_workers)}
        for i, ep in enumerate(self._episodes):
            jobs[ep.worker].append((i, ep.game))
        answers = self._dispatch("reset", jobs, self.reset_timeout_s)
        out: list[AgentObservation] = []
        for i, ep in enumerate(self._episodes):
            ok, payload = answers[i]
            if ok:
                out.append(payload)
            else:
                ep.final = StepResult("", (), done=True, won=False, failure_reason=payload)
                out.append(AgentObservation("", "", (), failure_reason=payload))
        return out

    def step_all(self, actions: Sequence[str | None]) -> list[StepResult]:
        """Apply one action per episode; finished episodes ignore theirs and repeat their final result.

        Args:
            actions: one command per episode (``None`` allowed only for finished episodes).

        Returns:
            One :class:`StepResult` per episode.

        Raises:
            ValueError: wrong number of actions, or ``None``/non-string for a running episode.
        """
        if len(actions) != len(self._episodes):
            raise ValueError(f"actions must have one entry per episode ({len(self._episodes)}), got {len(actions)}")
        jobs: dict[int, list[tuple[Any, ...]]] = {w: [] for w in range(self.num_workers)}
        for i, (ep, action) in enumerate(zip(self._episodes, actions)):
            if ep.final is None:
                if not isinstance(action, str):
                    raise ValueError(f"actions[{i}] must be a str for a running episode, got {action!r}")
                jobs[ep.worker].append((i, action))
        answers = self._dispatch("step", jobs, self.step_timeout_s, actions=actions)
        out: list[StepResult] = []
        for i, ep in enumerate(self._episodes):
            if ep.final is not None and i not in answers:
                out.append(ep.final)
                continue
            ok, payload = answers[i]
            result = payload if ok else StepResult("", (), done=True, won=False, failure_reason=payload)
            if result.done:
                ep.final = result
            out.append(result)
        return out

    # ------------------------------------------------------------------ machinery
    def _dispatch(
        self,
        kind: str,
        jobs: dict[int, list[tuple[Any, ...]]],
        timeout_s: float,
        *,
        actions: Sequence[str | None] | None = None,
    ) -> dict[int, tuple[bool, Any]]:
        """Send each worker its items; collect one answer per item, handling crashes and timeouts."""
        rnd = _Round(kind, timeout_s, actions, pending={w: list(items) for w, items in jobs.items() if items})
        for w in list(rnd.pending):
            self._send(w, rnd)
        while rnd.pending:
            now = time.monotonic()
            waits: dict[Any, int] = {}
            for w in rnd.pending:
                waits[self._workers[w].conn] = w
                waits[self._workers[w].process.sentinel] = w
            ready = wait(list(waits), timeout=max(0.0, min(rnd.deadline[w] for w in rnd.pending) - now))
            for obj in ready:
                w = waits[obj]
                current = self._workers[w]
                if w not in rnd.pending or (obj is not current.conn and obj != current.process.sentinel):
                    continue  # stale: that worker was restarted while handling another ready object
                conn = current.conn
                try:
                    if not conn.poll():
                        raise EOFError  # the sentinel fired: the process is gone
                    status, slot, payload = conn.recv()
                except (EOFError, OSError):
                    self._fail_worker(w, WORKER_CRASH, rnd)
                    continue
                expected = rnd.pending[w].pop(0)
                if slot != expected[0]:  # a protocol error is a crash of that worker
                    rnd.pending[w].insert(0, expected)
                    self._fail_worker(w, WORKER_CRASH, rnd)
                    continue
                rnd.answers[slot] = (status == "ok", payload)
                if kind == "step" and status == "ok" and actions is not None:
                    self._episodes[slot].actions.append(str(actions[slot]))
                if status != "ok" and slot >= 0:
                    self._episodes[slot].final = StepResult("", (), True, False, failure_reason=payload)
                rnd.deadline[w] = time.monotonic() + timeout_s
                if not rnd.pending[w]:
                    del rnd.pending[w]
            now = time.monotonic()
            for w in [w for w in rnd.pending if rnd.deadline[w] <= now and not self._workers[w].conn.poll()]:
                self._fail_worker(w, WORKER_TIMEOUT, rnd)
        return rnd.answers

    def _send(self, w: int, rnd: _Round) -> None:
        try:
            self._workers[w].conn.send((rnd.kind, rnd.pending[w]))
            rnd.deadline[w] = time.monotonic() + rnd.timeout_s
        except (BrokenPipeError, OSError):
            self._fail_worker(w, WORKER_CRASH, rnd)

    def _fail_worker(self, w: int, reason: str, rnd: _Round) -> None:
        """Blame the in-flight item of worker ``w``, restart it, rebuild its other episodes, resend the rest."""
        items = rnd.pending.pop(w, [])
        rnd.deadline.pop(w, None)
        blamed = items[0][0] if items else None
        if blamed is not None and blamed >= 0:
            rnd.answers[blamed] = (False, reason)
            self._episodes[blamed].final = StepResult("", (), True, False, failure_reason=reason)
        self._stop_worker(w)
        self._workers[w] = self._start_worker()
        self.restarts += 1
        if rnd.kind in ("clear", "restore"):
            return
        rest = [item for item in items[1:]]
        # Rebuild the surviving episodes hosted here: those already started (not waiting for their reset).
        waiting_reset = {item[0] for item in rest} if rnd.kind == "reset" else set()
        survivors = [
            (i, ep.game, list(ep.actions))
            for i, ep in enumerate(self._episodes)
            if ep.worker == w and ep.final is None and i != blamed and i not in waiting_reset
        ]
        if survivors:
            budget = self.reset_timeout_s + self.step_timeout_s * sum(len(s[2]) for s in survivors)
            restored = self._dispatch("restore", {w: survivors}, budget)
            for slot, _, _ in survivors:  # not rebuilt (its replay failed, or a crash cut the replay short): over
                ok, payload = restored.get(slot, (False, WORKER_CRASH))
                if not ok:
                    rnd.answers[slot] = (False, payload)
                    self._episodes[slot].final = StepResult("", (), True, False, failure_reason=payload)
            rest = [item for item in rest if self._episodes[item[0]].final is None]
        if rest:
            rnd.pending[w] = rest
            self._send(w, rnd)

    def close(self) -> None:
        """Stop the workers."""
        for w, worker in enumerate(self._workers):
            try:
                worker.conn.send(("close", []))
            except (BrokenPipeError, OSError):
                pass
            worker.process.join(timeout=5)
            self._stop_worker(w)
        self._workers = []

    def __enter__(self) -> EnvPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
