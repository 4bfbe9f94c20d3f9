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
from decimal import Decimal

from django.utils.formats import number_format
from django.utils.html import escape

DEFAULT_COLOR = "#417690"
"""The admin's own blue."""
MUTED_COLOR = "#9aa5ad"
GRID_OPACITY = "0.15"
FONT_SIZE = 12
CHAR_WIDTH = 6.4
"""Rough width of one character at FONT_SIZE, for layout only (labels never get clipped)."""

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


def number(value: float) -> str:
    """A value as people read it in the active language: 0.5 in English, 0,5 in German."""
    return number_format(Decimal(f"{value:g}" if abs(value) < 1e6 else f"{value:.2g}"))


def _legend(series: Sequence[Series], width: int, y: float) -> tuple[list[str], float]:
    """Colour keys in rows that wrap at the chart's width; returns the parts and the next y."""
    parts: list[str] = []
    x = 0.0
    for entry in series:
        needed = 16 + text_width(entry.name) + 18
        if x > 0 and x + needed > width:
            x, y = 0.0, y + 18
        parts.append(_rect(x, y - 10, 11, 11, entry.color))
        parts.append(_text(x + 16, y, entry.name))
        x += needed
    return parts, y + 12


def _value_axis(
    ticks: list[float], scale: Callable[[float], float], left: float, right: float
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
        parts.append(_text(left - 6, y + 4, number(tick), anchor="end", opacity="0.7"))
    return parts


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
    """Vertical bars, one group per category and one bar per series; negative values go down."""
    for entry in series:
        if len(entry.values) != len(categories):
            raise ValueError(f"series {entry.name!r} needs one value per category")
    legend, top = _legend(series, width, 14)
    top += 14
    left, right, bottom = 44.0, width - 8.0, height - 28.0
    values = [float(v) for entry in series for v in entry.values] or [0.0]
    low, high, ticks = _axis(min(values), max(values), integers=integers)

    def scale(value: float) -> float:
        return bottom - (value - low) / (high - low) * (bottom - top)

    parts = legend + _value_axis(ticks, scale, left, right)
    group_width = (right - left) / max(len(categories), 1)
    bar_width = min(56.0, group_width * 0.8 / max(len(series), 1))
    zero = scale(0)
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
            label_y = y - 5 if value >= 0 else y + abs(scale(value) - zero) + 14
            parts.append(_text(x + bar_width / 2, label_y, label, anchor="middle"))
        parts.append(
            _text(left + (index + 0.5) * group_width, height - 8, category, anchor="middle")
        )
    return _svg(width, height, title, parts)


def stacked_bar_chart(
    categories: Sequence[str],
    series: Sequence[Series],
    *,
    title: str,
    empty_text: str = "",
    width: int = 720,
    height: int = 280,
) -> str:
    """Vertical bars stacked per category (counts, so non-negative), with totals on top."""
    for entry in series:
        if len(entry.values) != len(categories):
            raise ValueError(f"series {entry.name!r} needs one value per category")
        if any(v < 0 for v in entry.values):
            raise ValueError("stacked bars need non-negative values")
    legend, top = _legend(series, width, 14)
    top += 16
    left, right, bottom = 44.0, width - 8.0, height - 28.0
    totals = [sum(float(entry.values[i]) for entry in series) for i in range(len(categories))]
    low, high, ticks = _axis(0.0, max(totals, default=0.0), integers=True)

    def scale(value: float) -> float:
        return bottom - (value - low) / (high - low) * (bottom - top)

    parts = legend + _value_axis(ticks, scale, left, right)
    slot = (right - left) / max(len(categories), 1)
    bar_width = min(44.0, slot * 0.7)
    label_every = max(1, math.ceil(text_width(max(categories, key=len, default="")) / slot * 1.2))
    for index, category in enumerate(categories):
        x = left + index * slot + (slot - bar_width) / 2
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
                _text(
                    x + bar_width / 2,
                    scale(totals[index]) - 5,
                    number(totals[index]),
                    anchor="middle",
                )
            )
        if index % label_every == 0 or index == len(categories) - 1:
            parts.append(_text(x + bar_width / 2, height - 8, category, anchor="middle"))
    if not any(totals) and empty_text:
        parts.append(_text((left + right) / 2, (top + bottom) / 2, empty_text, anchor="middle"))
    return _svg(width, height, title, parts)


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
