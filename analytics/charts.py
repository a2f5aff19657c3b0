"""Server-side SVG charts for `/analytics`: stacked bars and lines over a time series, every bar
and every point a link (to the trace feed of the traces behind it).

Why server-side SVG and not a charting library: the page is rendered by Django and updated by
htmx, so charts drawn in the same render need no JSON side channel, no client code to keep in
step with the server's numbers, nothing to vendor and pin, and they work without JavaScript.
The links are plain ``<a>`` elements (keyboard, middle-click, screen readers).

The plot is an SVG with ``preserveAspectRatio="none"`` that stretches to its box (bars and lines
scale; strokes keep their width with ``vector-effect``); the axis labels are HTML around it, so
text stays readable at 390 px. Each column is 10 units wide and the plot 100 units high.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

# Bars and hit areas are a page's hundreds of elements (a 7-day hourly page: ~1,000): their text is
# escaped with the standard library's `html.escape` (what Django's `escape` calls, without its lazy
# text and SafeData checks per argument); the values are plain strings and numbers.
_e = html.escape

COLUMN = 10
HEIGHT = 100
BAR = 8  # of the column's 10 units
Format = Callable[[float], str]


@dataclass(frozen=True)
class Segment:
    value: float
    css: str  # series-<name>: the colour (app.css)
    href: str
    title: str


@dataclass(frozen=True)
class Column:
    label: str  # the interval, for titles ("Nov 23, 14:00 UTC")
    href: str  # the whole interval (a column with nothing stacked still links)
    segments: Sequence[Segment] = ()
    points: Sequence[float | None] = ()  # line charts: one value per line, None = no data


@dataclass(frozen=True)
class Line:
    name: str
    css: str


@dataclass
class Axis:
    top: float
    ticks: list[float] = field(default_factory=list)


def nice_top(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 × 10^k at or above ``value`` (1 for nothing)."""
    if value <= 0 or not math.isfinite(value):
        return 1.0
    exponent = math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        top = step * 10.0**exponent
        if top >= value * (1 - 1e-12):
            return top
    return 10.0 ** (exponent + 1)  # pragma: no cover (10 always fits)


def axis(values: Sequence[float], *, whole: bool = False) -> Axis:
    """``whole``: counts, whose half-way tick must be a whole number too."""
    top = nice_top(max(values, default=0.0))
    if whole and top < 2:
        top = 2.0
    return Axis(top, [top, top / 2, 0.0])


def _y(value: float, top: float) -> float:
    return round(HEIGHT - min(value, top) / top * HEIGHT, 3)


def stacked_bars(
    columns: Sequence[Column],
    *,
    label: str,
    fmt: Format,
    x_labels: Sequence[tuple[int, str]],
    whole: bool = False,
) -> SafeString:
    """A bar per column, its segments stacked bottom-up; each segment links to its traces."""
    scale = axis([sum(s.value for s in c.segments) for c in columns], whole=whole)
    body: list[str] = []
    for i, column in enumerate(columns):
        x = i * COLUMN
        body.append(_hit(x, column))
        base = 0.0
        for segment in column.segments:
            if segment.value <= 0:
                continue
            y_top, y_base = _y(base + segment.value, scale.top), _y(base, scale.top)
            height = max(y_base - y_top, 0.6)  # a sliver stays visible (and clickable)
            body.append(
                f'<a href="{_e(segment.href)}" class="bar {_e(segment.css)}">'
                f"<title>{_e(column.label)}: {_e(segment.title)}</title>"
                f'<rect x="{x + (COLUMN - BAR) / 2}" y="{round(y_base - height, 3)}" width="{BAR}" '
                f'height="{round(height, 3)}"></rect></a>'
            )
            base += segment.value
    return _figure(columns, scale, fmt, label, "".join(body), x_labels)


def lines(
    columns: Sequence[Column], series: Sequence[Line], *, label: str, fmt: Format, x_labels: Sequence[tuple[int, str]]
) -> SafeString:
    """One line per entry of ``series`` through the columns' ``points``; each column links to its
    interval's traces, its title giving every line's value there."""
    values = [v for c in columns for v in c.points if v is not None]
    scale = axis(values)
    body = [_hit(i * COLUMN, c, " · ".join(_point_title(series, c.points, fmt))) for i, c in enumerate(columns)]
    for n, line in enumerate(series):
        path: list[str] = []
        run: list[tuple[float, float]] = []
        for i, column in enumerate([*columns, None]):
            value = column.points[n] if column is not None and n < len(column.points) else None
            if value is not None:
                run.append((i * COLUMN + COLUMN / 2, _y(value, scale.top)))
                continue
            if len(run) == 1:  # a lone point: a short level stroke, so it shows
                (x, y) = run[0]
                path.append(f"M{x - 3:g} {y:g}H{x + 3:g}")
            elif run:
                path.append("M" + "L".join(f"{x:g} {y:g}" for x, y in run))
            run = []
        if path:
            body.append(
                format_html(
                    '<path class="line {}" d="{}" vector-effect="non-scaling-stroke"></path>', line.css, " ".join(path)
                )
            )
    return _figure(columns, scale, fmt, label, "".join(body), x_labels)


def _point_title(series: Sequence[Line], points: Sequence[float | None], fmt: Format) -> list[str]:
    return [f"{line.name} {'–' if v is None else fmt(v)}" for line, v in zip(series, points, strict=False)]


def _hit(x: float, column: Column, extra: str = "") -> str:
    """The column's whole height: a link to the interval's traces, visible on hover."""
    title = f"{column.label}: {extra}" if extra else f"{column.label}: open these traces"
    return (
        f'<a href="{_e(column.href)}" class="hit"><title>{_e(title)}</title>'
        f'<rect x="{x}" y="0" width="{COLUMN}" height="{HEIGHT}"></rect></a>'
    )


def _figure(
    columns: Sequence[Column], scale: Axis, fmt: Format, label: str, body: str, x_labels: Sequence[tuple[int, str]]
) -> SafeString:
    width = max(len(columns), 1) * COLUMN
    grid = "".join(
        f'<line class="grid" x1="0" x2="{width}" y1="{_y(t, scale.top):g}" y2="{_y(t, scale.top):g}" '
        'vector-effect="non-scaling-stroke"></line>'
        for t in scale.ticks
    )
    y_labels = "".join(
        format_html('<span style="bottom: {}%">{}</span>', round(t / scale.top * 100, 3), fmt(t)) for t in scale.ticks
    )
    x_spans = "".join(
        format_html('<span style="left: {}%">{}</span>', round((i + 0.5) / max(len(columns), 1) * 100, 3), text)
        for i, text in x_labels
    )
    svg = (
        f'<svg class="chart-svg" viewBox="0 0 {width} {HEIGHT}" preserveAspectRatio="none" '
        f'role="group" aria-label="{escape(label)}">{grid}{body}</svg>'
    )
    return mark_safe(  # noqa: S308 (every value above went through format_html or escape)
        f'<div class="chart-plot"><div class="chart-y" aria-hidden="true">{y_labels}</div>'
        f'<div class="chart-area">{svg}</div><div class="chart-x" aria-hidden="true">{x_spans}</div></div>'
    )


def x_label_positions(count: int, wanted: int = 5) -> list[int]:
    """Which columns get a time label: about ``wanted`` of them, evenly, always the first."""
    if count <= 0:
        return []
    if count <= wanted:
        return list(range(count))
    step = math.ceil(count / wanted)
    return list(range(0, count, step))
