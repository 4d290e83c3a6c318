import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlanything_core.generation.parsing import parse_action_index, parse_boxed, parse_vote

# Text without backslashes or braces: cannot open, close or fake a box.
plain = st.text(alphabet=st.characters(blacklist_characters="\\{}"), max_size=40)


@st.composite
def balanced(draw: st.DrawFn, depth: int = 0) -> str:
    nested = st.just("") if depth >= 2 else st.deferred(lambda: braced(depth))
    parts = draw(st.lists(st.one_of(plain, nested), max_size=4))
    return "".join(parts)


@st.composite
def braced(draw: st.DrawFn, depth: int) -> str:
    return "{" + draw(balanced(depth + 1)) + "}"


@settings(deadline=None)  # pure and fast, but CI machines are shared: no flaky deadline
@given(prefix=st.text(max_size=40), content=balanced(), suffix=plain)
def test_parse_boxed_returns_last_balanced_content(prefix: str, content: str, suffix: str) -> None:
    assert parse_boxed(prefix + "\\boxed{" + content + "}" + suffix) == content


@settings(deadline=None)  # pure and fast, but CI machines are shared: no flaky deadline
@given(first=balanced(), second=balanced(), middle=plain)
def test_parse_boxed_takes_the_last_box(first: str, second: str, middle: str) -> None:
    assert parse_boxed(f"\\boxed{{{first}}}{middle}\\boxed{{{second}}}") == second


@settings(deadline=None)  # pure and fast, but CI machines are shared: no flaky deadline
@given(text=st.text(max_size=80))
def test_parsers_never_raise_on_arbitrary_text(text: str) -> None:
    result = parse_boxed(text)
    assert result is None or result in text
    assert parse_vote(text) in (-1, 0, 1)
    index = parse_action_index(text, 5)
    assert index is None or 0 <= index < 5


def test_parse_boxed_edge_cases() -> None:
    assert parse_boxed("no box here") is None
    assert parse_boxed("\\boxed{2} then \\boxed{3") is None  # truncated last box: no guess from the earlier one
    assert parse_boxed("\\boxed{\\frac{1}{2}}") == "\\frac{1}{2}"
    assert parse_boxed("\\boxed{a \\boxed{b}}") == "a \\boxed{b}"  # an inner box belongs to the outer one
    assert parse_boxed("\\boxed{}") == ""
    assert parse_boxed(None) is None  # type: ignore[arg-type]


@settings(deadline=None)  # pure and fast, but CI machines are shared: no flaky deadline
@given(num_actions=st.integers(1, 50), data=st.data(), prefix=plain, suffix=plain)
def test_parse_action_index_in_range_roundtrip(num_actions: int, data: st.DataObject, prefix: str, suffix: str) -> None:
    index = data.draw(st.integers(0, num_actions - 1))
    form = data.draw(st.sampled_from(["{}", " {} ", "({})", "{})", "{}) go to desk 1", "{}. open drawer", "{}:"]))
    text = prefix + "\\boxed{" + form.format(index) + "}" + suffix
    assert parse_action_index(text, num_actions) == index


@settings(deadline=None)  # pure and fast, but CI machines are shared: no flaky deadline
@given(num_actions=st.integers(0, 50), extra=st.integers(0, 1000))
def test_parse_action_index_out_of_range_is_none(num_actions: int, extra: int) -> None:
    assert parse_action_index(f"\\boxed{{{num_actions + extra}}}", num_actions) is None


@pytest.mark.parametrize(
    "text",
    ["I choose 3", "\\boxed{go to desk 1}", "\\boxed{-1}", "\\boxed{1, 2}", "\\boxed{3 4}", "\\boxed{}",
     "\\boxed{٣}", "\\boxed{1.5}", "\\boxed{2"],
)
def test_parse_action_index_rejects_non_indices(text: str) -> None:
    assert parse_action_index(text, 10) is None


def test_parse_action_index_validates_num_actions() -> None:
    with pytest.raises(ValueError, match="num_actions"):
        parse_action_index("\\boxed{1}", -1)


@pytest.mark.parametrize(
    ("text", "vote"),
    [
        ("reasoning... \\boxed{1}", 1),
        ("\\boxed{+1}", 1),
        ("\\boxed{-1}", -1),
        ("\\boxed{\u22121}", -1),  # unicode minus
        ("\\boxed{- 1}", -1),
        ("\\boxed{$-1$}", -1),
        ("\\boxed{\\text{-1}}", -1),
        ("\\boxed{score: 1}", 1),
        ("\\boxed{1.0}", 1),
        ("\\boxed{-1} wait, actually \\boxed{1}", 1),
        ("\\boxed{1/2}", 0),
        ("\\boxed{1 or -1}", 0),
        ("\\boxed{1 out of 10}", 0),
        ("\\boxed{0}", 0),
        ("\\boxed{2}", 0),
        ("\\boxed{yes}", 0),
        ("no box, score 1", 0),
        ("\\boxed{1} and then \\boxed{", 0),
    ],
)
def test_parse_vote_table(text: str, vote: int) -> None:
    assert parse_vote(text) == vote


@settings(deadline=None)  # pure and fast, but CI machines are shared: no flaky deadline
@given(vote=st.sampled_from([1, -1]), prefix=st.text(max_size=30), suffix=plain,
       form=st.sampled_from(["{}", " {} ", "${}$", "\\text{{{}}}", "score: {}"]))
def test_parse_vote_roundtrip(vote: int, prefix: str, suffix: str, form: str) -> None:
    shown = form.format("+1" if vote == 1 and "score" not in form else str(vote))
    assert parse_vote(prefix + "\\boxed{" + shown + "}" + suffix) == vote
