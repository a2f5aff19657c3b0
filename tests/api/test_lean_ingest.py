"""`POST /api/v1/traces` under ASGI: the async path with group commit keeps the DRF path's contract."""

from __future__ import annotations

import asyncio

import orjson
import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient

from accounts.services import api_key_revoke
from delivery.models import Delivery
from traces.models import Trace
from traces.selectors import FLOOR_CURSOR

from ..factories import ApiKeyFactory, RoutingRuleFactory, TeamFactory

pytestmark = pytest.mark.django_db(transaction=True)

TRACE = {"model": "gpt-4o", "prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150, "tags": ["t"]}


@pytest.fixture
def key():
    team = TeamFactory()
    RoutingRuleFactory(
        team=team, name="all", destinations=[{"name": "webhook", "sample_rate": 1.0, "tags": [], "fallback": []}]
    )
    return ApiKeyFactory(team=team)


def post(key_or_header, body, content_type="application/json"):
    header = key_or_header if isinstance(key_or_header, str) else f"Bearer {key_or_header._raw}"
    # Headers per request: AsyncClient(headers=...) does not reach the ASGI scope's headers.
    headers = {"Authorization": header} if header else {}
    return async_to_sync(AsyncClient().post)("/api/v1/traces", body, content_type=content_type, headers=headers)


def test_it_stores_and_routes_a_trace_before_answering_201(key):
    r = post(key, TRACE)
    assert r.status_code == 201 and r["Content-Type"] == "application/json"
    body = r.json()
    assert body["cost"] == pytest.approx(0.00075) and body["destinations"] == ["webhook"]
    trace = Trace.objects.get(trace_id=body["id"])
    assert trace.team_id == key.team_id and trace.api_key_id == key.id and trace.environment == "production"
    assert Delivery.objects.filter(trace=trace, destination="webhook").exists()


def test_an_id_sent_again_is_200_with_the_stored_trace(key):
    assert post(key, {**TRACE, "id": "again"}).status_code == 201
    r = post(key, {**TRACE, "id": "again", "model": "other"})
    assert r.status_code == 200 and r.json()["model"] == "gpt-4o"
    assert Trace.objects.filter(trace_id="again").count() == 1


def test_concurrent_posts_share_transactions_and_each_gets_its_own_answer(key):
    client = AsyncClient()
    auth = {"Authorization": f"Bearer {key._raw}"}

    async def many():
        return await asyncio.gather(
            *(
                client.post(
                    "/api/v1/traces", {**TRACE, "id": f"c{i % 20}"}, content_type="application/json", headers=auth
                )
                for i in range(40)
            )
        )

    responses = async_to_sync(many)()
    assert sorted(r.status_code for r in responses) == [200] * 20 + [201] * 20
    assert {r.json()["id"] for r in responses} == {f"c{i}" for i in range(20)}
    assert Trace.objects.filter(team_id=key.team_id).count() == 20


@pytest.mark.parametrize(
    ("body", "content_type", "status", "where"),
    [
        ('{"model": ', "application/json", 400, None),
        ('{"model": "x"}', "text/plain", 415, None),
        ("[]", "application/json", 400, None),
        ('{"model": "m", "prompt_tokens": -1}', "application/json", 400, "prompt_tokens"),
        ('{"model": "m", "status": "nope"}', "application/json", 400, "status"),
    ],
)
def test_bad_input_is_the_same_problem_as_on_the_drf_path(key, body, content_type, status, where):
    r = post(key, body, content_type)
    assert r.status_code == status and r["Content-Type"] == "application/problem+json"
    if where:
        assert where in r.json()["errors"]


def test_an_oversized_trace_is_a_413(key, settings):
    settings.TRACE_MAX_BYTES = 100
    r = post(key, {"model": "m", "input": "x" * 200})
    assert r.status_code == 413 and r["Content-Type"] == "application/problem+json"


@pytest.mark.parametrize("header", ["", "Bearer", "Basic abc", "Bearer tr_prod_nope"])
def test_no_or_a_bad_key_is_a_401(header):
    r = post(header, TRACE)
    assert r.status_code == 401 and r["Content-Type"] == "application/problem+json"
    assert r["WWW-Authenticate"].startswith("Bearer")


def test_a_revoked_key_is_a_401(key):
    assert post(key, TRACE).status_code == 201
    api_key_revoke(key=key)
    assert post(key, TRACE).status_code == 401


def test_the_feed_on_the_same_url_still_works_under_asgi(key):
    post(key, {**TRACE, "id": "listed"})
    r = async_to_sync(AsyncClient().get)("/api/v1/traces", headers={"Authorization": f"Bearer {key._raw}"})
    assert r.status_code == 200 and [t["id"] for t in r.json()["data"]] == ["listed"]


# --- The bare ASGI mount (traces.ingest.mount), as config/asgi.py serves it ------------------------


def asgi_call(method, path, body=b"", headers=(), chunks=None):
    """Run one request through `mount(django)` and return (status, headers, body)."""
    from django.core.asgi import get_asgi_application

    from traces.ingest import mount

    app = mount(get_asgi_application())

    async def run():
        parts = chunks if chunks is not None else [body]
        messages = [{"type": "http.request", "body": p, "more_body": i < len(parts) - 1} for i, p in enumerate(parts)]
        sent = []

        async def receive():
            if messages:
                return messages.pop(0)
            await asyncio.sleep(30)  # a client that stays connected until answered
            return {"type": "http.disconnect"}

        async def send(message):
            sent.append(message)

        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [(k.lower().encode(), v.encode()) for k, v in headers],
            "client": ("127.0.0.1", 5000),
            "server": ("testserver", 80),
        }
        await app(scope, receive, send)
        start = next(m for m in sent if m["type"] == "http.response.start")
        data = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
        return start["status"], {k.decode(): v.decode() for k, v in start["headers"]}, data

    return async_to_sync(run)()


def auth(key, content_type="application/json"):
    return [("Authorization", f"Bearer {key._raw}"), ("Content-Type", content_type)]


def test_the_mount_stores_a_trace_without_django_in_the_way(key):
    status, headers, data = asgi_call("POST", "/api/v1/traces", orjson.dumps(TRACE), auth(key))
    assert status == 201 and headers["content-type"] == "application/json"
    body = orjson.loads(data)
    assert Trace.objects.filter(trace_id=body["id"], team_id=key.team_id).exists()
    assert body["destinations"] == ["webhook"]


def test_the_mount_answers_problems(key, settings):
    status, headers, data = asgi_call("POST", "/api/v1/traces", b"{}", [("Content-Type", "application/json")])
    assert status == 401 and headers["content-type"] == "application/problem+json"
    assert headers["www-authenticate"].startswith("Bearer")
    assert asgi_call("POST", "/api/v1/traces", b"{}", auth(key, "text/plain"))[0] == 415
    assert asgi_call("POST", "/api/v1/traces", b'{"model":', auth(key))[0] == 400
    status, _, data = asgi_call("POST", "/api/v1/traces", b'{"model": "m", "status": "x"}', auth(key))
    assert status == 400 and "status" in orjson.loads(data)["errors"]
    settings.TRACE_MAX_BYTES = 50
    big = orjson.dumps({"model": "m", "input": "x" * 100})
    assert asgi_call("POST", "/api/v1/traces", big, [*auth(key), ("Content-Length", str(len(big)))])[0] == 413
    # no Content-Length (chunked): counted while reading
    assert asgi_call("POST", "/api/v1/traces", headers=auth(key), chunks=[big[:40], big[40:]])[0] == 413


def test_the_mount_leaves_everything_else_to_django(key):
    status, _, data = asgi_call("GET", "/api/v1/traces", headers=auth(key))
    assert status == 200 and orjson.loads(data) == {"data": [], "next_cursor": None, "newest_cursor": FLOOR_CURSOR}
    assert asgi_call("GET", "/healthz")[0] == 200


def test_one_requests_failure_does_not_fail_the_others_in_its_group(key, monkeypatch):
    from concurrent.futures import Future

    from accounts.selectors import principal_for_key
    from config.problems import Problem
    from pipeline.services import traces_normalize
    from traces import ingest

    real_store = ingest.traces_store

    def store(pending):
        if any(p.record.model == "poison" for p in pending):
            raise RuntimeError("a trace this code cannot store")
        return real_store(pending)

    monkeypatch.setattr(ingest, "traces_store", store)
    principal = principal_for_key(key._raw)
    _, good = traces_normalize(principal=principal, items=[{"model": "gpt-4o"}], source="api")
    _, poison = traces_normalize(principal=principal, items=[{"model": "poison"}], source="api")
    good_future, poison_future = Future(), Future()
    ingest.GroupCommitWriter()._write([(good, good_future), (poison, poison_future)])
    [(row, created)] = good_future.result(5)
    assert created and Trace.objects.filter(pk=row.pk).exists()
    with pytest.raises(Problem) as info:
        poison_future.result(5)
    assert info.value.status_code == 503
