"""Worker processes owning browsers: a crashed or hung browser ends only its episode, nothing is left behind."""

from __future__ import annotations

from collections.abc import Iterator

import psutil
import pytest

from rlanything_core.envs.miniwob.tasks import MiniwobTaskSpec

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pool(browser_tag: str) -> Iterator[object]:
    from rlanything_core.envs.miniwob.browser import tagged_browser_pids
    from rlanything_core.envs.miniwob.env import MiniwobEnvFactory
    from rlanything_core.envs.miniwob.pool import BrowserEnvPool

    p = BrowserEnvPool(MiniwobEnvFactory(max_steps=5), num_workers=2, step_timeout_s=10, reset_timeout_s=120)
    yield p
    workers = p.worker_pids()
    p.close()
    assert tagged_browser_pids(browser_tag) == [], "the pool left browsers behind"
    import tempfile
    from pathlib import Path

    assert not [f for w in workers for f in Path(tempfile.gettempdir()).glob(f"rlanything-browser-*-{w}-*")]


def browsers_of(worker_pid: int) -> list[psutil.Process]:
    return [c for c in psutil.Process(worker_pid).children(recursive=True) if c.name() == "chromium"]


SPECS = [MiniwobTaskSpec("click-button", seed=s) for s in range(4)]  # episode i lives on worker i % 2


def solve(obs: object) -> str:
    target = obs.goal.split('"')[1]
    return next(a for a in obs.admissible_actions if "button" in a and f'"{target}"' in a)


def test_a_batch_plays_on_worker_processes(pool: object) -> None:
    first = pool.reset_all(SPECS)
    assert all(o.failure_reason is None and o.screenshot is not None for o in first)
    results = pool.step_all([solve(o) for o in first])
    assert all(r.done and r.won and r.reward == 1.0 for r in results)
    assert all(browsers_of(pid) for pid in pool.worker_pids()), "each worker runs its own browsers"


def test_a_crashed_browser_ends_its_episode_only(pool: object) -> None:
    first = pool.reset_all(SPECS)
    for proc in browsers_of(pool.worker_pids()[0]):
        proc.kill()  # the browsers of worker 0 crash: episodes 0 and 2
    results = pool.step_all([solve(o) for o in first])
    assert [r.won for r in results] == [False, True, False, True]
    assert all(results[i].failure_reason.startswith("env_error: RuntimeError: browser_error") for i in (0, 2))
    again = pool.reset_all(SPECS)  # the worker replaced its browsers
    assert all(o.failure_reason is None for o in again)
    assert all(r.won for r in pool.step_all([solve(o) for o in again]))


def test_a_hung_browser_restarts_its_worker_and_the_batch_goes_on(pool: object) -> None:
    first = pool.reset_all(SPECS)
    restarts = pool.restarts
    hung_worker = pool.worker_pids()[1]
    stopped = browsers_of(hung_worker)
    for proc in stopped:
        proc.suspend()  # SIGSTOP: the browser of episode 1 (and 3) stops answering
    results = pool.step_all([solve(o) for o in first])
    assert results[1].failure_reason == "worker_timeout" and not results[1].won
    assert results[0].won and results[2].won
    assert results[3].won  # replayed on the restarted worker, then stepped
    assert pool.restarts == restarts + 1 and hung_worker not in pool.worker_pids()
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in stopped), "killed with its worker"
