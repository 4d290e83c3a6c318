import pytest

from rlanything_core.envs.textworld_games import (
    TextWorldChallenge,
    TextWorldEnv,
    TextWorldEnvFactory,
    TextWorldSpec,
    generate_game,
)

pytestmark = pytest.mark.slow

COIN = TextWorldSpec(TextWorldChallenge.COIN_COLLECTOR, level=3, seed=1)
CUSTOM = TextWorldSpec("custom", seed=2, world_size=3, nb_objects=4, quest_length=3)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.getbasetemp() / "textworld-cache"


def test_spec_validation_and_keys():
    assert COIN.key == "coin_collector-l3-s1" and CUSTOM.key == "custom-w3-o4-q3-s2"
    assert CUSTOM.challenge is TextWorldChallenge.CUSTOM
    with pytest.raises(ValueError, match="level"):
        TextWorldSpec("treasure_hunter", level=31)
    with pytest.raises(ValueError, match="challenge"):
        TextWorldSpec("zork")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="quest_length"):
        TextWorldSpec("custom", quest_length=0)


def test_generation_is_deterministic_and_cached(cache, tmp_path):
    first = generate_game(COIN, cache)
    assert first.name == "coin_collector-l3-s1.z8" and first.with_suffix(".json").is_file()
    mtime = first.stat().st_mtime_ns
    assert generate_game(COIN, cache) == first and first.stat().st_mtime_ns == mtime  # cache hit
    again = generate_game(COIN, tmp_path)  # a fresh cache: same bytes from the same seed
    assert again.read_bytes() == first.read_bytes()
    assert not [p for p in cache.iterdir() if p.name.startswith(".")]  # no temp leftovers


@pytest.mark.parametrize("spec", [COIN, CUSTOM], ids=["coin_collector", "custom"])
def test_walkthrough_wins_through_the_agent_env_protocol(cache, spec):
    env = TextWorldEnvFactory(cache_dir=str(cache))(spec)
    obs = env.reset()
    assert obs.goal and obs.admissible_actions and env.walkthrough
    results = [env.step(a) for a in env.walkthrough]
    assert results[-1].won and results[-1].done and not any(r.done for r in results[:-1])
    with pytest.raises(ValueError, match="reset"):
        env.step("look")
    env.close()


def test_step_limit_and_nonsense(cache):
    env = TextWorldEnv(COIN, max_episode_steps=3, cache_dir=cache)
    env.reset()
    results = [env.step(a) for a in ("dance", "look", "inventory")]
    assert [r.done for r in results] == [False, False, True]
    assert results[-1].truncated and not results[-1].won
