"""Export (`GET /api/v1/traces/export`) and import (`POST /api/v1/traces/import`) of traces (docs/export.md)."""

from __future__ import annotations

import csv
import gzip
import io
from datetime import timedelta
from decimal import Decimal

import httpx
import orjson
import pytest
from django.utils import timezone

from delivery.models import Delivery
from integrations.exporters.base import Target
from integrations.exporters.webhook import WebhookExporter
from traces.export import CSV_COLUMNS, accepts_gzip, export_filename
from traces.models import Trace
from traces.records import TraceRecord

from ..factories import IntegrationFactory, RoutingRuleFactory, TraceFactory

pytestmark = pytest.mark.django_db
EXPORT = "/api/v1/traces/export"
IMPORT = "/api/v1/traces/import"
NDJSON = "application/x-ndjson"


def body_of(response) -> bytes:
    assert response.streaming, "an export is streamed"
    return b"".join(response.streaming_content)


def lines_of(response) -> list[dict]:
    return [orjson.loads(line) for line in body_of(response).splitlines()]


def store(api, traces: list[dict]) -> None:
    response = api.post("/api/v1/traces/batch", {"traces": traces}, format="json")
    assert response.status_code == 200, response.content


def varied(now=None) -> list[dict]:
    """Traces as clients send them: a run with a parent, an error, an unpriced model, estimated usage,
    cached tokens, an empty and a named environment, metadata, tags, a CSV-formula-looking name."""
    now = now or timezone.now()
    at = [(now - timedelta(minutes=i)).isoformat() for i in range(8)]
    return [
        {"id": "root-1", "run_id": "run-1", "kind": "agent", "name": "=plan", "timestamp": at[0], "latency_ms": 900},
        {
            "id": "call-1",
            "run_id": "run-1",
            "parent_id": "root-1",
            "model": "gpt-4o",
            "prompt_tokens": 1000,
            "completion_tokens": 20,
            "cached_tokens": 800,
            "timestamp": at[1],
            "input": [{"role": "user", "content": "hi, it's me@example.com"}],
            "output": "hello",
            "metadata": {"customer": "acme", "n": 3},
            "tags": ["checkout", "beta"],
            "environment": "production",
            "user_id": "u1",
            "session_id": "s1",
        },
        {"id": "err-1", "model": "gpt-4o-mini", "error": {"type": "429", "message": "slow down"}, "timestamp": at[2]},
        {"id": "priv-1", "model": "acme-private-7b", "prompt_tokens": 5, "completion_tokens": 5, "timestamp": at[3]},
        {"id": "est-1", "model": "gpt-4o", "input": "a prompt to estimate", "output": "words", "timestamp": at[4]},
        {
            "id": "tool-1",
            "run_id": "run-1",
            "parent_id": "root-1",
            "kind": "tool",
            "name": "search",
            "timestamp": at[5],
        },
        {
            "id": "cost-1",
            "model": "gpt-4o",
            "prompt_tokens": 1,
            "completion_tokens": 1,
            "cost": 9.5,
            "timestamp": at[6],
        },
        {
            "id": "svc-1",
            "model": "claude-3-5-sonnet",
            "provider": "anthropic",
            "service_name": "-svc",
            "timestamp": at[7],
        },
    ]


# --- Export ---------------------------------------------------------------------------------------


def test_an_export_of_a_filter_lists_exactly_the_feeds_traces_across_pages(api, team, other_team):
    now = timezone.now()
    for i in range(23):
        TraceFactory(
            team=team,
            trace_id=f"t{i:02}",
            model="gpt-4o" if i % 3 else "gpt-4o-mini",
            status="error" if i % 4 == 0 else "success",
            tags=["a"] if i % 2 else [],
            # ties on the timestamp: the keyset's id breaks them the same way in both
            timestamp=now - timedelta(minutes=i // 2),
        )
    TraceFactory(team=other_team, trace_id="theirs", model="gpt-4o")
    for query in ("", "model=gpt-4o", "model=gpt-4o*&tag=a", "status=error", "time_range=1h&latency_min=0", "model=x"):
        feed, cursor = [], None
        while True:
            page = api.get(f"/api/v1/traces?{query}&limit=4" + (f"&cursor={cursor}" if cursor else "")).json()
            feed += [t["id"] for t in page["data"]]
            cursor = page["next_cursor"]
            if not cursor:
                break
        for fmt in ("jsonl", "csv"):
            response = api.get(f"{EXPORT}?{query}&format={fmt}")
            assert response.status_code == 200, (query, fmt, response.content if not response.streaming else "")
            if fmt == "jsonl":
                exported = [line["id"] for line in lines_of(response)]
            else:
                exported = [row["id"] for row in csv.DictReader(io.StringIO(body_of(response).decode()))]
            assert exported == feed, (query, fmt)
    assert "theirs" not in feed


def test_the_export_walks_chunk_by_chunk(team, django_assert_max_num_queries):
    from traces.export import export_bytes
    from traces.filters import TraceFilter

    now = timezone.now()
    for i in range(7):
        TraceFactory(team=team, trace_id=f"c{i}", timestamp=now - timedelta(seconds=i))
    pieces = list(export_bytes(team_id=team.pk, trace_filter=TraceFilter(), fmt="jsonl", chunk=3))
    assert [p.count(b"\n") for p in pieces] == [3, 3, 1]
    assert [orjson.loads(line)["id"] for p in pieces for line in p.splitlines()] == [f"c{i}" for i in range(7)]


def test_each_line_is_the_webhooks_trace_shape(api, team):
    store(api, varied())
    response = api.get(EXPORT)
    assert response["Content-Type"] == NDJSON
    lines = body_of(response).splitlines()
    assert len(lines) == 8
    exporter = WebhookExporter(
        Target(platform="webhook", name="hook", config={"url": "http://127.0.0.1:9/"}), httpx.Client()
    )
    for line in lines:
        stored = Trace.objects.get(team=team, trace_id=orjson.loads(line)["id"])
        assert line == exporter.encode(TraceRecord.from_trace(stored))  # the bytes a webhook delivery carries
    call = orjson.loads(lines[1])
    assert call["cached_tokens"] == 800 and call["metadata"] == {"customer": "acme", "n": 3}
    assert call["input"] == [{"role": "user", "content": "hi, it's me@example.com"}]


def test_the_export_shows_what_the_pii_policy_stored(api, team):
    """What the API shows, never more: a redacted email stays redacted in the export."""
    from privacy.models import PiiPolicy
    from privacy.selectors import publish_version

    PiiPolicy.objects.update_or_create(team=team, defaults={"stored_mode": "redact", "version": 1})
    publish_version(team.pk)
    store(api, [{"id": "p1", "model": "gpt-4o", "input": "mail me at jane.doe@example.com", "output": "ok"}])
    shown = api.get("/api/v1/traces/p1").json()["input"]
    [line] = lines_of(api.get(EXPORT))
    assert "jane.doe@example.com" not in shown and line["input"] == shown


def test_csv_has_its_documented_header_and_one_row_a_trace(api):
    store(api, varied())
    response = api.get(f"{EXPORT}?format=csv")
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == f'attachment; filename="{export_filename("csv")}"'
    rows = list(csv.reader(io.StringIO(body_of(response).decode())))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert CSV_COLUMNS[:3] == ("id", "timestamp", "end_time") and CSV_COLUMNS[-4:] == (
        "tags",
        "metadata",
        "input",
        "output",
    )
    by_id = {row[0]: dict(zip(CSV_COLUMNS, row, strict=True)) for row in rows[1:]}
    assert len(by_id) == 8
    call = by_id["call-1"]
    assert (call["model"], call["prompt_tokens"], call["cached_tokens"], call["unpriced"]) == (
        "gpt-4o",
        "1000",
        "800",
        "false",
    )
    assert orjson.loads(call["metadata"]) == {"customer": "acme", "n": 3} and orjson.loads(call["tags"]) == [
        "checkout",
        "beta",
    ]
    assert float(call["cost"]) > 0 and call["cost_currency"] == "USD"
    assert (by_id["err-1"]["status"], by_id["err-1"]["error_type"], by_id["err-1"]["error_message"]) == (
        "error",
        "429",
        "slow down",
    )
    assert by_id["priv-1"]["unpriced"] == "true" and by_id["priv-1"]["cost"] == ""
    assert by_id["root-1"]["parent_id"] == "" and by_id["tool-1"]["parent_id"] == "root-1"
    # A cell a spreadsheet would run as a formula is written as text.
    assert by_id["root-1"]["name"] == "'=plan" and by_id["svc-1"]["service_name"] == "'-svc"


def test_gzip_when_the_client_accepts_it(api):
    store(api, varied())
    plain = body_of(api.get(EXPORT))
    zipped = api.get(EXPORT, HTTP_ACCEPT_ENCODING="gzip, deflate, br")
    assert zipped["Content-Encoding"] == "gzip" and zipped["Vary"] == "Accept-Encoding"
    assert gzip.decompress(body_of(zipped)) == plain
    refused = api.get(EXPORT, HTTP_ACCEPT_ENCODING="gzip;q=0, identity")
    assert not refused.has_header("Content-Encoding") and body_of(refused) == plain
    csv_zipped = api.get(f"{EXPORT}?format=csv", HTTP_ACCEPT_ENCODING="*")
    assert gzip.decompress(body_of(csv_zipped)).startswith(b"id,timestamp,")


def test_accept_encoding_is_read_with_its_weights():
    assert (
        accepts_gzip("gzip") and accepts_gzip("br;q=1.0, gzip;q=0.5") and accepts_gzip("*") and accepts_gzip("x-gzip")
    )
    assert not accepts_gzip("") and not accepts_gzip("identity") and not accepts_gzip("gzip;q=0")
    assert not accepts_gzip("*;q=0") and not accepts_gzip("*, gzip;q=0") and not accepts_gzip("gzip;q=bad")


def test_an_empty_export_is_an_empty_file_or_a_bare_header(api):
    assert body_of(api.get(EXPORT)) == b""
    assert body_of(api.get(f"{EXPORT}?format=csv")).decode().splitlines() == [",".join(CSV_COLUMNS)]


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("format=xml", "format"),
        ("format=", "format"),
        ("status=meh", "status"),
        ("cost_min=-1", "cost_min"),
        ("since=yesterday", "since"),
        ("modle=gpt-4o", "modle"),
        ("cursor=abc", "cursor"),
        ("limit=5", "limit"),
    ],
)
def test_a_bad_format_or_filter_is_a_400_problem(api, query, parameter):
    response = api.get(f"{EXPORT}?{query}")
    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["parameter"] == parameter


def test_export_needs_a_key(anon_api):
    response = anon_api.get(EXPORT)
    assert response.status_code == 401 and response["Content-Type"] == "application/problem+json"


# --- Import ---------------------------------------------------------------------------------------


def post_import(api, body: bytes, query: str = "", **headers):
    return api.generic("POST", f"{IMPORT}{query}", body, content_type=headers.pop("content_type", NDJSON), **headers)


def test_a_round_trip_through_another_team_gives_the_same_export(api, other_api, team, other_team):
    store(api, varied())
    exported = body_of(api.get(EXPORT))
    response = post_import(other_api, exported)
    assert response.status_code == 200, response.content
    assert response.json() == {"imported": 8, "skipped": 0, "failed": 0, "errors": []}
    assert body_of(other_api.get(EXPORT)) == exported
    # created_at, cost and run structure are the stored ones
    theirs = Trace.objects.get(team=other_team, trace_id="call-1")
    ours = Trace.objects.get(team=team, trace_id="call-1")
    assert (theirs.timestamp, theirs.cost, theirs.run_id, theirs.parent_id, theirs.kind) == (
        ours.timestamp, ours.cost, ours.run_id, ours.parent_id, ours.kind,
    )  # fmt: skip
    assert theirs.price_source == "import" and theirs.client_cost is None
    cost = Trace.objects.get(team=team, trace_id="cost-1").cost
    assert Trace.objects.get(team=other_team, trace_id="cost-1").cost == cost != Decimal("9.5")
    # the runs' summaries are built as ingest builds them
    run = other_api.get("/api/v1/runs/run-1").json()
    assert len(run["spans"]) == 3


def test_export_delete_import_gives_the_same_traces_back(api, team):
    store(api, varied())
    exported = body_of(api.get(EXPORT, HTTP_ACCEPT_ENCODING="gzip"))
    Trace.objects.filter(team=team).delete()
    response = post_import(api, exported, HTTP_CONTENT_ENCODING="gzip")
    assert response.json()["imported"] == 8
    assert body_of(api.get(EXPORT, HTTP_ACCEPT_ENCODING="gzip")) == exported


def test_a_second_import_skips_every_trace(api, other_api):
    store(api, varied())
    exported = body_of(api.get(EXPORT))
    assert post_import(other_api, exported).json()["imported"] == 8
    again = post_import(other_api, exported)
    assert again.status_code == 200 and again.json() == {"imported": 0, "skipped": 8, "failed": 0, "errors": []}
    assert Trace.objects.filter(team__name="beta").count() == 8


def test_bad_lines_are_named_and_the_good_ones_stored(api, other_api):
    store(api, varied()[:3])
    good = body_of(api.get(EXPORT)).splitlines()
    body = b"\n".join(
        [
            good[0],
            b"{not json",
            b"[1, 2]",
            b'{"model": "gpt-4o"}',  # no id: an import could not be idempotent
            b'{"id": "bad-tokens", "model": "gpt-4o", "prompt_tokens": -1}',
            b"",  # blank lines are skipped
            b'{"id": "deep", "input": ' + b"[" * 70 + b"]" * 70 + b"}",
            good[1],
            good[2],
        ]
    )
    response = post_import(other_api, body + b"\n")
    assert response.status_code == 207
    result = response.json()
    assert (result["imported"], result["skipped"], result["failed"]) == (3, 0, 5)
    assert [e["line"] for e in result["errors"]] == [2, 3, 4, 5, 7]
    assert result["errors"][0]["detail"].startswith("Not JSON")
    assert result["errors"][2]["detail"].startswith("id:")
    assert result["errors"][3]["detail"].startswith("prompt_tokens:")


def test_imported_traces_are_routed_only_when_asked(api, other_api, other_team):
    IntegrationFactory(team=other_team, name="webhook")
    RoutingRuleFactory(team=other_team)  # everything to "webhook"
    store(api, varied()[1:3])
    exported = body_of(api.get(EXPORT))
    assert post_import(other_api, exported).json()["imported"] == 2
    assert not Delivery.objects.filter(trace__team=other_team).exists()
    assert list(Trace.objects.filter(team=other_team).values_list("destinations", flat=True)) == [[], []]
    Trace.objects.filter(team=other_team).delete()
    assert post_import(other_api, exported, "?route=true").json()["imported"] == 2
    assert Delivery.objects.filter(trace__team=other_team, destination="webhook").count() == 2


def test_reprice_prices_by_todays_prices(api, other_api, other_team):
    store(api, [varied()[6]])  # sent with a client cost of 9.5: ours is the price of 2 tokens
    exported = body_of(api.get(EXPORT))
    line = orjson.loads(exported)
    line["cost"] = 1.25  # an export from elsewhere, priced by other prices
    body = orjson.dumps(line)
    post_import(other_api, body)
    assert Trace.objects.get(team=other_team, trace_id="cost-1").cost == Decimal("1.25")
    Trace.objects.filter(team=other_team).delete()
    post_import(other_api, body, "?reprice=true")
    repriced = Trace.objects.get(team=other_team, trace_id="cost-1")
    assert repriced.cost is not None and repriced.cost < Decimal("0.01") and repriced.price_source != "import"


@pytest.mark.parametrize(
    ("content_type", "encoding", "body", "status", "slug"),
    [
        ("application/json", "", b'{"id": "x"}', 415, "unsupported-media-type"),
        ("text/plain", "", b'{"id": "x"}', 415, "unsupported-media-type"),
        (NDJSON, "br", b'{"id": "x"}', 415, "unsupported-media-type"),
        (NDJSON, "", b"", 400, "empty-body"),
        (NDJSON, "", b"\n \n", 400, "empty-body"),
        ("application/jsonl", "gzip", b"not gzip", 400, "malformed-gzip"),
    ],
)
def test_a_bad_body_is_a_problem(other_api, content_type, encoding, body, status, slug):
    extra = {"HTTP_CONTENT_ENCODING": encoding} if encoding else {}
    response = post_import(other_api, body, content_type=content_type, **extra)
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["type"].endswith("/" + slug)


def test_a_body_over_the_limit_is_a_413(other_api, settings):
    settings.IMPORT_MAX_BYTES = 1000
    line = b'{"id": "x", "model": "gpt-4o", "input": "' + b"a" * 2000 + b'"}'
    response = post_import(other_api, line)
    assert response.status_code == 413 and response.json()["type"].endswith("/payload-too-large")
    bomb = gzip.compress(b"\n".join([b'{"id": "y", "model": "m"}'] * 200))
    assert len(bomb) < 1000
    response = post_import(other_api, bomb, HTTP_CONTENT_ENCODING="gzip")
    assert response.status_code == 413 and "decompressed" in response.json()["detail"]
    assert not Trace.objects.exists()


def test_import_needs_a_key_and_checks_its_flags(other_api):
    from rest_framework.test import APIClient

    body = b'{"id": "x", "model": "gpt-4o"}'
    response = post_import(other_api, body, "?route=maybe")
    assert response.status_code == 400 and response.json()["parameter"] == "route"
    assert post_import(other_api, body, "?dry_run=true").json()["parameter"] == "dry_run"
    assert APIClient().generic("POST", IMPORT, body, content_type=NDJSON).status_code == 401
    assert not Trace.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_under_asgi_each_chunk_is_sent_before_the_next_is_read(prod_key, team, monkeypatch):
    """Django reads a synchronous stream to its end before sending a byte under ASGI: the export's
    stream is an asynchronous one, so memory holds one chunk whatever the export's size."""
    import asyncio

    from asgiref.sync import async_to_sync
    from django.core.handlers.asgi import ASGIHandler

    from traces import export

    for i in range(5):
        TraceFactory(team=team, trace_id=f"a{i}")
    events: list[str] = []
    real = export.trace_chunks

    def spy(**kwargs):
        for rows in real(**{**kwargs, "size": 2}):
            events.append("read")
            yield rows

    monkeypatch.setattr(export, "trace_chunks", spy)
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": EXPORT,
        "root_path": "",
        "query_string": b"format=jsonl",
        "headers": [(b"host", b"testserver"), (b"authorization", f"Bearer {prod_key._raw}".encode())],
        "client": ("127.0.0.1", 5000),
        "server": ("testserver", 80),
    }
    started: list[dict] = []
    body: list[bytes] = []

    async def receive():
        if not started:
            started.append({})
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Future()  # no disconnect: the handler cancels this when it is done

    async def send(message):
        if message["type"] == "http.response.start":
            started.append(message)
        elif message.get("body"):
            events.append("sent")
            body.append(message["body"])

    async_to_sync(ASGIHandler())(scope, receive, send)
    assert started[1]["status"] == 200
    assert events == ["read", "sent", "read", "sent", "read", "sent"]
    assert [orjson.loads(line)["id"] for line in b"".join(body).splitlines()] == ["a4", "a3", "a2", "a1", "a0"]
