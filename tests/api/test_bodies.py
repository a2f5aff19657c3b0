"""One JSON body parser everywhere (config/jsonbody.py): the same problem for the same fault on every
operation of the schema; no 500 for deep nesting; gzip bodies on the trace ingest endpoints."""

from __future__ import annotations

import gzip
import io

import orjson
import pytest
from rest_framework.test import APIClient

from accounts.services import user_token_issue
from alerts import services as alert_services
from alerts.definition import parse_alert
from config.jsonbody import MAX_DEPTH, Gunzip, depth_exceeds
from config.problems import Problem
from dashboards import services as dashboard_services
from dashboards.definition import parse_board
from delivery.models import DeliveryStatus
from reports import services as report_services
from reports.definition import parse_definition
from traces.models import Trace
from traces.prices import services as price_services
from traces.proxy import services as upstream_services

from ..delivery.scripted import make_delivery
from ..factories import IntegrationFactory, MembershipFactory, TraceFactory
from .test_lean_ingest import asgi_call

pytestmark = pytest.mark.django_db

PROBLEMS = "https://tracerelay.dev/problems/"
# Where no body at all is a request of its own: "replay every dead letter", "share with the default
# expiry" (documented).
EMPTY_BODY_ALLOWED = {("post", "/api/v1/deliveries/replay"), ("post", "/api/v1/traces/{trace_id}/share")}
ACCOUNT_PATHS = ("/api/v1/auth/", "/api/v1/teams")
DEEP = b"[" * 1000 + b"]" * 1000
DEEP_OBJECT = b'{"a":' * 1000 + b"1" + b"}" * 1000


@pytest.fixture
def objects(team):
    """One of each object the schema's paths name, so each operation gets as far as reading its body."""
    report = report_services.report_create(
        team_id=team.pk, definition=parse_definition({"name": "weekly"}), actor="test"
    )
    alert, _ = alert_services.alert_create(
        team_id=team.pk,
        spec=parse_alert(
            {"name": "budget", "metric": "cost", "threshold": 1, "window": {"type": "rolling", "minutes": 60}}
        ),
        actor="test",
    )
    integration = IntegrationFactory(team=team, name="hook")
    upstream = upstream_services.upstream_create(
        team_id=team.pk,
        data=upstream_services.UpstreamInput(name="groq", base_url="https://api.groq.com/openai/v1", provider="groq"),
        actor="test",
    )
    delivery = make_delivery(team, "hook", trace=TraceFactory(team=team), status=DeliveryStatus.DEAD)
    dashboard = dashboard_services.dashboard_create(team_id=team.pk, board=parse_board({"name": "b"}), actor="test")
    price = price_services.price_create(
        team_id=team.pk,
        data=price_services.clean_price({"model": "acme-7b", "input_per_mtok": "1", "output_per_mtok": "2"}),
        actor="test",
    )
    return {
        "integration_id": str(integration.pk),
        "upstream_id": str(upstream.pk),
        "delivery_id": str(delivery.pk),
        "trace_id": TraceFactory(team=team).trace_id,
        "run_id": TraceFactory(team=team).run_id,
        "team_id": str(team.pk),
        "service_name": "checkout",
        "report_id": str(report.pk),
        "alert_id": str(alert.pk),
        "dashboard_id": str(dashboard.pk),
        "price_id": str(price.pk),
    }


def body_operations(api) -> list[tuple[str, str, bool]]:
    """(method, path template, takes a body) for every write operation of the schema but the proxy's,
    OTLP's and those whose body is not JSON: the proxy forwards bodies as they are, and the upstream is
    the judge of them (docs/proxy.md); OTLP answers with the OTLP spec's google.rpc.Status (docs/otlp.md,
    tests/otlp); an import's JSON Lines are judged line by line (docs/export.md, tests/traces/test_export.py)."""
    schema = api.get("/api/v1/schema/", {"format": "json"}).json()
    out = []
    for path, operations in schema["paths"].items():
        if path.startswith(("/api/v1/proxy/", "/api/v1/otlp/")):
            continue
        for method, operation in operations.items():
            body = operation.get("requestBody")
            if body is not None and "application/json" not in body["content"]:
                continue
            if method in ("post", "put", "patch"):
                out.append((method, path, body is not None))
    return out


def send(api, method: str, path: str, body: bytes, content_type: str, **extra):
    if path.startswith(ACCOUNT_PATHS):  # a person's endpoints take a user token (docs/cli.md), a fresh one
        api = APIClient(HTTP_AUTHORIZATION=f"Bearer {user_token_issue(user=api.owner)[1]}")  # logout revokes it
    return api.generic(method.upper(), path, body, content_type=content_type, **extra)


def problem_type(response) -> str:
    assert response.status_code < 500, (response.status_code, response.content[:300])
    assert response["Content-Type"] == "application/problem+json", response.content[:300]
    return response.json()["type"].removeprefix(PROBLEMS)


def test_every_operation_answers_the_same_problem_for_the_same_fault(api, objects, team):
    api.owner = MembershipFactory(team=team, role="owner").user
    operations = body_operations(api)
    assert len([op for op in operations if op[2]]) >= 10  # the walk really walks
    for method, template, takes_body in operations:
        path = template.format(**objects)
        where = f"{method.upper()} {template}"
        if not takes_body:
            # Operations without a body ignore one; whatever is sent, never a 500.
            for body in (b"{not json", DEEP):
                assert send(api, method, path, body, "application/json").status_code < 500, where
            continue
        malformed = send(api, method, path, b'{"name": "x",\n "oops"', "application/json")
        assert problem_type(malformed) == "malformed-json", where
        assert (malformed.json()["line"], malformed.json()["column"]) == (2, 8), where
        assert malformed.status_code == 400
        wrong_type = send(api, method, path, b'{"name": "x"}', "text/plain")
        assert (wrong_type.status_code, problem_type(wrong_type)) == (415, "unsupported-media-type"), where
        unknown_coding = send(api, method, path, b"{}", "application/json", HTTP_CONTENT_ENCODING="br")
        assert (unknown_coding.status_code, problem_type(unknown_coding)) == (415, "unsupported-media-type"), where
        for deep in (DEEP, DEEP_OBJECT):
            too_deep = send(api, method, path, deep, "application/json")
            assert (too_deep.status_code, problem_type(too_deep)) == (400, "too-deep"), where
        empty = send(api, method, path, b"", "application/json")
        if (method, template) in EMPTY_BODY_ALLOWED:
            assert empty.status_code < 400, where
        else:
            assert (empty.status_code, problem_type(empty)) == (400, "empty-body"), where


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("post", "/api/v1/routing/test"),
        ("put", "/api/v1/routing/rules"),
        ("put", "/api/v1/routing/sampling"),
        ("post", "/api/v1/integrations"),
        ("post", "/api/v1/integrations/test"),
        ("post", "/api/v1/integrations/{integration_id}/test"),
        ("patch", "/api/v1/upstreams/{upstream_id}"),
        ("post", "/api/v1/deliveries/{delivery_id}/replay"),
        ("post", "/api/v1/traces"),
        ("post", "/api/v1/traces/batch"),
    ],
)
def test_a_body_1000_levels_deep_is_never_a_500(api, objects, method, path):
    for deep in (DEEP, DEEP_OBJECT):
        response = send(api, method, path.format(**objects), deep, "application/json")
        assert response.status_code < 500, response.content[:300]
        if response.status_code == 400:  # operations without a body ignore it (and may answer 409 etc.)
            assert problem_type(response) == "too-deep"


def test_a_body_as_deep_as_the_limit_is_parsed():
    assert not depth_exceeds(orjson.loads(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH), MAX_DEPTH)
    assert depth_exceeds(orjson.loads(b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1)), MAX_DEPTH)
    wide = {"a": [{"b": [1, 2, {"c": {}}]}] * 500}  # many containers, little depth
    assert not depth_exceeds(wide, MAX_DEPTH)


def test_a_trace_nested_to_the_limit_is_stored(api):
    value: object = "leaf"
    for _ in range(MAX_DEPTH - 2):  # the trace object and `metadata` are two levels
        value = [value]
    response = api.post("/api/v1/traces", {"model": "m", "metadata": {"deep": value}}, format="json")
    assert response.status_code == 201, response.content[:300]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path", ["/api/v1/integrations", "/api/v1/routing/test", "/api/v1/traces/batch"])
def test_a_chunked_body_over_the_limit_is_a_413_not_a_400(prod_key, settings, path):
    # Under ASGI (what bin/run serves), as a chunked request arrives: no Content-Length.
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = b'{"name": "' + b"x" * 5000 + b'"}'
    status, headers, data = asgi_call("POST", path, headers=auth_headers(prod_key), chunks=[body[:3000], body[3000:]])
    assert (status, orjson.loads(data)["type"]) == (413, PROBLEMS + "payload-too-large")


@pytest.mark.django_db(transaction=True)
def test_a_chunked_body_within_the_limit_is_parsed(prod_key):
    body = orjson.dumps({"traces": [{"model": "gpt-4o"}]})
    status, _, data = asgi_call(
        "POST", "/api/v1/traces/batch", headers=auth_headers(prod_key), chunks=[body[:9], body[9:]]
    )
    assert status == 200, data
    assert orjson.loads(data)["created"] == 1


def auth_headers(key, **extra: str) -> list[tuple[str, str]]:
    headers = [
        ("Authorization", f"Bearer {key._raw}"),
        ("Content-Type", "application/json"),
        ("Transfer-Encoding", "chunked"),
    ]
    return headers + list(extra.items())


# --- gzip ------------------------------------------------------------------------------------------


def gz(value: object) -> bytes:
    return gzip.compress(orjson.dumps(value))


def test_a_gzipped_trace_and_batch_are_stored(api):
    one = api.generic(
        "POST",
        "/api/v1/traces",
        gz({"model": "gpt-4o", "id": "gz-1"}),
        "application/json",
        HTTP_CONTENT_ENCODING="gzip",
    )
    assert one.status_code == 201, one.content[:300]
    batch = api.generic(
        "POST",
        "/api/v1/traces/batch",
        gz({"traces": [{"model": "gpt-4o", "id": f"gz-b{i}"} for i in range(50)]}),
        "application/json",
        HTTP_CONTENT_ENCODING="gzip",
    )
    assert batch.status_code == 200 and batch.json()["created"] == 50
    assert Trace.objects.filter(trace_id__startswith="gz-").count() == 51


def test_a_gzip_bomb_is_a_413_on_the_decompressed_size(api, settings):
    bomb = gzip.compress(b'{"traces": [' + b" " * (50 * 1024 * 1024) + b"]}")  # ~50 KB that inflates to 50 MB
    assert len(bomb) < 100_000
    response = api.generic("POST", "/api/v1/traces/batch", bomb, "application/json", HTTP_CONTENT_ENCODING="gzip")
    assert (response.status_code, problem_type(response)) == (413, "payload-too-large")
    assert "decompressed" in response.json()["detail"]


def test_bad_gzip_is_a_400_and_an_unknown_encoding_a_415(api):
    truncated = gz({"model": "m"})[:-6]
    for body in (b"not gzip at all", truncated):
        response = api.generic("POST", "/api/v1/traces", body, "application/json", HTTP_CONTENT_ENCODING="gzip")
        assert (response.status_code, problem_type(response)) == (400, "malformed-gzip")
    for coding in ("br", "deflate", "zstd"):
        response = api.generic("POST", "/api/v1/traces/batch", b"{}", "application/json", HTTP_CONTENT_ENCODING=coding)
        assert (response.status_code, problem_type(response)) == (415, "unsupported-media-type")


def test_the_inflater_stops_at_the_limit_without_inflating_the_rest():
    inflater = Gunzip(1000, "A batch")
    source = gzip.compress(b"x" * 10_000_000)
    with pytest.raises(Problem) as raised:
        for i in range(0, len(source), 512):
            inflater.feed(source[i : i + 512])
    assert raised.value.status_code == 413
    assert sum(map(len, inflater._out)) <= 1000


@pytest.mark.django_db(transaction=True)
def test_the_bare_asgi_door_takes_gzip_too(prod_key, settings):
    headers = [
        ("Authorization", f"Bearer {prod_key._raw}"),
        ("Content-Type", "application/json"),
        ("Content-Encoding", "gzip"),
    ]
    status, _, data = asgi_call("POST", "/api/v1/traces", gz({"model": "gpt-4o", "id": "asgi-gz"}), headers)
    assert status == 201, data
    assert Trace.objects.filter(trace_id="asgi-gz").exists()
    status, _, data = asgi_call("POST", "/api/v1/traces", DEEP, headers[:2])
    assert status == 400 and orjson.loads(data)["type"] == PROBLEMS + "too-deep"
    status, _, data = asgi_call("POST", "/api/v1/traces", b"", headers[:2])
    assert status == 400 and orjson.loads(data)["type"] == PROBLEMS + "empty-body"
    settings.TRACE_MAX_BYTES = 1000
    bomb = gzip.compress(orjson.dumps({"model": "m", "input": "x" * 100_000}))
    status, _, data = asgi_call("POST", "/api/v1/traces", bomb, headers)
    assert status == 413 and b"decompressed" in data
    status, _, data = asgi_call("POST", "/api/v1/traces", b"{}", [*headers[:2], ("Content-Encoding", "br")])
    assert status == 415


def test_gzip_stream_reads_like_a_file():
    # The parser reads DRF's stream in chunks: a BytesIO stands in for it.
    from config.jsonbody import read_capped

    assert read_capped(io.BytesIO(b"x" * 100), 100, "The body") == b"x" * 100
    with pytest.raises(Problem):
        read_capped(io.BytesIO(b"x" * 101), 100, "The body")
