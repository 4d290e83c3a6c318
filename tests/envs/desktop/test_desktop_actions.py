"""Action parsing: pyautogui code, control words and computer_13 dicts (no display needed)."""

from __future__ import annotations

import pytest

from rlanything_core.envs.desktop.actions import ActionKind, InvalidAction, parse_action
from rlanything_core.envs.desktop.cli import load_actions


@pytest.mark.parametrize("word", ["DONE", "FAIL", "WAIT", " DONE\n"])
def test_control_words(word: str) -> None:
    assert parse_action(word).kind.value == word.strip()


def test_code_is_compiled_not_run() -> None:
    action = parse_action("import os; os._exit(3)")  # would kill this process if it ran here
    assert action.kind is ActionKind.CODE and "os._exit" in action.code


@pytest.mark.parametrize("bad", ["pyautogui.click(", "", "   ", 42, None, ["DONE"]])
def test_invalid_actions_raise(bad: object) -> None:
    with pytest.raises(InvalidAction):
        parse_action(bad)


def test_computer13_mapping() -> None:
    click = parse_action({"action_type": "CLICK", "parameters": {"x": 10, "y": 20, "num_clicks": 2}})
    assert click.calls == (("click", [], {"button": "left", "x": 10, "y": 20, "clicks": 2}),)
    assert parse_action({"action_type": "HOTKEY", "parameters": {"keys": ["ctrl", "s"]}}).calls == (
        ("hotkey", ["ctrl", "s"], {}),
    )
    scroll = parse_action({"action_type": "SCROLL", "parameters": {"dx": 0, "dy": -3}})
    assert scroll.calls == (("scroll", [-3], {}),)
    assert parse_action({"action_type": "FAIL"}).kind is ActionKind.FAIL
    assert parse_action({"action_type": "TYPING", "parameters": {"text": "a\n"}}).calls[0][1] == ["a\n"]


@pytest.mark.parametrize(
    "bad",
    [
        {"action_type": "TELEPORT"},
        {"action_type": "CLICK", "parameters": {"x": 1}},  # x without y
        {"action_type": "CLICK", "parameters": {"button": "side"}},
        {"action_type": "CLICK", "parameters": {"num_clicks": 5}},
        {"action_type": "MOVE_TO", "parameters": {}},
        {"action_type": "MOVE_TO", "parameters": {"x": "1", "y": 2}},
        {"action_type": "HOTKEY", "parameters": {"keys": []}},
        {"action_type": "PRESS", "parameters": {}},
        {"parameters": {}},
    ],
)
def test_bad_computer13(bad: dict) -> None:
    with pytest.raises(InvalidAction):
        parse_action(bad)


def test_load_actions_reads_literals_only(tmp_path) -> None:
    good = tmp_path / "a.py"
    good.write_text("# comment\nACTIONS = ['pyautogui.press(\"a\")', {'action_type': 'DONE'}, 'DONE']\n")
    assert load_actions(good)[-1] == "DONE"
    bare = tmp_path / "b.py"
    bare.write_text("['FAIL']\n")
    assert load_actions(bare) == ["FAIL"]
    evil = tmp_path / "c.py"
    evil.write_text("ACTIONS = [__import__('os').getcwd()]\n")
    with pytest.raises(ValueError):
        load_actions(evil)
    empty = tmp_path / "d.py"
    empty.write_text("x = 1\n")
    with pytest.raises(ValueError, match="no literal list"):
        load_actions(empty)
