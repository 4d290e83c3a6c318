"""Shared, session-scoped all-MiniLM-L6-v2 models (loading one takes seconds; tests must not mutate their weights)."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(scope="session")
def minilm_policy() -> Any:
    from rlanything_core.models.scorer import minilm_scorer

    return minilm_scorer(max_state_tokens=64)[0]


@pytest.fixture(scope="session")
def minilm_judge_model() -> Any:
    from rlanything_core.models.encoder_judge import minilm_judge

    return minilm_judge(max_tokens=64, seed=3)[0]
