"""GUI task rewriters: add or remove instruction hints, move a parameterized page's difficulty settings.

The paper adapts GUI tasks by rewriting the instruction (adding hints such as which element, where it is, the order of
the steps; or removing them) while the verifier stays the same. Here a MiniWoB++ task is ``{"task": page, "seed":
problem seed, "hints": [...], "settings": {...}}`` (``kind="miniwob"``); the page's JavaScript checker is the verifier,
so a rewrite may change only the hints and, for this library's own pages, the difficulty settings within their
ranges. :func:`check_gui_rewrite` enforces that for every rewriter:

- another page or another seed would change the verifier -> ``VERIFIER_CHANGED``;
- an empty hint or an empty instruction -> ``EMPTY_INSTRUCTION``;
- an unknown or out-of-range setting -> ``OUT_OF_RANGE``; a hint over 300 characters -> ``TOO_LARGE``;
- nothing changed -> ``NO_CHANGE``.

``GuiHintRewriter`` is rule-based (the curated hints of ``tasks.py``, one step at a time); ``GuiLLMRewriter`` asks a
chat model for a JSON rewrite and validates it the same way.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rlanything_core.adaptation.feedback import render_feedback
from rlanything_core.adaptation.llm import ChatModel
from rlanything_core.adaptation.rewriters.protocol import Candidate, RejectReason, TaskSpec, _rejected
from rlanything_core.envs.miniwob.tasks import CURATED_TASKS, resolve_task

if TYPE_CHECKING:
    from rlanything_core.adaptation.difficulty import Direction
    from rlanything_core.adaptation.feedback import TaskFeedback

__all__ = ["GuiHintRewriter", "GuiLLMRewriter", "check_gui_rewrite", "gui_rewrite_chat", "parse_gui_rewrite"]

MAX_HINT_CHARS = 300


def check_gui_rewrite(parent: dict[str, Any], new: dict[str, Any]) -> tuple[RejectReason, str] | None:
    """Why ``new`` is not a valid rewrite of ``parent`` (both ``TaskSpec.data`` dicts), or ``None`` when it is."""
    if new.get("task") != parent.get("task"):
        return RejectReason.VERIFIER_CHANGED, f"the page (its checker) changed: {parent.get('task')!r} -> " \
            f"{new.get('task')!r}"  # fmt: skip
    if new.get("seed", 0) != parent.get("seed", 0):
        return RejectReason.VERIFIER_CHANGED, f"the problem seed changed: {parent.get('seed')} -> {new.get('seed')}"
    hints = new.get("hints", [])
    if not isinstance(hints, list) or not all(isinstance(h, str) for h in hints):
        return RejectReason.WRONG_TYPES, f"hints: expected a list of strings, got {hints!r}"[:200]
    if any(not h.strip() for h in hints):
        return RejectReason.EMPTY_INSTRUCTION, "a hint is empty"
    if any(len(h) > MAX_HINT_CHARS for h in hints):
        return RejectReason.TOO_LARGE, f"a hint is longer than {MAX_HINT_CHARS} characters"
    if new.get("pages_dir") != parent.get("pages_dir"):
        return RejectReason.VERIFIER_CHANGED, f"the page folder changed: {parent.get('pages_dir')!r} -> " \
            f"{new.get('pages_dir')!r}"  # fmt: skip
    task = resolve_task(str(new["task"]), pages_dir=new.get("pages_dir"))
    settings = new.get("settings", {}) or {}
    if not isinstance(settings, dict):
        return RejectReason.WRONG_TYPES, f"settings: expected an object, got {settings!r}"[:200]
    for key, value in settings.items():
        rng = task.settings.get(key)
        if rng is None or not isinstance(value, int) or not rng.low <= value <= rng.high:
            allowed = {k: (s.low, s.high) for k, s in task.settings.items()}
            return RejectReason.OUT_OF_RANGE, f"setting {key}={value!r} not allowed (allowed: {allowed})"
    same_hints = [h.strip() for h in hints] == [h.strip() for h in parent.get("hints", [])]
    if same_hints and settings == (parent.get("settings", {}) or {}):
        return RejectReason.NO_CHANGE, "same hints and settings"
    return None


def _candidate(task: TaskSpec, d: str, rewriter: str, data: dict[str, Any], what: str, **info: Any) -> Candidate:
    version = task.version + 1
    spec = TaskSpec(task_id=f"{task.root_id}@v{version}-{what}", kind=task.kind, root_id=task.root_id,
                    version=version, data=data)  # fmt: skip
    problem = check_gui_rewrite(task.data, data)
    if problem is not None:
        return _rejected(spec, task, d, rewriter, problem[0], problem[1], info=info)
    return Candidate(spec, task.task_id, task.root_id, d, rewriter, valid=True, detail=what, info=info)


@dataclass
class GuiHintRewriter:
    """Rule-based: easier adds the next curated hint or lowers a setting; harder removes a hint or raises one.

    Args:
        num_candidates: valid candidates per request at most (the first valid one is scheduled by the pool).
    """

    num_candidates: int = 2
    name: str = "gui_hints"

    def rewrite(self, task: TaskSpec, direction: Direction, feedback: TaskFeedback | None) -> list[Candidate]:
        """Hint and setting steps toward ``direction``; ``OUT_OF_RANGE`` when there is none left."""
        d = direction.value
        if d not in ("harder", "easier"):
            return []
        try:
            page = resolve_task(str(task.data["task"]), pages_dir=task.data.get("pages_dir"))
        except (KeyError, ValueError) as err:
            return [_rejected(None, task, d, self.name, RejectReason.UNKNOWN_TYPE, str(err)[:300])]
        hints = list(task.data.get("hints", []))
        settings = {k: s.default for k, s in page.settings.items()} | dict(task.data.get("settings", {}) or {})
        out: list[Candidate] = []
        if d == "easier":
            unused = [h for h in page.hints if h not in hints]
            if unused:
                out.append(_candidate(task, d, self.name, {**task.data, "hints": [*hints, unused[0]]}, "hint+"))
            for key, value in settings.items():
                if value > page.settings[key].low:
                    data = {**task.data, "settings": {**settings, key: value - 1}}
                    out.append(_candidate(task, d, self.name, data, f"{key}-"))
        else:
            if hints:
                out.append(_candidate(task, d, self.name, {**task.data, "hints": hints[:-1]}, "hint-"))
            for key, value in settings.items():
                if value < page.settings[key].high:
                    data = {**task.data, "settings": {**settings, key: value + 1}}
                    out.append(_candidate(task, d, self.name, data, f"{key}+"))
        if not out:
            return [_rejected(None, task, d, self.name, RejectReason.OUT_OF_RANGE, f"no hint or setting left {d}")]
        valid = [c for c in out if c.valid][: self.num_candidates]
        return valid + [c for c in out if not c.valid]


def gui_rewrite_chat(task: TaskSpec, direction: str, feedback: TaskFeedback | None) -> list[dict[str, str]]:
    """The environment model's prompt: the page, its current hints and settings, the direction, the critic's notes."""
    page = resolve_task(str(task.data["task"]), pages_dir=task.data.get("pages_dir"))
    allowed = {k: [s.low, s.high] for k, s in page.settings.items()}
    aim = ("EASIER: add one short hint (which element, where it is, or the order of the steps)"
           if direction == "easier" else "HARDER: remove a hint, or make a hint less specific")  # fmt: skip
    user = (
        f"A web agent practises the MiniWoB++ task '{page.name}' ({page.level.value}). Its instruction comes from "
        f"the page; you may only change the hints appended to it{' and the page settings' if allowed else ''}. "
        f"The page and its checker must stay the same.\nCurrent hints: {json.dumps(task.data.get('hints', []))}\n"
        f"Current settings: {json.dumps(task.data.get('settings', {}))} (allowed ranges: {json.dumps(allowed)})\n"
        f"Agent's recent failures:\n{render_feedback(feedback) or '(none)'}\nMake the task {aim}.\n"
        'Answer with one JSON object: {"task": "' + page.name + '", "hints": [...], "settings": {...}}'
    )
    return [{"role": "system", "content": "You adapt the difficulty of training tasks."},
            {"role": "user", "content": user}]  # fmt: skip


def parse_gui_rewrite(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text`` that has a ``hints`` or ``settings`` key, else ``None``."""
    for match in re.finditer(r"\{", text):
        try:
            obj, _ = json.JSONDecoder().raw_decode(text[match.start():])
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and ("hints" in obj or "settings" in obj):
            return obj
    return None


@dataclass
class GuiLLMRewriter:
    """An LLM proposes the new hints/settings as JSON; :func:`check_gui_rewrite` validates each proposal.

    Args:
        chat_model: the environment model.
        samples: proposals per request (the first valid one is scheduled by the pool).
        seed: sampling seed (mixed with the task id).
    """

    chat_model: ChatModel
    samples: int = 2
    seed: int = 0
    name: str = "gui_llm"

    def rewrite(self, task: TaskSpec, direction: Direction, feedback: TaskFeedback | None) -> list[Candidate]:
        """Sample proposals, parse and validate each; never raises on model output."""
        d = direction.value
        if d not in ("harder", "easier") or str(task.data.get("task")) not in CURATED_TASKS:
            return []
        chat = gui_rewrite_chat(task, d, feedback)
        from rlanything_core.seeding import derive_seed

        texts = self.chat_model.complete([chat] * self.samples, seed=derive_seed(self.seed, task.task_id))
        prompt = chat[-1]["content"]
        out: list[Candidate] = []
        for k, text in enumerate(texts):
            parsed = parse_gui_rewrite(text)
            if parsed is None:
                out.append(_rejected(None, task, d, self.name, RejectReason.UNPARSEABLE, "no JSON object with hints",
                                     prompt=prompt, raw_output=text))  # fmt: skip
                continue
            if "instruction" in parsed and not str(parsed["instruction"]).strip():
                out.append(_rejected(None, task, d, self.name, RejectReason.EMPTY_INSTRUCTION,
                                     "the rewritten instruction is empty", prompt=prompt, raw_output=text))
                continue
            proposed: dict[str, Any] = {k: parsed[k] for k in ("task", "seed", "hints", "settings") if k in parsed}
            data = {**task.data, **proposed}
            cand = _candidate(task, d, self.name, data, f"llm{k}")
            cand.prompt, cand.raw_output = prompt, text
            out.append(cand)
        return out
