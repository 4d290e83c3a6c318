"""Stand-in ``.pptx`` files for OSWorld's Impress tasks, authored from what each metric checks (python-pptx).

A deck of three slides: a title "Product Comparison" with a bulleted body, a picture slide with an "Elaborate on
what you want to discuss." text box, and a table slide. The position options of ``compare_pptx_files`` compare a
moved shape with the original's: for those tasks the correct result moves the shape as the task asks and the wrong
one leaves it where it was.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from _osworld_standins import Case, Writer, as_list, cache_inputs, gold_cache
from PIL import Image

EMU = 914400  # per inch


def _png(color: tuple[int, int, int] = (20, 120, 200)) -> io.BytesIO:
    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), color).save(buffer, format="PNG")
    buffer.seek(0)
    return buffer


def write_deck(path: Path, spec: dict[str, Any]) -> None:
    """A deck from ``spec``.

    Keys: title_top, body, size, pic_left, pic_top, pic_size, pic_first, stretched, table_top, elaborate_box,
    portrait, fill, transition.
    """
    from pptx import Presentation
    from pptx.dml.color import RGBColor
    from pptx.util import Emu, Pt

    prs = Presentation()
    if spec.get("portrait"):
        prs.slide_width, prs.slide_height = prs.slide_height, prs.slide_width
    blank = prs.slide_layouts[6]
    one = prs.slides.add_slide(blank)
    title = one.shapes.add_textbox(Emu(EMU), Emu(spec.get("title_top", 500000)), Emu(6 * EMU), Emu(EMU))
    title.text_frame.text = "Product Comparison"
    body = one.shapes.add_textbox(Emu(EMU), Emu(2 * EMU), Emu(6 * EMU), Emu(EMU))
    for i, line in enumerate(spec.get("body", ["Price", "Quality"])):
        paragraph = body.text_frame.paragraphs[0] if i == 0 else body.text_frame.add_paragraph()
        run = paragraph.add_run()
        run.text = line
        run.font.size = Pt(spec.get("size", 20))
    two = prs.slides.add_slide(blank)
    size = spec.get("pic_size", (2 * EMU, int(1.5 * EMU)))
    if spec.get("stretched"):  # the first slide's picture, filling the slide
        one.shapes.add_picture(_png(), 0, 0, prs.slide_width, prs.slide_height)
    elif spec.get("pic_first"):
        one.shapes.add_picture(_png(), Emu(EMU), Emu(3 * EMU), *size)
    else:
        two.shapes.add_picture(_png(), Emu(spec.get("pic_left", EMU)), Emu(spec.get("pic_top", 3 * EMU)), *size)
    box = spec.get("elaborate_box", (EMU, 5 * EMU, 6 * EMU, EMU))
    two.shapes.add_textbox(*(Emu(v) for v in box)).text_frame.text = "Elaborate on what you want to discuss."
    three = prs.slides.add_slide(blank)
    three.shapes.add_textbox(Emu(EMU), Emu(300000), Emu(6 * EMU), Emu(EMU)).text_frame.text = "Figures"
    table = three.shapes.add_table(2, 2, Emu(EMU), Emu(spec.get("table_top", 1500000)), Emu(4 * EMU), Emu(EMU))
    table.table.cell(0, 0).text = "Year"
    if spec.get("fill"):
        for slide in prs.slides:
            slide.background.fill.solid()
            slide.background.fill.fore_color.rgb = RGBColor(*spec["fill"])
    if spec.get("transition"):
        _add_transition(one, spec["transition"])
    prs.save(path)


def _add_transition(slide: Any, kind: str) -> None:
    from lxml import etree

    ns = "http://schemas.openxmlformats.org/presentationml/2006/main"
    transition = etree.SubElement(slide._element, f"{{{ns}}}transition")
    etree.SubElement(transition, f"{{{ns}}}{kind}")
    # the schema orders the slide's children: cSld, clrMapOvr, transition, timing
    clr = slide._element.find(f"{{{ns}}}clrMapOvr")
    if clr is not None:
        clr.addnext(transition)


def _deck(spec: dict[str, Any]) -> Writer:
    return lambda path: write_deck(path, spec)


_POSITION = {  # option -> (the original's spec, the correct result's spec)
    "examine_title_bottom_position": ({}, {"title_top": 4000000}),
    "examine_table_bottom_position": ({}, {"table_top": 4000000}),
    "examine_right_position": ({}, {"pic_left": 5000000}),
    "examine_top_position": ({}, {"pic_top": 1500000}),
    "examine_shape_for_shift_size": ({}, {"elaborate_box": (EMU, 4 * EMU, 7 * EMU, 2 * EMU)}),
}


def impress_specs(raw: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, dict[str, Any]]]:
    """``(expected spec, correct result spec, {label: wrong result spec})`` for one Impress task."""
    ev = raw["evaluator"]
    func, opts = ev["func"], ev.get("options", {}) or {}
    rules = (ev.get("expected") or {}).get("rules", {})
    if func == "compare_pptx_files":
        moved = [k for k in _POSITION if opts.get(k)]
        if moved:
            original, result = _POSITION[moved[0]]
            wrong = {"text": {**result, "body": ["Price", "Cost"]}}
            if moved[0] == "examine_shape_for_shift_size":
                # OSWorld's check only lets the one text box differ: the unchanged deck passes it (its semantics,
                # kept); a deck with another shape moved does not
                wrong["other shape moved"] = {**result, "title_top": 900000}
            else:
                wrong["not moved"] = original
            return original, result, wrong
        wrongs: dict[str, dict[str, Any]] = {"text": {"body": ["Price", "Cost"]}, "font size": {"size": 28}}
        if opts.get("examine_shape", True):
            wrongs["moved"] = {"title_top": 900000}
        if opts.get("examine_image_size"):
            wrongs["image size"] = {"pic_size": (3 * EMU, 2 * EMU)}
        return {}, {}, wrongs
    if func == "check_image_stretch_and_center":
        return {"pic_first": True}, {"stretched": True}, {"not stretched": {"pic_first": True}}
    if func == "check_slide_orientation_Portrait":
        return {}, {"portrait": True}, {"landscape": {}}
    if func == "evaluate_presentation_fill_to_rgb_distance":
        return {}, {"fill": tuple(rules["rgb"])}, {"no fill": {}}
    if func == "check_transition":
        return {}, {"transition": rules["transition_type"]}, {"none": {}, "other": {"transition": "fade"}}
    raise KeyError(func)


def _picture(shift: int) -> Writer:
    """A 200x120 picture of bars (another ``shift`` draws another picture: other bars, another background)."""

    def write(path: Path) -> None:
        image = Image.new("RGB", (200, 120), (235, 235, 235) if shift == 0 else (40, 40, 40))
        for i in range(5):
            x = (i * 40 + shift) % 200
            image.paste((30 + 40 * i, 60, 160), (x, 10 + 20 * i, x + 25, 110))
        image.save(path)

    return write


def image_case(raw: dict[str, Any], cache_dir: Path) -> Case:
    """``compare_images`` (SSIM): the exported slide image; graded, so a different picture only scores low."""
    result = raw["evaluator"]["result"]["path"]
    case = Case(
        good={result: _picture(0)},
        wrongs={"not exported": {}, "another picture": {result: _picture(20)}},
        wrong_max={"another picture": 0.5},
    )
    gold_cache(case, raw, cache_dir, _picture(0))
    cache_inputs(case, raw, cache_dir, _deck({}))
    return case


def impress_case(raw: dict[str, Any], cache_dir: Path) -> Case:
    """Stand-ins for one ``libreoffice_impress`` task."""
    if raw["evaluator"]["func"] == "compare_images":
        return image_case(raw, cache_dir)
    expected, good, wrongs = impress_specs(raw)
    result = as_list(raw["evaluator"]["result"])[0]["path"]
    case = Case(good={result: _deck(good)}, wrongs={k: {result: _deck(v)} for k, v in wrongs.items()})
    gold_cache(case, raw, cache_dir, _deck(expected))
    cache_inputs(case, raw, cache_dir, _deck(next(iter(wrongs.values()))))
    return case
