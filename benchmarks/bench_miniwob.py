"""Per-step costs of the GUI setting and the zero-shot success of the CPU policy per task family, on real pages.

    python -m benchmarks.bench_miniwob [--seeds 1] [--group 2] [--max-steps 8] [--workers 2]

Plays every curated page (``--seeds`` problem seeds, ``--group`` rollouts each) with the tiny policy of the CPU
config (likelihood scoring of the DOM-derived candidates, mean per-token log-likelihood, T=1, no DONE candidate) in
a ``BrowserEnvPool``, lets the tiny judge vote ``m=3`` times on every step, and prints:

- the median cost of a reset (per episode), an environment step (per live episode, click or type), a policy
  decision (per step, scoring all candidates) and a judge vote set (per step, m votes), all measured in this run;
- the success rate and mean steps per task family (``won`` = the page checker's raw reward > 0).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from typing import Any

import torch

from rlanything_core.collect.action_selection import LikelihoodSelector
from rlanything_core.collect.agent import AgentCollector
from rlanything_core.collect.gui_prompts import gui_agent_messages, gui_judge_messages
from rlanything_core.collect.judge import JudgeCollector, ScoredVotes
from rlanything_core.envs.miniwob.env import MiniwobEnvFactory
from rlanything_core.envs.miniwob.pool import BrowserEnvPool
from rlanything_core.envs.miniwob.tasks import CURATED_TASKS, MiniwobTaskSpec
from rlanything_core.generation.transformers_backend import TransformersBackend
from rlanything_core.models.tiny import tiny_model_and_tokenizer


class TimedRunner:
    """The pool, timing resets per episode and steps per live episode."""

    def __init__(self, pool: BrowserEnvPool) -> None:
        self.pool = pool
        self.reset_s: list[float] = []
        self.step_s: list[float] = []

    def reset_all(self, tasks: Any) -> Any:
        start = time.perf_counter()
        out = self.pool.reset_all(tasks)
        self.reset_s.append((time.perf_counter() - start) / max(1, len(tasks)))
        return out

    def step_all(self, actions: Any) -> Any:
        start = time.perf_counter()
        out = self.pool.step_all(actions)
        self.step_s.append((time.perf_counter() - start) / max(1, sum(a is not None for a in actions)))
        return out

    def close(self) -> None:
        self.pool.close()


class TimedSelector(LikelihoodSelector):
    """The likelihood selector, timing each decision."""

    seconds: list[float]

    def select(self, backend: Any, prompts: Any, actions: Any, *, seeds: Any) -> Any:
        start = time.perf_counter()
        out = super().select(backend, prompts, actions, seeds=seeds)
        self.seconds.append((time.perf_counter() - start) / max(1, len(prompts)))
        return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--group", type=int, default=2)
    parser.add_argument("--max-steps", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    policy, tok = tiny_model_and_tokenizer("smollm2", hidden=64, layers=2, seed=0)
    judge, _ = tiny_model_and_tokenizer("smollm2", hidden=64, layers=2, seed=1000)
    selector = TimedSelector(temperature=1.0, length_normalized=True)
    selector.seconds = []
    pool = BrowserEnvPool(MiniwobEnvFactory(max_steps=args.max_steps, offer_done=False), num_workers=args.workers)
    runner = TimedRunner(pool)
    collector = AgentCollector(TransformersBackend(policy, tok), runner, selector, group_size=args.group,
                               max_steps=args.max_steps, max_history_turns=1, prompt_builder=gui_agent_messages)
    judges = JudgeCollector(TransformersBackend(judge, tok), num_votes=3, votes=ScoredVotes(),
                            prompt_builder=gui_judge_messages)  # fmt: skip
    judge_s: list[float] = []
    by_family: dict[str, list[Any]] = defaultdict(list)
    try:
        for name, task in CURATED_TASKS.items():  # one page at a time: a worker hosts seeds x group browsers at most
            specs = [MiniwobTaskSpec(name, seed=s) for s in range(args.seeds)]
            episodes, _ = collector.collect(specs, seed=0, task_ids=[name] * len(specs))
            steps = sum(len(e.steps) for e in episodes)
            start = time.perf_counter()
            episodes, _ = judges.judge(episodes, seed=0)
            judge_s.append((time.perf_counter() - start) / max(1, steps))
            by_family[task.family].extend(episodes)
            print(f"{name:24s} won {sum(e.won for e in episodes)}/{len(episodes)}", flush=True)
    finally:
        runner.close()

    def ms(values: list[float]) -> str:
        return f"{1000 * statistics.median(values):.0f} ms" if values else "-"

    print(f"\nper-step costs (median): reset {ms(runner.reset_s)} per episode, env step {ms(runner.step_s)} per "
          f"episode, policy {ms(selector.seconds)} per decision, judge {ms(judge_s)} per step (m=3)")  # fmt: skip
    print("\n| family | pages | episodes | success | mean steps |\n|---|---|---|---|---|")
    for family, eps in by_family.items():
        pages = len({e.task_id for e in eps})
        success = sum(e.won for e in eps) / len(eps)
        mean_steps = sum(len(e.steps) for e in eps) / len(eps)
        print(f"| {family} | {pages} | {len(eps)} | {100 * success:.0f}% | {mean_steps:.1f} |")


if __name__ == "__main__":
    main()
