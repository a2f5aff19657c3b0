"""Reports people can read (issue 23): the interval follows the period (a weekly report is by day,
a daily one by hour), groups with no traffic can be left out, and the PDF has every model with
headers that fit their columns and no rows of nothing. The PDF is also rendered to PNG (poppler's
pdftoppm) in tests/browser/screenshots/ to be looked at."""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from pypdf import PdfReader
from reportlab.platypus import Paragraph

from reports.content import report_content
from reports.definition import parse_definition, report_interval
from reports.render import csv_bytes, pdf_bytes
from reports.render.pdffile import BREAKDOWN_COLUMNS, _breakdown_tables

from ..factories import TeamFactory, TraceFactory

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
SHOTS = Path(__file__).parent.parent / "browser" / "screenshots"
MODELS = [
    ("gpt-4o", "openai"),
    ("gpt-4o-mini", "openai"),
    ("gpt-4", "openai"),
    ("claude-3-5-sonnet-20241022", "anthropic"),
    ("claude-3-5-haiku-20241022", "anthropic"),
    ("claude-3-opus-20240229", "anthropic"),
    ("gemini-1.5-pro-002", "google"),
    ("mistral-large-latest", "mistral"),
    ("llama-3.1-70b-instruct-local-deployment", "local"),
]


@pytest.fixture
def team():
    """Nine models over the week before NOW, each on its own days: most (day, model) cells empty."""
    team = TeamFactory(name="readable")
    for i, (model, provider) in enumerate(MODELS):
        for day in (i % 7, (i + 3) % 7):
            when = NOW - timedelta(days=day, hours=2)
            TraceFactory(team=team, model=model, provider=provider, timestamp=when, cost=Decimal("0.0125") * (i + 1))
    return team


def _run(team, **fields):
    d = parse_definition({"name": "Weekly cost by model", "formats": ["csv", "pdf"], **fields})
    since, until = d.period(NOW)
    return report_content(team_id=team.pk, team_name=team.name, definition=d, since=since, until=until)


def _csv(content):
    return list(csv.DictReader(io.StringIO(csv_bytes(content).decode()[1:])))


def test_the_interval_follows_the_period():
    assert report_interval(NOW - timedelta(hours=24), NOW) == "hour"  # daily: by hour
    assert report_interval(NOW - timedelta(days=2), NOW) == "hour"
    assert report_interval(NOW - timedelta(days=7), NOW) == "day"  # weekly: by day
    assert report_interval(NOW - timedelta(days=30), NOW) == "day"  # monthly: by day


def test_a_weekly_report_is_by_day_and_can_leave_out_groups_with_no_traffic(team):
    weekly = _run(team, time_range="7d", group_by="model")
    assert weekly.answer["range"]["interval"] == "day"
    rows = _csv(weekly)
    days = {r["period_start"] for r in rows}
    assert len(days) in (7, 8)  # the days the 7 days touch
    assert len(rows) == len(days) * len(MODELS)  # every model every day, zeros included
    assert {r["group"] for r in rows} == {m for m, _ in MODELS}

    lean = _run(team, time_range="7d", group_by="model", skip_empty_groups=True)
    rows = _csv(lean)
    assert len(rows) == 2 * len(MODELS) and all(int(r["count"]) == 1 for r in rows)
    assert {r["group"] for r in rows} == {m for m, _ in MODELS}

    daily = _run(team, time_range="24h", group_by="model")
    assert daily.answer["range"]["interval"] == "hour"
    # An interval asked for is kept.
    assert _run(team, time_range="7d", interval="hour").answer["range"]["interval"] == "hour"


def test_the_pdf_has_every_model_whole_and_no_empty_rows(team):
    content = _run(team, time_range="7d", group_by="model")
    data = pdf_bytes(content)
    _look_at(data, "report-weekly-by-model")
    text = "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(data)).pages)
    flat = text.replace("\n", "")
    for model, _ in MODELS:
        assert model in flat, model  # in "Top models", whole
    tables = _breakdown_tables(content)
    assert len(tables) == -(-len(MODELS) // BREAKDOWN_COLUMNS)  # 9 models: two tables of at most 5
    headers = [cell.text for table in tables for cell in table._cellvalues[0][1:]]
    assert sorted(headers) == sorted(m for m, _ in MODELS)  # every model in the breakdown, whole
    for table in tables:
        header, *body = table._cellvalues
        assert body, "a table with no periods"
        for row in body:
            assert any(cell != "–" for cell in row[1:]), f"a row with no traces: {row}"
            assert not any(str(cell).strip() in ("0.00", "$0.00") for cell in row[1:])
        # Each header fits its column: wrapped onto lines no wider than the column.
        for cell, width in zip(header[1:], table._colWidths[1:], strict=False):
            assert isinstance(cell, Paragraph)
            cell.wrap(width - 12, 1000)  # the cell's padding (6 pt a side)
            spare = [line[0] if isinstance(line, tuple) else line.extraSpace for line in cell.blPara.lines]
            assert min(spare) >= -0.01, cell.text  # no line wider than the column


def _look_at(data: bytes, name: str) -> None:
    """The PDF's pages as PNG (pdftoppm, poppler-utils) beside the browser tests' screenshots."""
    if shutil.which("pdftoppm") is None:
        pytest.fail("pdftoppm is missing: apt-get install poppler-utils, to look at the PDF")
    SHOTS.mkdir(exist_ok=True)
    path = SHOTS / f"{name}.pdf"
    path.write_bytes(data)
    subprocess.run(["pdftoppm", "-png", "-r", "80", str(path), str(SHOTS / name)], check=True, timeout=60)
