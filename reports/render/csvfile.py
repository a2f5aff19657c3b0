"""The CSV: one row per group per interval, oldest interval first (`group` empty without group_by).

`cost` is the exact sum of the row's priced traces, and empty when no trace of the row has a price
(never a silent 0); `unpriced` counts the row's traces without a known price."""

from __future__ import annotations

import csv
import io
from decimal import Decimal

from analytics.models import USAGE_PARTS

from ..content import Content

CSV_COLUMNS = (
    "period_start",
    "group",
    "count",
    "errors",
    "rate_limited",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    *USAGE_PARTS,
    "cost",
    "unpriced",
    "p50_ms",
    "p95_ms",
)


def csv_bytes(content: Content) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")  # RFC 4180, as spreadsheets expect
    writer.writerow(CSV_COLUMNS)
    for row in content.rows:
        s = row.stats
        latency = s.percentiles("latency")
        writer.writerow(
            [
                row.period_start,
                _cell(row.group),
                s.count,
                s.errors,
                s.rate_limited,
                s.prompt_tokens,
                s.completion_tokens,
                s.total_tokens,
                s.cached_tokens,
                s.cache_write_tokens,
                s.reasoning_tokens,
                s.input_audio_tokens,
                s.input_image_tokens,
                s.output_audio_tokens,
                s.output_image_tokens,
                _money(s.cost) if s.count > s.unpriced else "",
                s.unpriced,
                _number(latency["p50"]),
                _number(latency["p95"]),
            ]
        )
    return ("\ufeff" + out.getvalue()).encode()  # the BOM makes Excel read UTF-8


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    # A cell starting with = + - @ is a formula to a spreadsheet: neutralise it (CSV injection).
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _money(value: Decimal) -> str:
    return format(value.normalize(), "f") if value else "0"


def _number(value: float | None) -> str:
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else str(value)
