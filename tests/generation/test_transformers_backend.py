import pytest
import torch

from rlanything_core.generation.prompts import render_chat, render_prompt
from rlanything_core.generation.sampling import prompt_seeds
from rlanything_core.generation.transformers_backend import TransformersBackend
from rlanything_core.generation.types import FinishReason, Generation, GenerationBackend, SamplingParams
from rlanything_core.models.tiny import tiny_model_and_tokenizer

PROMPTS = [
    [{"role": "user", "content": "hi"}],
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "a much longer prompt, yes indeed"}],
    [5, 6, 7],
    [{"role": "user", "content": "medium length"}],
]


@pytest.fixture(scope="module")
def tiny() -> tuple[object, object]:
    return tiny_model_and_tokenizer(seed=0)


def teacher_forced_logprobs(model: torch.nn.Module, gen: Generation) -> tuple[torch.Tensor, torch.Tensor]:
    """Fresh unpadded forward over prompt + generation: (log-probs of the generated tokens, argmax per position)."""
    ids = torch.tensor([gen.prompt_token_ids + gen.token_ids])
    with torch.no_grad():
        logp = torch.log_softmax(model(ids).logits[0].float(), dim=-1)
    p = len(gen.prompt_token_ids)
    steps = logp[p - 1 : -1]
    return steps.gather(-1, torch.tensor(gen.token_ids)[:, None])[:, 0], steps.argmax(-1)


def test_logprobs_match_teacher_forced_forward_with_uneven_prompts(tiny) -> None:
    model, tok = tiny
    backend = TransformersBackend(model, tok, batch_size=4)
    params = SamplingParams(max_new_tokens=24, temperature=0.7, top_p=0.9, seed=11)
    gens = backend.generate(PROMPTS, params)
    assert len({len(g.prompt_token_ids) for g in gens}) == len(PROMPTS)  # really uneven
    for gen in gens:
        assert len(gen.token_ids) == len(gen.logprobs) > 0
        ref, _ = teacher_forced_logprobs(model, gen)
        torch.testing.assert_close(torch.tensor(gen.logprobs), ref, atol=1e-4, rtol=0)


def test_chat_prompts_use_the_chat_template(tiny) -> None:
    model, tok = tiny
    gen = TransformersBackend(model, tok).generate(PROMPTS[:1], SamplingParams(max_new_tokens=2))[0]
    rendered = render_chat(tok, PROMPTS[0])
    assert rendered.endswith("<|im_start|>assistant\n")
    assert gen.prompt_token_ids == tok(rendered, add_special_tokens=False)["input_ids"]
    assert gen.prompt_token_ids.count(tok.convert_tokens_to_ids("<|im_start|>")) == 2


def test_seeded_sampling_is_deterministic_and_independent_of_batching(tiny) -> None:
    model, tok = tiny
    params = SamplingParams(max_new_tokens=16, temperature=1.0, seed=5)
    a = TransformersBackend(model, tok, batch_size=4).generate(PROMPTS, params)
    b = TransformersBackend(model, tok, batch_size=4).generate(PROMPTS, params)
    c = TransformersBackend(model, tok, batch_size=1).generate(PROMPTS, params)
    d = TransformersBackend(model, tok, batch_size=4).generate(PROMPTS, SamplingParams(max_new_tokens=16, seed=6))
    assert [g.token_ids for g in a] == [g.token_ids for g in b] == [g.token_ids for g in c]
    assert [g.token_ids for g in a] != [g.token_ids for g in d]


def test_explicit_seeds_follow_the_prompt_not_its_position(tiny) -> None:
    model, tok = tiny
    params = SamplingParams(max_new_tokens=16, temperature=1.0, seed=5)
    backend = TransformersBackend(model, tok, batch_size=4)
    default = backend.generate(PROMPTS, params)
    same = backend.generate(PROMPTS, params, seeds=prompt_seeds(5, len(PROMPTS)))
    assert [g.token_ids for g in same] == [g.token_ids for g in default]  # the default seeds, spelled out
    seeds = [101, 202, 303, 404]
    together = backend.generate(PROMPTS, params, seeds=seeds)
    reversed_ = backend.generate(PROMPTS[::-1], params, seeds=seeds[::-1])
    alone = backend.generate(PROMPTS[1:2], params, seeds=seeds[1:2])
    assert [g.token_ids for g in together] == [g.token_ids for g in reversed_[::-1]]
    assert together[1].token_ids == alone[0].token_ids
    assert [g.token_ids for g in together] != [g.token_ids for g in default]
    for bad in ([1, 2], [-1, 2, 3, 4], [2**31, 2, 3, 4], [True, 2, 3, 4]):
        with pytest.raises(ValueError, match="seeds"):
            backend.generate(PROMPTS, params, seeds=bad)


def test_greedy_follows_the_argmax(tiny) -> None:
    model, tok = tiny
    greedy = SamplingParams(max_new_tokens=12, temperature=0)
    gens = TransformersBackend(model, tok, batch_size=3).generate(PROMPTS, greedy)
    for gen in gens:
        _, argmax = teacher_forced_logprobs(model, gen)
        assert gen.token_ids == argmax.tolist()
        assert gen.finish_reason is FinishReason.LENGTH and len(gen.token_ids) == 12


def test_stops_at_eos_and_keeps_it_in_tokens_not_text(tiny) -> None:
    model, tok = tiny
    sampled = SamplingParams(max_new_tokens=12, seed=3)
    free = TransformersBackend(model, tok).generate(PROMPTS[:1], sampled)[0]
    eos = free.token_ids[4]
    first = free.token_ids.index(eos)
    gen = TransformersBackend(model, tok, stop_token_ids=[eos]).generate(PROMPTS[:1], sampled)[0]
    assert gen.finish_reason is FinishReason.EOS
    assert gen.token_ids == free.token_ids[: first + 1]
    assert gen.text == tok.decode(free.token_ids[:first])
    ignored = TransformersBackend(model, tok, stop_token_ids=[eos]).generate(
        PROMPTS[:1], SamplingParams(max_new_tokens=12, seed=3, ignore_eos=True)
    )[0]
    assert ignored.token_ids == free.token_ids


def test_stop_strings_cut_text_before_the_stop(tiny) -> None:
    model, tok = tiny
    free = TransformersBackend(model, tok).generate([[97, 98, 99]], SamplingParams(max_new_tokens=16, seed=2))[0]
    stop = free.text[6:8]
    cut = free.text.find(stop)
    gen = TransformersBackend(model, tok).generate(
        [[97, 98, 99]], SamplingParams(max_new_tokens=16, seed=2, stop=(stop,))
    )[0]
    assert gen.finish_reason is FinishReason.STOP_STRING
    assert gen.text == free.text[:cut]
    assert gen.token_ids == free.token_ids[: len(gen.token_ids)]
    assert stop in tok.decode(gen.token_ids) and stop not in tok.decode(gen.token_ids[:-1])


def test_prompt_too_long_is_data_not_an_error(tiny) -> None:
    model, tok = tiny
    backend = TransformersBackend(model, tok, max_model_len=20)
    gens = backend.generate([list(range(30)), [1, 2, 3]], SamplingParams(max_new_tokens=50))
    assert gens[0].finish_reason is FinishReason.PROMPT_TOO_LONG and gens[0].token_ids == []
    assert gens[1].finish_reason is FinishReason.LENGTH and len(gens[1].token_ids) == 17  # capped by the context


def manual_score(model: torch.nn.Module, prompt_ids: list[int], cont_ids: list[int]) -> float:
    ids = torch.tensor([prompt_ids + cont_ids])
    with torch.no_grad():
        logp = torch.log_softmax(model(ids).logits[0].float(), dim=-1)
    p = len(prompt_ids)
    return float(logp[p - 1 : -1].gather(-1, torch.tensor(cont_ids)[:, None]).sum())


@pytest.mark.parametrize("append_eos", [True, False])
def test_score_continuations_equals_a_manual_forward(tiny, append_eos: bool) -> None:
    model, tok = tiny
    backend = TransformersBackend(model, tok, batch_size=2)  # 5 candidates: three chunks share the prompt cache
    candidates = ["go to desk 1", "go to desk 10", "open drawer 2", "look", "take apple 1 from countertop 2"]
    scores = backend.score_continuations(PROMPTS[1], candidates, append_eos=append_eos)
    prompt_ids = tok(render_chat(tok, PROMPTS[1]), add_special_tokens=False)["input_ids"]
    eos = [tok.eos_token_id] if append_eos else []
    for cand, score in zip(candidates, scores):
        assert score == pytest.approx(manual_score(model, prompt_ids, tok(cand)["input_ids"] + eos), abs=1e-4)


def test_score_continuations_ranks_a_trained_preference(tiny) -> None:
    _, tok = tiny
    model, _ = tiny_model_and_tokenizer(seed=1)
    prompt = [{"role": "user", "content": "Is the sky blue?"}]
    prompt_ids = tok(render_chat(tok, prompt), add_special_tokens=False)["input_ids"]
    target = torch.tensor([prompt_ids + tok("yes")["input_ids"] + [tok.eos_token_id]])
    backend = TransformersBackend(model, tok)
    before = backend.score_continuations(prompt, ["yes", "no"])
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    torch.manual_seed(0)
    for _ in range(50):
        logits = model(target).logits[0, len(prompt_ids) - 1 : -1]
        loss = torch.nn.functional.cross_entropy(logits, target[0, len(prompt_ids) :])
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    yes, no = backend.score_continuations(prompt, ["yes", "no"])
    assert yes > no + 5.0 and yes > before[0]


def test_score_continuations_rejects_bad_input(tiny) -> None:
    model, tok = tiny
    backend = TransformersBackend(model, tok)
    with pytest.raises(ValueError, match="continuations"):
        backend.score_continuations(PROMPTS[0], [])
    with pytest.raises(ValueError, match="continuations"):
        backend.score_continuations(PROMPTS[0], [""], append_eos=False)


def test_update_weights_loads_the_trainers_state_dict(tiny) -> None:
    model, tok = tiny
    other, _ = tiny_model_and_tokenizer(seed=7)
    params = SamplingParams(max_new_tokens=10, seed=4)
    backend = TransformersBackend(other, tok)
    assert isinstance(backend, GenerationBackend)
    want = [(g.token_ids, g.logprobs) for g in TransformersBackend(model, tok).generate(PROMPTS, params)]
    assert [(g.token_ids, g.logprobs) for g in backend.generate(PROMPTS, params)] != want
    backend.update_weights(model.state_dict())
    assert [(g.token_ids, g.logprobs) for g in backend.generate(PROMPTS, params)] == want


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"max_new_tokens": 0}, "max_new_tokens"), ({"temperature": -1.0}, "temperature"), ({"top_p": 0.0}, "top_p"),
     ({"seed": -1}, "seed"), ({"stop": "x"}, "stop"), ({"stop": ("",)}, "stop")],
)
def test_sampling_params_validate(kwargs: dict[str, object], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        SamplingParams(**kwargs)  # type: ignore[arg-type]


def test_bad_prompts_raise_naming_the_argument(tiny) -> None:
    model, tok = tiny
    backend = TransformersBackend(model, tok)
    for bad in ([], "hello", [{"content": "no role"}]):
        with pytest.raises(ValueError, match="prompt"):
            backend.generate([bad], SamplingParams(max_new_tokens=1))  # type: ignore[list-item]


def test_rows_leaving_the_batch_early_keep_exact_logprobs(tiny) -> None:
    """Rows capped by the context stop first and leave the KV cache; the others' log-probs must not notice."""
    model, tok = tiny
    longest = max(len(TransformersBackend(model, tok).generate([p], SamplingParams(max_new_tokens=1))[0]
                      .prompt_token_ids) for p in PROMPTS)
    backend = TransformersBackend(model, tok, batch_size=4, max_model_len=longest + 6)
    gens = backend.generate(PROMPTS, SamplingParams(max_new_tokens=24, temperature=1.0, seed=4))
    assert len({len(g.token_ids) for g in gens}) > 1  # really uneven exits
    for gen in gens:
        ref, _ = teacher_forced_logprobs(model, gen)
        torch.testing.assert_close(torch.tensor(gen.logprobs), ref, atol=1e-4, rtol=0)


@pytest.mark.parametrize("capacity", [None, 1])  # None: sized for the whole generation; 1: grows on the first step
def test_preallocated_cache_generates_as_the_plain_dynamic_cache(tiny, monkeypatch, capacity) -> None:
    """The in-place KV cache must not change a token or a log-prob, with rows leaving the batch at different steps."""
    from rlanything_core.generation import transformers_backend as module

    model, tok = tiny
    longest = max(len(render_prompt(tok, p)) for p in PROMPTS)
    backend = TransformersBackend(model, tok, batch_size=4, max_model_len=longest + 10)  # uneven exits
    params = SamplingParams(max_new_tokens=20, temperature=1.0, seed=8)
    original = module._preallocate
    swapped: list[int] = []

    def counting(cache, size):  # type: ignore[no-untyped-def]
        original(cache, size if capacity is None else capacity)
        swapped.append(sum(isinstance(layer, module._PreallocatedLayer) for layer in cache.layers))

    monkeypatch.setattr(module, "_preallocate", counting)
    fast = backend.generate(PROMPTS, params)
    monkeypatch.setattr(module, "_preallocate", lambda cache, size: None)
    plain = backend.generate(PROMPTS, params)
    assert swapped and all(n == model.config.num_hidden_layers for n in swapped)
    assert len({len(g.token_ids) for g in fast}) > 1
    for a, b in zip(fast, plain):
        assert a.token_ids == b.token_ids and a.finish_reason is b.finish_reason
        torch.testing.assert_close(torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=1e-5, rtol=0)


def test_preallocated_layer_keeps_the_dynamic_layer_contents() -> None:
    from transformers.cache_utils import DynamicLayer

    from rlanything_core.generation.transformers_backend import _PreallocatedLayer

    torch.manual_seed(0)
    plain = DynamicLayer()
    plain.update(torch.randn(3, 2, 5, 4), torch.randn(3, 2, 5, 4))
    fast = _PreallocatedLayer(plain, capacity=6)
    for step in range(4):  # past the capacity: the buffers grow
        k, v = torch.randn(3, 2, 1, 4), torch.randn(3, 2, 1, 4)
        torch.testing.assert_close(fast.update(k, v), plain.update(k, v), rtol=0, atol=0)
        if step == 1:
            plain.batch_select_indices(torch.tensor([0, 2, 1]))
            fast.batch_select_indices(torch.tensor([0, 2, 1]))
    assert fast.get_seq_length() == plain.get_seq_length() == 9
    torch.testing.assert_close((fast.keys, fast.values), (plain.keys, plain.values), rtol=0, atol=0)
    with pytest.raises(NotImplementedError, match="crop"):
        fast.crop(-1)
