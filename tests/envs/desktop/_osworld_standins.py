"""Stand-in files for OSWorld's published tasks: a file cache in OSWorld's layout, a correct result, wrong results.

OSWorld's input and gold files live on Google Drive (no network here), so each task's files are authored from what
its evaluator checks: a workbook that satisfies every ``compare_table`` rule of the task (data, charts, pivot tables,
styles, hidden rows, validations, panes, zoom, printed CSV), and for each rule a variant that breaks that rule only.
The gold file and the correct result are written separately from the same description (never a file copy); the
input file of the task is the first wrong variant (the unsolved state). Strings go through
:func:`~rlanything_core.envs.desktop.xlsx_strings.share_strings`, as an application writes them.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlanything_core.envs.desktop.episode_fs import EpisodeFS
from rlanything_core.envs.desktop.osworld_cache import cloud_cache_path, download_cache_path
from rlanything_core.envs.desktop.xlsx_strings import share_strings

REPO = Path(__file__).resolve().parents[3]
OSWORLD_DIR = Path(os.environ.get("RLANYTHING_OSWORLD_DIR", REPO.parent / "shared" / "osworld"))
EXAMPLES = OSWORLD_DIR / "evaluation_examples"
DOMAINS = ("libreoffice_calc", "libreoffice_writer", "libreoffice_impress", "os")

Writer = Callable[[Path], None]


def task_ids(domain: str) -> list[str]:
    """The ids of ``domain`` in OSWorld's ``test_all.json`` (empty when the checkout is absent)."""
    index = EXAMPLES / "test_all.json"
    return list(json.loads(index.read_text()).get(domain, [])) if index.is_file() else []


def task_path(domain: str, task_id: str) -> Path:
    return EXAMPLES / "examples" / domain / f"{task_id}.json"


@dataclass
class Case:
    """One task's stand-ins: ``cache`` files (by path), the correct result and the wrong ones (VM path -> writer)."""

    good: dict[str, Writer]
    wrongs: dict[str, dict[str, Writer]]
    cache: dict[Path, Writer] = field(default_factory=dict)
    # a wrong result's highest allowed score where the metric is graded (SSIM), else 0.0
    wrong_max: dict[str, float] = field(default_factory=dict)

    def write_cache(self) -> None:
        for path, write in self.cache.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            write(path)

    @staticmethod
    def apply(files: dict[str, Writer], fs: EpisodeFS) -> None:
        for vm_path, write in files.items():
            target = fs.local(vm_path)
            target.parent.mkdir(parents=True, exist_ok=True)
            write(target)


# ----------------------------------------------------------------------------------------------- workbooks
ROWS: list[list[Any]] = [
    ["Name", "Region", "Units", "Price"],
    ["Ann", "North", 12, 3.5],
    ["Bob", "South", 7, 4.25],
    ["Cy", "North", 20, 3.0],
    ["Di", "East", 5, 6.75],
]


@dataclass
class Book:
    """What a stand-in workbook holds (see the module docstring)."""

    sheets: dict[str, list[list[Any]]]
    charts: dict[str, dict[str, Any]] = field(default_factory=dict)  # sheet -> {"type", "title", "direction"}
    pivots: dict[str, dict[str, Any]] = field(default_factory=dict)  # sheet -> {"subtotal", "row"}
    fills: dict[str, dict[str, str]] = field(default_factory=dict)  # sheet -> {coordinate: ARGB}
    font_colors: dict[str, dict[str, str]] = field(default_factory=dict)
    bold: dict[str, set[str]] = field(default_factory=dict)
    hidden_rows: dict[str, set[int]] = field(default_factory=dict)
    validations: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # sheet -> [(range, formula1)]
    freeze: dict[str, str] = field(default_factory=dict)
    zoom: dict[str, int] = field(default_factory=dict)
    cells: dict[str, dict[str, Any]] = field(default_factory=dict)  # sheet -> {coordinate: value}
    printed: dict[str, list[str]] = field(default_factory=dict)  # sheet -> CSV lines (sheet_print)


def write_book(path: Path, book: Book) -> None:
    import openpyxl
    from openpyxl.chart import BarChart, LineChart, Reference
    from openpyxl.styles import Font, PatternFill
    from openpyxl.worksheet.datavalidation import DataValidation

    wb = openpyxl.Workbook()
    wb.remove(wb.active)
    for name, rows in book.sheets.items():
        ws = wb.create_sheet(name)
        for row in rows:
            ws.append(row)
        for coord, value in book.cells.get(name, {}).items():
            ws[coord] = value
        for coord, argb in book.fills.get(name, {}).items():
            ws[coord].fill = PatternFill("solid", fgColor=argb, bgColor=argb)
        for coord, argb in book.font_colors.get(name, {}).items():
            ws[coord].font = Font(color=argb, bold=coord in book.bold.get(name, set()))
        for coord in book.bold.get(name, set()) - set(book.font_colors.get(name, {})):
            ws[coord].font = Font(bold=True)
        for row in book.hidden_rows.get(name, set()):
            ws.row_dimensions[row].hidden = True
        for ref, formula in book.validations.get(name, []):
            dv = DataValidation(type="list", formula1=formula, allow_blank=True)
            dv.add(ref)
            ws.add_data_validation(dv)
        if name in book.freeze:
            ws.freeze_panes = book.freeze[name]
        if name in book.zoom:
            ws.sheet_view.zoomScale = book.zoom[name]
        spec = book.charts.get(name)
        if spec:
            chart = BarChart() if spec["type"] == "barChart" else LineChart()
            if spec["type"] == "barChart":
                chart.type = spec.get("direction", "col")
            chart.title = spec.get("title")
            chart.add_data(Reference(ws, min_col=3, min_row=1, max_row=len(rows)), titles_from_data=True)
            chart.set_categories(Reference(ws, min_col=1, min_row=2, max_row=len(rows)))
            ws.add_chart(chart, "F2")
    for name, spec in book.pivots.items():
        wb[name]._pivots.append(_pivot(spec, source=next(iter(book.sheets))))
    wb.save(path)
    share_strings(path)


def _pivot(spec: dict[str, Any], *, source: str) -> Any:
    from openpyxl.pivot.cache import CacheDefinition, CacheField, CacheSource, SharedItems, WorksheetSource
    from openpyxl.pivot.record import RecordList
    from openpyxl.pivot.table import DataField, FieldItem, Location, PivotField, RowColField, TableDefinition

    headers = ROWS[0]
    cache = CacheDefinition(
        cacheSource=CacheSource(type="worksheet", worksheetSource=WorksheetSource(ref="A1:D5", sheet=source)),
        cacheFields=[CacheField(name=h, sharedItems=SharedItems()) for h in headers],
    )
    cache.records = RecordList()
    row = spec["row"]
    fields = [PivotField(dataField=(i == 2)) for i in range(len(headers))]
    fields[row] = PivotField(axis="axisRow", items=[FieldItem(x=0), FieldItem(x=1), FieldItem(t="default")])
    table = TableDefinition(
        name="DataPilot1",
        cacheId=1,
        dataCaption="Values",
        location=Location(ref="A1:B4", firstHeaderRow=1, firstDataRow=1, firstDataCol=1),
        pivotFields=fields,
        rowFields=[RowColField(x=row)],
        dataFields=[DataField(name="Sum - Units", fld=2, subtotal=spec["subtotal"])],
    )
    table.cache = cache
    return table


def _sheet_names(rules: list[dict[str, Any]]) -> list[str]:
    names: set[str] = set()
    count = 1
    for rule in rules:
        for key in ("sheet_idx", "sheet_idx0", "sheet_idx1"):
            idx = rule.get(key)
            if isinstance(idx, int):
                count = max(count, idx + 1)
            elif isinstance(idx, str) and idx[1:2] == "I":
                count = max(count, int(idx[2:]) + 1)
            elif isinstance(idx, str) and idx[1:2] == "N":
                names.add(idx[2:])
    ordered = [f"Sheet{i}" for i in range(1, count + 1)]
    extra = sorted(n for n in names if n not in ordered)
    # a named sheet "SheetK" beyond the count extends the numbered run (the pivot tasks' Sheet2)
    return ordered + extra


def _printed(rows: list[list[Any]]) -> list[str]:
    """The rows as LibreOffice's CSV export prints General-format cells (3.0 as 3, 4.25 as 4.25)."""
    return [",".join(format(v, "g") if isinstance(v, float) else str(v) for v in row) for row in rows]


def calc_book(rules: list[dict[str, Any]]) -> Book:
    """The workbook satisfying every rule (the gold and the correct result)."""
    names = _sheet_names(rules)
    book = Book({n: copy.deepcopy(ROWS) for n in names})
    for rule in rules:
        kind = rule["type"]
        targets = {_name(rule.get(k), names) for k in ("sheet_idx", "sheet_idx0", "sheet_idx1") if k in rule}
        for sheet in targets:
            if kind == "chart":
                props = rule.get("chart_props", [])
                book.charts[sheet] = {"type": "barChart", "title": "Units" if "title" in props else None}
                if "direction" in props:
                    book.charts[sheet]["direction"] = "col"
            elif kind == "pivot_table":
                book.pivots[sheet] = {"subtotal": "sum", "row": 1}
            elif kind == "style":
                if "bgcolor" in rule.get("props", []):
                    book.fills[sheet] = {"A2": "FFFF0000", "A4": "FFFF0000"}
                if "font_color" in rule.get("props", []):
                    book.font_colors[sheet] = {"D2": "FF00AA00", "D5": "FFFF0000"}
            elif kind == "row_props":
                book.hidden_rows[sheet] = {3}
            elif kind == "freeze":
                book.freeze[sheet] = "B2"
            elif kind == "sheet_print":
                book.printed[sheet] = _printed(book.sheets[sheet])
        if kind == "data_validation":
            sheet = _name(rule["sheet_idx"], names)
            for pattern in rule["dv_props"]:
                ref = pattern["ranges"]["ref"][0] if "ranges" in pattern else "D2:D5"
                items = pattern.get("formula1", {}).get("ref", ["Yes", "No"])
                book.validations.setdefault(sheet, []).append((ref, '"' + ",".join(items) + '"'))
        if kind == "zoom":
            book.zoom[_name(rule["sheet_idx"], names)] = _zoom_value(rule)
        if kind == "check_cell":
            sheet = _name(rule["sheet_idx"], names)
            _satisfy_cell(book, sheet, rule["coordinate"], rule["props"])
    return book


def _name(idx: Any, names: list[str]) -> str:
    if isinstance(idx, int):
        return names[idx]
    return idx[2:] if idx[1] == "N" else names[int(idx[2:])]


def _zoom_value(rule: dict[str, Any]) -> int:
    ref = int(rule["ref"])
    return {"lt": ref - 60, "le": ref, "gt": ref + 40, "ge": ref, "eq": ref}.get(rule["method"], ref)


def _satisfy_cell(book: Book, sheet: str, coord: str, props: dict[str, Any]) -> None:
    for prop, rule in props.items():
        if prop == "value":
            book.cells.setdefault(sheet, {})[coord] = rule["ref"]
        elif prop == "bgcolor":
            book.fills.setdefault(sheet, {})[coord] = rule["ref"]
        elif prop == "font_color":
            book.font_colors.setdefault(sheet, {})[coord] = rule["ref"]
        elif prop == "font_bold":
            book.bold.setdefault(sheet, set()).add(coord)


def calc_wrongs(rules: list[dict[str, Any]]) -> dict[str, Book]:
    """For each rule, the correct workbook with that rule broken (the label names the rule)."""
    names = _sheet_names(rules)
    out: dict[str, Book] = {}
    for i, rule in enumerate(rules):
        book = calc_book(rules)
        kind = rule["type"]
        first = _name(rule.get("sheet_idx0", rule.get("sheet_idx", 0)), names) if kind != "sheet_name" else names[0]
        if kind in ("sheet_data", "sheet_print"):
            book.sheets[first][2][2] = 99
            if first in book.printed:
                book.printed[first] = _printed(book.sheets[first])
        elif kind == "sheet_name":
            book.sheets = {(k + "x" if k == names[-1] else k): v for k, v in book.sheets.items()}
        elif kind == "chart":
            book.charts[first] = {**book.charts[first], "type": "lineChart"}
        elif kind == "pivot_table":
            book.pivots[first] = {"subtotal": "average", "row": 1}
        elif kind == "style":
            if first in book.fills:
                book.fills[first] = {"A2": "FFFF0000"}
            if first in book.font_colors:
                book.font_colors[first] = {"D2": "FF00AA00", "D5": "FF00AA00"}
        elif kind == "row_props":
            book.hidden_rows[first] = set()
        elif kind == "data_validation":
            book.validations[first] = [(ref, '"Yes,No"') for ref, _ in book.validations[first]]
        elif kind == "freeze":
            book.freeze[first] = "A2"
        elif kind == "zoom":
            book.zoom[first] = int(rule["ref"]) + 50 if rule["method"] in ("lt", "le") else 10
        elif kind == "check_cell":
            prop, value_rule = next(iter(rule["props"].items()))
            _break_cell(book, first, rule["coordinate"], prop, value_rule)
        out[f"rule{i}:{kind}"] = book
    return out


def _break_cell(book: Book, sheet: str, coord: str, prop: str, rule: dict[str, Any]) -> None:
    if prop == "value":
        ref = rule["ref"]
        book.cells[sheet][coord] = ref + 1 if isinstance(ref, (int, float)) else f"{ref} (draft)"
    elif prop == "bgcolor":
        book.fills[sheet][coord] = "FF00FF00"
    elif prop == "font_color":
        book.font_colors[sheet][coord] = "FF123456"
    elif prop == "font_bold":
        book.bold[sheet].discard(coord)


def _book_writer(book: Book) -> Writer:
    return lambda path: write_book(path, book)


def _printed_writer(book: Book, sheet: str) -> Writer:
    return lambda path: path.write_text("\n".join(book.printed[sheet]) + "\n")


def _files_for(paths: list[str], book: Book) -> dict[str, Writer]:
    """Writers for a getter's paths: workbooks, and the ``<stem>-<sheet>.csv`` exports beside them."""
    out: dict[str, Writer] = {}
    for path in paths:
        if path.endswith(".csv") and "-" in Path(path).stem:
            out[path] = _printed_writer(book, Path(path).stem.rsplit("-", 1)[1])
        else:
            out[path] = _book_writer(book)
    return out


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


_as_list = as_list


def gold_cache(case: Case, raw: dict[str, Any], cache_dir: Path, write: Writer) -> None:
    """Every ``cloud_file`` of the task's expected getters, written by ``write`` where OSWorld's cache keeps it."""
    for cfg in as_list(raw["evaluator"].get("expected") or []):
        if cfg and cfg.get("type") == "cloud_file":
            for dest in as_list(cfg["dest"]):
                case.cache[cloud_cache_path(cache_dir, raw["id"], dest)] = write


def cache_inputs(case: Case, raw: dict[str, Any], cache_dir: Path, start: Writer) -> None:
    """Every downloaded file in the cache: ``start`` for a file of the result's kind, a text stand-in otherwise."""
    results = [cfg for cfg in as_list(raw["evaluator"].get("result") or []) if cfg and "path" in cfg]
    kinds = {Path(p).suffix for cfg in results for p in as_list(cfg["path"])}
    for url, vm_path in _download_files(raw):
        target = download_cache_path(cache_dir, raw["id"], url, vm_path)
        case.cache[target] = start if Path(vm_path).suffix in kinds else _bytes(url)


def _download_files(raw: dict[str, Any]) -> list[tuple[str, str]]:
    steps = list(raw.get("config", [])) + list(raw["evaluator"].get("postconfig", []) or [])
    return [(f["url"], f["path"]) for s in steps if s["type"] == "download" for f in s["parameters"]["files"]]


def _pdf_writer(pages: int) -> Writer:
    def write(path: Path) -> None:
        from pypdf import PdfWriter

        pdf = PdfWriter()
        for _ in range(pages):
            pdf.add_blank_page(width=595, height=842)
        with path.open("wb") as f:
            pdf.write(f)

    return write


def calc_case(raw: dict[str, Any], cache_dir: Path) -> Case:
    """Stand-ins for one ``libreoffice_calc`` task (see the module docstring)."""
    ev = raw["evaluator"]
    task_id = raw["id"]
    func = ev["func"]
    result_paths = _as_list(ev.get("result", {}).get("path")) if ev.get("result") else []
    case = Case(good={}, wrongs={})
    expected = ev.get("expected") or {}
    if func == "compare_table":
        rules = ev["options"]["rules"]
        good, wrongs = calc_book(rules), calc_wrongs(rules)
        start = next(iter(wrongs.values()))
    elif func == "compare_csv":
        good_rows, bad_rows = ROWS, [*ROWS[:2], ["Bob", "South", 8, 4.25], *ROWS[3:]]
        case.good = {result_paths[0]: lambda p: p.write_text("\n".join(_printed(good_rows)) + "\n")}
        case.wrongs = {"changed line": {result_paths[0]: lambda p: p.write_text("\n".join(_printed(bad_rows)) + "\n")}}
        good, start = Book({"Sheet1": ROWS}), Book({"Sheet1": ROWS})
        for dest in _as_list(expected.get("dest")):
            case.cache[cloud_cache_path(cache_dir, task_id, dest)] = case.good[result_paths[0]]
    elif func == "check_pdf_pages":
        want = int(expected["rules"]["ref_value"])
        case.good = {result_paths[0]: _pdf_writer(want)}
        case.wrongs = {"page count": {result_paths[0]: _pdf_writer(want + 1)}}
        good = start = Book({"Sheet1": ROWS})
    else:
        good = start = Book({"Sheet1": ROWS})
    if func == "compare_table":
        case.good = _files_for(result_paths, good)
        case.wrongs = {label: _files_for(result_paths, book) for label, book in wrongs.items()}
        if expected.get("type") == "cloud_file":
            urls, dests = _as_list(expected["path"]), _as_list(expected["dest"])
            gold_paths = [f"/home/user/{d}" for d in dests]
            for dest, (_, write) in zip(dests, _files_for(gold_paths, good).items()):
                case.cache[cloud_cache_path(cache_dir, task_id, dest)] = write
            assert len(urls) == len(dests)
    gold_on_vm = expected.get("type") == "vm_file"
    if gold_on_vm and func == "compare_table":  # a postconfig download puts the gold file on the VM
        gold_vm = set(_as_list(expected["path"]))
    else:
        gold_vm = set()
    for url, vm_path in _download_files(raw):
        target = download_cache_path(cache_dir, task_id, url, vm_path)
        if vm_path in gold_vm:
            case.cache[target] = _book_writer(good)
        elif vm_path.endswith((".xlsx", ".xls", ".ods")):
            case.cache[target] = _book_writer(start)
        else:
            case.cache[target] = _bytes(url)
    return case


def _bytes(url: str) -> Writer:
    return lambda path: path.write_text(f"stand-in for {url}\n")


def placeholders(raw: dict[str, Any], cache_dir: Path) -> None:
    """A text stand-in for every file the task downloads or compares with (a refused task is refused for its checks,
    not for a missing file)."""
    case = Case(good={}, wrongs={})
    gold_cache(case, raw, cache_dir, _bytes("gold"))
    cache_inputs(case, raw, cache_dir, _bytes("input"))
    case.write_cache()


def _text(text: str, mode: int = 0o644) -> Writer:
    def write(path: Path) -> None:
        path.write_text(text)
        path.chmod(mode)

    return write


# The terminal tasks' ``eval.sh`` (OSWorld downloads its own): a stand-in that checks the state the instruction asks
# for and prints the task's success line (``{ok}``) only then; each task's correct and wrong results in files.
_EVAL_SH: dict[str, tuple[str, dict[str, str], dict[str, dict[str, str]]]] = {
    # copy *failed.ipynb under test_environment to ./fails, keeping the folders (and nothing else)
    "5c1075ca-bb34-46a3-a7a0-029bd7463e79": (
        'cd test_environment && [ -f fails/a/b/x_failed.ipynb ] && [ -f fails/y_failed.ipynb ] '
        '&& [ ! -e fails/a/b/ok.ipynb ] && echo "{ok}" || echo "Evaluation failed."',
        {"test_environment/fails/a/b/x_failed.ipynb": "{}", "test_environment/fails/y_failed.ipynb": "{}"},
        {
            "flattened": {"test_environment/fails/x_failed.ipynb": "{}", "test_environment/fails/y_failed.ipynb": "{}"},
            "too much": {
                "test_environment/fails/a/b/x_failed.ipynb": "{}",
                "test_environment/fails/y_failed.ipynb": "{}",
                "test_environment/fails/a/b/ok.ipynb": "{}",
            },
        },
    ),
    "5ced85fc-fa1a-4217-95fd-0fb530545ce2": (
        "printf '1<br/>\\n2<br/>\\n3<br/>\\n' | cmp -s - output.txt && echo \"{ok}\" || echo Failure",
        {"output.txt": "1<br/>\n2<br/>\n3<br/>\n"},
        {"unchanged": {"output.txt": "1\n2\n3\n"}, "first line only": {"output.txt": "1<br/>\n2\n3\n"}},
    ),
    "37887e8c-da15-4192-923c-08fa390a176d": (
        '[ -f /tmp/test_files/old.txt.gz ] && [ ! -e /tmp/test_files/old.txt ] && [ -f /tmp/test_files/new.txt ] '
        '&& echo "{ok}" || echo Failure',
        {"/tmp/test_files/old.txt.gz": "gz", "/tmp/test_files/new.txt": "new"},
        {
            "nothing compressed": {"/tmp/test_files/old.txt": "old", "/tmp/test_files/new.txt": "new"},
            "all compressed": {"/tmp/test_files/old.txt.gz": "gz", "/tmp/test_files/new.txt.gz": "gz"},
        },
    ),
    "4d117223-a354-47fb-8b45-62ab1390a95f": (
        '[ -z "$(find tree -type f ! -perm 644)" ] && [ -n "$(find tree -type f)" ] && echo "{ok}" || echo Failure',
        {"tree/a.txt": "a", "tree/sub/b.txt": "b"},
        {"one left": {"tree/a.txt": "a", "tree/sub/b.txt": "b"}},
    ),
    "6f56bf42-85b8-4fbb-8e06-6c44960184ba": (
        'for d in dir1 dir2 dir3; do [ -f $d/file1 ] && echo "Success: file1 exists in $d." '
        '|| echo "Failure: file1 missing in $d."; done',
        {"dir1/file1": "f", "dir2/file1": "f", "dir3/file1": "f"},
        {"two of three": {"dir1/file1": "f", "dir2/file1": "f"}},
    ),
}
# results whose files need a mode other than 0644 (the "one left" permission case)
_MODES = {("4d117223-a354-47fb-8b45-62ab1390a95f", "one left", "tree/sub/b.txt"): 0o755}


def _terminal_case(raw: dict[str, Any], cache_dir: Path) -> Case:
    """A terminal task checked by ``bash eval.sh``: the stand-in script in the cache and in the home folder."""
    task_id, ev = raw["id"], raw["evaluator"]
    script, good, wrongs = _EVAL_SH[task_id]
    ok = ev["expected"]["rules"]["include"][0]
    eval_sh = _text(script.replace("{ok}", ok.rstrip("\n").split("\n")[0]) + "\n", 0o755)

    def files(label: str, chosen: dict[str, str]) -> dict[str, Writer]:
        out = {
            (p if p.startswith("/") else f"/home/user/{p}"): _text(t, _MODES.get((task_id, label, p), 0o644))
            for p, t in chosen.items()
        }
        return {**out, "/home/user/eval.sh": eval_sh}  # a config-step download lands there before the check

    case = Case(good=files("good", good), wrongs={label: files(label, w) for label, w in wrongs.items()})
    for url, vm_path in _download_files(raw):
        target = download_cache_path(cache_dir, task_id, url, vm_path)
        case.cache[target] = eval_sh if Path(vm_path).name == "eval.sh" else _bytes(url)
    return case


KEYFILE = "/home/user/.config/glib-2.0/settings/keyfile"
"""Where ``gsettings`` keeps an episode's settings (``rlanything_core.envs.desktop.gsettings``)."""

# the settings tasks: (keyfile group, key, the correct value, {wrong label: value}) in GVariant text as gsettings
# writes it; the "never set" wrong result (the schema default) is added to each
_SETTINGS: dict[str, tuple[str, str, str, dict[str, str]]] = {
    "bedcedc4-4d72-425e-ad62-21960b11fe0d": ("org/gnome/desktop/session", "idle-delay", "0", {"10 min": "600"}),
    "f9be0997-4b7c-45c5-b05c-4612b44a6118": (
        "org/gnome/desktop/notifications", "show-banners", "false", {"banners on": "true"},
    ),
    "3ce045a0-877b-42aa-8d2c-b4a863336ab8": (
        "org/gnome/desktop/interface", "text-scaling-factor", "1.25", {"smaller": "0.75", "same": "1.0"},
    ),
}


def _settings_case(raw: dict[str, Any]) -> Case:
    group, key, good, wrongs = _SETTINGS[raw["id"]]

    def keyfile(value: str) -> dict[str, Writer]:
        return {KEYFILE: _text(f"[{group}]\n{key}={value}\n")}

    return Case(
        good=keyfile(good),
        wrongs={**{label: keyfile(v) for label, v in wrongs.items()}, "never set": {KEYFILE: _text("")}},
    )


def os_case(raw: dict[str, Any], cache_dir: Path) -> Case:
    """Stand-ins for the ``os`` tasks whose checks run here (``check_moved_jpgs`` on a folder listing, a terminal
    task's ``bash eval.sh``, a setting read by ``gsettings`` from the episode's keyfile)."""
    ev = raw["evaluator"]
    if raw["id"] in _EVAL_SH:
        return _terminal_case(raw, cache_dir)
    if raw["id"] in _SETTINGS:
        return _settings_case(raw)
    if ev["func"] != "check_moved_jpgs":
        raise KeyError(ev["func"])
    folder = ev["result"]["path"]
    names = list(ev["expected"]["rules"]["expected"])

    def files(chosen: list[str]) -> dict[str, Writer]:
        return {f"{folder}/{name}": (lambda path: path.write_bytes(b"\xff\xd8 stand-in jpeg")) for name in chosen}

    case = Case(
        good=files(names),
        wrongs={"one missing": files(names[:-1]), "a png too": files([*names, "us_3.png"])},
    )
    cache_inputs(case, raw, cache_dir, _bytes("photo"))
    return case


PROFILE_FUNCS = ("find_default_font", "check_presenter_console_disable", "check_auto_saving_time")


def _xcu(items: list[tuple[str, str, str]]) -> Writer:
    def write(path: Path) -> None:
        body = "".join(
            f'<item oor:path="{p}"><prop oor:name="{n}" oor:op="fuse"><value>{v}</value></prop></item>\n'
            for p, n, v in items
        )
        path.write_text(
            '<?xml version="1.0" encoding="UTF-8"?>\n<oor:items xmlns:oor="http://openoffice.org/2001/registry">\n'
            f"{body}</oor:items>\n"
        )

    return write


def profile_case(raw: dict[str, Any], cache_dir: Path) -> Case:
    """Stand-ins for the tasks checked on LibreOffice's settings file (a profile's ``registrymodifications.xcu``)."""
    ev = raw["evaluator"]
    func, rules = ev["func"], (ev.get("expected") or {}).get("rules", {})
    common = ("/org.openoffice.Office.Common/Misc", "UseSystemFileDialog", "false")
    if func == "find_default_font":
        key = ("/org.openoffice.Office.Writer/DefaultFont", "Standard")
        good, bad = [(*key, rules["font_name"])], [(*key, "Liberation Serif")]
    elif func == "check_presenter_console_disable":
        key = ("/org.openoffice.Office.Impress/Misc/Start", "EnablePresenterScreen")
        good, bad = [(*key, "false")], [(*key, "true")]
    else:
        key = ("/org.openoffice.Office.Common/Save/Document", "AutoSaveTimeIntervall")
        good, bad = [(*key, str(rules["minutes"]))], [(*key, "10")]
    result = ev["result"]["path"]
    case = Case(
        good={result: _xcu([common, *good])},
        wrongs={"other value": {result: _xcu([common, *bad])}, "never set": {result: _xcu([common])}},
    )
    cache_inputs(case, raw, cache_dir, _bytes("document"))
    return case
