"""VLLMBackend on the real SmolLM2. Runs only where vLLM imports (on CPU: the `.venv-vllm` environment):

    .venv-vllm/bin/python -m pytest -m vllm tests/generation/test_vllm_backend.py
"""

from collections.abc import Iterator

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed here (CPU: use the .venv-vllm environment)")

import torch  # noqa: E402

from rlanything_core.generation.types import FinishReason, SamplingParams  # noqa: E402
from rlanything_core.generation.vllm_backend import VLLMBackend  # noqa: E402
from rlanything_core.models.smollm2 import smollm2_path  # noqa: E402

pytestmark = [pytest.mark.vllm, pytest.mark.smollm2, pytest.mark.slow]

CHATS = [
    [{"role": "user", "content": "Count from 1 to 10."}],
    [{"role": "system", "content": "Answer in one word."},
     {"role": "user", "content": "What is the capital of France?"}],
]


@pytest.fixture(scope="module")
def backend() -> Iterator[VLLMBackend]:
    yield VLLMBackend(smollm2_path(), dtype="float32", max_model_len=512)


@pytest.fixture(scope="module")
def hf_model() -> torch.nn.Module:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(smollm2_path(), dtype=torch.float32).eval()


def forward_logprobs(model: torch.nn.Module, prompt: list[int], tokens: list[int]) -> torch.Tensor:
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([prompt + tokens])).logits[0].float(), dim=-1)
    return logp[len(prompt) - 1 : -1].gather(-1, torch.tensor(tokens)[:, None])[:, 0]


def test_sampled_logprobs_match_an_hf_forward(backend: VLLMBackend, hf_model: torch.nn.Module) -> None:
    gens = backend.generate(CHATS, SamplingParams(max_new_tokens=16, temperature=0.8, seed=1))
    for chat, gen in zip(CHATS, gens):
        rendered = backend.tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
        assert gen.prompt_token_ids == backend.tokenizer(rendered, add_special_tokens=False)["input_ids"]
        assert 0 < len(gen.token_ids) == len(gen.logprobs) <= 16
        ref = forward_logprobs(hf_model, gen.prompt_token_ids, gen.token_ids)
        torch.testing.assert_close(torch.tensor(gen.logprobs), ref, atol=1e-3, rtol=0)


def test_seeded_sampling_repeats(backend: VLLMBackend) -> None:
    params = SamplingParams(max_new_tokens=12, seed=3)
    first = [g.token_ids for g in backend.generate(CHATS, params)]
    assert first == [g.token_ids for g in backend.generate(CHATS, params)]


def test_eos_and_stop_strings(backend: VLLMBackend) -> None:
    answer = backend.generate(CHATS[1:], SamplingParams(max_new_tokens=32, temperature=0))[0]
    assert answer.finish_reason is FinishReason.EOS and "Paris" in answer.text
    assert answer.token_ids[-1] == backend.tokenizer.eos_token_id and "<|im_end|>" not in answer.text
    counted = backend.generate(CHATS[:1], SamplingParams(max_new_tokens=64, temperature=0, stop=("5",)))[0]
    assert counted.finish_reason is FinishReason.STOP_STRING
    assert "4" in counted.text and "5" not in counted.text


def test_prompt_too_long_is_data(backend: VLLMBackend) -> None:
    gens = backend.generate([[1] * 600, CHATS[1]], SamplingParams(max_new_tokens=4))
    assert gens[0].finish_reason is FinishReason.PROMPT_TOO_LONG and gens[0].token_ids == []
    assert len(gens[1].token_ids) > 0


def test_update_weights_in_place(backend: VLLMBackend, hf_model: torch.nn.Module) -> None:
    greedy = SamplingParams(max_new_tokens=12, temperature=0)
    before = backend.generate(CHATS, greedy)
    state = hf_model.state_dict()
    scaled = {k: v * 0.5 if ".mlp." in k else v for k, v in state.items()}
    backend.update_weights(scaled)
    changed = backend.generate(CHATS, greedy)
    assert [g.logprobs for g in changed] != [g.logprobs for g in before]
    backend.update_weights(state)
    restored = backend.generate(CHATS, greedy)
    assert [g.token_ids for g in restored] == [g.token_ids for g in before]


def test_seeded_batch_larger_than_one_prefill_step(backend: VLLMBackend) -> None:
    """A rollout-sized batch (~7k prompt tokens, past the engine's per-step token budget) with per-prompt seeds.

    With chunked prefill, vLLM's CPU build crashed here ("CPU Generator does not use offset").
    """
    from benchmarks.vllm_generation import rollout_prompts
    from rlanything_core.generation.prompts import render_prompt

    prompts = rollout_prompts(28, step=2)
    budget = backend.llm.llm_engine.vllm_config.scheduler_config.max_num_batched_tokens
    assert sum(len(render_prompt(backend.tokenizer, p)) for p in prompts) > budget
    gens = backend.generate(prompts, SamplingParams(max_new_tokens=3, seed=2, ignore_eos=True))
    assert [len(g.token_ids) for g in gens] == [3] * len(prompts)


def test_side_by_side_benchmark_runs_both_workers() -> None:
    import sys

    from benchmarks.vllm_generation import bench_tokens_per_s, format_table, rollout_prompts

    result = bench_tokens_per_s(
        rollout_prompts(4, group_size=2), 5, vllm_python=sys.executable, threads=1, rounds=2, vllm_compile=False
    )
    assert result is not None
    for side in (result.hf, result.vllm):
        assert side.generated_tokens == 20 and side.prompts == 4 and len(side.round_seconds) == 2
        assert side.threads == 1 and side.torch_threads == 1
    assert result.hf.prompt_tokens == result.vllm.prompt_tokens
    assert result.ratio > 0 and "vllm" in format_table(result)
