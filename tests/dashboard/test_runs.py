"""The run pages on the server side: `/runs` (a row per run with its totals, filters, cursor pages),
`/runs/<run_id>` (the header, the spans as JSON once, a span's panel as a conversation), another
team's run a 404, and the links from the feed, the trace page and sessions."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal
from urllib.parse import parse_qs, urlparse

import pytest
from django.utils import timezone

from traces.models import Trace
from traces.runs.summary import rebuild

from ..factories import TraceFactory

pytestmark = pytest.mark.django_db


def _span(team, run_id, span_id, *, parent="", kind="llm", name="", offset_ms=0, **extra) -> Trace:
    base = extra.pop("base", None) or timezone.now() - timedelta(minutes=5)
    defaults = {"model": "gpt-4o", "cost": Decimal("0.001")} if kind in ("llm", "embedding") else {"model": ""}
    defaults.update(extra)
    return TraceFactory(
        team=team,
        trace_id=span_id,
        run_id=run_id,
        parent_id=parent,
        kind=kind,
        name=name,
        timestamp=base + timedelta(milliseconds=offset_ms),
        **defaults,
    )


CALL = {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": '{"q": "Paris"}'}}
NO_TOKENS = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


@pytest.fixture
def agent_run(team):
    """invoke_agent → (chat gpt-4o, tool search → chat claude failed), started 5 minutes ago."""
    base = timezone.now() - timedelta(minutes=5)
    _span(team, "run-a", "root", kind="agent", name="invoke_agent", latency_ms=4000, base=base,
          **NO_TOKENS)  # fmt: skip
    _span(team, "run-a", "chat-1", parent="root", name="chat gpt-4o", offset_ms=100, latency_ms=900, base=base,
          input=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"}],
          output={"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [CALL]}}]})  # fmt: skip
    _span(team, "run-a", "tool-1", parent="root", kind="tool", name="search", offset_ms=1100, latency_ms=500,
          base=base, input={"q": "Paris"}, output={"temp": 21}, **NO_TOKENS)  # fmt: skip
    _span(team, "run-a", "chat-2", parent="tool-1", name="chat claude", model="claude-3-5-haiku", offset_ms=1700,
          latency_ms=800, base=base, status="error", error_type="overloaded", error_message="try later",
          unpriced=True, cost=None)  # fmt: skip
    rebuild(team.pk, ["run-a"])  # the summary rows ingest keeps (the spans here skip ingest)
    return "run-a"


def test_the_run_list_shows_a_row_per_run_with_its_totals(as_role, team, agent_run):
    TraceFactory(team=team, trace_id="lone", run_id="lone", name="", model="gpt-4o-mini", cost=Decimal("0.002"))
    rebuild(team.pk, ["lone"])
    page = as_role("viewer").get("/runs")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'aria-label="Open run invoke_agent"' in html and 'href="/runs/run-a"' in html
    assert html.index("Open run lone") < html.index("Open run invoke_agent")  # newest first
    row = html[html.index("Open run invoke_agent") :].split("</tr>", 1)[0]
    assert "4.00 s" in row and "Failed" in row
    assert "$0.001 (1 of 2 unpriced)" in row  # the two chat spans are the calls; the tool is not priced
    assert ">4<" in row and ">2<" in row  # spans, calls
    assert 'href="/runs"' in html and ">Runs</a>" in html  # in the navigation


def test_the_run_list_filters_and_pages(as_role, team, agent_run):
    base = timezone.now() - timedelta(hours=3)
    for n in range(55):
        _span(team, f"r-{n:02}", f"r-{n:02}-root", kind="chain", name="batch job", base=base, offset_ms=n * 1000)
    rebuild(team.pk, [f"r-{n:02}" for n in range(55)])
    client = as_role("viewer")
    html = client.get("/runs?status=error").content.decode()
    assert "Open run invoke_agent" in html and "batch job" not in html
    html = client.get("/runs?name=invoke_agent").content.decode()
    assert "Open run invoke_agent" in html and "batch job" not in html
    html = client.get("/runs?time_range=1h").content.decode()
    assert "Open run invoke_agent" in html and "batch job" not in html
    first = client.get("/runs?name=batch+job").content.decode()
    assert first.count('class="run-row"') == 50 and "Older runs" in first
    more = first.split('id="runs-more"', 1)[1].split('hx-get="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    assert parse_qs(urlparse(more).query)["name"] == ["batch job"]
    rest = client.get(more, headers={"HX-Request": "true", "HX-Target": "runs-more"}).content.decode()
    assert rest.count('class="run-row"') == 5 and "Older runs" not in rest and "<html" not in rest
    assert "r-00-root" not in first and "Open run batch job" in rest


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        ("status=maybe", "status", "use success or error"),
        ("since=yesterday", "since", "ISO 8601"),
        ("cursor=nonsense", None, "start from the newest runs"),
    ],
)
def test_a_bad_run_filter_is_an_error_next_to_its_field(as_role, agent_run, query, field, message):
    response = as_role("viewer").get(f"/runs?{query}")
    assert response.status_code == 400
    html = response.content.decode()
    assert message in html and "Fix the filter above" in html
    if field:
        assert f'id="id_{field}_error"' in html


def test_the_run_page_shows_the_header_and_loads_the_spans_once(as_role, team, agent_run):
    client = as_role("viewer")
    html = client.get("/runs/run-a").content.decode()
    assert "<title>Run invoke_agent · tracerelay</title>" in html
    assert 'data-spans-url="/runs/run-a/spans.json"' in html and "runtree.js" in html
    assert "4.00 s" in html and "1 of 2 unpriced" in html
    body = client.get("/runs/run-a/spans.json").json()
    assert body["run_id"] == "run-a"
    spans = {row[0]: dict(zip(body["columns"], row, strict=True)) for row in body["spans"]}
    assert list(spans) == ["root", "chat-1", "tool-1", "chat-2"]  # time order
    assert spans["chat-1"]["start_ms"] - spans["root"]["start_ms"] == pytest.approx(100)
    assert spans["chat-1"]["cost"] == 0.001 and spans["chat-2"]["unpriced"] is True
    assert spans["root"]["parent_id"] is None and spans["chat-2"]["parent_id"] == "tool-1"
    assert spans["tool-1"]["kind"] == "tool" and spans["chat-2"]["status"] == "error"
    assert body["totals"] == {
        "spans": 4,
        "llm_calls": 2,
        "cost": 0.001,
        "unpriced_calls": 1,
        "prompt_tokens": 200,
        "completion_tokens": 100,
        "duration_ms": 4000,
        "errors": 1,
    }


def test_another_teams_run_is_a_404(as_role, other_team, agent_run):
    _span(other_team, "theirs", "their-root", kind="agent", name="secret")
    rebuild(other_team.pk, ["theirs"])
    client = as_role("viewer")
    for path in ("/runs/theirs", "/runs/theirs/spans.json", "/runs/theirs/spans/their-root", "/runs/nope"):
        assert client.get(path).status_code == 404, path
    assert client.get("/runs/run-a/spans/their-root").status_code == 404  # a span of another run
    assert "secret" not in client.get("/runs").content.decode()
    assert as_role("outsider").get("/runs/run-a").status_code == 404


def test_a_span_shows_as_a_conversation_with_its_tool_calls(as_role, agent_run):
    client = as_role("viewer")
    panel = client.get("/runs/run-a/spans/chat-1", headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in panel
    assert "Weather in Paris?" in panel and "Be brief." in panel
    assert "Calls <code>search</code>" in panel and "&quot;q&quot;: &quot;Paris&quot;" in panel
    assert "Open the span&#x27;s page" in panel or "Open the span's page" in panel
    tool = client.get("/runs/run-a/spans/tool-1").content.decode()  # no htmx: a page of its own
    assert "<title>Span search · tracerelay</title>" in tool and "&quot;temp&quot;: 21" in tool
    assert "unpriced" not in tool  # a tool is no call: it has no price to lack
    failed = client.get("/runs/run-a/spans/chat-2").content.decode()
    assert "overloaded" in failed and "try later" in failed and "unpriced" in failed
    page = client.get("/runs/run-a?span=chat-1").content.decode()  # the panel comes with the page
    assert "Weather in Paris?" in page and 'data-selected="chat-1"' in page


def test_the_trace_page_the_feed_and_sessions_link_to_the_run(as_role, team, agent_run):
    Trace.objects.filter(run_id="run-a").update(session_id="conv-9")
    rebuild(team.pk, ["run-a"])
    client = as_role("viewer")
    detail = client.get("/traces/chat-2").content.decode()
    assert 'href="/runs/run-a?span=chat-2"' in detail
    feed = client.get("/traces").content.decode()
    assert 'href="/runs/run-a?span=chat-1"' in feed
    session = client.get("/sessions/conv-9").content.decode()
    assert 'href="/runs/run-a"' in session and "invoke_agent" in session
    groups = client.get("/sessions").content.decode()
    assert 'href="/runs?session_id=conv-9"' in groups
    assert "Open run invoke_agent" in client.get("/runs?session_id=conv-9").content.decode()
    assert "Open run invoke_agent" not in client.get("/runs?session_id=other").content.decode()


def test_the_spans_json_is_one_document_at_ten_thousand_spans(as_role, team):
    now = timezone.now() - timedelta(minutes=1)
    rows = [Trace(team=team, trace_id="big-0", run_id="big", kind="agent", name="root", model="", timestamp=now)]
    rows += [
        Trace(team=team, trace_id=f"big-{n}", run_id="big", parent_id=f"big-{(n - 1) // 10}", kind="tool",
              name=f"step {n}", model="", timestamp=now + timedelta(milliseconds=n), latency_ms=5)
        for n in range(1, 10_000)
    ]  # fmt: skip
    Trace.objects.bulk_create(rows, batch_size=2000)
    body = json.loads(as_role("viewer").get("/runs/big/spans.json").content)
    assert len(body["spans"]) == 10_000 and body["totals"]["spans"] == 10_000


def test_the_page_lists_spans_as_links_without_javascript(as_role, agent_run):
    html = as_role("viewer").get("/runs/run-a").content.decode()
    noscript = html.split("<noscript>", 1)[1].split("</noscript>", 1)[0]
    assert noscript.count("<li>") == 4 and 'href="/runs/run-a/spans/chat-2"' in noscript and "Failed" in noscript


def test_a_run_id_with_a_slash_has_its_pages(as_role, team):
    _span(team, "team/run 1", "only", kind="workflow", name="nightly")
    rebuild(team.pk, ["team/run 1"])
    client = as_role("viewer")
    html = client.get("/runs").content.decode()
    assert 'href="/runs/team/run%201"' in html
    assert client.get("/runs/team/run%201").status_code == 200
    assert client.get("/runs/team/run%201/spans.json").json()["totals"]["spans"] == 1
    assert client.get("/runs/team/run%201/spans/only").status_code == 200
