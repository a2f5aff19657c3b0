"""PII policies end to end: the API, ingest, the outbox, a real Celery worker and three webhook
receivers on loopback. One destination gets redacted text, one the full text, one pseudonyms;
PII in metadata and in the error message is handled like the prompt's."""

from __future__ import annotations

import json

import pytest

from .conftest import trace
from .sink import WebhookSink

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

EMAIL = "dana.kowalski@example.org"
CARD = "4111 1111 1111 1111"
KEY = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
PHONE = "+49 30 12345678"
PLANTED = (EMAIL, CARD, KEY, PHONE)


def _planted_trace() -> dict:
    return trace(
        status="error",
        input={"messages": [{"role": "user", "content": f"I am {EMAIL}, card {CARD}, call {PHONE}"}]},
        output={"choices": [{"message": {"role": "assistant", "content": f"Noted {EMAIL}"}}]},
        metadata={"customer": {"email": EMAIL}, "notes": [f"key {KEY}"], "plan": "pro"},
        error={"type": "AuthError", "message": f"invalid key {KEY}"},
    )


def test_each_destination_gets_what_its_policy_says(product, api, start_worker):
    with WebhookSink() as saas, WebhookSink() as selfhosted, WebhookSink() as warehouse:
        for name, sink in (("saas", saas), ("selfhosted", selfhosted), ("warehouse", warehouse)):
            product.webhook(name, sink.url)
        product.rules(
            {"name": "all", "condition": 'model == "gpt-4o"', "destinations": ["saas", "selfhosted", "warehouse"]}
        )
        response = api.put(
            "/api/v1/pii/policy",
            {"stored": {"mode": "detect"}, "destinations": {"saas": {"mode": "redact"}, "warehouse": {"mode": "hash"}}},
            format="json",
        )
        assert response.status_code == 200, response.content
        start_worker()

        (trace_id,) = product.ingest(_planted_trace())

        for sink in (saas, selfhosted, warehouse):
            assert sink.wait_until(lambda s: trace_id in s.stored, timeout=60), sink.requests
            assert sink.errors == []

    full = json.dumps(selfhosted.stored[trace_id])
    assert all(value in full for value in PLANTED)

    redacted = saas.stored[trace_id]
    text = json.dumps(redacted)
    assert not any(value in text for value in PLANTED), text
    assert "[EMAIL]" in json.dumps(redacted["input"]) and "[CREDIT_CARD]" in json.dumps(redacted["input"])
    assert redacted["metadata"]["customer"]["email"] == "[EMAIL]"
    assert redacted["metadata"]["plan"] == "pro"
    assert redacted["error"] == {"type": "AuthError", "message": "invalid key [SECRET]"}

    hashed = warehouse.stored[trace_id]
    text = json.dumps(hashed)
    assert not any(value in text for value in PLANTED), text
    pseudonym = hashed["metadata"]["customer"]["email"]
    assert pseudonym.startswith("[EMAIL:") and len(pseudonym) == len("[EMAIL:]") + 12
    assert pseudonym in json.dumps(hashed["input"]) and pseudonym in json.dumps(hashed["output"])  # joins still work

    # Stored with `detect`: the text is kept and the kinds are counted on the trace, never the values.
    detail = api.get(f"/api/v1/traces/{trace_id}").json()
    assert EMAIL in json.dumps(detail["input"])
    assert detail["pii"]["mode"] == "detect"
    assert detail["pii"]["kinds"] == {"EMAIL": 3, "CREDIT_CARD": 1, "PHONE": 1, "SECRET": 2}
