r"""Critic feedback from a finished iteration (arXiv 2602.02488; Open-AgentRL's rollout and env-rollout stages).

Pure functions over ``records.Episode``: per task the success rate; per failed rollout the high-risk steps (every
judge vote ``-1``) and a short failure summary, written by an LLM when one is given (the authors' prompt: the task,
the numbered trajectory, the high-risk steps, "at most two sentences in ``\\boxed{}``") and by a deterministic
template otherwise. For coding, the critic is the per-test pass rate of the policy's programs on the ground-truth
and on the generated tests.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rlanything_core.records import Episode

if TYPE_CHECKING:
    from rlanything_core.adaptation.llm import ChatModel

__all__ = [
    "FailureNote",
    "TaskFeedback",
    "build_feedback",
    "coding_feedback",
    "failure_summary_chat",
    "high_risk_steps",
    "last_boxed",
    "render_feedback",
    "success_rate",
    "template_summary",
    "per_test_pass_rates",
]

MAX_SUMMARY_CHARS = 400
"""Summaries longer than this are cut (an LLM that rambles does not flood the rewrite prompt)."""


@dataclass
class FailureNote:
    r"""What went wrong in one failed rollout.

    Attributes:
        high_risk_steps: 0-based indices of steps whose judge votes were all ``-1`` (at least one vote).
        summary: a short explanation (LLM or template); ``""`` when the LLM's output had no ``\\boxed{}``.
        from_llm: whether ``summary`` came from the LLM.
        raw_output: the LLM's raw text (empty for the template).
    """

    high_risk_steps: list[int]
    summary: str
    from_llm: bool = False
    raw_output: str = ""


@dataclass
class TaskFeedback:
    """The critic's view of one task after an iteration.

    Attributes:
        task_id: the task.
        goal: the task's goal text.
        success_rate: fraction of rollouts that succeeded.
        num_rollouts: rollouts seen.
        failures: one note per failed rollout.
        gt_test_pass_rates: coding only, per ground-truth test: fraction of the policy's programs passing it.
        gen_test_pass_rates: coding only, per generated (reward-model) test: the same.
    """

    task_id: str
    goal: str
    success_rate: float
    num_rollouts: int
    failures: list[FailureNote] = field(default_factory=list)
    gt_test_pass_rates: list[float] = field(default_factory=list)
    gen_test_pass_rates: list[float] = field(default_factory=list)


def success_rate(episodes: Sequence[Episode]) -> float:
    """Fraction of ``episodes`` that were won; ``0.0`` for none.

    Examples:
        >>> success_rate([Episode("t", 0, "g", won=True), Episode("t", 0, "g")])
        0.5
    """
    return sum(e.won for e in episodes) / len(episodes) if episodes else 0.0


def high_risk_steps(episode: Episode) -> list[int]:
    """0-based indices of the steps where every judge vote was ``-1`` (steps without votes are never high-risk)."""
    return [i for i, step in enumerate(episode.steps) if step.judge and all(s.vote == -1 for s in step.judge)]


def last_boxed(text: str) -> str | None:
    r"""Content of the last ``\\boxed{...}`` in ``text`` (nested braces matched), or ``None``.

    Examples:
        >>> last_boxed(r"a \\boxed{x} b \\boxed{{y}, z}")
        '{y}, z'
        >>> last_boxed(r"\\boxed{unclosed") is None
        True
    """
    start = text.rfind("\\boxed{")
    while start != -1:
        depth, i = 0, start + len("\\boxed")
        for j in range(i, len(text)):
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
                if depth == 0:
                    return text[i + 1 : j]
        start = text.rfind("\\boxed{", 0, start)
    return None


def _trajectory_lines(episode: Episode, max_chars: int) -> list[str]:
    lines = []
    for i, step in enumerate(episode.steps):
        obs = " ".join(step.observation.split())[-max_chars:]
        lines.append(f"[{i}] observation: {obs} | action: {step.action}")
    return lines


def failure_summary_chat(episode: Episode, *, max_obs_chars: int = 300) -> list[dict[str, str]]:
    """The failure-summary prompt for one failed rollout (Open-AgentRL ``sample/alfworld_rl_rollout.py``)."""
    risky = high_risk_steps(episode)
    body = "\n".join(
        [f"Task: {episode.goal}", "Trajectory (step index, observation, action):",
         *_trajectory_lines(episode, max_obs_chars),
         f"High-risk steps (always -1): {risky}",
         "The agent did not finish the task within the step limit. In at most two sentences, explain why it failed "
         "(for example looping, searching the wrong places, the wrong target object, hallucinated actions). "
         "Put the explanation in \\boxed{}."]
    )
    return [{"role": "system", "content": "You analyse failed agent trajectories concisely."},
            {"role": "user", "content": body}]


def template_summary(episode: Episode) -> str:
    """A deterministic summary when no LLM is configured: length, repeats, high-risk steps, failure reason."""
    actions = [s.action for s in episode.steps]
    parts = [f"Failed after {len(actions)} steps"]
    if episode.failure_reason:
        parts[0] += f" ({episode.failure_reason})"
    if actions:
        repeats = len(actions) - len(set(actions))
        if repeats:
            parts.append(f"repeated {repeats} actions (most often '{max(set(actions), key=actions.count)}')")
    parse_fails = sum(s.action_parse_failed for s in episode.steps)
    if parse_fails:
        parts.append(f"{parse_fails} unparseable responses")
    risky = high_risk_steps(episode)
    if risky:
        parts.append("judged wrong at steps " + ", ".join(f"{i} ('{actions[i]}')" for i in risky[:5]))
    return "; ".join(parts) + "."


def build_feedback(
    episodes: Sequence[Episode],
    *,
    chat_model: ChatModel | None = None,
    seed: int = 0,
    tasks: Sequence[str] | None = None,
) -> dict[str, TaskFeedback]:
    """Group ``episodes`` by task and build each task's feedback.

    Args:
        episodes: the iteration's rollouts (any order, any number per task).
        chat_model: writes the failure summaries (one batched call); ``None`` uses ``template_summary``.
        seed: sampling seed for the LLM call.
        tasks: only summarise failures of these task ids (the authors summarised every task, a weak point of
            Open-AgentRL; pass the tasks that will be rewritten). Success rates are computed for all.

    Returns:
        task id -> ``TaskFeedback``, in first-seen order.
    """
    groups: dict[str, list[Episode]] = defaultdict(list)
    for ep in episodes:
        groups[ep.task_id].append(ep)
    wanted = None if tasks is None else set(tasks)
    out = {tid: TaskFeedback(task_id=tid, goal=eps[0].goal, success_rate=success_rate(eps), num_rollouts=len(eps))
           for tid, eps in groups.items()}
    failed = [ep for tid, eps in groups.items() if wanted is None or tid in wanted for ep in eps if not ep.won]
    texts: list[str | None] = [None] * len(failed)
    if chat_model is not None and failed:
        replies = chat_model.complete([failure_summary_chat(ep) for ep in failed], seed=seed)
        texts = list(replies) + [None] * (len(failed) - len(replies))
    for ep, text in zip(failed, texts):
        if text is None:
            note = FailureNote(high_risk_steps(ep), template_summary(ep))
        else:
            boxed = last_boxed(text)
            summary = "" if boxed is None else " ".join(boxed.split())[:MAX_SUMMARY_CHARS]
            note = FailureNote(high_risk_steps(ep), summary, from_llm=True, raw_output=text)
        out[ep.task_id].failures.append(note)
    return out


def per_test_pass_rates(passed: Sequence[Sequence[bool]]) -> list[float]:
    """Per-test pass rate over programs: ``passed[j][k]`` is program ``j`` on test ``k`` -> ``(K,)`` rates.

    Raises:
        ValueError: rows of unequal length.
    """
    if not passed:
        return []
    width = len(passed[0])
    if any(len(row) != width for row in passed):
        raise ValueError(f"passed: expected rows of equal length {width}, got {[len(r) for r in passed]}")
    return [sum(bool(row[k]) for row in passed) / len(passed) for k in range(width)]


def coding_feedback(
    task_id: str, goal: str, gt_passed: Sequence[Sequence[bool]], gen_passed: Sequence[Sequence[bool]] = (),
) -> TaskFeedback:
    """Coding critic (Open-AgentRL ``sample/llm_env_rollout.py``): success = passing every GT test; test pass rates."""
    wins = [all(row) for row in gt_passed]
    return TaskFeedback(task_id=task_id, goal=goal, success_rate=sum(wins) / len(wins) if wins else 0.0,
                        num_rollouts=len(wins), gt_test_pass_rates=per_test_pass_rates(gt_passed),
                        gen_test_pass_rates=per_test_pass_rates(gen_passed))


def render_feedback(feedback: TaskFeedback | None, *, max_lines: int = 8) -> str:
    """The feedback as prompt text (failure summaries one per line; coding pass rates)."""
    if feedback is None:
        return "(no critic feedback)"
    lines = [f"Policy success rate: {feedback.success_rate:.2f} over {feedback.num_rollouts} rollouts."]
    notes = [n.summary for n in feedback.failures if n.summary][:max_lines]
    if notes:
        lines.append("### Failure summaries from recent rollouts")
        lines.extend(f"- {s}" for s in notes)
    if feedback.gt_test_pass_rates:
        lines.append("Pass rate per ground-truth test: " + ", ".join(f"{r:.2f}" for r in feedback.gt_test_pass_rates))
    if feedback.gen_test_pass_rates:
        lines.append("Pass rate per generated test (may not be accurate): "
                     + ", ".join(f"{r:.2f}" for r in feedback.gen_test_pass_rates))
    return "\n".join(lines)
