"""Small server-side SVG charts: pure functions from numbers and labels to an SVG string.

No JavaScript, no external assets, no network: the admin page renders them inline. Every label
and title passes through django.utils.html.escape here, and colours must be hex codes, so the
returned string is safe to mark safe in a template. Text uses `currentColor` and inherits the
admin's font, so the charts follow its light and dark themes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.utils.html import escape

from automation.ui.dashboard.format import number

DEFAULT_COLOR = "#417690"
"""The admin's own blue."""
MUTED_COLOR = "#9aa5ad"
GRID_OPACITY = "0.15"
FONT_SIZE = 12
CHAR_WIDTH = 0.6 * FONT_SIZE
"""Width of one character at FONT_SIZE, for layout only: 0.6 em is wider than the average glyph
of the admin's sans-serif fonts, so a label estimated to fit does fit."""
LINE_HEIGHT = FONT_SIZE + 4
"""The room one line of text needs across its baseline, with a little air."""
ASCENT = 0.8 * FONT_SIZE
"""How far glyphs reach above the baseline; the rest of a line lies below it."""
LABEL_GAP = 8.0
"""Horizontal air between two neighbouring axis labels."""
ROTATION = 45
"""Axis labels that do not fit side by side are turned by this many degrees."""
_SIN = math.sin(math.radians(ROTATION))

_HEX_COLOR = re.compile(r"^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")


@dataclass(frozen=True)
class Series:
    """One coloured series of values, aligned with the chart's categories."""

    name: str
    values: Sequence[float]
    color: str = DEFAULT_COLOR


@dataclass(frozen=True)
class Bar:
    """One labelled horizontal bar with the text shown at its end."""

    label: str
    value: float
    value_label: str
    color: str = DEFAULT_COLOR


def _color(value: str) -> str:
    """Colours go into attributes unescaped-looking: accept only hex codes."""
    if not _HEX_COLOR.match(value):
        raise ValueError(f"chart colours must be hex codes like #417690, got {value!r}")
    return value


def _n(value: float) -> str:
    """A coordinate with at most two decimals and no trailing zeros."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _text(x: float, y: float, content: str, *, anchor: str = "start", **attrs: str) -> str:
    extra = "".join(f' {name.replace("_", "-")}="{escape(v)}"' for name, v in attrs.items())
    return f'<text x="{_n(x)}" y="{_n(y)}" text-anchor="{anchor}"{extra}>{escape(content)}</text>'


Box = tuple[float, float, float, float]
"""left, top, right, bottom of a horizontal line of text, in user units."""


def text_box(x: float, y: float, content: str, anchor: str = "start") -> Box:
    """Where a horizontal label drawn by _text at (x, y) lies."""
    width = text_width(content)
    left = {"start": x, "middle": x - width / 2, "end": x - width}[anchor]
    return (left, y - ASCENT, left + width, y - ASCENT + LINE_HEIGHT)


class Placed:
    """The labels drawn so far: a label that would touch one of them is left out.

    Every number stays readable in its bar's tooltip (<title>), so dropping a label loses
    nothing, while two labels drawn over each other would show neither.
    """

    def __init__(self, width: float) -> None:
        self.boxes: list[Box] = []
        self.width = width

    def add(self, box: Box) -> bool:
        """Reserve the box; False (and nothing reserved) when it overlaps a reserved one or
        would stick out of the chart's sides."""
        left, top, right, bottom = box
        if left < 0 or right > self.width:
            return False
        for other in self.boxes:
            if left < other[2] and other[0] < right and top < other[3] and other[1] < bottom:
                return False
        self.boxes.append(box)
        return True

    def text(self, x: float, y: float, content: str, *, anchor: str = "start", **attrs: str) -> str:
        """The label's markup if it fits, else ""."""
        if not content or not self.add(text_box(x, y, content, anchor)):
            return ""
        return _text(x, y, content, anchor=anchor, **attrs)


@dataclass(frozen=True)
class AxisLabels:
    """How a category axis shows its labels in the room it has."""

    step: int
    """Every step-th label is drawn, from the first."""
    rotated: bool
    depth: float
    """Vertical room the labels take below the plot."""
    reach: float
    """How far a label reaches left of its category's centre (rotated labels hang left)."""
    lines: tuple[tuple[str, ...], ...] = ()
    """Flat labels wrapped onto one or two lines, a tuple per category; empty when not wrapped."""


def wrap(label: str, room: float) -> tuple[str, ...] | None:
    """The label on one line, or on two balanced ones, no wider than `room`; else None."""
    if text_width(label) <= room:
        return (label,)
    words = label.split(" ")
    splits = [(" ".join(words[:i]), " ".join(words[i:])) for i in range(1, len(words))]
    best = min(splits, key=lambda pair: max(map(text_width, pair)), default=None)
    if best is None or max(map(text_width, best)) > room:
        return None
    return best


def axis_labels(categories: Sequence[str], slot: float) -> AxisLabels:
    """Wrap, thin or turn the labels so that neighbours never touch, showing as many as fit.

    Side by side a label needs its width plus LABEL_GAP; wrapped onto two lines, its longest
    line; turned by ROTATION degrees, parallel labels need only LINE_HEIGHT between their
    baselines, i.e. slot · sin(ROTATION) per label.
    """
    widest = max((text_width(c) for c in categories), default=0.0)
    slot = max(slot, 1e-6)
    flat_step = max(1, math.ceil((widest + LABEL_GAP) / slot))
    if flat_step == 1:
        return AxisLabels(1, False, LINE_HEIGHT + 4, widest / 2)
    wrapped = [wrap(c, slot - LABEL_GAP) for c in categories]
    if all(lines is not None for lines in wrapped):
        longest = max(text_width(line) for lines in wrapped for line in lines)
        depth = LINE_HEIGHT * max(len(lines) for lines in wrapped) + 4
        return AxisLabels(1, False, depth, longest / 2, tuple(wrapped))
    turned_step = max(1, math.ceil(LINE_HEIGHT / (slot * _SIN)))
    if turned_step < flat_step:
        depth = widest * _SIN + ASCENT * _SIN + FONT_SIZE
        return AxisLabels(turned_step, True, depth, widest * _SIN)
    return AxisLabels(flat_step, False, LINE_HEIGHT + 4, widest / 2)


def _category_labels(
    categories: Sequence[str], centres: Sequence[float], layout: AxisLabels, top: float
) -> list[str]:
    """The drawn labels: flat ones centred under their category, turned ones ending at it."""
    parts = []
    for index in range(0, len(categories), layout.step):
        x = centres[index]
        if layout.rotated:
            y = top + ASCENT * _SIN + 2
            parts.append(
                _text(
                    x,
                    y,
                    categories[index],
                    anchor="end",
                    transform=f"rotate(-{ROTATION} {_n(x)} {_n(y)})",
                )
            )
        else:
            lines = layout.lines[index] if layout.lines else (categories[index],)
            for number_, line in enumerate(lines):
                y = top + ASCENT + 2 + number_ * LINE_HEIGHT
                parts.append(_text(x, y, line, anchor="middle"))
    return parts


def _left_margin(tick_labels: Sequence[str], reach: float, slot: float) -> float:
    """Room on the left for the value axis' labels and for the first category's label."""
    widest_tick = max((text_width(label) for label in tick_labels), default=0.0)
    return max(44.0, widest_tick + 10, reach - slot / 2 + 2)


def _rect(x: float, y: float, w: float, h: float, color: str, tooltip: str = "") -> str:
    title = f"<title>{escape(tooltip)}</title>" if tooltip else ""
    return (
        f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(max(w, 0))}" height="{_n(max(h, 0))}" '
        f'fill="{_color(color)}">{title}</rect>'
    )


def _svg(width: int, height: int, title: str, body: list[str]) -> str:
    """The root element: a viewBox that scales, an accessible name and a <title>."""
    label = escape(title)
    return (
        f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{label}" font-size="{FONT_SIZE}" fill="currentColor">'
        f"<title>{label}</title>{''.join(body)}</svg>"
    )


def text_width(text: str) -> float:
    """Estimated width of a label in user units."""
    return len(text) * CHAR_WIDTH


def nice_step(span: float, target_ticks: int = 4) -> float:
    """A round tick step (1, 2, 2.5 or 5 times a power of ten) giving about `target_ticks`."""
    if span <= 0:
        return 1.0
    raw = span / target_ticks
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * power:
            return factor * power
    return 10 * power


def _axis(low: float, high: float, *, integers: bool) -> tuple[float, float, list[float]]:
    """Round bounds and ticks covering [low, high], always including zero."""
    low, high = min(low, 0.0), max(high, 0.0)
    if low == high:
        high = 1.0
    step = nice_step(high - low)
    if integers:
        step = max(1.0, math.ceil(step))
    bottom = math.floor(low / step) * step
    top = math.ceil(high / step) * step
    ticks = [bottom + i * step for i in range(round((top - bottom) / step) + 1)]
    return bottom, top, ticks


def _legend(
    series: Sequence[Series], width: int, y: float, placed: Placed
) -> tuple[list[str], float]:
    """Colour keys in rows that wrap at the chart's width; returns the parts and the next y."""
    parts: list[str] = []
    x = 0.0
    for entry in series:
        needed = 16 + text_width(entry.name) + 18
        if x > 0 and x + needed > width:
            x, y = 0.0, y + 18
        parts.append(_rect(x, y - 10, 11, 11, entry.color))
        placed.add(text_box(x + 16, y, entry.name))
        parts.append(_text(x + 16, y, entry.name))
        x += needed
    return parts, y + 12


def _value_axis(
    ticks: list[float], scale: Callable[[float], float], left: float, right: float, placed: Placed
) -> list[str]:
    """Horizontal grid lines with their values on the left; the zero line drawn solid."""
    parts = []
    for tick in ticks:
        y = scale(tick)
        opacity = "0.6" if tick == 0 else GRID_OPACITY
        parts.append(
            f'<line x1="{_n(left)}" x2="{_n(right)}" y1="{_n(y)}" y2="{_n(y)}" '
            f'stroke="currentColor" stroke-opacity="{opacity}"/>'
        )
        parts.append(placed.text(left - 6, y + 4, number(tick), anchor="end", opacity="0.7"))
    return parts


def _plot_left(
    tick_labels: Sequence[str], categories: Sequence[str], width: int, per_slot: int = 1
) -> tuple[float, AxisLabels]:
    """The plot's left edge and its category labels' layout, which depend on each other."""
    left = 44.0
    for _ in range(3):
        slot = (width - 8.0 - left) / max(len(categories), 1)
        layout = axis_labels(categories, slot)
        wanted = _left_margin(tick_labels, layout.reach, slot)
        if wanted <= left:
            break
        left = wanted
    return left, layout


def grouped_bar_chart(
    categories: Sequence[str],
    series: Sequence[Series],
    *,
    title: str,
    value_format: Callable[[float], str] = number,
    width: int = 560,
    height: int = 280,
    integers: bool = False,
) -> str:
    """Vertical bars, one group per category and one bar per series; negative values go down.

    `height` is the plot's frame; turned category labels add the room they need below it.
    """
    for entry in series:
        if len(entry.values) != len(categories):
            raise ValueError(f"series {entry.name!r} needs one value per category")
    placed = Placed(width)
    legend, top = _legend(series, width, 14, placed)
    top += 14
    values = [float(v) for entry in series for v in entry.values] or [0.0]
    low, high, ticks = _axis(min(values), max(values), integers=integers)
    left, layout = _plot_left([number(t) for t in ticks], categories, width)
    right = width - 8.0
    # Labels of negative bars hang below them: keep a line free above the category labels.
    bottom = height - 28.0 - (LINE_HEIGHT if low < 0 else 0.0)

    def scale(value: float) -> float:
        return bottom - (value - low) / (high - low) * (bottom - top)

    parts = legend + _value_axis(ticks, scale, left, right, placed)
    group_width = (right - left) / max(len(categories), 1)
    bar_width = min(56.0, group_width * 0.8 / max(len(series), 1))
    zero = scale(0)
    label_top = bottom + (LINE_HEIGHT if low < 0 else 0.0) + 4
    centres = [left + (index + 0.5) * group_width for index in range(len(categories))]
    placed.boxes.append((left, label_top, right, label_top + layout.depth))
    for index, category in enumerate(categories):
        group_left = left + index * group_width + (group_width - bar_width * len(series)) / 2
        for position, entry in enumerate(series):
            value = float(entry.values[index])
            x = group_left + position * bar_width
            y = min(scale(value), zero)
            label = value_format(value)
            parts.append(
                _rect(
                    x + 2,
                    y,
                    bar_width - 4,
                    abs(scale(value) - zero),
                    entry.color,
                    f"{category} – {entry.name}: {label}",
                )
            )
            label_y = y - 5 if value >= 0 else y + abs(scale(value) - zero) + ASCENT + 2
            parts.append(placed.text(x + bar_width / 2, label_y, label, anchor="middle"))
    parts.extend(_category_labels(categories, centres, layout, label_top))
    return _svg(width, round(label_top + layout.depth), title, parts)


def stacked_bar_chart(
    categories: Sequence[str],
    series: Sequence[Series],
    *,
    title: str,
    empty_text: str = "",
    width: int = 720,
    height: int = 280,
) -> str:
    """Vertical bars stacked per category (counts, so non-negative), with totals on top.

    `height` is the plot's frame; turned category labels add the room they need below it.
    """
    for entry in series:
        if len(entry.values) != len(categories):
            raise ValueError(f"series {entry.name!r} needs one value per category")
        if any(v < 0 for v in entry.values):
            raise ValueError("stacked bars need non-negative values")
    placed = Placed(width)
    legend, top = _legend(series, width, 14, placed)
    top += 16
    totals = [sum(float(entry.values[i]) for entry in series) for i in range(len(categories))]
    low, high, ticks = _axis(0.0, max(totals, default=0.0), integers=True)
    left, layout = _plot_left([number(t) for t in ticks], categories, width)
    right, bottom = width - 8.0, height - 28.0

    def scale(value: float) -> float:
        return bottom - (value - low) / (high - low) * (bottom - top)

    parts = legend + _value_axis(ticks, scale, left, right, placed)
    slot = (right - left) / max(len(categories), 1)
    bar_width = min(44.0, slot * 0.7)
    centres = [left + (index + 0.5) * slot for index in range(len(categories))]
    label_top = bottom + 4
    placed.boxes.append((left, label_top, right, label_top + layout.depth))
    for index, category in enumerate(categories):
        x = centres[index] - bar_width / 2
        base = 0.0
        for entry in series:
            value = float(entry.values[index])
            if value:
                y_top = scale(base + value)
                parts.append(
                    _rect(
                        x,
                        y_top,
                        bar_width,
                        scale(base) - y_top,
                        entry.color,
                        f"{category} – {entry.name}: {number(value)}",
                    )
                )
                base += value
        if totals[index]:
            parts.append(
                placed.text(
                    centres[index], scale(totals[index]) - 5, number(totals[index]), anchor="middle"
                )
            )
    parts.extend(_category_labels(categories, centres, layout, label_top))
    if not any(totals) and empty_text:
        parts.append(_text((left + right) / 2, (top + bottom) / 2, empty_text, anchor="middle"))
    return _svg(width, round(label_top + layout.depth), title, parts)


def comparison_bars(bars: Sequence[Bar], *, title: str, width: int = 640) -> str:
    """Horizontal bars on one linear scale, each with its label above and its value at its end.

    Tiny values keep a sliver of a bar so they stay visible next to large ones; the value text
    says the truth.
    """
    row_height, left = 46.0, 0.0
    height = max(int(row_height * len(bars)) + 4, 24)
    reserve = max((text_width(bar.value_label) for bar in bars), default=0.0) + 10
    span = max(width - left - reserve, 40.0)
    largest = max((float(bar.value) for bar in bars), default=0.0)
    parts: list[str] = []
    for index, bar in enumerate(bars):
        value = float(bar.value)
        if value < 0:
            raise ValueError("comparison bars need non-negative values")
        y = index * row_height
        length = value / largest * span if largest > 0 else 0.0
        if value > 0:
            length = max(length, 3.0)
        parts.append(_text(left, y + 15, bar.label, font_weight="bold"))
        parts.append(_rect(left, y + 22, length, 16, bar.color, f"{bar.label}: {bar.value_label}"))
        parts.append(_text(left + length + 6, y + 35, bar.value_label))
    return _svg(width, height, title, parts)
