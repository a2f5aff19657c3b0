"""The PDF (reportlab): title, team and period, a summary table, cost and volume over time, the
top models, the breakdown by the report's group, and "Page N of M" on every page.

Amounts go through the one money formatter (config.money); a cost that is not fully known says so
("3 unpriced", or "n of m unpriced" under a partial sum), never 0.00.

Tables have every group the report ranked (names whole, wrapped in their cells). The breakdown by
period takes at most `BREAKDOWN_COLUMNS` groups a table, as many tables as it needs, their headers
wrapped within their columns; a period in which none of a table's groups had a trace is left out
(a page of "–" rows says nothing)."""

from __future__ import annotations

import io
import math
from collections import defaultdict
from decimal import Decimal
from typing import Any

from reportlab.graphics.charts.barcharts import VerticalBarChart
from reportlab.graphics.shapes import Drawing, String
from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
from reportlab.lib.units import mm
from reportlab.pdfgen.canvas import Canvas
from reportlab.platypus import KeepTogether, Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

from config.money import cost_text, usd

from ..content import Content

ACCENT = colors.HexColor("#3b5bdb")
GRID = colors.HexColor("#d0d5dd")
MUTED = colors.HexColor("#667085")
WIDTH = A4[0] - 36 * mm
BREAKDOWN_COLUMNS = 5  # groups a breakdown table takes across, so headers have room to wrap


def pdf_bytes(content: Content) -> bytes:
    buffer = io.BytesIO()
    doc = SimpleDocTemplate(
        buffer,
        pagesize=A4,
        leftMargin=18 * mm,
        rightMargin=18 * mm,
        topMargin=18 * mm,
        bottomMargin=18 * mm,
        title=content.title,
        author="tracerelay",
        subject=f"{content.team}: {_period(content)}",
    )
    doc.build(_story(content), canvasmaker=_NumberedCanvas)
    return buffer.getvalue()


def _story(c: Content) -> list[Any]:
    styles = getSampleStyleSheet()
    small = ParagraphStyle("small", parent=styles["Normal"], textColor=MUTED, fontSize=9)
    h2 = ParagraphStyle("h2", parent=styles["Heading2"], spaceBefore=10, spaceAfter=4)
    totals, answer = c.answer["totals"], c.answer
    story: list[Any] = [
        Paragraph(_escape(c.title), ParagraphStyle("title", parent=styles["Title"], alignment=0)),
        Paragraph(f"Team <b>{_escape(c.team)}</b> · {_escape(_period(c))} · by {answer['range']['interval']}", small),
        Spacer(1, 6 * mm),
        Paragraph("Summary", h2),
        _table(_summary_rows(totals, answer["latency_ms"]), header=False, widths=[WIDTH * 0.28, WIDTH * 0.22] * 2),
    ]
    if totals["unpriced"]:
        story.append(
            Paragraph(f"{totals['unpriced']:,} traces have no known price and are not in the cost figures.", small)
        )
    series, interval = answer["series"], answer["range"]["interval"]
    times = [p["t"] for p in series]
    costs = [Decimal(str(p["cost"])) for p in series]
    story += [
        Paragraph("Cost over time (priced traces, USD)", h2),
        _bar_chart(costs, times, interval, money=True, empty=_no_cost(totals)),
        Paragraph("Volume over time (traces)", h2),
        _bar_chart([p["count"] for p in series], times, interval, money=False, empty="No traces in this period."),
    ]
    story.append(KeepTogether([Paragraph("Top models", h2), _groups_table(c.top_models, "Model")]))
    if c.group_by and c.group_by != "model":
        story.append(
            KeepTogether([Paragraph(f"By {c.group_by}", h2), _groups_table(answer["groups"] or [], c.group_by.title())])
        )
    if c.group_by:
        tables = _breakdown_tables(c)
        title = f"Cost by {c.group_by} and {answer['range']['interval']}"
        for i, table in enumerate(tables):
            part = f" ({i + 1} of {len(tables)})" if len(tables) > 1 else ""
            story += [Paragraph(_escape(title + part), h2), table]
    return story


def _summary_rows(totals: dict[str, Any], latency: dict[str, Any]) -> list[list[str]]:
    return [
        ["Traces", f"{totals['count']:,}", "Cost", _cost(totals)],
        ["Errors", f"{totals['errors']:,}", "Prompt tokens", f"{totals['prompt_tokens']:,}"],
        ["Rate limited", f"{totals['rate_limited']:,}", "Completion tokens", f"{totals['completion_tokens']:,}"],
        ["Error rate", f"{totals['error_rate'] * 100:.2f}%", "Total tokens", f"{totals['total_tokens']:,}"],
        ["Cached tokens", f"{totals['cached_tokens']:,}", "Cache-write tokens", f"{totals['cache_write_tokens']:,}"],
        ["Reasoning tokens", f"{totals['reasoning_tokens']:,}", "Audio tokens (in / out)", _pair(totals, "audio")],
        ["Image tokens (in / out)", _pair(totals, "image"), "", ""],
        ["Latency p50", _ms(latency["p50"]), "Latency p95", _ms(latency["p95"])],
        ["Latency p99", _ms(latency["p99"]), "Unpriced traces", f"{totals['unpriced']:,}"],
    ]


def _pair(totals: dict[str, Any], medium: str) -> str:
    return f"{totals[f'input_{medium}_tokens']:,} / {totals[f'output_{medium}_tokens']:,}"


def _groups_table(groups: list[dict[str, Any]], label: str) -> Table | Paragraph:
    if not groups:
        return Paragraph("No traces in this period.", getSampleStyleSheet()["Normal"])
    rows: list[list[Any]] = [[label, "Traces", "Errors", "Tokens", "Cost", "p95 ms"]]
    for g in groups:
        rows.append(
            [
                Paragraph(_escape(_name(g["key"])), _cell_style()),
                f"{g['count']:,}",
                f"{g['errors'] + g['rate_limited']:,}",
                f"{g['total_tokens']:,}",
                _cost(g),
                _ms(g["latency_ms"]["p95"]),
            ]
        )
    return _table(rows, header=True, widths=[60 * mm, 20 * mm, 18 * mm, 25 * mm, 27 * mm, 24 * mm])


def _breakdown_tables(c: Content) -> list[Table | Paragraph]:
    """Periods down, groups across: every group, `BREAKDOWN_COLUMNS` to a table; in each table only
    the periods in which one of its groups had traces."""
    keys = list(dict.fromkeys(row.group for row in c.rows))
    interval = c.answer["range"]["interval"]
    cells: dict[str, dict[Any, str]] = defaultdict(dict)
    for row in c.rows:
        s = row.stats
        if s.count:
            cells[row.period_start][row.group] = _cost({"cost": s.cost, "count": s.count, "unpriced": s.unpriced})
    if not cells:
        return [Paragraph("No traces in this period.", getSampleStyleSheet()["Normal"])]
    tables: list[Table | Paragraph] = []
    first = 30 * mm
    for at in range(0, len(keys), BREAKDOWN_COLUMNS):
        chunk = keys[at : at + BREAKDOWN_COLUMNS]
        header_style = _cell_style(bold=True, align=2)
        rows: list[list[Any]] = [["Period", *(Paragraph(_escape(_name(k)), header_style) for k in chunk)]]
        for period in sorted(cells):
            by_key = cells[period]
            if any(k in by_key for k in chunk):
                rows.append([_short_time(period, interval), *(by_key.get(k, "–") for k in chunk)])
        rest = (WIDTH - first) / BREAKDOWN_COLUMNS
        tables.append(_table(rows, header=True, widths=[first, *([rest] * len(chunk))], font_size=7.5))
    return tables


def _cell_style(*, bold: bool = False, align: int = 0) -> ParagraphStyle:
    """A table cell's text that wraps within its column (long names break between characters)."""
    return ParagraphStyle(
        "cell",
        fontName="Helvetica-Bold" if bold else "Helvetica",
        fontSize=7.5 if bold else 9,
        leading=9 if bold else 11,
        textColor=MUTED if bold else colors.black,
        alignment=align,
        splitLongWords=True,
    )


def _bar_chart(values: list[Any], times: list[str], interval: str, *, money: bool, empty: str) -> Drawing:
    height = 55 * mm
    drawing = Drawing(WIDTH, height)
    if not values or not any(values):
        drawing.add(String(WIDTH / 2, height / 2, empty, textAnchor="middle", fillColor=MUTED))
        return drawing
    chart = VerticalBarChart()
    chart.x, chart.y = 16 * mm, 10 * mm
    chart.width, chart.height = WIDTH - 20 * mm, height - 16 * mm
    chart.data = [[float(v) for v in values]]
    chart.bars[0].fillColor = ACCENT
    chart.bars[0].strokeColor = None
    chart.barSpacing = 0.5
    chart.valueAxis.valueMin = 0
    chart.valueAxis.labels.fontSize = 7
    chart.valueAxis.labelTextFormat = usd if money else (lambda v: f"{v:,.0f}")
    if not money:  # counts: whole steps (no "0, 0, 1, 1, 2" from fractional ones)
        chart.valueAxis.valueStep = max(1, math.ceil(max(values) / 5))
    step = max(1, len(times) // 8)  # at most ~8 labels along the axis
    chart.categoryAxis.categoryNames = [_short_time(t, interval) if i % step == 0 else "" for i, t in enumerate(times)]
    chart.categoryAxis.labels.fontSize = 7
    chart.categoryAxis.labels.boxAnchor = "n"
    chart.categoryAxis.tickDown = 0
    drawing.add(chart)
    return drawing


def _table(rows: list[list[str]], *, header: bool, widths: list[Any], font_size: float = 9) -> Table:
    table = Table(rows, colWidths=widths, repeatRows=1 if header else 0, hAlign="LEFT")
    style = [
        ("FONTSIZE", (0, 0), (-1, -1), font_size),
        ("LINEBELOW", (0, 0), (-1, -1), 0.25, GRID),
        ("VALIGN", (0, 0), (-1, -1), "MIDDLE"),
        ("TOPPADDING", (0, 0), (-1, -1), 3),
        ("BOTTOMPADDING", (0, 0), (-1, -1), 3),
    ]
    if header:
        style += [
            ("FONTNAME", (0, 0), (-1, 0), "Helvetica-Bold"),
            ("TEXTCOLOR", (0, 0), (-1, 0), MUTED),
            ("ALIGN", (1, 0), (-1, -1), "RIGHT"),
        ]
    else:
        style += [
            ("TEXTCOLOR", (0, 0), (0, -1), MUTED),
            ("TEXTCOLOR", (2, 0), (2, -1), MUTED),
            ("ALIGN", (1, 0), (1, -1), "RIGHT"),
            ("ALIGN", (3, 0), (3, -1), "RIGHT"),
        ]
    table.setStyle(TableStyle(style))
    return table


class _NumberedCanvas(Canvas):
    """Keeps every page until the end, so each can say "Page N of M"."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pages: list[dict[str, Any]] = []

    def showPage(self) -> None:  # noqa: N802 (reportlab's name)
        self._pages.append(dict(self.__dict__))
        self._startPage()

    def save(self) -> None:
        total = len(self._pages)
        for state in self._pages:
            self.__dict__.update(state)
            self.setFont("Helvetica", 8)
            self.setFillColor(MUTED)
            self.drawRightString(A4[0] - 18 * mm, 10 * mm, f"Page {self._pageNumber} of {total}")
            self.drawString(18 * mm, 10 * mm, "tracerelay")
            super().showPage()
        super().save()


def _period(c: Content) -> str:
    return f"{c.since:%Y-%m-%d %H:%M} to {c.until:%Y-%m-%d %H:%M} UTC"


def _short_time(iso: str, interval: str) -> str:
    # "2026-11-23T08:00:00Z" → "11-23 08:00"; by day → "2026-11-23"
    date, _, time = iso.partition("T")
    return date if interval == "day" else f"{date[5:]} {time[:5]}"


def _cost(figures: dict[str, Any]) -> str:
    """A total's or a group's cost as far as it is known (two lines when partly unpriced)."""
    return cost_text(figures["cost"], count=figures["count"], unpriced=figures["unpriced"], sep="\n")


def _no_cost(totals: dict[str, Any]) -> str:
    if not totals["count"]:
        return "No traces in this period."
    if totals["unpriced"] >= totals["count"]:
        return f"No known cost: all {totals['count']:,} traces of this period are unpriced."
    return "No cost in this period."


def _ms(value: Any) -> str:
    return "–" if value is None else f"{value:,.0f} ms"


def _name(value: Any) -> str:
    return "(none)" if value is None or value == "" else str(value)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
