"""Response prefills of the coding collectors: the scaffold parser, the prefilled prompt ids, the collectors' records
(prefill in the prompt, continuation in the response, log-probs that the trainer recomputes the same), the format
penalty of a continuation that does not complete the scaffold, and SmolLM2 writing parseable tests (slow)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import torch

from rlanything_core.adaptation.pool import TaskPool
from rlanything_core.adaptation.rewriters.protocol import TaskSpec
from rlanything_core.collect.coding import CodeCollector, UnitTestCollector
from rlanything_core.collect.prefill import (
    CODE_FENCE,
    FENCE_CLOSE,
    UNIT_TEST_SCAFFOLD,
    CodePrefill,
    code_prefill,
    parse_scaffolded_test,
    unit_test_prefill,
)
from rlanything_core.collect.prompts import unit_test_messages
from rlanything_core.envs.coding.problem import CodingProblem, IOTest, TestType
from rlanything_core.envs.coding.task import CodingTask
from rlanything_core.generation.prompts import render_prefilled_prompt, render_prompt
from rlanything_core.generation.transformers_backend import TransformersBackend
from rlanything_core.generation.types import FinishReason, Generation, SamplingParams
from rlanything_core.loop.coding_driver import CodingLoopDriver
from rlanything_core.loop.protocol import source_iteration
from rlanything_core.models.tiny import tiny_model_and_tokenizer
from rlanything_core.rewards.targets import UnitTestTargets
from rlanything_core.training.logprobs import sequence_token_logprobs
from rlanything_core.types import rows_from_sequences

S = UNIT_TEST_SCAFFOLD
ADD = "Read two integers a and b on one line and print a + b."


@pytest.mark.parametrize(
    ("continuation", "expected"),
    [
        ("1 2\n```\n**Test Output:**\n```\n3\n```\n**Explanation:** the sum", ("1 2\n", "3")),
        ("1 2\n```\nTest Output:\n```\n3\n```", ("1 2\n", "3")),
        ("1 2\n```\nOutput:\n```\n3\n```\nmore text", ("1 2\n", "3")),
        ("1 2\n```\n\n**Output**\n```\n3\n```", ("1 2\n", "3")),
        ("1 2\n```\nExpected output: 3\n", ("1 2\n", "3")),
        ("2\n1 2\n3 4\n```\nOutput:\n3\n7\n\nExplanation: sums", ("2\n1 2\n3 4\n", "3\n7")),
        ("nums = [1, 2], k = 3\n```\n**Test Output:**\n```\n[3]\n```", ("nums = [1, 2], k = 3\n", "[3]")),
    ],
)
def test_a_continuation_that_completes_the_scaffold_parses(continuation: str, expected: tuple[str, str]) -> None:
    assert parse_scaffolded_test(S + continuation) == expected


@pytest.mark.parametrize(
    "continuation",
    [
        "",                                                   # nothing written
        "I cannot write a test for this problem.",            # prose, the input block never closed
        "1 2\n```\nThe answer is three.",                    # no output header
        "1 2\n```\n**Test Output:**\n```\n3",                # output block cut by the token limit
        "1 2\n```\n**Test Output:**\n```\n\n```",            # empty output
        "\n```\n**Test Output:**\n```\n3\n```",              # empty input
        "1 2\n```\n**Test Output:**\n\n",                    # header without a value
    ],
)
def test_garbage_after_the_scaffold_is_a_format_failure(continuation: str) -> None:
    assert parse_scaffolded_test(S + continuation) is None


def test_the_scaffold_must_open_the_response() -> None:
    assert parse_scaffolded_test("1 2\n```\n**Test Output:**\n```\n3\n```") is None
    assert parse_scaffolded_test(None) is None  # type: ignore[arg-type]


def test_code_prefill_modes() -> None:
    assert code_prefill("none", starter_code="def f():\n    ") == ""
    assert code_prefill(CodePrefill.FENCE, starter_code="def f():\n    ") == CODE_FENCE
    assert code_prefill("starter", starter_code="def f():\n    ") == CODE_FENCE + "def f():\n    "
    assert code_prefill("starter") == CODE_FENCE  # a stdin problem has no starter code
    assert unit_test_prefill(True) == S and unit_test_prefill(False) == ""
    with pytest.raises(ValueError, match="mode: expected one of"):
        code_prefill("signature")


@pytest.fixture(scope="module")
def tiny() -> tuple[Any, Any]:
    return tiny_model_and_tokenizer(seed=0)


def test_prefilled_prompt_is_the_chat_then_the_prefill(tiny: tuple[Any, Any]) -> None:
    _, tok = tiny
    chat = unit_test_messages(ADD, scaffold=True)
    chat_ids = render_prompt(tok, chat)
    ids = render_prefilled_prompt(tok, chat, S)
    assert ids[: len(chat_ids)] == chat_ids
    assert tok.decode(ids[len(chat_ids) :]) == S
    assert render_prefilled_prompt(tok, chat, "") == chat_ids
    with pytest.raises(ValueError, match="special-token"):
        render_prefilled_prompt(tok, chat, "<|im_end|>")
    with pytest.raises(ValueError, match="chat messages"):
        render_prefilled_prompt(tok, chat_ids, S)


class ContinuationBackend:
    """Answers every prompt with a fixed continuation in turn, tokenized with the real tokenizer, cut at the first
    stop string as a backend does; records prompts and sampling parameters."""

    def __init__(self, tokenizer: Any, continuations: Sequence[str]) -> None:
        self.tokenizer = tokenizer
        self.continuations = list(continuations)
        self.prompts: list[Any] = []
        self.params: list[SamplingParams] = []

    def generate(self, prompts: Sequence[Any], params: SamplingParams, *, seeds: Any = None) -> list[Generation]:
        self.prompts.extend(prompts)
        self.params.append(params)
        out = []
        for n, prompt in enumerate(prompts):
            text, finish = self.continuations[n % len(self.continuations)], FinishReason.EOS
            cuts = [i for i in (text.find(s) for s in params.stop) if i >= 0]
            if cuts:
                text, finish = text[: min(cuts)], FinishReason.STOP_STRING
            toks = list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
            out.append(Generation(list(prompt), toks, [-1.0] * len(toks), text, finish))
        return out

    def update_weights(self, named_tensors: Any) -> None:
        pass


def _add_task() -> CodingTask:
    return CodingTask(CodingProblem("add", "test", ADD, TestType.STDIN, tests=(IOTest("1 2\n", "3"),)))


def test_unit_test_collector_prefills_the_prompt_and_parses_scaffold_plus_continuation(tiny: tuple[Any, Any]) -> None:
    _, tok = tiny
    good, junk = "1 2\n```\n**Test Output:**\n```\n3\n```", "I am not sure."
    backend = ContinuationBackend(tok, [good, junk])
    tests = UnitTestCollector(backend, tests_per_task=2, scaffold=True).collect([_add_task()], seed=0)
    scaffold_ids = list(tok(S, add_special_tokens=False)["input_ids"])
    for prompt, record in zip(backend.prompts, tests):
        assert isinstance(prompt, list) and prompt[-len(scaffold_ids) :] == scaffold_ids  # token ids, prefill last
        assert record.prompt_token_ids == prompt and record.text.startswith(S)
        assert tok.decode(record.token_ids) == record.text[len(S) :]  # the response is the continuation only
    assert [t.test for t in tests] == [("1 2\n", "3"), None]
    # the same continuation without the scaffold is not a test (the free-form parser needs the input header)
    plain = UnitTestCollector(ContinuationBackend(tok, [good]), tests_per_task=1).collect([_add_task()], seed=0)
    assert plain[0].test is None and plain[0].text == good


def test_code_collector_prefills_the_fence_and_extracts_from_the_whole_response(tiny: tuple[Any, Any]) -> None:
    _, tok = tiny
    code = "a, b = map(int, input().split())\nprint(a + b)\n"
    backend = ContinuationBackend(tok, [code + "```\nThis adds.\n```python\nprint(0)\n```", "print(4"])
    samples = CodeCollector(backend, samples_per_task=2, prefill="fence").collect([_add_task()], seed=0)
    assert backend.params[0].stop == (FENCE_CLOSE,)  # the block's closing fence ends the response
    assert samples[0].text == CODE_FENCE + code + FENCE_CLOSE and samples[0].program == code
    assert samples[0].gt_passed == [True] and samples[1].program is None and samples[1].gt_passed == [False]
    think = ContinuationBackend(tok, ["Think.\n```python\n" + code + "```"])
    again = CodeCollector(think, samples_per_task=1).collect([_add_task()], seed=0)
    assert think.params[0].stop == () and isinstance(think.prompts[0], list) and isinstance(think.prompts[0][0], dict)
    assert again[0].program == code  # no prefill: the chat itself, the whole response, no stop


def test_a_prefill_needs_the_backends_tokenizer() -> None:
    class NoTokenizer:
        def generate(self, prompts: Any, params: Any) -> list[Generation]:
            return []

    with pytest.raises(ValueError, match="tokenizer"):
        UnitTestCollector(NoTokenizer(), scaffold=True)
    with pytest.raises(ValueError, match="tokenizer"):
        CodeCollector(NoTokenizer(), prefill="fence")
    with pytest.raises(ValueError, match="mode"):
        CodeCollector(NoTokenizer(), prefill="header")


def test_prefilled_generation_log_probs_are_what_the_trainer_recomputes(tiny: tuple[Any, Any]) -> None:
    """The prefill's tokens end the prompt: they are outside the response mask, and the sampler's log-probs of the
    continuation equal the trainer's recomputation over prompt + response."""
    model, tok = tiny
    backend = TransformersBackend(model, tok, batch_size=4)
    tests = UnitTestCollector(
        backend, tests_per_task=3, sampling=SamplingParams(max_new_tokens=12, temperature=1.0), scaffold=True
    ).collect([_add_task()], seed=3)
    scaffold_len = len(tok(S, add_special_tokens=False)["input_ids"])
    rows = rows_from_sequences(
        [t.prompt_token_ids for t in tests], [t.token_ids for t in tests],
        [(0, 0, k) for k in range(len(tests))], pad_id=int(tok.pad_token_id or 0),
    )
    for n, t in enumerate(tests):
        start = len(t.prompt_token_ids)
        assert not rows.response_mask[n, start - scaffold_len : start].any()  # the prefill carries no gradient
        assert int(rows.response_mask[n].sum()) == len(t.token_ids) > 0
    with torch.no_grad():
        again = sequence_token_logprobs(model, rows.input_ids, rows.attention_mask, score_mask=rows.response_mask)
    recorded = torch.tensor([lp for t in tests for lp in t.logprobs])  # row-major, as the mask selects
    torch.testing.assert_close(again[rows.response_mask], recorded, atol=1e-4, rtol=0)


def test_garbage_continuations_get_the_format_penalty_in_the_driver(tmp_path: Path, tiny: tuple[Any, Any]) -> None:
    """No program is correct, so only the tests' format is rewarded: the parsed test above, the junk below."""
    _, tok = tiny
    spec = TaskSpec("add", "coding", "add", data={"question": ADD, "test_input": ["1 2\n"], "test_output": ["3"]})
    driver = CodingLoopDriver(
        coder=CodeCollector(ContinuationBackend(tok, ["print(0)\n```"]), samples_per_task=2, prefill="fence"),
        test_writer=UnitTestCollector(
            ContinuationBackend(tok, ["1 2\n```\nOutput: 3", "no idea", "no idea"]), tests_per_task=3, scaffold=True
        ),
        pool=TaskPool.create(tmp_path, [spec]), adaptation=None, tasks_per_iteration=1, seed=0, pad_id=0,
        judge_targets=UnitTestTargets(format_without_reference=True),
    )
    data = source_iteration(driver, 0)
    assert data.metrics["pass_rate"] == 0.0 and data.policy is None
    assert data.metrics["test_format_failure_rate"] == pytest.approx(2 / 3)
    assert data.judge is not None
    assert data.judge.advantages.tolist() == pytest.approx([2**0.5, -(0.5**0.5), -(0.5**0.5)])
    assert data.metrics["ut_total"] == 0.0  # UT / Detect need a correct program: no denominator here
    driver.judge_targets = UnitTestTargets(format_without_reference=False)
    assert source_iteration(driver, 0).judge is None  # the authors' rule: no correct program, no signal


@pytest.mark.slow
@pytest.mark.smollm2
def test_smollm2_writes_a_parseable_test_after_the_scaffold() -> None:
    """A tiny real generation: SmolLM2-135M, the scaffold, 4 tests of 32 tokens for the sum problem (2 of them
    parse with this seed; without the scaffold none of SmolLM2's tests parsed in the livebench smoke run)."""
    from rlanything_core.models.smollm2 import load_smollm2

    model, tok = load_smollm2()
    backend = TransformersBackend(model, tok, batch_size=4)
    params = SamplingParams(max_new_tokens=32, temperature=0.8)
    tests = UnitTestCollector(backend, tests_per_task=4, sampling=params, scaffold=True).collect([_add_task()], seed=0)
    assert any(t.test is not None for t in tests), [t.text for t in tests]
