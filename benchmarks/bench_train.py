"""Training throughput: length-aware micro-batches vs the authors' pad-to-longest, batch-size-1 trainer.

    python -m benchmarks.bench_train [--samples 48] [--hidden 256] [--layers 2]

Same samples (ALFWorld step prompts of real, uneven lengths with a response each), same model, same loss
(``PolicyLoss``, seq-mean-token-mean), one optimizer step over all samples on each side, measured side by side:

- baseline: every sample padded to the longest sample of the set, one sample per forward/backward, logits at every
  position (the reference trainer, Open-AgentRL train/alfworld_train.py);
- ours: rows sorted by length into micro-batches of at most ``--max-tokens`` padded tokens, each padded to its own
  longest row, the vocabulary head evaluated only where response tokens are predicted.

Prints a table and, as its last line, `train_tokens_per_s_ratio=<float>` (response tokens trained per second, ours
over the baseline).
"""

from __future__ import annotations

import argparse
import random
import time

import torch


def _samples(n: int, seed: int) -> tuple[list[list[int]], list[list[int]], object]:
    from rlanything_core.collect.prompts import agent_messages
    from rlanything_core.envs.alfworld.data import list_games
    from rlanything_core.envs.alfworld.env import AlfworldEnv
    from rlanything_core.generation.prompts import render_prompt
    from rlanything_core.models.smollm2 import load_smollm2_tokenizer

    tokenizer = load_smollm2_tokenizer()
    rng = random.Random(seed)
    turns: list[tuple[str, str]] = []
    goals: list[str] = []
    for game in list_games("valid_seen")[:3]:  # real observations and commands from three games
        env = AlfworldEnv(game)
        obs = env.reset()
        goals.append(obs.goal)
        text, admissible = obs.observation, obs.admissible_actions
        for _ in range(6):
            action = rng.choice(admissible)
            res = env.step(action)
            turns.append((text, action))
            text, admissible = res.observation, res.admissible_actions or admissible
        env.close()
    prompts, responses = [], []
    for _ in range(n):
        history = [rng.choice(turns) for _ in range(rng.randint(0, 10))]  # uneven lengths, as late vs early steps
        obs, action = rng.choice(turns)
        messages = agent_messages(rng.choice(goals), history, obs, [a for _, a in turns[:20]], max_history_turns=None)
        prompts.append(render_prompt(tokenizer, messages))
        reasoning = " ".join(rng.choice(turns)[0].split()[: rng.randint(0, 40)])
        responses.append(
            list(tokenizer(f"{reasoning} {action}", add_special_tokens=False)["input_ids"])
            + [int(tokenizer.eos_token_id)]
        )
    return prompts, responses, tokenizer


def _step(model: torch.nn.Module, rows: object, batches: list[list[int]], adv: torch.Tensor, *, scored: bool) -> float:
    from rlanything_core.losses.policy import PolicyLoss
    from rlanything_core.training.logprobs import sequence_token_logprobs

    loss_fn = PolicyLoss(kl_coef=0.0)
    n_seq = int(adv.numel())
    start = time.perf_counter()
    model.zero_grad()
    for batch in batches:
        part = rows.select(batch) if scored else _padded(rows, batch)  # type: ignore[attr-defined]
        logp = sequence_token_logprobs(
            model, part.input_ids, part.attention_mask, score_mask=part.response_mask if scored else None
        )
        out = loss_fn(logp, logp.detach(), adv[torch.tensor(batch)], part.response_mask, num_seqs_global=n_seq)
        out.loss.backward()
    return time.perf_counter() - start


def _padded(rows: object, batch: list[int]) -> object:
    """Rows at their full, dataset-wide padded length (no trimming): the baseline's dense (N, L) tensor."""
    from rlanything_core.types import TokenRows

    idx = torch.tensor(batch)
    r = rows  # type: ignore[assignment]
    return TokenRows(r.input_ids[idx], r.attention_mask[idx], r.response_mask[idx], r.index[idx])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=48)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=8192)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from rlanything_core.models.tiny import tiny_causal_lm
    from rlanything_core.training.microbatch import pack_by_length, padded_token_count
    from rlanything_core.types import rows_from_sequences

    prompts, responses, tokenizer = _samples(args.samples, args.seed)
    pad = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id)  # type: ignore[attr-defined]
    rows = rows_from_sequences(prompts, responses, [(i, 0, -1) for i in range(len(prompts))], pad_id=pad)
    model = tiny_causal_lm(
        len(tokenizer),
        hidden=args.hidden,
        layers=args.layers,
        seed=args.seed,  # type: ignore[arg-type]
        max_positions=4096,
    )
    model.train()
    adv = torch.randn(len(prompts), generator=torch.Generator().manual_seed(args.seed))
    lengths = rows.attention_mask.sum(dim=1).tolist()
    ours = pack_by_length(lengths, max_tokens=args.max_tokens)
    baseline = [[i] for i in range(len(prompts))]
    response_tokens = int(rows.response_mask.sum())
    _step(model, rows, ours[:1], adv, scored=True)  # warm-up
    t_base = _step(model, rows, baseline, adv, scored=False)
    t_batched = _step(model, rows, ours, adv, scored=False)
    t_ours = _step(model, rows, ours, adv, scored=True)
    longest = max(lengths)
    print(
        f"samples={len(prompts)} prompt+response tokens: min={min(lengths)} median={sorted(lengths)[len(lengths) // 2]}"
        f" max={longest}; response tokens={response_tokens}; model hidden={args.hidden} layers={args.layers}"
    )
    print(f"{'trainer':<52} {'positions':>10} {'seconds':>9} {'resp tok/s':>11}")
    for name, positions, seconds in [
        ("pad-to-longest, batch size 1 (reference)", len(prompts) * longest, t_base),
        ("length micro-batches (full head)", padded_token_count(lengths, ours), t_batched),
        ("length micro-batches + head on response positions", padded_token_count(lengths, ours), t_ours),
    ]:
        print(f"{name:<52} {positions:>10} {seconds:>9.2f} {response_tokens / seconds:>11.1f}")
    print(f"train_tokens_per_s_ratio={t_base / t_ours:.2f}")


if __name__ == "__main__":
    main()
