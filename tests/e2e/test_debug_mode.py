"""Debug mode end to end: switched on from /settings/advanced, a trace ingested over HTTP, a real
Celery worker delivering it to a webhook receiver and a Langfuse fake on loopback (each checks the
real wire format and credentials). The records hold the routing steps and each exporter request
and answer, with no secret in any form, and the trace page shows them. Once the chosen period has
passed, a real worker records nothing: no task switches it off, the clock does."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote, quote_plus

import pytest

from debugmode import services as debug_services
from debugmode.masking import MASK
from debugmode.models import DebugMode, DebugRecord
from delivery.models import DeliveryStatus
from tests.fakes.destinations import FakeLangfuse

from .conftest import statuses_by_destination, trace, wait_for
from .sink import WebhookSink

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SIGNING_SECRET = "whsec_e2e_debug_5f4e3d2c1b0a"
HEADER_SECRET = "hdr-e2e-debug-0a1b2c3d4e5f"
PUBLIC_KEY = "pk-lf-e2e-debug-1234"
SECRET_KEY = "sk-lf-e2e-debug-9876fedcba"
PASTED_KEY = "sk-proj-Qw12Er34Ty56Ui78Op90AsDfGhJk"
SAVE = "/settings/advanced/debug"

RULES = (
    {"name": "claude to hook", "condition": 'provider == "anthropic"', "destinations": ["hook"]},
    {"name": "gpt to hook", "condition": 'model == "gpt-4o"', "destinations": ["hook"]},
    {"name": "errors to langfuse", "conditions": {"error": True}, "destinations": ["langfuse"]},
)


def _forms(secret: str) -> list[str]:
    """A secret as it could leak: itself, URL-encoded, base64 alone and in the Basic pair."""
    b64 = [base64.b64encode(v.encode()).decode().rstrip("=") for v in (secret, f"{PUBLIC_KEY}:{secret}")]
    return [secret, quote(secret, safe=""), quote_plus(secret), *b64]


SECRET_FORMS = [form for secret in (SIGNING_SECRET, HEADER_SECRET, SECRET_KEY, PASTED_KEY) for form in _forms(secret)]


def _destinations(product, hook: WebhookSink, langfuse: FakeLangfuse) -> None:
    policy = {"max_attempts": 3, "base_delay_s": 0.1, "max_delay_s": 1}
    hook_config = {"url": hook.url, "secret": SIGNING_SECRET, "headers": {"X-Api-Key": HEADER_SECRET, "X-Team": "blue"}}
    product.integration("hook", "webhook", hook_config, retry_policy=policy, timeout_s=5)
    langfuse_config = {"publicKey": PUBLIC_KEY, "secretKey": SECRET_KEY, "host": langfuse.url}
    product.integration("langfuse", "langfuse", langfuse_config, retry_policy=policy, timeout_s=5)
    product.rules(*RULES)


def _delivered(trace_id: str) -> bool:
    return statuses_by_destination(trace_id) == {"hook": DeliveryStatus.DELIVERED, "langfuse": DeliveryStatus.DELIVERED}


def _failing_trace() -> dict:
    return trace(
        status="error",
        input={"messages": [{"role": "user", "content": f"my key is {PASTED_KEY}"}]},
        error={"type": "RateLimit", "message": "slow down"},
    )


def test_a_real_worker_records_each_request_masked_and_the_trace_page_shows_it(
    product, api, client, owner, team, start_worker
):
    client.force_login(owner)
    assert client.post(SAVE, {"action": "on", "duration": "15m"}).status_code == 302
    with WebhookSink(secret=SIGNING_SECRET) as hook, FakeLangfuse(public_key=PUBLIC_KEY, secret_key=SECRET_KEY) as lf:
        _destinations(product, hook, lf)
        lf_traces_url = f"{lf.url}/api/public/otel/v1/traces"
        worker = start_worker()
        (trace_id,) = product.ingest(_failing_trace())
        wait_for(lambda: _delivered(trace_id), timeout=60, what=f"delivery to both\n{worker.log_tail()}")
    assert hook.errors == [] and lf.problems == []
    assert trace_id in hook.stored and len(lf.spans) == 1

    routing = DebugRecord.objects.get(trace__trace_id=trace_id, kind="routing").data
    assert [(e["rule"], e["matched"]) for e in routing["evaluations"]] == [
        ("claude to hook", False),
        ("gpt to hook", True),
        ("errors to langfuse", True),
    ]
    assert routing["evaluations"][0]["reason"] == "condition did not match"
    assert {d["destination"]: (d["rule"], d["kept"]) for d in routing["decisions"]} == {
        "hook": ("gpt to hook", True),
        "langfuse": ("errors to langfuse", True),
    }

    exports = {r.destination: r.data for r in DebugRecord.objects.filter(trace__trace_id=trace_id, kind="export")}
    assert set(exports) == {"hook", "langfuse"}
    hook_call, lf_call = exports["hook"], exports["langfuse"]
    assert hook_call["outcome"]["ok"] is True and hook_call["rule"] == "gpt to hook" and hook_call["attempt"] == 1
    (exchange,) = hook_call["exchanges"]
    assert (exchange["method"], exchange["url"], exchange["status"]) == ("POST", hook.url, 200)
    headers = {k.lower(): v for k, v in exchange["request_headers"].items()}
    assert headers["x-api-key"] == MASK and headers["x-tracerelay-signature"] == MASK
    assert headers["x-team"] == "blue" and headers["x-tracerelay-event"] == "traces"
    assert trace_id in exchange["request_body"]["text"] and f"my key is {MASK}" in exchange["request_body"]["text"]
    assert exchange["response_body"]["text"] == '{"ok":true}'

    assert lf_call["outcome"]["ok"] is True and lf_call["platform"] == "langfuse"
    (exchange,) = lf_call["exchanges"]
    assert exchange["method"] == "POST" and exchange["url"] == lf_traces_url
    assert exchange["status"] == 200
    headers = {k.lower(): v for k, v in exchange["request_headers"].items()}
    assert headers["authorization"] == f"Basic {MASK}" and headers["x-langfuse-ingestion-version"] == "4"
    assert exchange["request_body"]["text"] is None and "binary body" in exchange["request_body"]["note"]

    stored = json.dumps([r.data for r in DebugRecord.objects.all()])
    assert not [form for form in SECRET_FORMS if form in stored]
    assert not [form for form in SECRET_FORMS if form in worker.log_tail(100_000)]

    page = client.get(f"/traces/{trace_id}").content.decode()
    assert 'id="debug-title"' in page
    for shown in ("claude to hook", "condition did not match", "gpt to hook", "errors to langfuse", hook.url):
        assert shown in page
    assert f"{lf_traces_url}</code> → <strong>200</strong>" in page
    assert f"Authorization: Basic {MASK}" in page and f"X-Api-Key: {MASK}" in page
    # The prompt (policy "off") shows the pasted key as ingested; the debug section shows it masked.
    debug = page[page.index('id="debug"') :]
    debug = debug[: debug.index("</section>")]
    assert f"my key is {MASK}" in debug
    assert not [form for form in SECRET_FORMS if form in debug]
    assert not [form for form in SECRET_FORMS if form in page and PASTED_KEY not in form]


def test_after_the_chosen_period_a_real_worker_records_nothing(
    product, api, client, owner, team, start_worker, monkeypatch
):
    # A period of two seconds, chosen on the page like the real ones: the test cannot wait 15 minutes.
    monkeypatch.setitem(debug_services.DURATIONS, "2s", (2, "2 seconds"))
    client.force_login(owner)
    with WebhookSink(secret=SIGNING_SECRET) as hook, FakeLangfuse(public_key=PUBLIC_KEY, secret_key=SECRET_KEY) as lf:
        _destinations(product, hook, lf)
        worker = start_worker()
        assert client.post(SAVE, {"action": "on", "duration": "2s"}).status_code == 302
        assert 'id="debug-state">On' in client.get("/settings/advanced").content.decode()
        assert DebugMode.objects.get(team=team).until is not None
        # The period ends on its own: the page says so once it has.
        wait_for(lambda: 'id="debug-state">Off' in client.get("/settings/advanced").content.decode(), 60, "off")

        (trace_id,) = product.ingest(_failing_trace())
        wait_for(lambda: _delivered(trace_id), timeout=60, what=f"delivery to both\n{worker.log_tail()}")
    assert trace_id in hook.stored and len(lf.spans) == 1
    assert not DebugRecord.objects.exists()
    assert 'id="debug-title"' not in client.get(f"/traces/{trace_id}").content.decode()
