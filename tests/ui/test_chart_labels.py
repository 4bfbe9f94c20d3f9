"""Chart labels never overlap: every <text> of a chart, as the box it covers, touches no other.

The boxes are computed from the SVG alone (x, y, text-anchor, rotate(...)) with a glyph width of
0.6 em, wider than the admin fonts' average glyph; rotated labels are checked as rotated
rectangles (separating axis test), since their axis-aligned boxes overlap by construction.
"""

import math
import re
import xml.etree.ElementTree as ET
from datetime import date, timedelta

import pytest
from django.utils import translation
from django.utils.formats import date_format

from automation.ui.dashboard import charts

GLYPH_EM = 0.6
ASCENT_EM, DESCENT_EM = 0.8, 0.25
SVG = "{http://www.w3.org/2000/svg}"


def _corners(element: ET.Element, font_size: float) -> list[tuple[float, float]]:
    x, y = float(element.get("x")), float(element.get("y"))
    width = len(element.text or "") * GLYPH_EM * font_size
    anchor = element.get("text-anchor", "start")
    start = {"start": x, "middle": x - width / 2, "end": x - width}[anchor]
    corners = [
        (start, y - ASCENT_EM * font_size),
        (start + width, y - ASCENT_EM * font_size),
        (start + width, y + DESCENT_EM * font_size),
        (start, y + DESCENT_EM * font_size),
    ]
    rotation = re.fullmatch(
        r"rotate\((-?[\d.]+) (-?[\d.]+) (-?[\d.]+)\)", element.get("transform", "")
    )
    if rotation:
        angle, cx, cy = (float(v) for v in rotation.groups())
        cos, sin = math.cos(math.radians(angle)), math.sin(math.radians(angle))
        corners = [
            (cx + (px - cx) * cos - (py - cy) * sin, cy + (px - cx) * sin + (py - cy) * cos)
            for px, py in corners
        ]
    return corners


def _overlap(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> bool:
    """Separating axis test for two convex quadrilaterals."""
    for polygon in (a, b):
        for i in range(4):
            (x1, y1), (x2, y2) = polygon[i], polygon[(i + 1) % 4]
            axis = (y1 - y2, x2 - x1)
            pa = [axis[0] * x + axis[1] * y for x, y in a]
            pb = [axis[0] * x + axis[1] * y for x, y in b]
            if max(pa) <= min(pb) + 1e-6 or max(pb) <= min(pa) + 1e-6:
                return False
    return True


def text_boxes(svg: str) -> list[tuple[str, list[tuple[float, float]]]]:
    root = ET.fromstring(svg)  # noqa: S314 (our own chart, not untrusted input)
    font_size = float(root.get("font-size"))
    return [(t.text or "", _corners(t, font_size)) for t in root.iter(f"{SVG}text")] or [
        (t.text or "", _corners(t, font_size)) for t in root.iter("text")
    ]


def assert_no_overlap(svg: str) -> list[str]:
    boxes = text_boxes(svg)
    for i, (text_a, a) in enumerate(boxes):
        for text_b, b in boxes[i + 1 :]:
            assert not _overlap(a, b), f"{text_a!r} overlaps {text_b!r}"
    root = ET.fromstring(svg)  # noqa: S314 (our own chart, not untrusted input)
    height, width = float(root.get("height")), float(root.get("width"))
    for text, corners in boxes:
        assert all(-0.5 <= x <= width + 0.5 for x, _ in corners), f"{text!r} leaves the chart"
        assert all(y <= height + 0.5 for _, y in corners), f"{text!r} falls below the chart"
    return [text for text, _ in boxes]


def _thirty_days() -> list[str]:
    with translation.override("de"):
        return [
            date_format(date(2026, 11, 1) + timedelta(days=n), "MONTH_DAY_FORMAT")
            for n in range(30)
        ]


@pytest.mark.parametrize("width", [320, 480, 720, 1100])
def test_thirty_days_of_deliveries_keep_their_labels_apart(width):
    days = _thirty_days()
    series = [
        charts.Series("erledigt", [120 + (n * 37) % 900 for n in range(30)], "#5a9e4b"),
        charts.Series("fehlgeschlagen", [(n * 7) % 13 for n in range(30)], "#e6952e"),
    ]
    texts = assert_no_overlap(charts.stacked_bar_chart(days, series, title="t", width=width))
    shown = [day for day in days if day in texts]
    assert shown[0] == days[0]
    assert len(shown) >= 4, "thinned, not emptied"


@pytest.mark.parametrize("width", [360, 560, 900])
def test_long_category_labels_are_turned_or_thinned_never_overlapping(width):
    labels = [f"Demo – Winterzauber Duftkerze im Glas, Variante {n}" for n in range(30)]
    series = [
        charts.Series("Ohne Rabatt", [((n * 13) % 17 - 6) * 1.37 for n in range(30)]),
        charts.Series("Mit Rabatt", [((n * 5) % 11 - 3) * 2.11 for n in range(30)], "#c7792b"),
    ]
    svg = charts.grouped_bar_chart(
        labels, series, title="t", width=width, value_format=lambda v: f"{v:.2f} €"
    )
    texts = assert_no_overlap(svg)
    assert labels[0] in texts


def test_few_short_labels_stay_flat_and_all_shown():
    svg = charts.grouped_bar_chart(
        ["keine Mail", "Erinnerung", "mit Rabatt"], [charts.Series("n", [3, 12, 5])], title="t"
    )
    assert "rotate(" not in svg
    texts = assert_no_overlap(svg)
    assert {"keine Mail", "Erinnerung", "mit Rabatt", "3", "12", "5"} <= set(texts)


def test_the_old_layout_would_have_overlapped_thirty_long_dates():
    """Thirty German dates in 720 px are turned: "30. November" needs 86 px of a 22 px slot."""
    svg = charts.stacked_bar_chart(_thirty_days(), [charts.Series("a", [1] * 30)], title="t")
    assert "rotate(-45" in svg
    assert_no_overlap(svg)


def test_comparison_bars_keep_label_and_value_apart():
    bars = [
        charts.Bar("Von Hand prüfen", 43.0, "43 h → 71,67 Klicks ≈ 43,00 €"),
        charts.Bar("Demo – Winterzauber (gemessen, Median von 3)", 0.001, "2 s → 0,0009 Klicks"),
    ]
    assert_no_overlap(charts.comparison_bars(bars, title="t"))


def test_a_few_long_labels_wrap_onto_two_lines_instead_of_turning():
    labels = ["Eigene Kerzen (55 %)", "Zugekaufte Geschenksets (25 %)"]
    svg = charts.grouped_bar_chart(
        labels,
        [charts.Series("a", [0.88, 0.4]), charts.Series("b", [1.1, 0.26])],
        title="t",
        width=480,
    )
    assert "rotate(" not in svg
    texts = assert_no_overlap(svg)
    assert {"Eigene Kerzen (55 %)", "Zugekaufte", "Geschenksets (25 %)"} <= set(texts)
