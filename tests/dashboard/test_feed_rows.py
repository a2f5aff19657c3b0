"""The feed's rows (`traces/views/rows.py` and the `row` partial of `traces/feed.html`), issue 23 item 2:
one line per trace (the first tag or metadata chip and "+N", every chip in the popover), metadata as
JSON values, the environment only off the team's usual one, the chosen columns, everything escaped;
and the person's choice of columns, kept server side."""

from __future__ import annotations

import random
import re
import uuid
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest
from django.db import connection
from django.template.loader import render_to_string
from django.test.utils import CaptureQueriesContext

from traces.filters import TraceFilter
from traces.models import FeedColumns, Trace
from traces.selectors import FLOOR_CURSOR, feed_columns, trace_page, usual_environment
from traces.services import UnknownColumn, feed_columns_save
from traces.views.rows import feed_row

from ..factories import TraceFactory, UserFactory

HOSTILE = "<script>alert(1)</script>"


def _row(trace: Trace, **kwargs) -> str:
    return render_to_string("traces/feed.html#row", {"row": feed_row(trace, **kwargs)})


def _trace(**values) -> Trace:
    values.setdefault("id", uuid.uuid4())
    values.setdefault("trace_id", "t-1")
    values.setdefault("model", "gpt-4o")
    values.setdefault("timestamp", datetime(2026, 11, 26, 12, 34, 56, tzinfo=UTC))
    return Trace(**values)


def test_tags_and_metadata_collapse_to_the_first_chip_and_plus_n_with_all_in_the_popover():
    html = _row(
        _trace(
            tags=["beta", "eu"], metadata={"sdk": {"name": "tracerelay"}, "ok": True, "none": None, "long": "x" * 300}
        )
    )
    cell = html[html.index("tags-cell") :]
    shown, _, popover = cell.partition("<button")
    assert shown.count('class="chip') == 1 and "beta" in shown  # the first chip only, in the row
    assert 'aria-label="5 more: show all 6 tags and metadata">+5</button>' in popover
    assert "popover>" in popover and 'popovertarget="pop-' in html
    # every chip in the popover, values as JSON (never Python's repr), long ones cut at 200
    assert "sdk={&quot;name&quot;: &quot;tracerelay&quot;}</span>" in popover
    assert "ok=true</span>" in popover and "none=null</span>" in popover and "eu</span>" in popover
    assert "&#x27;name&#x27;" not in html and "True" not in html
    assert "long=" + "x" * 199 + "…</span>" in popover


def test_one_chip_has_no_button_and_none_is_a_dash():
    assert "<button" not in _row(_trace(tags=["beta"], metadata={}, destinations=["langfuse"]))
    html = _row(_trace(tags=[], metadata={}, destinations=[]))
    assert html.count('<span class="muted">—</span>') == 2  # destinations, tags and metadata


def test_metadata_alone_shows_its_first_pair_cut_short():
    html = _row(_trace(tags=[], metadata={"prompt": "y" * 40, "b": 1}))
    assert 'title="metadata.prompt">prompt=' + "y" * 23 + "…</span><button" in html
    assert "+1</button>" in html


def test_destinations_collapse_too():
    html = _row(_trace(destinations=["langfuse", "datadog", "webhook"]))
    assert 'aria-label="2 more: show all 3 destinations">+2</button>' in html


def test_the_environment_shows_only_when_it_is_not_the_usual_one():
    assert "staging" in _row(_trace(environment="staging"), usual_environment="production")
    assert "production" not in _row(_trace(environment="production"), usual_environment="production")
    assert 'class="badge badge-neutral"' not in _row(_trace(environment=""), usual_environment="production")


def test_every_value_is_escaped():
    html = _row(
        _trace(
            trace_id='<i>&"x',
            model=HOSTILE,
            provider=HOSTILE,
            environment=HOSTILE,
            tags=[HOSTILE, "x"],
            metadata={HOSTILE: HOSTILE},
            destinations=[HOSTILE, "y"],
            user_id=HOSTILE,
            session_id=HOSTILE,
            service_name=HOSTILE,
            run_id=HOSTILE,
            input=[{"role": "user", "content": HOSTILE}],
        ),
        columns=["user", "session", "service", "run", "prompt"],
    )
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_the_chosen_columns_come_after_status_in_the_feeds_order():
    trace = _trace(
        user_id="u-7",
        session_id="s 42",
        service_name="checkout",
        run_id="run-1",
        input=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is\n  2+2?"}],
    )
    html = _row(trace, columns=["user", "session", "service", "run", "prompt"])
    cells = re.findall(r'<td class="(id-col|prompt-cell)"', html)
    assert cells == ["id-col"] * 4 + ["prompt-cell"]
    assert '<a class="cut" href="/traces?user_id=u-7">u-7</a>' in html
    assert '<a class="cut" href="/sessions/s%2042">s 42</a>' in html
    assert '<span class="cut">checkout</span>' in html
    assert '<a class="cut" href="/runs/run-1">run-1</a>' in html  # the run page
    assert ">What is 2+2?</span>" in html  # the last user message, on one line
    assert html.index("badge-success") < html.index("id-col")


def test_an_unknown_column_is_refused():
    with pytest.raises(ValueError, match="not a feed column"):
        feed_row(_trace(), columns=["cost-per-token"])


def test_phones_get_a_short_status_label():
    html = _row(_trace(status="rate_limited"))
    assert (
        '<span class="label-wide">Rate limited</span><span class="label-narrow" aria-hidden="true">Limited</span>'
        in html
    )


@pytest.mark.django_db
def test_stored_traces_render_without_a_query_per_row(team, django_assert_num_queries):
    rng = random.Random(11)
    for i in range(40):
        TraceFactory(
            team=team,
            tags=rng.choice([[], ["beta"], ["a", "<b>", "c&d"]]),
            metadata=rng.choice([{}, {"plan": "pro"}, {"a": 1, "b": 2.5, "c": True, "d": None}]),
            destinations=rng.choice([[], ["langfuse"], ["datadog", "hook"]]),
            cost=rng.choice([None, Decimal("0.0000001234"), Decimal("1234.5")]),
            timestamp=datetime(2026, 11, 26, 12, 0, tzinfo=rng.choice([UTC, timezone(timedelta(hours=5))])),
            input=[{"role": "user", "content": f"q{i}"}],
        )
    rows, _ = trace_page(team_id=team.pk, trace_filter=TraceFilter(), limit=40)
    with CaptureQueriesContext(connection) as queries:
        html = "".join(_row(t, columns=["session", "prompt"]) for t in rows)
    assert len(queries) == 0  # the input is deferred: no preview, and no query to fetch one
    assert html.count("<tr ") == 40 and "prompt-cell" in html
    rows, _ = trace_page(team_id=team.pk, trace_filter=TraceFilter(), limit=40, with_input=True)
    with CaptureQueriesContext(connection) as queries:
        html = "".join(_row(t, columns=["prompt"]) for t in rows)
    assert len(queries) == 0 and re.search(r">q\d+</span>", html)


@pytest.mark.django_db
def test_the_usual_environment_is_the_most_common_of_the_newest(team, other_team):
    for env in ["production"] * 3 + ["staging"] * 2:
        TraceFactory(team=team, environment=env)
    TraceFactory.create_batch(4, team=other_team, environment="")
    assert usual_environment(team.pk) == "production"
    assert usual_environment(other_team.pk) == ""


@pytest.mark.django_db
def test_the_column_choice_is_kept_per_user_in_the_feeds_order():
    ada, bob = UserFactory(), UserFactory()
    assert feed_columns(ada.pk) == []
    assert feed_columns_save(user=ada, columns=["prompt", "user"]) == ["user", "prompt"]
    assert feed_columns(ada.pk) == ["user", "prompt"] and feed_columns(bob.pk) == []
    with pytest.raises(UnknownColumn, match="Not a feed column: cost"):
        feed_columns_save(user=ada, columns=["session", "cost"])
    assert FeedColumns.objects.get(user=ada).columns == ["user", "prompt"]  # nothing stored


@pytest.mark.django_db
def test_the_feed_page_and_the_live_poll_render_the_chosen_columns(as_role, team):
    TraceFactory(team=team, trace_id="shown", session_id="s-1", input=[{"role": "user", "content": "Hi"}])
    client = as_role("viewer")
    response = client.post("/traces/columns", {"columns": ["session", "prompt"], "query": "status=success&bad=<x>"})
    assert response.status_code == 302 and response["Location"] == "/traces?status=success&bad=%3Cx%3E"
    page = client.get("/traces").content.decode()
    assert (
        '<th scope="col" class="col-session">Session</th><th scope="col" class="col-prompt">Prompt preview</th>' in page
    )
    assert ">Hi</span></td>" in page and 'colspan="11"' in page
    poll = client.get(f"/traces/live?after={FLOOR_CURSOR}").content.decode()
    assert 'colspan="11"' in poll and ">Hi</span></td>" in poll and "s-1" in poll


@pytest.mark.django_db
def test_an_unknown_column_is_a_form_error_and_keeps_the_choice(as_role, team):
    client = as_role("viewer")
    client.post("/traces/columns", {"columns": ["user"]})
    response = client.post("/traces/columns", {"columns": ["user", "secret"], "query": "status=error"})
    assert response.status_code == 400
    text = response.content.decode()
    assert "Select a valid choice. secret is not one of the available choices." in text
    assert '<details class="menu columns-menu" id="columns-menu" open>' in text
    assert '<th scope="col" class="col-user">User</th>' in text  # the stored choice still applies


def test_posting_columns_needs_a_post(client):
    assert client.get("/traces/columns").status_code in (302, 405)
