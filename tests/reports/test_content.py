"""A report's CSV against a brute-force recount of generated traces (counts and cost exact,
percentiles within 1%), and its PDF's text read back with pypdf."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from pypdf import PdfReader

from analytics import rollups
from analytics.breakdown import Row
from analytics.stats import Stats
from reports.content import Content, report_content
from reports.definition import parse_definition
from reports.render import CSV_COLUMNS, csv_bytes, pdf_bytes
from traces.usage import DETAIL_FIELDS

from ..analytics.data import assert_close, exact_quantile, make_traces, recount, select, store
from ..factories import TeamFactory

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 11, 20, 15, 17, 23, tzinfo=UTC)
SINCE = NOW - timedelta(days=3)


@pytest.fixture(scope="module")
def dataset(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        team = TeamFactory(name="report-figures")
        rows = make_traces(team.id, n=1500, start=SINCE, span=timedelta(days=3) - timedelta(seconds=1), seed=4)
        store(rows[:1000])
        rollups.fold()
        store(rows[1000:])
        other = TeamFactory(name="report-others")
        store(make_traces(other.id, n=200, start=SINCE, span=timedelta(days=3), seed=5))
    yield team, rows
    with django_db_blocker.unblock():
        team.delete()
        other.delete()


def _content(team: Any, **definition: Any) -> Any:
    d = parse_definition(
        {"name": "Weekly <cost> & more", "since": SINCE.isoformat(), "until": NOW.isoformat(), **definition}
    )
    return report_content(team_id=team.id, team_name=team.name, definition=d, since=SINCE, until=NOW)


def _rows(data: bytes) -> list[dict[str, str]]:
    text = data.decode("utf-8")
    assert text.startswith("\ufeff")  # Excel reads the BOM as UTF-8
    reader = csv.DictReader(io.StringIO(text[1:]))
    assert tuple(reader.fieldnames or ()) == CSV_COLUMNS
    return list(reader)


def _dt(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _check_row(row: dict[str, str], traces: list[Any]) -> None:
    want = recount(traces)
    for name in ("count", "errors", "rate_limited", "prompt_tokens", "completion_tokens", "total_tokens",
                 *DETAIL_FIELDS):  # fmt: skip
        assert int(row[name]) == getattr(want, name), name
    assert int(row["unpriced"]) == want.unpriced
    if want.count > want.unpriced:
        assert Decimal(row["cost"]) == want.cost
    else:  # no trace of the row has a price: its cost is unknown, not 0
        assert row["cost"] == ""
    for column, q in (("p50_ms", 0.5), ("p95_ms", 0.95)):
        expected = exact_quantile(want.latencies, q)
        assert_close(float(row[column]) if row[column] else None, expected)


@pytest.mark.parametrize(
    ("group_by", "key_of", "filters"),
    [
        (None, None, {}),
        ("model", lambda t: [t.model], {}),
        ("tag", lambda t: t.tags, {}),
        ("user", lambda t: [t.user_id], {"status": "error,rate_limited"}),
        ("provider", lambda t: [t.provider], {"environment": "production"}),
    ],
)
def test_the_csv_matches_a_recount(dataset, group_by, key_of, filters):
    team, traces = dataset
    content = _content(team, group_by=group_by, interval="hour", filters=filters)
    rows = _rows(csv_bytes(content))
    keep = lambda t: (  # noqa: E731
        (not filters.get("status") or t.status in filters["status"].split(","))
        and (not filters.get("environment") or t.environment == filters["environment"])
    )
    starts = sorted({_dt(r["period_start"]) for r in rows})
    assert starts[0] <= SINCE < starts[0] + timedelta(hours=1)
    assert len(starts) == 73  # 3 days of hours, widened to whole hours at both ends
    groups = list(dict.fromkeys(r["group"] for r in rows))
    assert len(rows) == len(starts) * len(groups)  # one row per group per interval, zeros included
    if group_by is None:
        assert groups == [""]
    else:
        assert groups == [str(g["key"]) if g["key"] is not None else "" for g in content.answer["groups"]]
    for row in rows:
        a = _dt(row["period_start"])
        chosen = select(traces, a, a + timedelta(hours=1), keep)
        if group_by is not None:
            chosen = [t for t in chosen if row["group"] in [str(k) for k in key_of(t)]]
        _check_row(row, chosen)
    # and the rows add up to the whole
    total = sum(int(r["count"]) for r in rows)
    assert total == content.answer["totals"]["count"] or group_by == "tag"


def test_the_csv_neutralises_formulas_in_group_names(dataset):
    team, _ = dataset
    content = _content(team)
    content = Content(**{**content.__dict__, "rows": [Row("2026-11-20T00:00:00Z", "=HYPERLINK(1)", Stats())]})
    assert _rows(csv_bytes(content))[0]["group"] == "'=HYPERLINK(1)"


def test_the_pdf_reads_as_a_report(dataset):
    team, traces = dataset
    content = _content(team, group_by="tag", interval="day")
    reader = PdfReader(io.BytesIO(pdf_bytes(content)))
    text = "\n".join(page.extract_text() for page in reader.pages)
    pages = len(reader.pages)
    assert "Weekly <cost> & more" in text
    assert "report-figures" in text
    assert "2026-11-17 15:17 to 2026-11-20 15:17 UTC" in text
    for label in ("Summary", "Cost over time", "Volume over time", "Top models", "By tag", "Cost by tag and day"):
        assert label in text, label
    assert f"{recount(select(traces, SINCE, NOW, lambda t: True)).count:,}" in text or content.answer["totals"]["count"]
    assert f"{content.answer['totals']['count']:,}" in text
    assert "gpt-4o-mini" in text and "claude-sonnet-4" in text
    totals = content.answer["totals"]
    assert totals["input_audio_tokens"] and totals["input_image_tokens"] and totals["output_audio_tokens"]
    for medium in ("audio", "image"):  # the summary's token parts, in and out
        pair = f"{totals[f'input_{medium}_tokens']:,} / {totals[f'output_{medium}_tokens']:,}"
        assert f"{medium.title()} tokens (in / out)" in text and pair in text, medium
    assert f"{totals['reasoning_tokens']:,}" in text and f"{totals['cached_tokens']:,}" in text
    assert f"Page 1 of {pages}" in text and f"Page {pages} of {pages}" in text
    assert reader.metadata is not None and reader.metadata.title == "Weekly <cost> & more"


def test_an_empty_period_still_renders(dataset):
    team, _ = dataset
    d = parse_definition({"name": "Nothing", "since": "2020-01-01T00:00:00Z", "until": "2020-01-02T00:00:00Z"})
    content = report_content(
        team_id=team.id,
        team_name=team.name,
        definition=d,
        since=d.since,
        until=d.until,  # type: ignore[arg-type]
    )
    rows = _rows(csv_bytes(content))
    assert rows and all(r["count"] == "0" and r["cost"] == "" and r["unpriced"] == "0" for r in rows)
    assert all(r["p50_ms"] == "" for r in rows)
    text = "\n".join(p.extract_text() for p in PdfReader(io.BytesIO(pdf_bytes(content))).pages)
    assert "No traces in this period." in text
