"""Every shipped MiniWoB++ page can be named, lists take names and families, and one's own page folders are checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("miniwob", reason="PyPI miniwob==1.1.0 is not installed (pip install -e '.[gui]')")

from rlanything_core.envs.miniwob.catalog import SHIPPED_FAMILIES, family_of, shipped_pages  # noqa: E402
from rlanything_core.envs.miniwob.page_folder import PageFolderError, load_page_folder  # noqa: E402
from rlanything_core.envs.miniwob.tasks import (  # noqa: E402
    CURATED_TASKS,
    Level,
    MiniwobTaskSpec,
    UnknownTaskError,
    all_tasks,
    resolve_task,
    select_tasks,
)

NEWLY_NAMEABLE = ["click-tab-2", "enter-date", "social-media", "book-flight", "simon-says", "hover-shape"]


def test_every_shipped_page_is_named_and_in_exactly_one_family() -> None:
    from miniwob.selenium_instance import HTML_DIR  # the wheel's own idea of where its pages are

    pages = sorted(p.stem for p in (Path(HTML_DIR) / "miniwob").glob("*.html"))
    assert len(pages) == 130 and list(shipped_pages()) == pages
    in_table = [p for family in SHIPPED_FAMILIES.values() for p in family]
    assert sorted(in_table) == pages, "each shipped page in exactly one family, no stray names"
    for page in pages:
        task = resolve_task(page)
        assert task.name == page and task.family == family_of(page) != "other"
        assert MiniwobTaskSpec(page, seed=3).task is task
    for name in NEWLY_NAMEABLE:
        assert name not in CURATED_TASKS and resolve_task(name).level is Level.UNRATED


def test_curated_pages_keep_their_families_and_hints() -> None:
    for task in CURATED_TASKS.values():
        assert task.hints and task.level is not Level.UNRATED
        if not task.own_page:
            assert family_of(task.name) == task.family, task.name
    assert len(all_tasks()) == 131  # the 130 shipped pages and the library's rla-login-form


def test_select_tasks_mixes_names_and_families_in_order_without_duplicates() -> None:
    picked = select_tasks(["book-flight", "tabs", "click-tab-2", "social"])
    tabs = [t for t in all_tasks().values() if t.family == "tabs"]
    assert picked == ["book-flight", *[t.name for t in tabs], "social-media", "social-media-all", "social-media-some"]
    assert picked.index("click-tab-2-easy") < picked.index("click-tab-2")  # curated (easy first) before the rest
    assert select_tasks(["pointer"]) == sorted(SHIPPED_FAMILIES["pointer"])  # named on purpose only


def test_unknown_names_are_refused_naming_the_list_and_close_names() -> None:
    with pytest.raises(UnknownTaskError, match=r"train_tasks: unknown MiniWoB\+\+ task 'click-tab-3'") as err:
        select_tasks(["click", "click-tab-3"], key="train_tasks")
    assert "click-tab-2" in str(err.value) and "families" in str(err.value) and "booking" in str(err.value)
    with pytest.raises(UnknownTaskError, match="close names: book-flight"):
        resolve_task("book-flihgt")
    with pytest.raises(UnknownTaskError):
        MiniwobTaskSpec("drag-boxes")


# ------------------------------------------------------------------------------------------------ own page folders
PAGE = """<!DOCTYPE html><html><head><link rel="stylesheet" type="text/css" href="../core/core.css">
<script src="../core/core.js"></script><script>
var genProblem = function() { document.getElementById('query').textContent = 'Click ok.';
  document.getElementById('ok').onclick = function() { core.endEpisode(1.0, true); }; };
window.onload = function() { core.startEpisode(); };
</script></head><body><div id="wrap"><div id="query"></div><div id="area"><button id="ok">ok</button></div></div>
</body></html>"""


def _folder(tmp: Path, pages: dict[str, str], manifest: object = None) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    for name, text in pages.items():
        (tmp / f"{name}.html").write_text(text)
    if manifest is not None:
        (tmp / "tasks.json").write_text(manifest if isinstance(manifest, str) else json.dumps(manifest))
    return tmp


def test_a_page_folder_loads_with_its_manifest_and_specs_carry_it(tmp_path: Path) -> None:
    manifest = {"press-ok": {"family": "mine", "level": "easy", "hints": ["The button reads ok."],
                             "settings": {"speed": {"default": 1, "low": 0, "high": 3}}}}  # fmt: skip
    folder = _folder(tmp_path / "pages", {"press-ok": PAGE, "other-page": PAGE}, manifest)
    tasks = load_page_folder(folder)
    assert sorted(tasks) == ["other-page", "press-ok"]
    ok = tasks["press-ok"]
    assert (ok.family, ok.level, ok.hints, ok.own_page, ok.folder) == ("mine", Level.EASY, ("The button reads ok.",),
                                                                        True, str(folder.resolve()))  # fmt: skip
    assert tasks["other-page"].family == "own" and tasks["other-page"].level is Level.UNRATED
    spec = MiniwobTaskSpec("press-ok", seed=2, settings=(("speed", 3),), pages_dir=str(folder))
    assert spec.task is ok and spec.resolved_settings() == {"speed": 3}
    assert MiniwobTaskSpec.from_data(json.loads(json.dumps(spec.to_data()))) == spec
    assert "pages_dir" not in MiniwobTaskSpec("click-button").to_data()  # the wheel's pages keep their data
    assert select_tasks(["mine", "click-tab-2"], pages_dir=folder) == ["press-ok", "click-tab-2"]
    with pytest.raises(ValueError, match="settings\\['speed'\\]: expected 0..3"):
        MiniwobTaskSpec("press-ok", settings=(("speed", 4),), pages_dir=str(folder))


@pytest.mark.parametrize(
    ("pages", "manifest", "fault"),
    [
        ({}, None, "holds no .html page"),
        ({"Bad Name": PAGE}, None, "must be lower-case letters"),
        ({"click-button": PAGE}, None, "'click-button' is already a MiniWoB\\+\\+ page"),
        ({"p": PAGE.replace("../core/core.js", "core.js")}, None, 'must load "../core/core.js"'),
        ({"p": PAGE.replace("genProblem", "makeIt")}, None, "must define genProblem"),
        ({"p": PAGE.replace("core.endEpisode(1.0, true)", "x()")}, None, "must call core.endEpisode"),
        ({"p": PAGE}, "{not json", "tasks.json: not valid JSON"),
        ({"p": PAGE}, ["p"], "expected an object of page name"),
        ({"p": PAGE}, {"q": {}}, "describes pages the folder lacks: \\['q'\\]"),
        ({"p": PAGE}, {"p": {"difficulty": 2}}, "unknown keys \\['difficulty'\\]"),
        ({"p": PAGE}, {"p": {"level": "brutal"}}, "level: expected one of"),
        ({"p": PAGE}, {"p": {"family": "My Forms"}}, "family: expected a plain lower-case name"),
        ({"p": PAGE}, {"p": {"hints": ["ok", ""]}}, "hints: expected a list of non-empty strings"),
        ({"p": PAGE}, {"p": {"settings": {"n": {"default": 5, "low": 0, "high": 3}}}}, "low <= default <= high"),
        ({"p": PAGE}, {"p": {"settings": {"n": {"default": 1, "low": 0}}}}, "settings\\['n'\\]"),
    ],
)
def test_a_bad_page_folder_is_refused_naming_the_file_and_the_fault(
    tmp_path: Path, pages: dict[str, str], manifest: object, fault: str
) -> None:
    folder = _folder(tmp_path / "pages", pages, manifest)
    with pytest.raises(PageFolderError, match=fault) as err:
        load_page_folder(folder)
    assert str(folder.resolve()) in str(err.value)


def test_a_missing_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PageFolderError, match="is not a folder"):
        load_page_folder(tmp_path / "nope")
    with pytest.raises(PageFolderError, match="is not a folder"):
        MiniwobTaskSpec("press-ok", pages_dir=str(tmp_path / "nope"))


def test_a_changed_folder_is_reloaded(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "pages", {"first": PAGE})
    assert list(load_page_folder(folder)) == ["first"]
    _folder(folder, {"second": PAGE})
    assert list(load_page_folder(folder)) == ["first", "second"]
    (folder / "second.html").write_text(PAGE.replace("genProblem", "x"))
    with pytest.raises(PageFolderError, match="second.html"):
        load_page_folder(folder)


def test_the_rule_rewriter_uses_an_own_pages_hints_and_settings(tmp_path: Path) -> None:
    from rlanything_core.adaptation.difficulty import Direction
    from rlanything_core.adaptation.rewriters.gui_hints import GuiHintRewriter, check_gui_rewrite
    from rlanything_core.adaptation.rewriters.protocol import RejectReason, TaskSpec

    manifest = {"press-ok": {"hints": ["Click ok."], "settings": {"n": {"default": 1, "low": 0, "high": 2}}}}
    folder = _folder(tmp_path / "pages", {"press-ok": PAGE}, manifest)
    data = MiniwobTaskSpec("press-ok", seed=1, pages_dir=str(folder)).to_data()
    root = TaskSpec(task_id="press-ok#s1", kind="miniwob", root_id="press-ok#s1", data=data)
    easier = GuiHintRewriter(num_candidates=4).rewrite(root, Direction.EASIER, None)
    assert [c.task.data["hints"] for c in easier if c.valid][0] == ["Click ok."]
    assert {c.detail for c in easier if c.valid} == {"hint+", "n-"}
    assert all(c.task.data["pages_dir"] == str(folder) for c in easier if c.valid)  # the page (checker) stays
    other = _folder(tmp_path / "elsewhere", {"press-ok": PAGE.replace("1.0, true", "1.0, true); core.x(")})
    moved = check_gui_rewrite(data, {**data, "hints": ["Click ok."], "pages_dir": str(other)})
    assert moved is not None and moved[0] is RejectReason.VERIFIER_CHANGED and "page folder changed" in moved[1]


def test_own_pages_are_found_through_their_folder_only(tmp_path: Path) -> None:
    first = _folder(tmp_path / "one", {"twin-page": PAGE}, {"twin-page": {"hints": ["one"]}})
    second = _folder(tmp_path / "two", {"twin-page": PAGE}, {"twin-page": {"hints": ["two"]}})
    load_page_folder(first)
    load_page_folder(second)
    with pytest.raises(UnknownTaskError, match="unknown MiniWoB\\+\\+ task 'twin-page'"):
        resolve_task("twin-page")  # two folders hold it: only the folder says which checker is meant
    assert resolve_task("twin-page", pages_dir=second).hints == ("two",)
    assert MiniwobTaskSpec("twin-page", pages_dir=str(first)).task.hints == ("one",)
    assert "twin-page" not in all_tasks() and all_tasks(pages_dir=first)["twin-page"].hints == ("one",)
