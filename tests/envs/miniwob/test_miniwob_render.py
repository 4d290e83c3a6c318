"""The pure parts of the MiniWoB++ setting: DOM flattening and rendering, candidate actions, parsing, task specs,
the environment's refusals at construction."""

from __future__ import annotations

import re
from typing import Any

import pytest

from rlanything_core.envs.miniwob.env import MiniwobEnv
from rlanything_core.envs.miniwob.render import (
    ActionKind,
    ElementView,
    candidate_actions,
    element_page,
    flatten_dom,
    key_error,
    parse_action,
    rank_elements,
    render_dom,
    text_error,
)
from rlanything_core.envs.miniwob.tasks import CURATED_TASKS, Level, MiniwobTaskSpec, UnknownTaskError, resolve_task


def _dom(raw: dict) -> object:
    from miniwob.dom import DOMElement  # the wheel's own DOM parser, fed the JSON shape core.getDOMInfo() returns

    return DOMElement(raw)


def _node(ref: int, tag: str, *, text: str | None = None, children: list | None = None, **extra: object) -> dict:
    node = {"ref": ref, "tag": tag, "left": 0, "top": 0, "width": 10, "height": 10, "children": children or []}
    if text is not None:
        node["text"] = text
    node.update(extra)
    return node


LOGIN = _node(1, "body", children=[
    _node(2, "div", id="wrap", children=[
        _node(6, "label", text="Username"),
        _node(7, "input_text", id="username", value=""),
        _node(8, "input_password", id="password", value="", focused=True),
        _node(9, "button", text="Login", id="subbtn"),
        _node(10, "div", text="hidden", width=0),
        _node(11, "input_checkbox", id="ch0", value=True),
    ]),
])  # fmt: skip


def test_flatten_keeps_visible_leaves_in_document_order() -> None:
    elements = flatten_dom(_dom(LOGIN))
    assert [e.ref for e in elements] == [6, 7, 8, 9, 11]  # body/wrapper dropped, zero-size element dropped
    assert elements[2].focused and elements[1].is_text_box and not elements[4].is_text_box


def test_render_dom_lines() -> None:
    text = render_dom(flatten_dom(_dom(LOGIN)))
    assert text.splitlines() == [
        '[6] label "Username"',
        "[7] input_text #username",
        "[8] input_password #password (focused)",
        '[9] button "Login" #subbtn',
        "[11] input_checkbox #ch0 checked",
    ]
    many = [ElementView(ref=i, tag="span", text="x" * 100) for i in range(5)]
    lines = render_dom(many, text_limit=10, max_elements=3).splitlines()
    assert len(lines) == 4 and lines[-1] == "... 2 more elements" and len(lines[0]) < 30


def test_candidates_click_type_press_done() -> None:
    cands = candidate_actions(flatten_dom(_dom(LOGIN)), [("username", "keneth"), ("password", "91YP"), ("x", "")])
    assert cands[:5] == ['click [6] label "Username"', "click [7] input_text #username",
                         "click [8] input_password #password", 'click [9] button "Login" #subbtn',
                         "click [11] input_checkbox #ch0"]  # fmt: skip
    assert 'type "keneth" into [7] input_text #username' in cands
    assert 'type "91YP" into [8] input_password #password' in cands
    assert "press <Enter>" in cands and cands[-1] == "DONE"
    assert len(cands) == len(set(cands))
    assert candidate_actions([ElementView(ref=1, tag="button", text="Ok")], []) == ['click [1] button "Ok"', "DONE"]


@pytest.mark.parametrize(
    ("text", "kind", "ref", "payload"),
    [
        ('click [9] button "Login"', ActionKind.CLICK, 9, None),
        ("CLICK [-12]", ActionKind.CLICK, -12, None),
        ('type "a b" into [7] input_text', ActionKind.TYPE, 7, "a b"),
        ("press <Enter>", ActionKind.PRESS, None, "<Enter>"),
        ("DONE", ActionKind.DONE, None, None),
        (" Wait.", ActionKind.WAIT, None, None),
        ("show more elements", ActionKind.MORE, None, None),
        (" fail. ", ActionKind.FAIL, None, None),
    ],
)
def test_parse_action(text: str, kind: ActionKind, ref: int | None, payload: str | None) -> None:
    parsed = parse_action(text)
    assert parsed is not None and parsed.kind is kind and parsed.ref == ref
    assert payload in (None, parsed.text, parsed.key)


@pytest.mark.parametrize(
    "text", ["", "go north", "click button", 'type "x" somewhere', "DONE now", "wait 5", "show more", "press"]
)
def test_parse_action_rejects(text: str) -> None:
    assert parse_action(text) is None


def test_every_candidate_parses_back_to_its_element() -> None:
    elements = flatten_dom(_dom(LOGIN))
    for cand in candidate_actions(elements, [("username", "keneth")]):
        parsed = parse_action(cand)
        assert parsed is not None, cand
        if parsed.ref is not None:
            assert parsed.ref in {e.ref for e in elements}


def test_curated_list_spans_levels_and_unknown_names_are_refused() -> None:
    assert {t.level for t in CURATED_TASKS.values()} == {Level.EASY, Level.MEDIUM, Level.HARD}
    assert all(t.hints for t in CURATED_TASKS.values())
    with pytest.raises(UnknownTaskError, match="'click-buton'.*close names: click-button") as err:
        resolve_task("click-buton")
    assert "families" in str(err.value)
    with pytest.raises(UnknownTaskError):
        MiniwobTaskSpec("drag-boxes")


def test_task_spec_settings_are_checked_and_round_trip() -> None:
    spec = MiniwobTaskSpec("rla-login-form", seed=3, hints=("h",), settings=(("distractors", 4),))
    assert spec.resolved_settings() == {"distractors": 4, "shuffle": 0}
    assert MiniwobTaskSpec.from_data(spec.to_data()) == spec
    with pytest.raises(ValueError, match="distractors"):
        MiniwobTaskSpec("rla-login-form", settings=(("distractors", 5),))
    with pytest.raises(ValueError, match="has no setting 'speed'"):
        MiniwobTaskSpec("login-user", settings=(("speed", 1),))


def test_text_nodes_have_negative_refs_and_their_clicks_parse() -> None:
    label = _node(4, "label", children=[_node(5, "input_checkbox", value=False), _node(-1, "t", text="Remember me")])
    cands = candidate_actions(flatten_dom(_dom(_node(1, "body", children=[label]))), [])
    assert cands[2] == 'click [-1] t "Remember me"'
    parsed = parse_action(cands[2])
    assert parsed is not None and parsed.ref == -1


@pytest.mark.parametrize(
    ("key", "fault"),
    [
        ("<Enter>", None), ("a", None), ("C-a", None), ("S-<Tab>", None), ("A-C-<ArrowLeft>", None), ("-", None),
        ("Enter", "did you mean <Enter>"), ("<enter>", "did you mean <Enter>"), ("<Right>", "unknown key '<Right>'"),
        ("C-", "unknown key 'C-'"), ("é", "unknown key"), ("ab", "unknown key 'ab'"), ("C-<Nope>", "unknown key"),
    ],
)  # fmt: skip
def test_key_error_knows_miniwobs_key_syntax(key: str, fault: str | None) -> None:
    error = key_error(key)
    assert error is None if fault is None else (error is not None and fault in error)


def test_text_error_refuses_what_chromedriver_cannot_type() -> None:
    assert text_error("Grüße, 東京 <tag> \n") is None
    assert "basic plane" in (text_error("ok \U0001f600") or "")
    assert text_error("x" * 500) is None and "501 characters long" in (text_error("x" * 501) or "")


def _buttons(n: int) -> list[ElementView]:
    return [ElementView(ref=i, tag="button", text=f"b{i}") for i in range(n)] + [ElementView(ref=n, tag="div")]


def test_element_pages_cover_every_element_once_with_the_target_first() -> None:
    elements = _buttons(90)
    goal = 'Click the button "b77".'
    first, pages = element_page(elements, instruction=goal, page=0, per_page=60)
    assert pages == 2 and len(first) == 60 and 77 in {e.ref for e in first}
    assert [e.ref for e in first] == sorted(e.ref for e in first)  # a page reads in document order
    second, _ = element_page(elements, instruction=goal, page=1, per_page=60)
    assert sorted(e.ref for e in first + second) == list(range(91))
    assert element_page(elements, instruction=goal, page=2, per_page=60)[0] == first  # pages wrap around
    assert element_page(elements[:60], instruction=goal)[1] == 1
    assert rank_elements(elements, goal)[0].ref == 77  # 'b7' is not in '"b77"': whole words only
    with pytest.raises(ValueError, match="per_page"):
        element_page(elements, per_page=0)


def test_candidates_never_cut_silently() -> None:
    elements = _buttons(90)
    with pytest.raises(ValueError, match="91 exceed the candidate cap max_clicks=60"):
        candidate_actions(elements, [])
    shown, _ = element_page(elements, instruction="b3")
    cands = candidate_actions(shown, [], more=True, wait=True)
    assert cands[-3:] == ["show more elements", "wait", "DONE"] and len(cands) == 63
    assert all(parse_action(c) is not None for c in cands)


@pytest.mark.parametrize(
    ("kwargs", "text"),
    [
        ({"max_steps": 0}, "max_steps: expected an integer >= 1, got 0"),
        ({"max_clicks": 2.5}, "max_clicks: expected an integer >= 1, got 2.5"),
        ({"wait_s": 11}, "wait_s: expected 0..10 seconds, got 11"),
    ],
)
def test_bad_env_settings_are_refused_naming_them(kwargs: dict[str, Any], text: str) -> None:
    with pytest.raises(ValueError, match=re.escape(text)):
        MiniwobEnv(screenshots=False, **kwargs)  # construction starts no browser
