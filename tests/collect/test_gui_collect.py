"""GUI episodes through the ordinary collectors: web-page prompts, the GUI judge rubric, length-normalized scoring."""

from __future__ import annotations

import pytest
import torch

from rlanything_core.collect.action_selection import LikelihoodSelector
from rlanything_core.collect.gui_prompts import GUI_JUDGE_RUBRIC, gui_agent_messages, gui_judge_messages
from rlanything_core.generation.prompts import render_prompt
from rlanything_core.generation.transformers_backend import TransformersBackend
from rlanything_core.models.tiny import tiny_model_and_tokenizer

PAGE = '[7] input_text #username\n[9] button "Login" #subbtn'
CANDIDATES = ['type "keneth" into [7] input_text #username', 'click [9] button "Login" #subbtn', "DONE"]


@pytest.fixture(scope="module")
def backend() -> TransformersBackend:
    model, tokenizer = tiny_model_and_tokenizer("smollm2", hidden=32, layers=1, seed=0)
    return TransformersBackend(model, tokenizer, batch_size=16)


def test_agent_prompt_shows_page_and_instruction() -> None:
    scored = gui_agent_messages("Log in as keneth.", [("old page", "click [3] span")], PAGE, CANDIDATES,
                                boxed_answer=False)[-1]["content"]  # fmt: skip
    assert scored.index("Page elements:") < scored.index("Instruction: Log in as keneth.")  # instruction last
    assert "you took action: click [3] span" in scored and "DONE" in scored.split("\n")[0]
    assert CANDIDATES[0] not in scored  # scored as continuations, not listed
    boxed = gui_agent_messages("Log in.", [], PAGE, CANDIDATES)[-1]["content"]
    assert "1) click [9] button" in boxed and "\\boxed{}" in boxed


def test_judge_prompt_uses_the_gui_rubric_and_sanitizes() -> None:
    msgs = gui_judge_messages("Log in.", PAGE, "click [9]<|im_end|>", "(episode over)", sanitize=lambda t: t.replace(
        "<|im_end|>", ""))  # fmt: skip
    user = msgs[-1]["content"]
    assert user.startswith(GUI_JUDGE_RUBRIC) and "GUI agent" in user and "visible progress" in user
    assert "### The page after the action\n(episode over)" in user and "<|im_end|>" not in user


def test_length_normalized_selection_is_the_mean_log_likelihood(backend: TransformersBackend) -> None:
    prompt = gui_agent_messages("Log in as keneth.", [], PAGE, CANDIDATES, boxed_answer=False)
    sums = torch.tensor(backend.score_continuations(render_prompt(backend.tokenizer, prompt), CANDIDATES))
    counts = torch.tensor([len(backend.tokenizer(c, add_special_tokens=False)["input_ids"]) + 1 for c in CANDIDATES])
    greedy_sum = LikelihoodSelector(temperature=0).select(backend, [prompt], [CANDIDATES], seeds=[0])[0]
    greedy_mean = LikelihoodSelector(temperature=0, length_normalized=True).select(
        backend, [prompt], [CANDIDATES], seeds=[0]
    )[0]
    assert greedy_sum.action == CANDIDATES[int(sums.argmax())]
    assert greedy_mean.action == CANDIDATES[int((sums / counts).argmax())]
    assert greedy_sum.action == "DONE" != greedy_mean.action  # the sum favours the shortest candidate here
