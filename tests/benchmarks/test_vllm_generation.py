"""The generation benchmark's workload and report (the timed run on both backends: test_vllm_backend.py)."""

import json
import os
import sys
from pathlib import Path

import pytest

from benchmarks.vllm_generation import (
    BenchResult,
    SideResult,
    bench_tokens_per_s,
    format_table,
    rollout_prompts,
)
from benchmarks.vllm_worker import WorkerProcess

REPO = Path(__file__).resolve().parents[2]  # `benchmarks` is imported from the repository root


def test_rollout_prompts_share_a_prefix_within_each_group() -> None:
    prompts = rollout_prompts(16, group_size=4, step=2)
    assert prompts == rollout_prompts(16, group_size=4, step=2)  # deterministic
    texts = [p[-1]["content"] for p in prompts]
    for group in range(4):
        members = texts[4 * group : 4 * group + 4]
        assert len(set(members)) == 4  # rollouts differ ...
        assert "Your task is to" in os.path.commonprefix(members)  # ... after a shared goal
        assert all(m.count("you took action:") == 2 for m in members)  # lockstep: same step
    assert len({t.split("\n")[1] for t in texts}) == 4  # one goal per task


def test_first_step_prompts_are_identical_within_a_group() -> None:
    texts = [p[-1]["content"] for p in rollout_prompts(8, group_size=4, step=0)]
    assert "you took action" not in texts[0]
    assert len(set(texts[:4])) == len(set(texts[4:])) == 1 and texts[0] != texts[4]


def side(name: str, seconds: tuple[float, ...]) -> SideResult:
    return SideResult(name, seconds, tuple(s * 2 for s in seconds), prompts=32, prompt_tokens=8000,
                      generated_tokens=2048, threads=2, torch_threads=2, start_s=3.0, first_call_s=9.0)


def test_ratio_uses_median_rounds_and_the_table_shows_both_sides() -> None:
    result = BenchResult(hf=side("transformers", (4.0, 100.0, 5.0)), vllm=side("vllm", (2.0, 2.5, 50.0)))
    assert result.hf.tokens_per_s == 2048 / 5.0 and result.vllm.tokens_per_s == 2048 / 2.5
    assert result.ratio == 2.0
    assert result.round_ratios == (2.0, 40.0, 0.1)
    table = format_table(result)
    assert "transformers" in table and "vllm" in table and "2.00" in table.splitlines()[-1]
    assert result.hf.cores_used == 2.0


def test_bad_arguments_raise_naming_them() -> None:
    with pytest.raises(ValueError, match="rounds"):
        bench_tokens_per_s(rollout_prompts(2), 4, rounds=0)
    with pytest.raises(ValueError, match="threads"):
        bench_tokens_per_s(rollout_prompts(2), 4, threads=0)
    with pytest.raises(ValueError, match="dtype"):
        bench_tokens_per_s(rollout_prompts(2), 4, dtype="float16")
    with pytest.raises(ValueError, match="group_size"):
        rollout_prompts(4, group_size=0)


@pytest.mark.smollm2
@pytest.mark.slow
def test_transformers_worker_answers_timed_rounds(tmp_path) -> None:
    """One side alone, over the worker protocol: ready after a warm-up, then one message per ``run``."""
    from rlanything_core.generation.prompts import render_prompt
    from rlanything_core.models.smollm2 import load_smollm2_tokenizer, smollm2_path

    tokenizer = load_smollm2_tokenizer()
    prompt_ids = [render_prompt(tokenizer, p) for p in rollout_prompts(3, group_size=2, step=1)]
    (tmp_path / "prompts.json").write_text(json.dumps(prompt_ids))
    cmd = [sys.executable, "-m", "benchmarks.vllm_worker", "transformers", "--model",
           str(smollm2_path()), "--prompts", str(tmp_path / "prompts.json"), "--max-new-tokens", "4", "--threads", "1"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p))
    worker = WorkerProcess("transformers", cmd, env, str(tmp_path), 300.0, tmp_path)  # runs in tmp_path
    try:
        ready = worker.receive()
        assert ready["event"] == "ready" and ready["torch_threads"] == 1 and ready["first_call_s"] > 0
        for _ in range(2):
            answer = worker.run_round()
            assert answer["prompts"] == 3 and answer["generated_tokens"] == 12
            assert answer["prompt_tokens"] == sum(map(len, prompt_ids)) and answer["seconds"] > 0
    finally:
        worker.close()
    assert worker.proc.returncode == 0 and (tmp_path / "transformers.log").is_file()
