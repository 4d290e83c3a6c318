"""OSWorld's LibreOffice Impress metrics on ``.pptx`` files (python-pptx), written from their semantics.

Source of the semantics: OSWorld's ``desktop_env/evaluators/metrics/slides.py`` (Apache-2.0); the code here is ours.
A missing or unreadable file scores 0.

``compare_pptx_files(result, expected, **options)`` walks the slides pairwise (and, in each, the shapes pairwise, in
order) and scores 0 at the first difference among what the ``examine_*`` options (:data:`PPTX_OPTIONS`) ask for:

* by default: the number of slides, the notes text, each shape's position and size (``examine_shape``), text,
  paragraph alignment and level, each run's font name, size, bold, italic, explicit RGB colour, underline and strike,
  and the slide's bullets (level, character, text, colour of each paragraph);
* ``examine_background_color``: OSWorld's reader of the slide background resets the fill before reading it, so its
  check never compares anything; the same here (documented, not an omission);
* the task-specific position options of a few published tasks (``examine_title_bottom_position``,
  ``examine_table_bottom_position``, ``examine_right_position``, ``examine_top_position``,
  ``examine_shape_for_shift_size``, ``examine_image_size``, ``examine_modify_height``) with OSWorld's thresholds.

Also: ``check_slide_orientation_Portrait`` (width < height), ``check_transition`` (``rules = {slide_idx,
transition_type}``: the slide's transition element holds that effect), ``evaluate_presentation_fill_to_rgb_distance``
(``rules = {rgb}``: 1 minus the mean normalised RGB distance of the slides' solid backgrounds, the master's for an
inherited one), ``check_image_stretch_and_center`` (the original's first-slide picture, found by its bytes, fills
the slide within half an inch and is centred).
"""

from __future__ import annotations

import math
from typing import Any
from xml.etree import ElementTree

from rlanything_core.envs.desktop.metrics._files import read_or_none, zip_xml

__all__ = [
    "PPTX_OPTIONS",
    "check_image_stretch_and_center",
    "check_slide_orientation_Portrait",
    "check_transition",
    "compare_pptx_files",
    "evaluate_presentation_fill_to_rgb_distance",
]

PPTX_OPTIONS = {
    "examine_number_of_slides": True,
    "examine_shape": True,
    "examine_text": True,
    "examine_indent": True,
    "examine_font_name": True,
    "examine_font_size": True,
    "examine_font_bold": True,
    "examine_font_italic": True,
    "examine_color_rgb": True,
    "examine_font_underline": True,
    "examine_strike_through": True,
    "examine_alignment": True,
    "examine_title_bottom_position": False,
    "examine_table_bottom_position": False,
    "examine_right_position": False,
    "examine_top_position": False,
    "examine_shape_for_shift_size": False,
    "examine_image_size": False,
    "examine_modify_height": False,
    "examine_bullets": True,
    "examine_background_color": True,
    "examine_note": True,
}
# the misspelling of one published task: OSWorld ignores unknown options, so it changes nothing there either
IGNORED_OPTIONS = ("examine_aligment",)

_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
_PICTURE, _TABLE, _FREEFORM = 13, 19, 5
_EMU_PER_INCH = 914400


def _open(path: Any) -> Any:
    """The python-pptx presentation at ``path``, or None (no path, not a file, not a .pptx)."""
    from pptx import Presentation

    return read_or_none(path, Presentation)


def _box(shape: Any) -> tuple[Any, ...]:
    return (shape.left, shape.top, shape.width, shape.height)


def _kind(shape: Any) -> Any:
    try:
        return shape.shape_type
    except NotImplementedError:  # python-pptx has no type for some graphic frames
        return None


def _rgb(font: Any) -> Any:
    try:
        return font.color.rgb
    except AttributeError:  # no colour, or a theme colour: OSWorld compares explicit RGB only
        return None


def _bullets(slide: Any) -> list[tuple[Any, ...]]:
    """(level, bullet character, text, bullet colour) of every paragraph of the slide as saved."""
    root = ElementTree.fromstring(slide.part.blob)
    out = []
    for paragraph in root.iter(f"{_A}p"):
        ppr = paragraph.find(f"{_A}pPr")
        level = ppr.get("lvl") if ppr is not None else "No Level"
        char = ppr.find(f"{_A}buChar") if ppr is not None else None
        color = ppr.find(f"{_A}buClr/{_A}srgbClr") if ppr is not None else None
        text = "".join(t.text or "" for t in paragraph.iter(f"{_A}t"))
        out.append(
            (
                level,
                char.get("char") if char is not None else "No Bullet",
                text,
                color.get("val") if color is not None else "No Color",
            )
        )
    return out


def _positions_differ(one: Any, two: Any, slide_no: int, opts: dict[str, Any]) -> bool:
    """The position and size checks of one shape pair (module docstring); True means a difference that scores 0."""
    same_box = _box(one) == _box(two)
    text_one, text_two = one.has_text_frame, two.has_text_frame
    if opts["examine_title_bottom_position"]:
        if text_one and text_two and one.text == two.text:
            if one.text == "Product Comparison" and (one.top <= two.top or one.top < 3600000):
                return True
        elif not same_box:
            return True
    if opts["examine_table_bottom_position"]:
        if slide_no == 3 and _kind(one) == _TABLE and _kind(two) == _TABLE:
            if one.top <= two.top or one.top < 3600000:
                return True
        elif not same_box:
            return True
    if opts["examine_right_position"] and slide_no == 2 and not text_one and not text_two:
        if one.left <= two.left or one.left < 4320000:
            return True
    if opts["examine_top_position"]:
        if slide_no == 2 and _kind(one) == _PICTURE and _kind(two) == _PICTURE:
            if one.top >= two.top or one.top > 1980000:
                return True
        elif not same_box:
            return True
    if opts["examine_shape_for_shift_size"] and not same_box:
        allowed = "Elaborate on what you want to discuss."
        if not (text_one and text_two and one.text == two.text == allowed):
            return True
    if opts["examine_shape"] and not same_box:
        return True
    if opts["examine_image_size"]:
        if _kind(one) == _PICTURE and _kind(two) == _PICTURE:
            if (one.width, one.height) != (two.width, two.height):
                return True
        elif not same_box:
            return True
    if opts["examine_modify_height"]:
        if (not text_one and not text_two) or (_kind(one) == _FREEFORM and _kind(two) == _FREEFORM):
            if one.height != two.height:
                return True
        elif not same_box:
            return True
    return False


def _runs_differ(r1: Any, r2: Any, opts: dict[str, Any]) -> bool:
    f1, f2 = r1.font, r2.font
    checks = (
        ("examine_font_name", f1.name, f2.name),
        ("examine_font_size", f1.size, f2.size),
        ("examine_font_bold", f1.bold, f2.bold),
        ("examine_font_italic", f1.italic, f2.italic),
        ("examine_font_underline", f1.underline, f2.underline),
        (
            "examine_strike_through",
            f1._element.attrib.get("strike", "noStrike"),
            f2._element.attrib.get("strike", "noStrike"),
        ),
    )
    if any(opts[name] and a != b for name, a, b in checks):
        return True
    c1, c2 = _rgb(f1), _rgb(f2)
    return bool(opts["examine_color_rgb"] and c1 is not None and c2 is not None and c1 != c2)


def _text_differs(one: Any, two: Any, opts: dict[str, Any]) -> tuple[bool, bool]:
    """(a difference that scores 0, whether any run pair was compared) for two text shapes."""
    if opts["examine_text"] and one.text.strip() != two.text.strip():
        return True, False
    compared_runs = False
    for p1, p2 in zip(one.text_frame.paragraphs, two.text_frame.paragraphs):
        if opts["examine_alignment"] and p1.alignment != p2.alignment:
            return True, compared_runs
        if opts["examine_text"] and p1.text != p2.text:
            return True, compared_runs
        if opts["examine_indent"] and p1.level != p2.level:
            return True, compared_runs
        for r1, r2 in zip(p1.runs, p2.runs):
            compared_runs = True
            if _runs_differ(r1, r2, opts):
                return True, compared_runs
    return False, compared_runs


def compare_pptx_files(result: Any, expected: Any, **options: Any) -> float:
    """1.0 when the presentations agree on everything the options examine (module docstring)."""
    one, two = _open(result), _open(expected)
    if one is None or two is None:
        return 0.0
    opts = {**PPTX_OPTIONS, **{k: bool(v) for k, v in options.items() if k in PPTX_OPTIONS}}
    if opts["examine_number_of_slides"] and len(one.slides) != len(two.slides):
        return 0.0
    for slide_no, (s1, s2) in enumerate(zip(one.slides, two.slides), start=1):
        if opts["examine_note"] and s1.notes_slide.notes_text_frame.text.strip() != (
            s2.notes_slide.notes_text_frame.text.strip()
        ):
            return 0.0
        bullets_checked = False
        for sh1, sh2 in zip(s1.shapes, s2.shapes):
            if _positions_differ(sh1, sh2, slide_no, opts):
                return 0.0
            if sh1.has_text_frame and sh2.has_text_frame:
                differs, compared_runs = _text_differs(sh1, sh2, opts)
                if differs:
                    return 0.0
                # OSWorld compares the slide's bullets at every run pair: once per slide is the same verdict
                if compared_runs and opts["examine_bullets"] and not bullets_checked:
                    if _bullets(s1) != _bullets(s2):
                        return 0.0
                    bullets_checked = True
    return 1.0


def check_slide_orientation_Portrait(result: Any) -> float:  # noqa: N802 - OSWorld's metric name
    """1.0 when the slides are taller than wide."""
    prs = _open(result)
    return 0.0 if prs is None else float(prs.slide_width < prs.slide_height)


def check_transition(result: Any, rules: dict[str, Any]) -> float:
    """1.0 when slide ``rules["slide_idx"]`` (0-based) has a transition of type ``rules["transition_type"]``."""
    name = f"ppt/slides/slide{int(rules['slide_idx']) + 1}.xml"
    root = zip_xml(result, name)
    if root is None:
        return 0.0
    transition = root.find(f".//{_P}transition")
    return float(transition is not None and transition.find(f".//{_P}{rules['transition_type']}") is not None)


def _fill_rgb(slide: Any) -> Any:
    fill = slide.background.fill
    if fill.type == 1:  # solid
        return fill.fore_color.rgb
    if fill.type == 5:  # inherited: the master's, when solid
        master = slide.slide_layout.slide_master.background.fill
        return master.fore_color.rgb if master.type == 1 else None
    return None


def evaluate_presentation_fill_to_rgb_distance(result: Any, rules: dict[str, Any]) -> float:
    """1 minus the mean normalised distance of the slides' background colours to ``rules["rgb"]``."""
    prs = _open(result)
    if prs is None or not len(prs.slides):
        return 0.0
    target = rules["rgb"]
    total = 0.0
    for slide in prs.slides:
        rgb = _fill_rgb(slide)
        if rgb is None:
            total += 1.0
        else:
            total += math.dist(tuple(rgb), tuple(target)) / math.dist((255, 255, 255), (0, 0, 0))
    return 1.0 - total / len(prs.slides)


def check_image_stretch_and_center(result: Any, original: Any) -> float:
    """1.0 when the original's first-slide picture fills the result's first slide (within half an inch), centred."""
    new, old = _open(result), _open(original)
    if new is None or old is None or not len(new.slides) or not len(old.slides):
        return 0.0
    pictures = [s for s in old.slides[0].shapes if _kind(s) == _PICTURE]
    if not pictures:
        return 0.0
    blob = pictures[0].image.blob
    moved = [s for s in new.slides[0].shapes if _kind(s) == _PICTURE and s.image.blob == blob]
    if not moved:
        return 0.0
    image, tol = moved[-1], _EMU_PER_INCH / 2
    width, height = old.slide_width, old.slide_height
    return float(
        abs(image.width - width) <= tol
        and abs(image.height - height) <= tol
        and abs(image.left - (width - image.width) / 2) <= tol
        and abs(image.top - (height - image.height) / 2) <= tol
    )
