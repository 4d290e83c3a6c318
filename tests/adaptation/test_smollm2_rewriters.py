"""The real-LLM path: SmolLM2-135M-Instruct writes failure summaries and rewrite proposals; everything it returns
is either a valid candidate (engine- / sandbox-checked) or a rejection with a reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlanything_core.adaptation.difficulty import Direction
from rlanything_core.adaptation.feedback import build_feedback
from rlanything_core.adaptation.llm import BackendChatModel
from rlanything_core.adaptation.rewriters.alfworld_llm import AlfworldLLMRewriter
from rlanything_core.adaptation.rewriters.coding import CodingRewriter
from rlanything_core.adaptation.rewriters.protocol import RejectReason, TaskSpec
from rlanything_core.records import AgentStep, Episode, JudgeSample

pytestmark = [pytest.mark.slow, pytest.mark.smollm2]

SHARED = (Path(__file__).resolve().parents[2] / ".." / "shared").resolve()


@pytest.fixture(scope="module")
def chat() -> BackendChatModel:
    from rlanything_core.generation.transformers_backend import TransformersBackend
    from rlanything_core.models.smollm2 import load_smollm2

    model, tok = load_smollm2()
    return BackendChatModel(TransformersBackend(model, tok, batch_size=4), max_new_tokens=48, temperature=0.8)


def test_smollm2_failure_summary_and_alfworld_rewrite(chat: BackendChatModel, tmp_path: Path) -> None:
    step = AgentStep("You are in a room.", ["look"], [], [], [], "look", "look", judge=[JudgeSample(-1, "")] * 3)
    fb = build_feedback([Episode("t", 0, "put some book on desk.", steps=[step] * 3)], chat_model=chat, seed=0)["t"]
    assert fb.failures[0].from_llm and fb.failures[0].high_risk_steps == [0, 1, 2]
    game = next((SHARED / "alfworld/json_2.1.1/valid_train/pick_two_obj_and_place-Book-None-Desk-302").glob(
        "*/game.tw-pddl"), None)
    if game is None:
        pytest.skip("no ALFWorld data")
    task = TaskSpec("b", "alfworld", "b", data={"game_file": str(game)})
    cands = AlfworldLLMRewriter(chat_model=chat, out_dir=tmp_path, attempts=3).rewrite(task, Direction.HARDER, fb)
    assert len(cands) == 3 and all(c.raw_output for c in cands)
    assert all(c.valid or isinstance(c.reason, RejectReason) for c in cands)


def test_smollm2_coding_rewrite(chat: BackendChatModel) -> None:
    root = TaskSpec("p", "coding", "p", data={"question": "Read n and print n+1.", "test_input": ["1", "5"],
                                                "test_output": ["2", "6"]})
    cands = CodingRewriter(chat_model=chat, samples=2).rewrite(root, Direction.HARDER, None)
    assert len(cands) == 2 and all(c.valid or isinstance(c.reason, RejectReason) for c in cands)
