import os
import random
import signal

import pytest
from _alfworld_fixtures import CD, PENCIL, SOAP, SPRAY, game, walkthrough
from _faulty_env import DIE, HANG, RAISE, FaultyFactory

from rlanything_core.envs.alfworld import AlfworldEnv, AlfworldEnvFactory
from rlanything_core.envs.parallel import WORKER_CRASH, WORKER_TIMEOUT, EnvPool
from rlanything_core.envs.textworld_games import TextWorldEnv, TextWorldEnvFactory, TextWorldSpec

pytestmark = pytest.mark.slow


def _sequential_script(games, rounds, seed, first_actions=None):
    """Play each game in-process with seeded random admissible actions; return (actions per round, results)."""
    rng = random.Random(seed)
    envs = [AlfworldEnv(g) for g in games]
    obs = [e.reset() for e in envs]
    admissible = [o.admissible_actions for o in obs]
    script, results = [], []
    for t in range(rounds):
        actions = []
        for i, a in enumerate(admissible):
            if not a:
                actions.append(None)
            elif first_actions and i in first_actions and t < len(first_actions[i]):
                actions.append(first_actions[i][t])
            else:
                actions.append(rng.choice(a))
        res = [e.step(a) if a is not None else None for e, a in zip(envs, actions)]
        script.append(actions)
        results.append(res)
        admissible = [r.admissible_actions if r is not None and not r.done else () for r in res]
    for e in envs:
        e.close()
    return obs, script, results


@pytest.fixture(scope="module")
def pool():
    with EnvPool(AlfworldEnvFactory(), num_workers=2, step_timeout_s=60) as p:
        yield p


@pytest.mark.alfworld
def test_two_workers_return_what_sequential_play_returns(pool):
    games = [game(PENCIL), game(CD), game(SPRAY)]
    wins = {0: walkthrough(games[0])}
    obs, script, expected = _sequential_script(games, rounds=6, seed=0, first_actions=wins)
    assert pool.reset_all(games) == obs
    assert [pool.worker_of(i) for i in range(3)] == [0, 1, 0]
    for actions, exp in zip(script, expected):
        got = pool.step_all(actions)
        for g, e in zip(got, exp):
            if e is not None:
                assert g == e
    assert got[0].won and got[0].done  # finished episode repeats its final result
    with pytest.raises(ValueError, match="one entry per episode"):
        pool.step_all(["look"])
    with pytest.raises(ValueError, match=r"actions\[1\]"):
        pool.step_all([None, None, "look"])


@pytest.mark.alfworld
def test_killed_worker_ends_its_episode_and_the_others_go_on(pool):
    games = [game(PENCIL), game(CD), game(SPRAY), game(SOAP)]
    obs, script, expected = _sequential_script(games, rounds=3, seed=1)
    pool.reset_all(games)
    assert pool.step_all(script[0]) == expected[0]
    victim = pool.worker_pids()[1]  # hosts episodes 1 and 3
    restarts = pool.restarts
    os.kill(victim, signal.SIGKILL)
    second = pool.step_all(script[1])
    assert second[1].failure_reason == WORKER_CRASH and second[1].done and not second[1].won
    assert [second[i] for i in (0, 2, 3)] == [expected[1][i] for i in (0, 2, 3)]  # episode 3 was rebuilt
    assert pool.restarts == restarts + 1 and pool.worker_pids()[1] != victim
    third = pool.step_all(script[2])
    assert third[1] == second[1]
    assert [third[i] for i in (0, 2, 3)] == [expected[2][i] for i in (0, 2, 3)]


def test_hang_engine_error_and_mid_batch_death_fail_only_their_episodes(tmp_path):
    cache = str(tmp_path)
    specs = [TextWorldSpec("coin_collector", level=4, seed=s) for s in range(5)]
    ref = [TextWorldEnv(s, cache_dir=cache) for s in specs]
    first = [e.reset() for e in ref]
    factory = FaultyFactory(TextWorldEnvFactory(cache_dir=cache))
    with EnvPool(factory, num_workers=2, step_timeout_s=5) as p:
        assert p.reset_all(specs) == first
        step1 = [e.walkthrough[0] for e in ref]
        assert p.step_all(step1) == [e.step(a) for e, a in zip(ref, step1)]
        # worker 0 hosts episodes 0, 2, 4; worker 1 hosts 1, 3. Episode 2 must be rebuilt after 0 hangs (its
        # worker is killed and restarted), episode 3 after 1 kills its worker.
        step2 = [HANG, DIE, ref[2].walkthrough[1], ref[3].walkthrough[1], RAISE]
        got = p.step_all(step2)
        assert got[0].failure_reason == WORKER_TIMEOUT
        assert got[1].failure_reason == WORKER_CRASH
        assert got[4].failure_reason is not None and got[4].failure_reason.startswith("env_error: RuntimeError")
        assert all(got[i].done and not got[i].won for i in (0, 1, 4))
        assert [got[i] for i in (2, 3)] == [ref[i].step(step2[i]) for i in (2, 3)]
        step3 = [None, None, ref[2].walkthrough[2], ref[3].walkthrough[2], None]
        got3 = p.step_all(step3)
        assert [got3[i] for i in (2, 3)] == [ref[i].step(step3[i]) for i in (2, 3)]
        assert got3[0] == got[0] and got3[1] == got[1] and got3[4] == got[4]
        assert p.restarts == 2
