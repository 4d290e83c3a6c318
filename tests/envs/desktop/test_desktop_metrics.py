"""OSWorld metric semantics on files written here (no display): compare_table rules, value rules, general metrics,
and the evaluator's infeasible / FAIL / conj logic."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import pytest
from _osworld_impress_standins import write_deck
from _osworld_standins import ROWS, _pivot
from _osworld_writer_standins import write_doc, write_odt

from rlanything_core.envs.desktop.config_steps import StepContext
from rlanything_core.envs.desktop.episode_fs import EpisodeFS
from rlanything_core.envs.desktop.evaluator import evaluate_task
from rlanything_core.envs.desktop.metrics import check_include_exclude, compare_table, exact_match
from rlanything_core.envs.desktop.metrics.cells import match_value_to_rule, read_cell_value
from rlanything_core.envs.desktop.metrics.docs import compare_docx_files
from rlanything_core.envs.desktop.metrics.slides import check_transition, compare_pptx_files
from rlanything_core.envs.desktop.metrics.table import compare_csv
from rlanything_core.envs.desktop.metrics.workbook_parts import chart_summary, pivot_summary
from rlanything_core.envs.desktop.task import parse_task


def _book(path: Path, sheets: dict[str, list[list[Any]]], *, bold: str | None = None, fmt: str | None = None) -> str:
    import openpyxl
    from openpyxl.styles import Font

    book = openpyxl.Workbook()
    book.remove(book.active)
    for name, rows in sheets.items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(row)
        if bold:
            sheet[bold].font = Font(bold=True)
        if fmt:
            sheet["B2"].number_format = fmt
    book.save(path)
    return str(path)


DATA = [["Name", "Value"], ["a", 1], ["b", 2.5]]
DATA_RULES = [{"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}]


def test_sheet_data_equal_and_different(tmp_path: Path) -> None:
    gold = _book(tmp_path / "g.xlsx", {"S": DATA})
    assert compare_table(_book(tmp_path / "r.xlsx", {"S": DATA}), gold, rules=DATA_RULES) == 1.0
    changed = [["Name", "Value"], ["a", 1], ["b", 2.6]]
    assert compare_table(_book(tmp_path / "w.xlsx", {"S": changed}), gold, rules=DATA_RULES) == 0.0
    extra = DATA + [["c", 3]]
    assert compare_table(_book(tmp_path / "x.xlsx", {"S": extra}), gold, rules=DATA_RULES) == 0.0


def test_sheet_data_precision_and_dtype(tmp_path: Path) -> None:
    gold = _book(tmp_path / "g.xlsx", {"S": [["v"], [1 / 3]]})
    close = _book(tmp_path / "r.xlsx", {"S": [["v"], [0.33333]]})
    assert compare_table(close, gold, rules=DATA_RULES) == 1.0  # equal at 4 decimals
    assert compare_table(close, gold, rules=[{**DATA_RULES[0], "precision": 6}]) == 0.0
    # pandas parses numeric-looking text as numbers (as in OSWorld), so "0.3333" typed as text still matches
    assert compare_table(_book(tmp_path / "t.xlsx", {"S": [["v"], ["0.3333"]]}), gold, rules=DATA_RULES) == 1.0
    assert compare_table(_book(tmp_path / "u.xlsx", {"S": [["v"], ["n/a"]]}), gold, rules=DATA_RULES) == 0.0


def test_sheet_names_and_indices(tmp_path: Path) -> None:
    gold = _book(tmp_path / "g.xlsx", {"Sales": DATA, "Summary": DATA})
    same = _book(tmp_path / "r.xlsx", {"Sales": DATA, "Summary": DATA})
    swapped = _book(tmp_path / "s.xlsx", {"Summary": DATA, "Sales": DATA})
    assert compare_table(same, gold, rules=[{"type": "sheet_name"}]) == 1.0
    assert compare_table(swapped, gold, rules=[{"type": "sheet_name"}]) == 0.0
    by_name = [{"type": "sheet_data", "sheet_idx0": "RNSummary", "sheet_idx1": "ENSummary"}]
    assert compare_table(swapped, gold, rules=by_name) == 1.0
    missing = [{"type": "sheet_data", "sheet_idx0": "RI5", "sheet_idx1": "EI0"}]
    assert compare_table(same, gold, rules=missing) == 0.0
    with pytest.raises(ValueError, match="sheet index"):
        compare_table(same, gold, rules=[{"type": "sheet_data", "sheet_idx0": "XX0", "sheet_idx1": "EI0"}])


def test_missing_or_broken_result_scores_zero(tmp_path: Path) -> None:
    gold = _book(tmp_path / "g.xlsx", {"S": DATA})
    assert compare_table(None, gold, rules=DATA_RULES) == 0.0
    assert compare_table(str(tmp_path / "absent.xlsx"), gold, rules=DATA_RULES) == 0.0
    broken = tmp_path / "broken.xlsx"
    broken.write_text("not a zip")
    assert compare_table(str(broken), gold, rules=DATA_RULES) == 0.0


def test_check_cell_value_and_styles(tmp_path: Path) -> None:
    path = _book(tmp_path / "r.xlsx", {"S": DATA}, bold="A1", fmt="0.00%")
    assert read_cell_value(path, "S", "B2") == 1.0 and isinstance(read_cell_value(path, "S", "B2"), float)
    assert read_cell_value(path, "S", "Z9") is None and read_cell_value(path, "Nope", "A1") is None

    def rule(coord: str, props: dict) -> list[dict]:
        return [{"type": "check_cell", "sheet_idx": 0, "coordinate": coord, "props": props}]

    assert compare_table(path, rules=rule("A1", {"font_bold": {"method": "eq", "ref": True}})) == 1.0
    assert compare_table(path, rules=rule("B1", {"font_bold": {"method": "eq", "ref": True}})) == 0.0
    assert compare_table(path, rules=rule("B2", {"number_format": {"method": "re", "ref": "%"}})) == 1.0
    assert compare_table(path, rules=rule("B3", {"number_format": {"method": "re", "ref": "%"}})) == 0.0
    assert compare_table(path, rules=rule("B3", {"value": {"method": "approx:0.01", "ref": 2.5}})) == 1.0


def test_freeze_and_zoom(tmp_path: Path) -> None:
    import openpyxl

    gold, result = openpyxl.Workbook(), openpyxl.Workbook()
    gold.active.freeze_panes = "A2"
    result.active.sheet_view.zoomScale = 150
    gold.save(tmp_path / "g.xlsx")
    result.save(tmp_path / "r.xlsx")
    r, g = str(tmp_path / "r.xlsx"), str(tmp_path / "g.xlsx")
    assert compare_table(r, g, rules=[{"type": "freeze", "sheet_idx0": 0, "sheet_idx1": "EI0"}]) == 0.0
    assert compare_table(g, g, rules=[{"type": "freeze", "sheet_idx0": 0, "sheet_idx1": "EI0"}]) == 1.0
    assert compare_table(r, rules=[{"type": "zoom", "sheet_idx": 0, "method": "ge", "ref": 120}]) == 1.0
    assert compare_table(g, rules=[{"type": "zoom", "sheet_idx": 0, "method": "ge", "ref": 120}]) == 0.0


def test_sheet_fuzzy_exact_and_includes(tmp_path: Path) -> None:
    gold = _book(tmp_path / "g.xlsx", {"S": [[12]]})
    result = _book(tmp_path / "r.xlsx", {"S": [[112]]})

    def rules(kind: str, **extra: Any) -> list[dict]:
        sub = {"range": ["A1"], "type": kind, **extra}
        return [{"type": "sheet_fuzzy", "sheet_idx0": "RI0", "sheet_idx1": "EI0", "rules": [sub]}]

    assert compare_table(result, gold, rules=rules("exact_match")) == 0.0  # "112.0" vs "12.0"
    assert compare_table(result, gold, rules=rules("includes")) == 1.0  # "12.0" in "112.0"
    assert compare_table(result, gold, rules=rules("included_by")) == 0.0
    assert compare_table(result, gold, rules=rules("exact_match", trim_leadings="1")) == 1.0  # both become "2.0"
    assert compare_table(result, gold, rules=rules("exact_match", normalization=[["112", "12"]])) == 1.0
    # fuzzy_match: rapidfuzz's ratio of "112.0" and "12.0" is 2 * 4 / 9 = 88.9 percent
    assert compare_table(result, gold, rules=rules("fuzzy_match")) == 1.0
    assert compare_table(result, gold, rules=rules("fuzzy_match", threshold=90)) == 0.0


def test_inline_strings_read_as_none_like_osworld(tmp_path: Path) -> None:
    # openpyxl writes text as inline strings; OSWorld's reader only knows shared strings and formula strings
    path = _book(tmp_path / "r.xlsx", {"S": [["text", 1]]})
    assert read_cell_value(path, "S", "A1") is None and read_cell_value(path, "S", "B1") == 1.0


@pytest.mark.parametrize(
    ("value", "rule", "expected"),
    [
        (3, {"method": "eq", "ref": 3}, True),
        (3, {"method": "gt", "ref": 3}, False),
        (None, {"method": "lt", "ref": 3}, False),
        ("Total 42", {"method": "re", "ref": r"\d+"}, True),
        ("ABC", {"method": "re.IGNORECASE", "ref": "abc"}, True),
        ("2.004", {"method": "approx:0.01", "ref": 2.0}, True),
        ("x", {"method": "approx:0.01", "ref": 2.0}, False),
        (5, {"method": "range.et", "ref": [5, 6]}, True),
        (6, {"method": "range.et", "ref": [5, 6]}, False),
        ("b,a", {"method": "str_set_eq", "ref": ["a", "b"]}, True),
        ("b,a", {"method": "str_list_eq", "ref": ["a", "b"]}, False),
    ],
)
def test_value_rules(value: Any, rule: dict, expected: bool) -> None:
    assert match_value_to_rule(value, rule) is expected


def test_general_metrics(tmp_path: Path) -> None:
    rules = {"include": ["saved", "3 rows"], "exclude": ["error"]}
    assert check_include_exclude("saved: 3 rows", rules) == 1.0
    assert check_include_exclude("saved: 3 rows, error", rules) == 0.0
    assert check_include_exclude("saved", rules) == 0.0 and check_include_exclude(None, rules) == 0.0
    assert exact_match("x", {"expected": "x"}) == 1.0 and exact_match("x ", {"expected": "x"}) == 0.0
    (tmp_path / "a.csv").write_text("A,B\n1,2\n")
    (tmp_path / "b.csv").write_text("a,b \n1,2\n")
    assert compare_csv(str(tmp_path / "a.csv"), str(tmp_path / "b.csv")) == 0.0
    assert compare_csv(str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), strict=False, ignore_case=True) == 1.0


# ------------------------------------------------------------------------------- evaluator without an app
def _task(tmp_path: Path, evaluator: dict) -> Any:
    return parse_task({"id": "t", "instruction": "do it", "config": [], "evaluator": evaluator}, tmp_path)


def _ctx(tmp_path: Path) -> StepContext:
    return StepContext(EpisodeFS(tmp_path / "ep"), None, None, tmp_path, (1280, 800))


def test_infeasible_and_fail(tmp_path: Path) -> None:
    infeasible = _task(tmp_path, {"func": "infeasible"})
    assert evaluate_task(infeasible, _ctx(tmp_path), last_action="FAIL").score == 1.0
    assert evaluate_task(infeasible, _ctx(tmp_path), last_action="DONE").score == 0.0
    assert evaluate_task(infeasible, _ctx(tmp_path), last_action=None).score == 0.0
    feasible = _task(tmp_path, {"func": "exact_match", "result": {"type": "rule", "rules": "x"}, "options": {}})
    feasible.evaluator["options"] = {"rules": {"expected": "x"}}
    assert evaluate_task(feasible, _ctx(tmp_path), last_action="DONE").score == 1.0
    assert evaluate_task(feasible, _ctx(tmp_path), last_action="FAIL").score == 0.0


def test_conj_and_or_and_missing_file(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    text = {"type": "rule", "rules": "hello world"}  # the getter returns the string itself
    gone = {"type": "vm_file", "path": "~/missing.txt", "dest": "missing.txt"}
    ok = {"rules": {"include": ["hello"], "exclude": []}}
    bad = {"rules": {"include": ["absent"], "exclude": []}}

    def score(results: list, options: list, conj: str) -> float:
        ev = {"func": ["check_include_exclude"] * len(results), "result": results, "options": options, "conj": conj}
        return evaluate_task(_task(tmp_path, ev), ctx, last_action="DONE").score

    assert score([text, text], [ok, ok], "and") == 1.0
    assert score([text, text], [ok, bad], "and") == 0.0
    assert score([text, text], [bad, ok], "or") == 1.0
    assert score([text, text], [bad, bad], "or") == 0.0
    assert score([gone, text], [ok, ok], "and") == 0.0
    assert score([gone, text], [ok, ok], "or") == 1.0
    single = {"func": "check_include_exclude", "result": gone, "options": ok}
    outcome = evaluate_task(_task(tmp_path, single), ctx, last_action="DONE")
    assert outcome.score == 0.0 and "missing.txt" in outcome.error


def test_vm_file_copies_into_the_cache(tmp_path: Path) -> None:
    from rlanything_core.envs.desktop.getters import GETTERS

    ctx = _ctx(tmp_path)
    (ctx.fs.home / "Desktop" / "a.txt").write_text("x")
    got = GETTERS["vm_file"].get(ctx, {"path": "~/Desktop/a.txt", "dest": "copy.txt"})
    assert Path(got) == ctx.fs.cache / "copy.txt" and Path(got).read_text() == "x"
    with pytest.raises(FileNotFoundError):
        GETTERS["vm_file"].get(ctx, {"path": "~/Desktop/none.txt", "dest": "n.txt"})


def test_vm_paths_stay_inside_the_episode(tmp_path: Path) -> None:
    fs = EpisodeFS(tmp_path / "ep")
    assert fs.local("~/a.xlsx") == fs.home / "a.xlsx"
    assert fs.local("/home/user/Desktop/b.xlsx") == fs.home / "Desktop" / "b.xlsx"
    assert fs.local("c.txt") == fs.home / "c.txt"
    assert str(fs.local("/../../etc/passwd")).startswith(str(fs.root))


def test_ssim_matches_a_plain_python_reference() -> None:
    np = pytest.importorskip("numpy")
    from rlanything_core.envs.desktop.metrics.images import ssim

    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, (12, 15)).astype(float)
    b = np.clip(a + rng.integers(-40, 40, a.shape), 0, 255)

    def plain(x, y) -> float:  # type: ignore[no-untyped-def]
        c1, c2, n, values = (0.01 * 255) ** 2, (0.03 * 255) ** 2, 49, []
        for i in range(x.shape[0] - 6):
            for j in range(x.shape[1] - 6):
                wx, wy = x[i : i + 7, j : j + 7].ravel(), y[i : i + 7, j : j + 7].ravel()
                mx, my = sum(wx) / n, sum(wy) / n
                vx = sum((v - mx) ** 2 for v in wx) / (n - 1)
                vy = sum((v - my) ** 2 for v in wy) / (n - 1)
                cxy = sum((p - mx) * (q - my) for p, q in zip(wx, wy)) / (n - 1)
                values.append(((2 * mx * my + c1) * (2 * cxy + c2)) / ((mx**2 + my**2 + c1) * (vx + vy + c2)))
        return sum(values) / len(values)

    assert ssim(a, b) == pytest.approx(plain(a, b), rel=1e-9)
    assert ssim(a, a) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="7x7"):
        ssim(a[:5], b[:5])


@pytest.mark.parametrize(
    ("lab1", "lab2", "expected"),
    [  # Sharma, Wu and Dalal (2005), test pairs 1, 7, 13, 25 and 34
        ((50.0, 2.6772, -79.7751), (50.0, 0.0, -82.7485), 2.0425),
        ((50.0, 0.0, 0.0), (50.0, -1.0, 2.0), 2.3669),
        ((50.0, 2.5, 0.0), (50.0, 3.2592, 0.3350), 1.0),
        ((60.2574, -34.0099, 36.2677), (60.4626, -34.1751, 39.4387), 1.2644),
        ((90.8027, -2.0831, 1.4410), (91.1528, -1.6435, 0.0447), 1.4441),
    ],
)
def test_ciede2000_reference_pairs(lab1, lab2, expected: float) -> None:  # type: ignore[no-untyped-def]
    from rlanything_core.envs.desktop.metrics.color import delta_e_2000, srgb_to_lab

    assert delta_e_2000(lab1, lab2) == pytest.approx(expected, abs=1e-4)
    assert delta_e_2000(srgb_to_lab((255, 0, 0)), srgb_to_lab((255, 0, 0))) == 0.0


def test_lcs_matches_dynamic_programming() -> None:
    import random

    from rlanything_core.envs.desktop.metrics.pdf import lcs_length, text_ratio

    def plain(a: str, b: str) -> int:
        prev = [0] * (len(b) + 1)
        for x in a:
            cur = [0]
            for j, y in enumerate(b):
                cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
            prev = cur
        return prev[-1]

    rng = random.Random(0)
    for _ in range(200):
        a = "".join(rng.choice("abc ") for _ in range(rng.randint(0, 40)))
        b = "".join(rng.choice("abcd") for _ in range(rng.randint(0, 40)))
        assert lcs_length(a, b) == plain(a, b)
    assert text_ratio("", "") == 1.0 and text_ratio("abc", "") == 0.0 and text_ratio("abcd", "abcf") == 0.75


@pytest.mark.parametrize(
    ("rule", "named"),
    [
        ({"type": "sheet_data", "sheet_idx0": 0}, "sheet_idx1"),
        ({"type": "chart", "sheet_idx0": 0, "sheet_idx1": "XX0", "chart_props": ["type"]}, "XX0"),
        ({"type": "chart", "sheet_idx0": 0, "sheet_idx1": "EI0", "chart_props": ["colour"]}, "chart_props"),
        ({"type": "pivot_table", "sheet_idx0": 0, "sheet_idx1": "EIx", "pivot_props": []}, "EIx"),
        ({"type": "zoom", "sheet_idx": 0, "method": "approximately", "ref": 1}, "approximately"),
        ({"type": "data_validation", "sheet_idx": 0, "dv_props": [{"colour": {"method": "eq", "ref": 1}}]}, "colour"),
        (
            {
                "type": "data_validation",
                "sheet_idx": 0,
                "dv_props": [{"ranges": {"method": "spreadsheet_range", "ref": "A1"}}],
            },
            "spreadsheet_range",
        ),
        ({"type": "sparkline", "sheet_idx0": 0, "sheet_idx1": "EI0"}, "sparkline"),
        ({"type": "check_cell", "sheet_idx": True, "coordinate": "A1", "props": {}}, "sheet index"),
    ],
)
def test_malformed_table_rules_are_refused_naming_the_part(rule: dict, named: str) -> None:
    from rlanything_core.envs.desktop.metrics.table import check_table_options

    with pytest.raises(ValueError, match=named):
        check_table_options({"rules": [rule]})


def _weekend_book(path: Path, *, conditional: str | None) -> str:
    """Dates 45000..45013 (spreadsheet serials) in A2:A15; weekends yellow, by hand or by a conditional format."""
    import datetime

    import openpyxl
    from openpyxl.formatting.rule import Rule
    from openpyxl.styles import PatternFill
    from openpyxl.styles.differential import DifferentialStyle

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Sheet1"
    sheet.append(["Date"])
    for i in range(14):
        sheet.append([45000 + i])
        weekday = (datetime.date(1899, 12, 30) + datetime.timedelta(days=45000 + i)).weekday()
        if conditional is None and weekday >= 5:
            sheet.cell(row=i + 2, column=1).fill = PatternFill("solid", fgColor="FFFFFF00", bgColor="FFFFFF00")
    if conditional is not None:
        rule = Rule(
            type="expression", dxf=DifferentialStyle(fill=PatternFill(bgColor="FFFFFF00")), formula=[conditional]
        )
        sheet.conditional_formatting.add("A2:A15", rule)
    book.save(path)
    return str(path)


def test_style_evaluates_conditional_formats_as_osworld(tmp_path: Path) -> None:
    pytest.importorskip("formulas")
    gold = _weekend_book(tmp_path / "gold.xlsx", conditional=None)
    rules = [{"type": "style", "sheet_idx0": 0, "sheet_idx1": "EI0", "props": ["bgcolor"]}]
    # a conditional format that colours the weekends equals the hand-coloured gold file, cell by cell
    assert compare_table(_weekend_book(tmp_path / "a.xlsx", conditional="WEEKDAY(A2,2)>5"), gold, rules=rules) == 1.0
    assert compare_table(_weekend_book(tmp_path / "b.xlsx", conditional="WEEKDAY(A2,2)>6"), gold, rules=rules) == 0.0
    assert compare_table(_weekend_book(tmp_path / "c.xlsx", conditional=None), gold, rules=rules) == 1.0


def test_chart_and_pivot_summaries_read_each_named_prop() -> None:
    from openpyxl import Workbook
    from openpyxl.chart import BarChart, Reference

    sheet = Workbook().active
    for row in ROWS:
        sheet.append(row)
    chart = BarChart()
    chart.type, chart.title = "bar", "Units"
    chart.add_data(Reference(sheet, min_col=3, min_row=1, max_row=5), titles_from_data=True)
    chart.set_categories(Reference(sheet, min_col=1, min_row=2, max_row=5))
    sheet.add_chart(chart, "F2")
    sheet._pivots.append(_pivot({"row": 1, "subtotal": "sum"}, source=sheet.title))
    charts = chart_summary(sheet, ["title", "legend", "width", "height", "type", "direction", "xtitle"])
    assert charts == {"'Sheet'!$C$2:$C$5,'Sheet'!$A$2:$A$5": {
        "title": "Units", "legend": "r", "width": 15, "height": 7.5, "type": "barChart", "direction": "bar",
        "xtitle": None}}  # fmt: skip
    assert chart_summary(sheet, ["width"]) == {key: {"width": 15} for key in charts}
    pivots = pivot_summary(sheet, ["name", "show_total", "show_empty_row", "show_headers", "col_fields", "row_fields",
                                   "data_fields", "data_fields_name"])  # fmt: skip
    assert pivots == {"worksheet;(1, 2):(5, 2);Sheet": {
        "name": "DataPilot1", "show_total": True, "show_empty_row": False, "show_headers": True, "col_fields": [],
        "row_fields": [0], "data_fields": ["1;Sum - Units;sum;normal"]}}  # fmt: skip
    (location,) = (info["location"] for info in pivot_summary(sheet, ["location"]).values())
    assert location.ref == "A1:B4"


def test_missing_or_unreadable_office_files_score_zero(tmp_path: Path) -> None:
    doc, odt, deck = tmp_path / "a.docx", tmp_path / "a.odt", tmp_path / "a.pptx"
    write_doc(doc, {})
    write_odt(odt, {"texts": ["one", "two"]})
    write_deck(deck, {})
    assert compare_docx_files(doc, doc) == compare_docx_files(odt, odt) == compare_pptx_files(deck, deck) == 1.0
    for name in ("zip.docx", "zip.odt", "zip.pptx"):  # not a zip file; a zip without the part the reader needs
        (tmp_path / name).write_text("not a zip")
        with zipfile.ZipFile(tmp_path / f"part-{name}", "w") as z:
            z.writestr("other.xml", "<a/>")
    for good in (doc, odt):
        for bad in (tmp_path / f"zip{good.suffix}", tmp_path / f"part-zip{good.suffix}", tmp_path / f"no{good.suffix}"):
            assert compare_docx_files(bad, good) == compare_docx_files(good, bad) == 0.0
    for bad in (tmp_path / "zip.pptx", tmp_path / "part-zip.pptx", tmp_path / "no.pptx", None, ""):
        assert compare_pptx_files(bad, deck) == compare_pptx_files(deck, bad) == 0.0
        assert check_transition(bad, {"slide_idx": 0, "transition_type": "fade"}) == 0.0
